package adapter_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/lmtest"
	"github.com/sigwire/adapter/signature"
)

// recorder is a Trace that writes one line per event.
type recorder struct {
	mu     sync.Mutex
	events []string
}

func (r *recorder) add(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, fmt.Sprintf(format, args...))
}

func (r *recorder) trace() *adapter.Trace {
	return &adapter.Trace{
		FormatDone: func(i adapter.FormatInfo) {
			r.add("format %s#%d msgs=%d err=%v", i.Adapter, i.Attempt, len(i.Messages), i.Err)
		},
		LMCallStart: func(i adapter.LMCallStartInfo) {
			rf := "none"
			if i.Request.ResponseFormat != nil {
				rf = string(i.Request.ResponseFormat.Type)
			}
			r.add("lm start %s#%d stream=%v format=%s", i.Adapter, i.Attempt, i.Stream, rf)
		},
		LMCallDone: func(i adapter.LMCallDoneInfo) {
			r.add("lm done %s#%d tokens>0=%v err=%v", i.Adapter, i.Attempt, i.Usage.TotalTokens > 0, i.Err != nil)
		},
		ParseDone: func(i adapter.ParseInfo) { r.add("parse %s#%d ok=%v", i.Adapter, i.Attempt, i.Err == nil) },
	}
}

func TestTraceSeesEveryAttempt(t *testing.T) {
	sig := mustParse(t, "question -> answer: int")
	srv := lmtest.NewServer(
		lmtest.Text("The answer is forty-two."),
		lmtest.Error(http.StatusBadRequest, `{"error":{"message":"Invalid schema for response_format","type":"invalid_request_error","param":"response_format"}}`),
		lmtest.Text(`{"answer": 42}`))
	defer srv.Close()
	var ctxRec, callRec recorder
	ctx := adapter.WithTrace(context.Background(), ctxRec.trace())
	res, err := adapter.Call(ctx, srv.Client(), sig, nil, adapter.Values{"question": "q"},
		adapter.WithRequest(openai.ChatCompletionRequest{Model: "gpt-4o"}), adapter.UseTrace(callRec.trace()))
	require.NoError(t, err)
	assert.Equal(t, 3, res.Calls)
	want := []string{
		"format chat#1 msgs=2 err=<nil>",
		"lm start chat#1 stream=false format=none",
		"lm done chat#1 tokens>0=true err=false",
		"parse chat#1 ok=false",
		"format json#2 msgs=2 err=<nil>",
		"lm start json#2 stream=false format=json_schema",
		"lm done json#2 tokens>0=false err=true",
		"lm start json#2 stream=false format=json_object",
		"lm done json#2 tokens>0=true err=false",
		"parse json#2 ok=true",
	}
	assert.Equal(t, want, ctxRec.events)
	assert.Equal(t, want, callRec.events, "the call's trace and the context's both see everything")
	for _, r := range srv.Requests() {
		assert.NotContains(t, strings.ToLower(string(r.Body)), "test-key", "the API key is never in a request a hook sees")
	}
}

func TestTraceStream(t *testing.T) {
	srv := lmtest.NewServer(lmtest.Text("[[ ## answer ## ]]\n7").ChunkSize(4))
	defer srv.Close()
	var rec recorder
	for _, err := range adapter.Stream(context.Background(), srv.Client(), mustParse(t, "q -> answer: int"), nil, adapter.Values{"q": "x"}, adapter.UseTrace(rec.trace())) {
		require.NoError(t, err)
	}
	assert.Equal(t, []string{
		"format chat#1 msgs=2 err=<nil>",
		"lm start chat#1 stream=true format=none",
		"lm done chat#1 tokens>0=true err=false",
		"parse chat#1 ok=true",
	}, rec.events)
}

// TestParseDoneSaysWhatTheCallFailsWith: a reply the pipeline rejects
// after reading it — cut by the token limit, or breaking a constraint — is
// a failed parse in the trace too: ParseDone's Err is the call's
// *ParseError (ErrTruncated, ErrConstraint) and its Outputs the values
// that stand, the error's Partial, never the cut or violating value; for
// Call and Stream alike. (ParseDone said nil for both, so a tracer
// watching it missed the failure.)
func TestParseDoneSaysWhatTheCallFailsWith(t *testing.T) {
	for _, c := range []struct {
		name, spec string
		reply      lmtest.Reply
		is         error
		partial    adapter.Values
	}{
		{"truncated", "q -> reasoning, answer: float", lmtest.Text("[[ ## reasoning ## ]]\nr\n\n[[ ## answer ## ]]\n0.").WithFinish("length"),
			adapter.ErrTruncated, adapter.Values{"reasoning": "r"}},
		{"constraint", "q -> reasoning, stars: int", lmtest.Text("[[ ## reasoning ## ]]\nr\n\n[[ ## stars ## ]]\n7"),
			adapter.ErrConstraint, adapter.Values{"reasoning": "r"}},
	} {
		sig := mustParse(t, c.spec)
		if c.name == "constraint" {
			var err error
			sig, err = sig.Update("stars", func(f *signature.Field) {
				f.Constraints = []signature.Constraint{{Op: signature.LE, Value: 5}}
			})
			require.NoError(t, err)
		}
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", c.name, stream), func(t *testing.T) {
				srv := lmtest.NewServer(c.reply)
				defer srv.Close()
				var infos []adapter.ParseInfo
				tr := &adapter.Trace{ParseDone: func(i adapter.ParseInfo) { infos = append(infos, i) }}
				opts := []adapter.CallOption{adapter.UseTrace(tr), adapter.NoRetry(), adapter.NoFallback()}
				var err error
				if stream {
					_, _, err = drain(adapter.Stream(t.Context(), srv.Client(), sig, nil, adapter.Values{"q": "x"}, opts...))
				} else {
					_, err = adapter.Call(t.Context(), srv.Client(), sig, nil, adapter.Values{"q": "x"}, opts...)
				}
				require.ErrorIs(t, err, c.is)
				var pe *adapter.ParseError
				require.ErrorAs(t, err, &pe)
				require.Len(t, infos, 1)
				assert.ErrorIs(t, infos[0].Err, c.is)
				assert.Equal(t, c.partial, infos[0].Outputs)
				assert.Equal(t, pe.Partial, infos[0].Outputs)
			})
		}
	}
}
