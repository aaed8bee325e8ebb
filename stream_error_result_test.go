package adapter_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/lmtest"
)

// TestStreamErrorCarriesResult: a stream that fails gives, with its
// error, the Result as far as it got — the one Call returns with the same
// error for the same replies (calls, usage, raw completions), so code
// that sums a run's calls counts the failed ones too.
func TestStreamErrorCarriesResult(t *testing.T) {
	sig := mustParse(t, "question -> answer: int")
	for name, replies := range map[string][]lmtest.Reply{
		"parse error after the fallback": {lmtest.Text("no number").WithUsage(10, 2), lmtest.Text("still none").WithUsage(11, 3)},
		"LM error":                       {lmtest.ContextLengthExceeded()},
		"truncated":                      {lmtest.Text("[[ ## answer ## ]]\n4").WithFinish("length").WithUsage(5, 1)},
	} {
		t.Run(name, func(t *testing.T) {
			srv := lmtest.NewServer(replies...)
			defer srv.Close()
			want, werr := adapter.Call(t.Context(), srv.Client(), sig, nil, adapter.Values{"question": "q"})
			require.Error(t, werr)
			srv2 := lmtest.NewServer(replies...)
			defer srv2.Close()
			var got *adapter.Result
			var err error
			for ch, e := range adapter.Stream(t.Context(), srv2.Client(), sig, nil, adapter.Values{"question": "q"}) {
				if e != nil {
					got, err = ch.Result, e
				}
			}
			require.Error(t, err)
			require.NotNil(t, got)
			assert.Equal(t, werr.Error(), err.Error())
			assert.Equal(t, want.Calls, got.Calls)
			assert.Equal(t, want.Usage, got.Usage)
			assert.Equal(t, want.Completions, got.Completions)
		})
	}
}
