package adapter_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	adapter "github.com/sigwire/adapter"
)

// TestChatFormatCost: what Chat's Format of the reference workload
// allocates (issue 32). The messages and one buffer for their texts are
// all: the arena the turns are written with is reused from call to call
// (it was a third allocation of every Format). Demos that change on every
// call cost two more, the texts remembered for the next call.
func TestChatFormatCost(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector changes allocation counts")
	}
	format := func(demos []adapter.Values) {
		if _, err := (adapter.Chat{}).Format(benchSig, demos, benchInputs); err != nil {
			t.Fatal(err)
		}
	}
	kept := testing.AllocsPerRun(100, func() { format(benchDemos) })
	assert.LessOrEqual(t, kept, 2.0, "the same demos as the last call: the messages and their texts")

	other := make([]adapter.Values, len(benchDemos))
	for i, d := range benchDemos {
		other[i] = adapter.Values{}
		for k, v := range d {
			other[i][k] = v.(string) + "."
		}
	}
	sets := [2][]adapter.Values{benchDemos, other}
	i := 0
	changing := testing.AllocsPerRun(100, func() { i++; format(sets[i%2]) })
	assert.LessOrEqual(t, changing, 4.0, "demos new on every call: the demos' texts remembered besides")
	t.Logf("Chat Format: %v allocations, %v with demos new on every call", kept, changing)
}
