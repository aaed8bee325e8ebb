package adapter_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/lmtest"
	"github.com/sigwire/adapter/signature"
)

// proseWords is n bytes of words, the text a model that rambles writes
// into a field: no number, no bool, nothing the value rules accept.
func proseWords(n int) string {
	const w = "the answer depends on what one counts and how "
	return strings.Repeat(w, n/len(w)+1)[:n]
}

// scalarReply is a reply of adapter a whose one output n holds text.
func scalarReply(a, text string) string {
	switch a {
	case "json", "baml":
		return `{"n": "` + text + `"}`
	case "xml":
		return "<n>" + text + "</n>"
	}
	return "[[ ## n ## ]]\n" + text + "\n\n[[ ## completed ## ]]"
}

var boundAdapters = []adapter.Adapter{adapter.Chat{}, adapter.JSON{}, adapter.XML{}, adapter.BAML{}}

// TestScalarFieldBounded: a scalar field (int, float, bool, Literal, enum,
// Optional of those) whose text is longer than [adapter.MaxScalarText] is
// a *ParseError naming the field and keeping the reply, before the value
// rules (regular expressions that cost about a microsecond a byte) read
// it: a reply of the default 64 MiB could hold minutes of their work
// (8 MiB of words in an Optional[int] took 26 s). Every adapter, Call and
// Stream; text up to the limit is read as before.
func TestScalarFieldBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("large inputs")
	}
	long := proseWords(2 << 20)
	for _, typ := range []string{"int", "Optional[int]", "bool", "float", "Literal['yes', 'no']", "Optional[bool]"} {
		sig := mustParse(t, "q -> n: "+typ)
		for _, a := range boundAdapters {
			t.Run(a.Name()+"/"+typ, func(t *testing.T) {
				text := scalarReply(a.Name(), long)
				srv := lmtest.NewServer(lmtest.Text(text))
				defer srv.Close()
				_, err := adapter.Call(t.Context(), srv.Client(), sig, nil, adapter.Values{"q": "x"},
					adapter.UseAdapter(a), adapter.NoFallback(), adapter.NoRetry())
				var pe *adapter.ParseError
				require.ErrorAs(t, err, &pe)
				assert.Equal(t, "n", pe.Field)
				assert.Equal(t, text, pe.Completion, "the raw reply is kept")
				assert.Contains(t, err.Error(), "too long for")
				assert.Contains(t, err.Error(), fmt.Sprint(len(long)))
			})
		}
	}

	// Stream reads through the same rule.
	sig := mustParse(t, "q -> n: Optional[int]")
	for _, a := range boundAdapters {
		text := scalarReply(a.Name(), long)
		srv := lmtest.NewServer(lmtest.Text(text).ChunkSize(64 << 10))
		var err error
		for _, e := range adapter.Stream(t.Context(), srv.Client(), sig, nil, adapter.Values{"q": "x"},
			adapter.UseAdapter(a), adapter.NoFallback(), adapter.NoRetry()) {
			if e != nil {
				err = e
			}
		}
		srv.Close()
		var pe *adapter.ParseError
		require.ErrorAs(t, err, &pe, a.Name())
		assert.Equal(t, "n", pe.Field, a.Name())
		assert.Contains(t, err.Error(), "too long for", a.Name())
	}

	// The limit is on the field's text; at the limit it is read.
	sig = mustParse(t, "q -> n: int")
	at := "42." + strings.Repeat("0", adapter.MaxScalarText-3)
	over := at + "0"
	for _, a := range boundAdapters {
		vals, err := a.(adapter.Parser).Parse(sig, scalarReply(a.Name(), at))
		require.NoError(t, err, a.Name())
		assert.Equal(t, 42, vals["n"], a.Name())
		_, err = a.(adapter.Parser).Parse(sig, scalarReply(a.Name(), over))
		var pe *adapter.ParseError
		require.ErrorAs(t, err, &pe, a.Name())
		assert.Equal(t, "n", pe.Field, a.Name())
	}
	// ParseValue, the one coercion routine, applies it too.
	_, err := adapter.ParseValue(over, sig.Output(0))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `field "n"`)
	assert.Contains(t, err.Error(), "too long for an int")
	// str fields keep their text, however long.
	vals, err := adapter.Chat{}.Parse(mustParse(t, "q -> n"), scalarReply("chat", long))
	require.NoError(t, err)
	assert.Equal(t, long, vals["n"])
}

// BenchmarkScalarFieldBounded is the time to the error for 8 MiB of words
// in an Optional[int] field of a Chat reply (26 s before the bound).
func BenchmarkScalarFieldBounded(b *testing.B) {
	sig := must(signature.Parse("q -> n: Optional[int]"))
	text := scalarReply("chat", proseWords(8<<20))
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		if _, err := (adapter.Chat{}).Parse(sig, text); err == nil {
			b.Fatal("no error")
		}
	}
}

// cancelAfterReply is a middleware that ends the call's context once the
// LM's reply is in, before the pipeline parses it.
func cancelAfterReply(cancel context.CancelFunc) adapter.Middleware {
	return func(next adapter.Invoker) adapter.Invoker {
		return func(ctx context.Context, req openai.ChatCompletionRequest) (openai.ChatCompletionResponse, error) {
			resp, err := next(ctx, req)
			cancel()
			return resp, err
		}
	}
}

// TestParseHonoursCancellation: a call whose context ends after its reply
// arrived (before the parse, or while it runs) returns the context's
// error, an *LMError matching context.Canceled, not a parse error or a
// result: a reply too big to read quickly does not keep a cancelled call
// going, and the caller learns why the call ended. Call and Stream, a
// reply that parses and one that does not.
func TestParseHonoursCancellation(t *testing.T) {
	sig := mustParse(t, "q -> n: Optional[int]")
	replies := map[string]string{
		"good": scalarReply("chat", "42"),
		"bad":  scalarReply("chat", proseWords(1<<20)),
	}
	type run func(ctx context.Context, lm adapter.StreamingLM, opts ...adapter.CallOption) error
	runs := map[string]run{
		"Call": func(ctx context.Context, lm adapter.StreamingLM, opts ...adapter.CallOption) error {
			_, err := adapter.Call(ctx, lm, sig, nil, adapter.Values{"q": "x"}, opts...)
			return err
		},
		"Stream": func(ctx context.Context, lm adapter.StreamingLM, opts ...adapter.CallOption) error {
			var err error
			for _, e := range adapter.Stream(ctx, lm, sig, nil, adapter.Values{"q": "x"}, opts...) {
				if e != nil {
					err = e
				}
			}
			return err
		},
	}
	for rname, text := range replies {
		for name, do := range runs {
			t.Run(name+"/"+rname+"/before-parse", func(t *testing.T) {
				srv := lmtest.NewServer(lmtest.Text(text).ChunkSize(64 << 10))
				defer srv.Close()
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				err := do(ctx, adapter.WithMiddleware(srv.Client(), cancelAfterReply(cancel)))
				checkCancelled(t, err)
			})
			t.Run(name+"/"+rname+"/during-parse", func(t *testing.T) {
				srv := lmtest.NewServer(lmtest.Text(text).ChunkSize(64 << 10))
				defer srv.Close()
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				tr := &adapter.Trace{ParseStart: func(adapter.ParseStartInfo) { cancel() }}
				err := do(ctx, srv.Client(), adapter.UseTrace(tr))
				checkCancelled(t, err)
			})
		}
	}
}

func checkCancelled(t *testing.T, err error) {
	t.Helper()
	require.ErrorIs(t, err, context.Canceled)
	var pe *adapter.ParseError
	assert.False(t, errors.As(err, &pe), "a parse error for a cancelled call: %v", err)
	var le *adapter.LMError
	assert.ErrorAs(t, err, &le)
}
