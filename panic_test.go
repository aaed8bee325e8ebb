package adapter_test

import (
	"errors"
	"testing"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/lmtest"
	"github.com/sigwire/adapter/signature"
)

// crashReplies are replies that once panicked a parser (security review,
// finding 0: the first one is 19 bytes and was found by a fuzzer in 36 s).
var crashReplies = []string{
	"##Answer##**[##0##]",
	"## answer ##**[[ ## answer ## ]]",
	"**[[ ## answer ## ]]**[## x ##]",
	"[[ ## answer ## ]]__[##a##]__",
	"##answer######[##q##]",
}

// TestParsersNeverPanicOnCrashReplies runs every parser and field stream
// over the replies that once panicked one: each either parses or returns
// a *ParseError that keeps the reply.
func TestParsersNeverPanicOnCrashReplies(t *testing.T) {
	for _, spec := range []string{"q -> answer", "question -> reasoning, answer: int", "q -> Answer, a: list[int]"} {
		sig := mustParse(t, spec)
		for _, a := range []adapter.Adapter{adapter.Chat{}, adapter.JSON{}, adapter.XML{}, adapter.BAML{}} {
			for _, reply := range crashReplies {
				_, err := a.(adapter.Parser).Parse(sig, reply)
				var pe *adapter.ParseError
				if err != nil && (!errors.As(err, &pe) || pe.Completion != reply) {
					t.Errorf("%s %q %q: error without the reply: %v", a.Name(), spec, reply, err)
				}
				fs := a.(adapter.StreamParser).NewFieldStream(sig)
				for i := range len(reply) {
					fs.Write(nil, reply[i:i+1])
				}
				fs.Close(nil)
			}
		}
	}
}

// panicky is an adapter whose parser panics: a parser bug.
type panicky struct{}

func (panicky) Name() string { return "panicky" }

func (panicky) Format(sig *signature.Signature, demos []adapter.Values, in adapter.Values) ([]openai.ChatCompletionMessage, error) {
	return adapter.Chat{}.Format(sig, demos, in)
}

func (panicky) Parse(*signature.Signature, string) (adapter.Values, error) {
	var m map[string]int
	m["boom"]++ // a nil-map write: panics
	return nil, nil
}

// TestPipelineTurnsParsePanicIntoParseError: a parser that panics on a
// reply is a bug, but Call and Stream report it as a *ParseError keeping
// the reply instead of taking the host down.
func TestPipelineTurnsParsePanicIntoParseError(t *testing.T) {
	const reply = "[[ ## answer ## ]]\nok\n\n[[ ## completed ## ]]"
	sig := mustParse(t, "q -> answer")
	srv := lmtest.NewServer(lmtest.Text(reply), lmtest.Text(reply))
	defer srv.Close()
	opts := []adapter.CallOption{adapter.UseAdapter(panicky{}), adapter.WithRequest(openai.ChatCompletionRequest{Model: "m"})}

	_, err := adapter.Call(t.Context(), srv.Client(), sig, nil, adapter.Values{"q": "x"}, opts...)
	var pe *adapter.ParseError
	require.ErrorAs(t, err, &pe)
	assert.ErrorIs(t, err, adapter.ErrParserPanic)
	assert.Equal(t, reply, pe.Completion)

	var serr error
	for _, e := range adapter.Stream(t.Context(), srv.Client(), sig, nil, adapter.Values{"q": "x"}, opts...) {
		if e != nil {
			serr = e
		}
	}
	require.ErrorAs(t, serr, &pe)
	assert.ErrorIs(t, serr, adapter.ErrParserPanic)
	assert.Equal(t, reply, pe.Completion)
}
