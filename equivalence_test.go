package adapter_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"regexp"
	"testing"
	"time"
	"unicode/utf8"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/lmtest"
	"github.com/sigwire/adapter/signature"
	"github.com/sigwire/adapter/types"
)

// equivalenceCase is a script of replies and a call that goes through
// Call and through Stream.
type equivalenceCase struct {
	name    string
	sig     string
	fields  []signature.Field // outputs instead of sig's, when set
	inputs  adapter.Values
	replies func() []lmtest.Reply
	opts    []adapter.CallOption
	caps    *adapter.Capabilities
	want    error // what Call's error matches (errors.Is); nil for success
	calls   int   // Result.Calls
}

// errInternal stands for an *LMError wrapping a server error.
var errInternal = errors.New("an *adapter.LMError")

var fast = adapter.WithRetry(adapter.RetryPolicy{MaxRetries: 2, BaseDelay: time.Millisecond, MaxDelay: 2 * time.Millisecond})

func equivalenceCases() []equivalenceCase {
	model := func(m string, n int) adapter.CallOption {
		return adapter.WithRequest(openai.ChatCompletionRequest{Model: m, N: n})
	}
	call := openai.ToolCall{ID: "call_1", Type: "function", Function: openai.FunctionCall{Name: "search", Arguments: `{"query": "weather in Oslo"}`}}
	search, err := types.NewTool("search", "look something up", func(_ context.Context, a struct {
		Query string `json:"query"`
	}) (string, error) {
		return "rain", nil
	})
	if err != nil {
		panic(err)
	}
	u := func(r lmtest.Reply) lmtest.Reply { return r.WithUsage(100, 20) }
	one := func(rs ...lmtest.Reply) func() []lmtest.Reply {
		return func() []lmtest.Reply {
			out := make([]lmtest.Reply, len(rs))
			for i, r := range rs {
				out[i] = u(r)
			}
			return out
		}
	}
	return []equivalenceCase{
		{name: "plain", want: nil, calls: 1, sig: "question -> reasoning, answer: int",
			replies: one(lmtest.Text("[[ ## reasoning ## ]]\nSix sevens.\n\n[[ ## answer ## ]]\n42\n\n[[ ## completed ## ]]")),
			opts:    []adapter.CallOption{model("gpt-4o-mini", 0)}},
		{name: "lenient JSON instead of markers", want: nil, calls: 1, sig: "question -> answer",
			replies: one(lmtest.Text("```json\n{\"answer\": \"Paris\"}\n```")),
			opts:    []adapter.CallOption{model("m", 0)}},
		{name: "malformed then JSON fallback", want: nil, calls: 2, sig: "question -> answer: int",
			replies: one(lmtest.Text("I think it is forty-two-ish."), lmtest.Text(`{"answer": 42}`)),
			opts:    []adapter.CallOption{model("m", 0)}},
		{name: "malformed, fallback fails too", want: adapter.ErrMissingField, calls: 2, sig: "question -> answer: int",
			replies: one(lmtest.Text("no idea"), lmtest.Text("still no idea")),
			opts:    []adapter.CallOption{model("m", 0)}},
		{name: "refusal", want: adapter.ErrRefusal, calls: 1, sig: "question -> answer",
			replies: one(lmtest.Text("").WithRefusal("I can't help with that.")),
			opts:    []adapter.CallOption{model("m", 0)}},
		{name: "content filter", want: adapter.ErrRefusal, calls: 1, sig: "question -> answer",
			replies: one(lmtest.Text("[[ ## answer ## ]]\nPar").WithFinish("content_filter")),
			opts:    []adapter.CallOption{model("m", 0)}},
		{name: "prompt filter 400", want: adapter.ErrRefusal, calls: 1, sig: "question -> answer",
			replies: one(lmtest.Error(http.StatusBadRequest, `{"error":{"message":"The response was filtered due to the prompt triggering Azure Content management policy.","type":null,"param":"prompt","code":"content_filter","status":400}}`)),
			opts:    []adapter.CallOption{model("m", 0)}},
		{name: "length with content", want: adapter.ErrTruncated, calls: 1, sig: "question -> answer",
			replies: one(lmtest.Text("[[ ## answer ## ]]\nThe three largest cities are Sydney, Melbourne and").WithFinish("length")),
			opts:    []adapter.CallOption{model("m", 0)}},
		{name: "length without content", want: adapter.ErrTruncated, calls: 1, sig: "question -> answer",
			replies: one(lmtest.Text("").WithFinish("length").WithReasoning("Let me think about this for a very long time")),
			opts:    []adapter.CallOption{model("m", 0)}},
		{name: "empty", want: adapter.ErrEmptyResponse, calls: 2, sig: "question -> answer",
			replies: one(lmtest.Text(""), lmtest.Text("")),
			opts:    []adapter.CallOption{model("m", 0)}},
		{name: "n=3", want: nil, calls: 1, sig: "question -> answer: int",
			replies: one(lmtest.Choices("[[ ## answer ## ]]\n1", "[[ ## answer ## ]]\n2", "[[ ## answer ## ]]\n3")),
			opts:    []adapter.CallOption{model("m", 3)}},
		{name: "native tool calls", want: nil, calls: 1, sig: "question, tools: list[Tool] -> answer, calls: ToolCalls",
			inputs:  adapter.Values{"question": "weather?", "tools": []types.Tool{search}},
			replies: one(lmtest.Text("").WithFinish("tool_calls").WithToolCalls(call)),
			opts:    []adapter.CallOption{model("gpt-4o", 0), adapter.UseAdapter(adapter.JSON{})}},
		{name: "native reasoning", want: nil, calls: 1, sig: "question -> reasoning: Reasoning, answer",
			replies: one(lmtest.Text("[[ ## answer ## ]]\nParis").WithReasoning("The capital of France.")),
			opts:    []adapter.CallOption{model("o3-mini", 0)}},
		{name: "think block", want: nil, calls: 1, sig: "question -> answer",
			replies: one(lmtest.Text("<think>Paris, surely.</think>\n[[ ## answer ## ]]\nParis")),
			opts:    []adapter.CallOption{model("m", 0)}},
		{name: "constraint violation", want: adapter.ErrConstraint, calls: 2, fields: []signature.Field{{Name: "n", Type: reflect.TypeFor[int](),
			Constraints: []signature.Constraint{{Op: signature.GE, Value: 0}}}},
			replies: one(lmtest.Text("[[ ## n ## ]]\n-5\n\n[[ ## completed ## ]]"), lmtest.Text(`{"n": -5}`)),
			opts:    []adapter.CallOption{model("m", 0)}},
		{name: "400 on response_format", want: nil, calls: 2, sig: "question -> answer",
			replies: one(lmtest.Error(http.StatusBadRequest, `{"error":{"message":"Invalid schema for response_format 'DSPyProgramOutputs'","type":"invalid_request_error","param":"response_format","code":null}}`),
				lmtest.Text(`{"answer": "Paris"}`)),
			opts: []adapter.CallOption{model("gpt-4o", 0), adapter.UseAdapter(adapter.JSON{}), adapter.NoRetry()}},
		{name: "429 then success", want: nil, calls: 1, sig: "question -> answer",
			replies: one(lmtest.Error(http.StatusTooManyRequests, `{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}`),
				lmtest.Text("[[ ## answer ## ]]\nParis")),
			opts: []adapter.CallOption{model("m", 0), fast}},
		{name: "500 every time", want: errInternal, calls: 1, sig: "question -> answer",
			replies: one(lmtest.Error(http.StatusInternalServerError, `{"error":{"message":"boom"}}`), lmtest.Error(http.StatusInternalServerError, `{"error":{"message":"boom"}}`),
				lmtest.Error(http.StatusInternalServerError, `{"error":{"message":"boom"}}`)),
			opts: []adapter.CallOption{model("m", 0), fast}},
		{name: "context window", want: adapter.ErrContextWindow, calls: 1, sig: "question -> answer",
			replies: one(lmtest.ContextLengthExceeded()),
			opts:    []adapter.CallOption{model("m", 0)}},
		{name: "re-ask an unreadable value", want: nil, calls: 2, sig: "question -> reasoning, answer: int",
			replies: one(lmtest.Text("[[ ## reasoning ## ]]\nCounting.\n\n[[ ## answer ## ]]\nseveral\n\n[[ ## completed ## ]]"),
				lmtest.Text("[[ ## reasoning ## ]]\nSix sevens.\n\n[[ ## answer ## ]]\n42\n\n[[ ## completed ## ]]")),
			opts: []adapter.CallOption{model("m", 0), adapter.NoFallback(), adapter.WithReask(1)}},
		{name: "re-ask a constraint violation", want: nil, calls: 2, fields: []signature.Field{{Name: "n", Type: reflect.TypeFor[int](),
			Constraints: []signature.Constraint{{Op: signature.GE, Value: 0}}}},
			replies: one(lmtest.Text(`{"n": -5}`), lmtest.Text(`{"n": 5}`)),
			opts:    []adapter.CallOption{model("m", 0), adapter.UseAdapter(adapter.JSON{}), adapter.WithReask(3)}},
		{name: "re-asks run out", want: adapter.ErrMissingField, calls: 3, sig: "question -> answer: int",
			replies: one(lmtest.Text("no idea"), lmtest.Text("still no idea"), lmtest.Text("none at all"), lmtest.Text(`{"answer": 1}`)),
			opts:    []adapter.CallOption{model("m", 0), adapter.NoFallback(), adapter.WithReask(2)}},
		{name: "re-ask, then the fallback re-asks", want: nil, calls: 4, sig: "question -> answer: int",
			replies: one(lmtest.Text("no idea"), lmtest.Text(""), lmtest.Text(`{"answer": "a dozen"}`), lmtest.Text(`{"answer": 12}`)),
			opts:    []adapter.CallOption{model("m", 0), adapter.WithReask(2)}},
		{name: "XML", want: nil, calls: 1, sig: "question -> answer, n: int",
			replies: one(lmtest.Text("<answer>Paris &amp; more</answer>\n<n>3</n>")),
			opts:    []adapter.CallOption{model("m", 0), adapter.UseAdapter(adapter.XML{})}},
	}
}

func (c equivalenceCase) signature(t *testing.T) *signature.Signature {
	if c.fields != nil {
		sig, err := signature.New("", []signature.Field{{Name: "question"}}, c.fields)
		require.NoError(t, err)
		return sig
	}
	sig, err := signature.Parse(c.sig, signature.WithTypes(types.Names()))
	require.NoError(t, err)
	return sig
}

func (c equivalenceCase) in() adapter.Values {
	if c.inputs != nil {
		return c.inputs
	}
	return adapter.Values{"question": "What is it?"}
}

// outcome is what a Call or a Stream gave, in comparable form.
type outcome struct {
	res  *adapter.Result
	e    error
	err  string
	reqs int
}

func runCall(t *testing.T, c equivalenceCase) outcome {
	srv := lmtest.NewServer(c.replies()...)
	defer srv.Close()
	res, err := adapter.Call(t.Context(), lmFor(srv, c.caps), c.signature(t), nil, c.in(), c.opts...)
	return outcome{res, err, errText(err), len(srv.Requests())}
}

func runStream(t *testing.T, c equivalenceCase, size int) (outcome, map[string]string) {
	var replies []lmtest.Reply
	for _, r := range c.replies() {
		replies = append(replies, r.ChunkSize(size))
	}
	srv := lmtest.NewServer(replies...)
	defer srv.Close()
	fields := map[string]string{}
	var res *adapter.Result
	var serr error
	for ch, err := range adapter.Stream(t.Context(), lmFor(srv, c.caps).(adapter.StreamingLM), c.signature(t), nil, c.in(), c.opts...) {
		if err != nil {
			serr = err
			break
		}
		if ch.Done {
			res = ch.Result
		}
		fields[ch.Adapter+"/"+ch.Field] += ch.Delta
	}
	for _, r := range srv.Requests() {
		assert.True(t, r.Chat.Stream, "every request of a Stream streams")
	}
	return outcome{res, serr, errText(serr), len(srv.Requests())}, fields
}

func lmFor(srv *lmtest.Server, caps *adapter.Capabilities) adapter.LM {
	if caps != nil {
		return adapter.WithCapabilities(srv.Client(), *caps)
	}
	return srv.Client()
}

// errText is an error's type and text, with durations (which differ from
// run to run) blanked.
func errText(err error) string {
	if err == nil {
		return ""
	}
	return durations.ReplaceAllString(fmt.Sprintf("%T: %v", err, err), "D")
}

var durations = regexp.MustCompile(`[0-9.]+(ns|µs|ms|s)\b`)

// TestCallStreamEquivalence runs every scripted reply through Call and
// through Stream at several chunk sizes and requires the same outputs,
// errors, calls, usage, mode, model, fingerprint and completions: one
// pipeline under both.
func TestCallStreamEquivalence(t *testing.T) {
	for _, c := range equivalenceCases() {
		t.Run(c.name, func(t *testing.T) {
			want := runCall(t, c)
			var lmErr *adapter.LMError
			switch c.want {
			case nil:
				require.NoError(t, want.e, "Call")
			case errInternal:
				require.ErrorAs(t, want.e, &lmErr, "Call")
			default:
				require.ErrorIs(t, want.e, c.want, "Call")
			}
			if want.res != nil {
				assert.Equal(t, c.calls, want.res.Calls, "Call: calls")
			}
			for _, size := range []int{1, 3, 16, 1 << 20} {
				got, _ := runStream(t, c, size)
				assert.Equal(t, want.err, got.err, "chunk size %d: error", size)
				assert.Equal(t, want.reqs, got.reqs, "chunk size %d: requests", size)
				if want.err != "" {
					continue
				}
				require.NotNil(t, got.res, "chunk size %d: no Done chunk", size)
				w, g := *want.res, *got.res
				assert.Equal(t, w.Outputs, g.Outputs, "chunk size %d: outputs", size)
				assert.Equal(t, w.Adapter, g.Adapter, "chunk size %d: adapter", size)
				assert.Equal(t, w.Calls, g.Calls, "chunk size %d: calls", size)
				assert.Equal(t, w.Usage, g.Usage, "chunk size %d: usage", size)
				assert.Equal(t, w.UsageByModel, g.UsageByModel, "chunk size %d: usage by model", size)
				assert.Equal(t, w.Mode, g.Mode, "chunk size %d: mode", size)
				assert.Equal(t, w.Model, g.Model, "chunk size %d: model", size)
				assert.Equal(t, w.SystemFingerprint, g.SystemFingerprint, "chunk size %d: fingerprint", size)
				assert.Equal(t, w.Completions, g.Completions, "chunk size %d: completions", size)
				assert.Equal(t, w.Retries, g.Retries, "chunk size %d: retries", size)
				assert.Equal(t, w.Logprobs, g.Logprobs, "chunk size %d: logprobs", size)
				assert.Equal(t, errText(w.FallbackCause), errText(g.FallbackCause), "chunk size %d: fallback cause", size)
				assert.Equal(t, w.Reasks, g.Reasks, "chunk size %d: re-asks", size)
				assert.Equal(t, errText(w.ReaskCause), errText(g.ReaskCause), "chunk size %d: re-ask cause", size)
			}
		})
	}
}

// FuzzCallStream drives Call and Stream with arbitrary replies, finish
// reasons and chunk sizes, and with nil or zero arguments (LM, context,
// signature, inputs, demos, options): neither panics, and both give the
// same outputs and the same error.
func FuzzCallStream(f *testing.F) {
	f.Add("[[ ## answer ## ]]\n42\n\n[[ ## completed ## ]]", uint8(0), uint8(0), uint8(3))
	f.Add(`{"answer": 7}`, uint8(1), uint8(1<<7), uint8(1))
	f.Add("##Answer##**[##0##]", uint8(2), uint8(1<<6), uint8(5))
	f.Add("<think>x</think>[[ ## answer ## ]] 1", uint8(3), uint8(1<<4), uint8(64))
	for i := range 8 {
		f.Add("x", uint8(0), uint8(1<<i), uint8(2))
	}
	finishes := []string{"stop", "length", "", "content_filter", "tool_calls"}
	srv := lmtest.NewServer()
	f.Cleanup(srv.Close)
	sig := mustParse(f, "question -> answer: int")
	f.Fuzz(func(t *testing.T, reply string, finish, flags, size uint8) {
		if !utf8.ValidString(reply) {
			return // the server would send U+FFFD: not the reply given
		}
		r := lmtest.Text(reply).WithFinish(finishes[int(finish)%len(finishes)]).WithUsage(10, 5).ChunkSize(int(size%32) + 1)
		srv.Handle(func(lmtest.Request) lmtest.Reply { return r })
		ctx := t.Context()
		var lm adapter.StreamingLM = srv.Client()
		s, in := sig, adapter.Values{"question": "q"}
		demos := []adapter.Values{{"question": "d", "answer": 1}}
		opts := []adapter.CallOption{adapter.NoRetry()}
		if flags&1 != 0 {
			lm = nil
		}
		if flags&2 != 0 {
			s = nil
		}
		if flags&4 != 0 {
			in = nil
		}
		if flags&8 != 0 {
			ctx = nil //nolint:staticcheck // a nil context is what is tested
		}
		if flags&16 != 0 {
			opts = append(opts, adapter.NoFallback())
		}
		if flags&32 != 0 {
			opts = append(opts, nil)
		}
		if flags&64 != 0 {
			demos = []adapter.Values{nil, {}, {"answer": nil}}
		}
		if flags&128 != 0 {
			opts = append(opts, adapter.UseAdapter(adapter.JSON{}))
		}
		var llm adapter.LM
		if lm != nil {
			llm = lm
		}
		res, err := adapter.Call(ctx, llm, s, demos, in, opts...)
		var sres *adapter.Result
		var serr error
		for ch, e := range adapter.Stream(ctx, lm, s, demos, in, opts...) {
			if e != nil {
				serr = e
				break
			}
			if ch.Done {
				sres = ch.Result
			}
		}
		if errText(err) != errText(serr) {
			t.Fatalf("Call: %v\nStream: %v", err, serr)
		}
		if err == nil && !reflect.DeepEqual(res.Outputs, sres.Outputs) {
			t.Fatalf("Call: %v\nStream: %v", res.Outputs, sres.Outputs)
		}
	})
}
