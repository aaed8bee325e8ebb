package adapter_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/signature"
)

// TestIntValueCost: reading an int built the out-of-range error it might
// need before knowing (7 allocations per int read, in every adapter);
// now the error is made only for a number out of range, which still
// names the field and keeps the text.
func TestIntValueCost(t *testing.T) {
	sig := must(signature.Parse("question -> count: int"))
	f := sig.Output(0)
	v, err := adapter.ParseValue("42", f)
	require.NoError(t, err)
	assert.Equal(t, 42, v)
	_, err = adapter.ParseValue("99999999999999999999", f)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `"count"`)
	assert.Contains(t, err.Error(), "99999999999999999999")
	if raceEnabled {
		t.Skip("the race detector changes allocation counts")
	}
	assert.LessOrEqual(t, testing.AllocsPerRun(100, func() { _, _ = adapter.ParseValue("42", f) }), 2.0, "the int made and boxed")
}
