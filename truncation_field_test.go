package adapter_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/lmtest"
)

// TestTruncationNamesField: a reply cut by the token limit (finish_reason
// "length"), or whose text ends inside a value, is a *ParseError matching
// ErrTruncated whose Field names the output being read when it was cut,
// for Call and Stream alike and in every adapter's shape (issue 45: it
// named none). Cut outside any output (in reasoning, after the completed
// marker) it names none. (Every cut position: internal/reply's
// TestCutField.)
// embeddedJSON and embeddedXML are a user's adapters built on a built-in
// one (as a Formatter or a different Name would be).
type embeddedJSON struct{ adapter.JSON }
type embeddedXML struct{ adapter.XML }

func (embeddedJSON) Name() string { return "my-json" }
func (embeddedXML) Name() string  { return "my-xml" }

func TestTruncationNamesField(t *testing.T) {
	sig := mustParse(t, "q -> reasoning, answer, tags: list[str]")
	for _, c := range []struct {
		a     adapter.Adapter
		reply string
		field string
	}{
		{adapter.Chat{}, "[[ ## reasoning ## ]]\nThe capital of France", "reasoning"},
		{adapter.Chat{}, "[[ ## reasoning ## ]]\nr\n\n[[ ## answer ## ]]\nPar", "answer"},
		{adapter.Chat{}, "[[ ## reasoning ## ]]\nr\n\n[[ ## answer ## ]]\nParis\n\n[[ ## tags ## ]]\n[\"a\", \"b", "tags"},
		{adapter.Chat{}, "<think>Let me think about the capital", ""},
		{adapter.JSON{}, `{"reasoning": "r", "answer": "Par`, "answer"},
		{adapter.JSON{}, `{"reasoning": "r", "answer": "Paris", "tags": ["a", "b`, "tags"},
		{adapter.JSON{}, `{"reasoning": "The capital`, "reasoning"},
		{adapter.XML{}, "<reasoning>r</reasoning>\n<answer>Par", "answer"},
		{adapter.XML{}, "<reasoning>r</reasoning>\n<answer>Paris</answer>\n<tags><item>a</item><item>b", "tags"},
		// A JSON reply whose text names a marker is read as JSON first,
		// and so by an adapter that embeds a built-in one.
		{adapter.JSON{}, `{"reasoning": "r [[ ## tags ## ]] x", "answer": "Par`, "answer"},
		{embeddedJSON{}, `{"reasoning": "r [[ ## tags ## ]] x", "answer": "Par`, "answer"},
		{embeddedXML{}, "<reasoning>r [[ ## tags ## ]] x</reasoning>\n<answer>Par", "answer"},
	} {
		for _, finish := range []string{"length", "stop"} {
			srv := lmtest.NewServer()
			srv.Handle(func(lmtest.Request) lmtest.Reply { return lmtest.Text(c.reply).WithFinish(finish).ChunkSize(5) })
			opts := []adapter.CallOption{adapter.UseAdapter(c.a), adapter.NoFallback(), adapter.NoRetry()}
			_, err := adapter.Call(t.Context(), srv.Client(), sig, nil, adapter.Values{"q": "x"}, opts...)
			var streamErr error
			for _, e := range adapter.Stream(t.Context(), srv.Client(), sig, nil, adapter.Values{"q": "x"}, opts...) {
				if e != nil {
					streamErr = e
				}
			}
			srv.Close()
			if finish == "stop" && c.field == "" {
				continue // the reasoning never ended: no truncation in the text
			}
			for name, err := range map[string]error{"Call": err, "Stream": streamErr} {
				var pe *adapter.ParseError
				require.True(t, errors.As(err, &pe), "%s %T %q (%s): %v", name, c.a, c.reply, finish, err)
				if finish == "length" || errors.Is(err, adapter.ErrTruncated) {
					assert.ErrorIs(t, err, adapter.ErrTruncated, "%s %T %q (%s)", name, c.a, c.reply, finish)
					assert.Equal(t, c.field, pe.Field, "%s %T %q (%s): %v", name, c.a, c.reply, finish, err)
				}
			}
		}
	}
}
