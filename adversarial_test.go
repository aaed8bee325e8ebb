package adapter_test

import (
	"strings"
	"testing"

	adapter "github.com/sigwire/adapter"
)

// TestAdversarialReplies feeds hostile replies to every parser: 10 MB of
// text, 100 000-deep nesting, a million markers, NUL bytes and invalid
// UTF-8, a JSON span over the repair cap, thousands of unclosed tags. Each
// parse must finish with bounded work: the allocations stay under a fixed
// budget, independent of the quadratic blow-ups a naive parser would have.
func TestAdversarialReplies(t *testing.T) {
	if testing.Short() {
		t.Skip("large inputs")
	}
	sig := mustParse(t, "q -> answer, items: list[str]")
	cases := map[string]string{
		"10 MB section":       "[[ ## answer ## ]]\n" + strings.Repeat("word ", 2<<20),
		"deep brackets":       strings.Repeat("[", 100000) + strings.Repeat("]", 100000),
		"deep objects":        strings.Repeat(`{"a":`, 100000),
		"a million markers":   strings.Repeat("[[ ## answer ## ]]\nx\n", 1000000),
		"NUL and bad UTF-8":   "[[ ## answer ## ]]\n\x00\x00\xff\xfe\n[[ ## items ## ]]\n[\"\xc3\x28\"]",
		"over the repair cap": `{"answer": "` + strings.Repeat("x", 200000) + `", "items": [`,
		"unclosed tags":       strings.Repeat("<answer>", 200000),
		"deep elements":       strings.Repeat("<items><item>", 100000),
		"bracket soup":        strings.Repeat("{[", 500000),
	}
	for name, text := range cases {
		for _, a := range []adapter.Parser{adapter.Chat{}, adapter.JSON{}, adapter.XML{}} {
			allocs := testing.AllocsPerRun(1, func() {
				vals, err := a.Parse(sig, text)
				if err == nil && vals == nil {
					t.Errorf("%s: %T: no values and no error", name, a)
				}
			})
			// The largest legitimate parse of these allocates a few
			// thousand objects; a per-element or per-marker blow-up
			// would allocate hundreds of thousands.
			if allocs > 50000 {
				t.Errorf("%s: %T allocated %.0f objects", name, a, allocs)
			}
		}
	}
}
