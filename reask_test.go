package adapter_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/lmtest"
	"github.com/sigwire/adapter/signature"
)

// Replies for "question -> answer: int": one whose value is no int, one
// that reads.
const (
	reaskBad  = "[[ ## answer ## ]]\nseveral\n\n[[ ## completed ## ]]"
	reaskBad2 = "[[ ## answer ## ]]\nquite a few\n\n[[ ## completed ## ]]"
	reaskGood = "[[ ## answer ## ]]\n42\n\n[[ ## completed ## ]]"
)

var reaskModel = adapter.WithRequest(openai.ChatCompletionRequest{Model: "m"})

// requirementsOf returns the output requirements a's Format ends the
// request with, through the public Prompt hook that is handed them.
func requirementsOf(t *testing.T, a adapter.Adapter, sig *signature.Signature) string {
	t.Helper()
	var got string
	p := &adapter.Prompt{OutputRequirements: func(_ *signature.Signature, text string) string { got = text; return text }}
	var err error
	switch a.(type) {
	case adapter.Chat:
		_, err = adapter.Chat{Options: adapter.Options{Prompt: p}}.Format(sig, nil, adapter.Values{"question": "q"})
	case adapter.JSON:
		_, err = adapter.JSON{Options: adapter.Options{Prompt: p}}.Format(sig, nil, adapter.Values{"question": "q"})
	case adapter.XML:
		_, err = adapter.XML{Options: adapter.Options{Prompt: p}}.Format(sig, nil, adapter.Values{"question": "q"})
	case adapter.BAML:
		_, err = adapter.BAML{Options: adapter.Options{Prompt: p}}.Format(sig, nil, adapter.Values{"question": "q"})
	default:
		t.Fatalf("no requirements for %T", a)
	}
	require.NoError(t, err)
	require.NotEmpty(t, got)
	return got
}

// assertReask checks that a re-ask request is the first request's
// messages, then the failed reply as an assistant turn, then a user turn
// that names the field, says what was wrong and ends with the adapter's
// output requirements; and that everything else in the request is the
// first one's.
func assertReask(t *testing.T, first, reask openai.ChatCompletionRequest, reply, field, problem, requirements string) {
	t.Helper()
	n := len(first.Messages)
	require.Len(t, reask.Messages, n+2, "the re-ask adds two turns to the adapter's messages")
	for i, m := range first.Messages {
		assert.Equal(t, m.Role, reask.Messages[i].Role, "message %d", i)
		assert.Equal(t, m.Content, reask.Messages[i].Content, "message %d", i)
	}
	assert.Equal(t, openai.ChatMessageRoleAssistant, reask.Messages[n].Role)
	assert.Equal(t, reply, reask.Messages[n].Content, "the assistant turn is the reply as it came")
	user := reask.Messages[n+1]
	assert.Equal(t, openai.ChatMessageRoleUser, user.Role)
	assert.Contains(t, user.Content, "`"+field+"`", "the user turn names the field")
	assert.Contains(t, user.Content, problem, "the user turn says what was wrong")
	assert.True(t, strings.HasSuffix(user.Content, requirements), "the user turn ends with the adapter's output requirements:\n%s", user.Content)
	if requirements != "" {
		assert.Equal(t, 1, strings.Count(user.Content, requirements), "the requirements once")
	}
	first.Messages, reask.Messages = nil, nil
	assert.Equal(t, first, reask, "the re-ask's request is the first one's but for its messages")
}

// TestReaskUnreadableValue: a reply whose int does not read is sent back
// with the error, for every adapter, and the second reply is the result.
func TestReaskUnreadableValue(t *testing.T) {
	sig := mustParse(t, "question -> answer: int")
	for _, c := range []struct {
		a         adapter.Adapter
		bad, good string
	}{
		{adapter.Chat{}, reaskBad, reaskGood},
		{adapter.JSON{}, `{"answer": "several"}`, `{"answer": 42}`},
		{adapter.XML{}, "<answer>several</answer>", "<answer>42</answer>"},
		{adapter.BAML{}, `{"answer": "several"}`, `{"answer": 42}`},
	} {
		t.Run(c.a.Name(), func(t *testing.T) {
			srv := lmtest.NewServer(lmtest.Text(c.bad).WithUsage(100, 10), lmtest.Text(c.good).WithUsage(130, 5))
			defer srv.Close()
			res, err := adapter.Call(t.Context(), srv.Client(), sig, nil, adapter.Values{"question": "q"},
				reaskModel, adapter.UseAdapter(c.a), adapter.WithReask(1))
			require.NoError(t, err)
			assert.Equal(t, 42, res.Outputs[0]["answer"])
			assert.Equal(t, c.a.Name(), res.Adapter, "the re-ask comes before the fallback")
			assert.Nil(t, res.FallbackCause)
			assert.Equal(t, 2, res.Calls)
			assert.Equal(t, 1, res.Reasks)
			assert.Equal(t, 230, res.Usage.PromptTokens, "the re-ask's tokens are counted")
			var pe *adapter.ParseError
			require.ErrorAs(t, res.ReaskCause, &pe)
			assert.Equal(t, "answer", pe.Field)
			assert.Equal(t, c.bad, pe.Completion)

			reqs := srv.Requests()
			require.Len(t, reqs, 2)
			assertReask(t, reqs[0].Chat, reqs[1].Chat, c.bad, "answer", `"several" is not an int`, requirementsOf(t, c.a, sig))
		})
	}
}

// TestReaskConstraint: a value that breaks its constraint is re-asked.
func TestReaskConstraint(t *testing.T) {
	sig, err := signature.New("", []signature.Field{{Name: "question"}}, []signature.Field{{Name: "n", Type: reflect.TypeFor[int](),
		Constraints: []signature.Constraint{{Op: signature.GE, Value: 0}}}})
	require.NoError(t, err)
	bad := "[[ ## n ## ]]\n-5\n\n[[ ## completed ## ]]"
	srv := lmtest.NewServer(lmtest.Text(bad), lmtest.Text("[[ ## n ## ]]\n3\n\n[[ ## completed ## ]]"))
	defer srv.Close()
	res, err := adapter.Call(t.Context(), srv.Client(), sig, nil, adapter.Values{"question": "q"}, reaskModel, adapter.WithReask(1))
	require.NoError(t, err)
	assert.Equal(t, 3, res.Outputs[0]["n"])
	assert.Equal(t, "chat", res.Adapter)
	assert.Equal(t, 1, res.Reasks)
	assert.ErrorIs(t, res.ReaskCause, adapter.ErrConstraint)
	reqs := srv.Requests()
	require.Len(t, reqs, 2)
	assertReask(t, reqs[0].Chat, reqs[1].Chat, bad, "n", "-5 is not greater than or equal to 0", requirementsOf(t, adapter.Chat{}, sig))
}

// TestReaskCustomRequirements: a Prompt's output requirements are the
// ones repeated; requirements left out are not restated.
func TestReaskCustomRequirements(t *testing.T) {
	sig := mustParse(t, "question -> answer: int")
	for _, c := range []struct {
		name, req string
	}{{"custom", "Answer with the marker sections, please."}, {"none", ""}} {
		t.Run(c.name, func(t *testing.T) {
			srv := lmtest.NewServer(lmtest.Text(reaskBad), lmtest.Text(reaskGood))
			defer srv.Close()
			a := adapter.Chat{Options: adapter.Options{Prompt: &adapter.Prompt{OutputRequirements: func(*signature.Signature, string) string { return c.req }}}}
			_, err := adapter.Call(t.Context(), srv.Client(), sig, nil, adapter.Values{"question": "q"}, reaskModel, adapter.UseAdapter(a), adapter.WithReask(1))
			require.NoError(t, err)
			reqs := srv.Requests()
			require.Len(t, reqs, 2)
			assertReask(t, reqs[0].Chat, reqs[1].Chat, reaskBad, "answer", `"several" is not an int`, c.req)
			assert.NotContains(t, reqs[1].Chat.Messages[len(reqs[1].Chat.Messages)-1].Content, "Respond with the corresponding output fields",
				"the adapter's own requirements are not restated over the Prompt's")
		})
	}
}

// TestReaskNever: a reply cut by the token limit, refused or filtered, an
// empty reply, a parser panic and a failed request are never re-asked.
func TestReaskNever(t *testing.T) {
	sig := mustParse(t, "question -> answer: int")
	boom := `{"error":{"message":"boom"}}`
	for _, c := range []struct {
		name    string
		replies []lmtest.Reply
		opts    []adapter.CallOption
		want    error
	}{
		{"truncated", []lmtest.Reply{lmtest.Text("[[ ## answer ## ]]\nsev").WithFinish("length")}, nil, adapter.ErrTruncated},
		{"stream cut", []lmtest.Reply{lmtest.Text("[[ ## answer ## ]]\nseveral").Cut()}, nil, adapter.ErrTruncated},
		{"ends inside a value", []lmtest.Reply{lmtest.Text(`{"answer": "sev`)}, []adapter.CallOption{adapter.UseAdapter(adapter.JSON{})}, adapter.ErrTruncated},
		{"refusal", []lmtest.Reply{lmtest.Text("").WithRefusal("I can't help with that.")}, nil, adapter.ErrRefusal},
		{"content filter", []lmtest.Reply{lmtest.Text("[[ ## answer ## ]]\nsev").WithFinish("content_filter")}, nil, adapter.ErrRefusal},
		{"empty", []lmtest.Reply{lmtest.Text("  \n")}, nil, adapter.ErrEmptyResponse},
		{"parser panic", []lmtest.Reply{lmtest.Text(reaskBad)}, []adapter.CallOption{adapter.UseAdapter(panicky{})}, adapter.ErrParserPanic},
		{"LM error", []lmtest.Reply{lmtest.Error(http.StatusInternalServerError, boom)}, []adapter.CallOption{adapter.NoRetry()}, nil},
		{"context window", []lmtest.Reply{lmtest.ContextLengthExceeded()}, nil, adapter.ErrContextWindow},
	} {
		for _, stream := range []bool{false, true} {
			if c.name == "stream cut" && !stream {
				continue // a blocking reply is never cut
			}
			t.Run(fmt.Sprintf("%s/stream=%v", c.name, stream), func(t *testing.T) {
				replies := append(c.replies, lmtest.Text(reaskGood), lmtest.Text(reaskGood))
				srv := lmtest.NewServer(replies...)
				defer srv.Close()
				opts := append([]adapter.CallOption{reaskModel, adapter.NoFallback(), adapter.WithReask(3)}, c.opts...)
				res, err, reasks := runEither(t, stream, srv, sig, opts...)
				require.Error(t, err)
				assert.Zero(t, reasks)
				if c.want != nil {
					assert.ErrorIs(t, err, c.want)
				} else {
					var lmErr *adapter.LMError
					assert.ErrorAs(t, err, &lmErr)
				}
				assert.Len(t, srv.Requests(), 1, "no re-ask")
				if res != nil {
					assert.Zero(t, res.Reasks)
					assert.Nil(t, res.ReaskCause)
				}
			})
		}
	}
}

// runEither runs a Call or a Stream and returns its Result (a Stream's
// when it carries one), its error, and the re-asks it reported: the
// Result's, or a Stream's chunks with Reask set.
func runEither(t *testing.T, stream bool, srv *lmtest.Server, sig *signature.Signature, opts ...adapter.CallOption) (*adapter.Result, error, int) {
	t.Helper()
	in := adapter.Values{"question": "q"}
	if !stream {
		res, err := adapter.Call(t.Context(), srv.Client(), sig, nil, in, opts...)
		return res, err, res.Reasks
	}
	var res *adapter.Result
	marks := 0
	for ch, err := range adapter.Stream(t.Context(), srv.Client(), sig, nil, in, opts...) {
		if err != nil {
			return ch.Result, err, marks
		}
		if ch.Reask != 0 {
			marks++
			assert.Equal(t, marks, ch.Reask, "re-asks are numbered in order")
		}
		if ch.Done {
			res = ch.Result
			assert.Equal(t, res.Reasks, marks, "a chunk for every re-ask")
		}
	}
	return res, nil, marks
}

// TestReaskCancelled: a context cancelled while the first reply was read
// asks no more.
func TestReaskCancelled(t *testing.T) {
	sig := mustParse(t, "question -> answer: int")
	srv := lmtest.NewServer(lmtest.Text(reaskBad), lmtest.Text(reaskGood))
	defer srv.Close()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	tr := &adapter.Trace{ParseDone: func(adapter.ParseInfo) { cancel() }}
	res, err := adapter.Call(ctx, srv.Client(), sig, nil, adapter.Values{"question": "q"}, reaskModel, adapter.NoFallback(), adapter.WithReask(2), adapter.UseTrace(tr))
	// The call's error is its context's (see TestParseHonoursCancellation);
	// the reply stays in the Result.
	require.ErrorIs(t, err, context.Canceled)
	require.NotNil(t, res)
	assert.Equal(t, []string{reaskBad}, res.Completions)
	assert.Len(t, srv.Requests(), 1)
}

// TestReaskBound: n re-asks at most; each carries only the latest reply;
// the call's error is the last reply's.
func TestReaskBound(t *testing.T) {
	sig := mustParse(t, "question -> answer: int")
	bad3 := "[[ ## answer ## ]]\nlots\n\n[[ ## completed ## ]]"
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			srv := lmtest.NewServer(lmtest.Text(reaskBad), lmtest.Text(reaskBad2), lmtest.Text(bad3), lmtest.Text(reaskGood))
			defer srv.Close()
			res, err, reasks := runEither(t, stream, srv, sig, reaskModel, adapter.NoFallback(), adapter.WithReask(2))
			var pe *adapter.ParseError
			require.ErrorAs(t, err, &pe)
			assert.Equal(t, bad3, pe.Completion, "the call's error is the last reply's")
			var fe *adapter.FallbackError
			assert.False(t, errors.As(err, &fe))
			assert.Equal(t, 2, reasks)
			if res != nil { // a Stream's error carries no Result
				assert.Equal(t, 2, res.Reasks)
				assert.Equal(t, 3, res.Calls)
				require.ErrorAs(t, res.ReaskCause, &pe)
				assert.Equal(t, reaskBad2, pe.Completion, "why the latest re-ask ran")
			}
			reqs := srv.Requests()
			require.Len(t, reqs, 3, "1 + 2 re-asks")
			req := requirementsOf(t, adapter.Chat{}, sig)
			assertReask(t, reqs[0].Chat, reqs[1].Chat, reaskBad, "answer", `"several" is not an int`, req)
			assertReask(t, reqs[0].Chat, reqs[2].Chat, reaskBad2, "answer", `"quite a few" is not an int`, req)
		})
	}
}

// reaskRecorder writes one line per event of an attempt, with the re-ask
// number and the causes (a reply named by names).
func reaskRecorder(names map[string]string) (*adapter.Trace, func() []string) {
	var mu sync.Mutex
	var lines []string
	add := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, fmt.Sprintf(format, args...))
	}
	field := func(err error) string {
		var pe *adapter.ParseError
		if errors.As(err, &pe) {
			return pe.Adapter + "/" + pe.Field + ":" + names[pe.Completion]
		}
		return fmt.Sprint(err)
	}
	return &adapter.Trace{
			FormatStart: func(i adapter.FormatStartInfo) {
				add("format %s#%d reask=%d fallback-cause=%s reask-cause=%s", i.Adapter, i.Attempt, i.Reask, field(i.FallbackCause), field(i.ReaskCause))
			},
			FormatDone: func(i adapter.FormatInfo) {
				add("formatted %s#%d reask=%d msgs=%d", i.Adapter, i.Attempt, i.Reask, len(i.Messages))
			},
			LMCallStart: func(i adapter.LMCallStartInfo) {
				add("lm %s#%d reask=%d msgs=%d", i.Adapter, i.Attempt, i.Reask, len(i.Request.Messages))
			},
			LMCallDone: func(i adapter.LMCallDoneInfo) { add("lm done %s#%d reask=%d", i.Adapter, i.Attempt, i.Reask) },
			ParseStart: func(i adapter.ParseStartInfo) { add("parse %s#%d reask=%d", i.Adapter, i.Attempt, i.Reask) },
			ParseDone: func(i adapter.ParseInfo) {
				add("parsed %s#%d reask=%d ok=%v", i.Adapter, i.Attempt, i.Reask, i.Err == nil)
			},
		}, func() []string {
			mu.Lock()
			defer mu.Unlock()
			return lines
		}
}

// TestReaskThenFallback: the re-asks come first, with the same adapter,
// and share the call's budget with the fallback, which re-asks with what
// is left; the trace says which request is which re-ask and why.
func TestReaskThenFallback(t *testing.T) {
	sig := mustParse(t, "question -> answer: int")
	const dozen = `{"answer": "a dozen"}`
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			// Chat's reply fails; its re-ask is empty (no re-ask for that);
			// the JSON fallback's reply fails; its re-ask reads.
			srv := lmtest.NewServer(lmtest.Text(reaskBad), lmtest.Text(""), lmtest.Text(dozen), lmtest.Text(`{"answer": 12}`))
			defer srv.Close()
			tr, lines := reaskRecorder(map[string]string{reaskBad: "bad", dozen: "dozen", "": "empty"})
			res, err, reasks := runEither(t, stream, srv, sig, reaskModel, adapter.WithReask(2), adapter.UseTrace(tr))
			require.NoError(t, err)
			assert.Equal(t, 12, res.Outputs[0]["answer"])
			assert.Equal(t, "json", res.Adapter)
			assert.Equal(t, 4, res.Calls)
			assert.Equal(t, 2, res.Reasks)
			assert.Equal(t, 2, reasks)
			assert.ErrorIs(t, res.FallbackCause, adapter.ErrEmptyResponse, "the fallback ran after the re-ask's empty reply")
			var pe *adapter.ParseError
			require.ErrorAs(t, res.ReaskCause, &pe)
			assert.Equal(t, "json", pe.Adapter)
			assert.Equal(t, []string{
				"format chat#1 reask=0 fallback-cause=<nil> reask-cause=<nil>",
				"formatted chat#1 reask=0 msgs=2",
				"lm chat#1 reask=0 msgs=2",
				"lm done chat#1 reask=0",
				"parse chat#1 reask=0",
				"parsed chat#1 reask=0 ok=false",
				"format chat#1 reask=1 fallback-cause=<nil> reask-cause=chat/answer:bad",
				"formatted chat#1 reask=1 msgs=4",
				"lm chat#1 reask=1 msgs=4",
				"lm done chat#1 reask=1",
				"format json#2 reask=0 fallback-cause=chat/:empty reask-cause=<nil>",
				"formatted json#2 reask=0 msgs=2",
				"lm json#2 reask=0 msgs=2",
				"lm done json#2 reask=0",
				"parse json#2 reask=0",
				"parsed json#2 reask=0 ok=false",
				"format json#2 reask=2 fallback-cause=<nil> reask-cause=json/answer:dozen",
				"formatted json#2 reask=2 msgs=4",
				"lm json#2 reask=2 msgs=4",
				"lm done json#2 reask=2",
				"parse json#2 reask=2",
				"parsed json#2 reask=2 ok=true",
			}, lines())
			reqs := srv.Requests()
			require.Len(t, reqs, 4)
			assertReask(t, reqs[0].Chat, reqs[1].Chat, reaskBad, "answer", `"several" is not an int`, requirementsOf(t, adapter.Chat{}, sig))
			assertReask(t, reqs[2].Chat, reqs[3].Chat, dozen, "answer", `"a dozen" is not an int`, requirementsOf(t, adapter.JSON{}, sig))
		})
	}
	t.Run("no budget left for the fallback", func(t *testing.T) {
		srv := lmtest.NewServer(lmtest.Text(reaskBad), lmtest.Text(reaskBad2), lmtest.Text(dozen), lmtest.Text(`{"answer": 12}`))
		defer srv.Close()
		res, err := adapter.Call(t.Context(), srv.Client(), sig, nil, adapter.Values{"question": "q"}, reaskModel, adapter.WithReask(1))
		var fe *adapter.FallbackError
		require.ErrorAs(t, err, &fe)
		var pe *adapter.ParseError
		require.ErrorAs(t, fe.First, &pe)
		assert.Equal(t, reaskBad2, pe.Completion, "First is the first adapter's last error")
		require.ErrorAs(t, err, &pe)
		assert.Equal(t, dozen, pe.Completion, "the fallback's reply is not re-asked")
		assert.Equal(t, 1, res.Reasks)
		assert.Equal(t, 3, res.Calls)
		assert.Len(t, srv.Requests(), 3)
	})
}

// TestReaskCached: a re-ask is a request of its own: a cache never serves
// it the reply it corrects, and never stores a reply that failed.
func TestReaskCached(t *testing.T) {
	sig := mustParse(t, "question -> answer: int")
	srv := lmtest.NewServer(lmtest.Text(reaskBad), lmtest.Text(reaskGood), lmtest.Text(reaskBad), lmtest.Text("[[ ## answer ## ]]\n7"))
	defer srv.Close()
	lm := adapter.WithMiddleware(srv.Client(), adapter.Cached(adapter.NewLRU(10)))
	in := adapter.Values{"question": "q"}
	res, err := adapter.Call(t.Context(), lm, sig, nil, in, reaskModel, adapter.WithReask(1))
	require.NoError(t, err)
	assert.Equal(t, 42, res.Outputs[0]["answer"])
	assert.Equal(t, 0, res.CacheHits)
	assert.Len(t, srv.Requests(), 2)

	// The same call again: the first request is not served the failed
	// reply (it was never stored) and goes to the LM, which fails the
	// same way; the re-ask is then the stored request, served by the
	// cache.
	res, err = adapter.Call(t.Context(), lm, sig, nil, in, reaskModel, adapter.WithReask(1))
	require.NoError(t, err)
	assert.Equal(t, 42, res.Outputs[0]["answer"])
	assert.Equal(t, 1, res.CacheHits)
	assert.Equal(t, 2, res.Calls)
	assert.Equal(t, 1, res.Reasks)
	assert.Len(t, srv.Requests(), 3, "only the first request reached the LM")
}

// TestReaskStream: in a Stream, a chunk with Reask set comes between the
// failed reply's deltas and the re-ask's, which alone give the value.
func TestReaskStream(t *testing.T) {
	sig := mustParse(t, "question -> reasoning, answer: int")
	bad := "[[ ## reasoning ## ]]\nCounting.\n\n[[ ## answer ## ]]\nseveral\n\n[[ ## completed ## ]]"
	good := "[[ ## reasoning ## ]]\nSix sevens.\n\n[[ ## answer ## ]]\n42\n\n[[ ## completed ## ]]"
	for _, size := range []int{1, 3, 16, 1 << 20} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			srv := lmtest.NewServer(lmtest.Text(bad).ChunkSize(size), lmtest.Text(good).ChunkSize(size))
			defer srv.Close()
			var chunks []adapter.Chunk
			for ch, err := range adapter.Stream(t.Context(), srv.Client(), sig, nil, adapter.Values{"question": "q"}, reaskModel, adapter.WithReask(1)) {
				require.NoError(t, err)
				chunks = append(chunks, ch)
			}
			marks := 0
			fields := map[string]string{}   // reset at the re-ask's chunk
			replaced := map[string]string{} // Chunk.Replace applied, as its doc says
			after := map[string]bool{}      // fields given since the re-ask's chunk
			for _, ch := range chunks {
				if ch.Reask != 0 {
					marks++
					assert.Equal(t, 1, ch.Reask)
					assert.Equal(t, adapter.Chunk{Reask: 1, Adapter: "chat"}, ch, "a re-ask chunk carries nothing else")
					fields = map[string]string{} // what came before is void
					continue
				}
				if marks > 0 && ch.Field != "" && !after[ch.Field] {
					after[ch.Field] = true
					assert.True(t, ch.Replace, "the re-ask's first delta of %s replaces the failed reply's", ch.Field)
				}
				fields[ch.Field] += ch.Delta
				if ch.Replace {
					replaced[ch.Field] = ""
				}
				replaced[ch.Field] += ch.Delta
			}
			assert.Equal(t, 1, marks)
			assert.Equal(t, "Six sevens.", fields["reasoning"])
			assert.Equal(t, "42", fields["answer"])
			assert.Equal(t, "Six sevens.", replaced["reasoning"])
			assert.Equal(t, "42", replaced["answer"])
			last := chunks[len(chunks)-1]
			require.True(t, last.Done)
			assert.Equal(t, 1, last.Result.Reasks)
			assert.Equal(t, 2, last.Result.Calls)
			assert.Equal(t, adapter.Values{"reasoning": "Six sevens.", "answer": 42}, last.Result.Outputs[0])
			reqs := srv.Requests()
			require.Len(t, reqs, 2)
			assert.True(t, reqs[1].Chat.Stream)
			assertReask(t, reqs[0].Chat, reqs[1].Chat, bad, "answer", `"several" is not an int`, requirementsOf(t, adapter.Chat{}, sig))
		})
	}
}

// TestReaskOption: off by default; a module's default re-asks, which a
// call's WithReask(0) turns off.
func TestReaskOption(t *testing.T) {
	sig := mustParse(t, "question -> answer: int")
	for _, c := range []struct {
		name  string
		opts  []adapter.CallOption
		calls int
	}{
		{"default off", nil, 1},
		{"module default", []adapter.CallOption{adapter.Defaults(adapter.WithReask(2))}, 2},
		{"call turns it off", []adapter.CallOption{adapter.Defaults(adapter.WithReask(2)), adapter.WithReask(0)}, 1},
		{"negative is off", []adapter.CallOption{adapter.WithReask(-1)}, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := lmtest.NewServer(lmtest.Text(reaskBad), lmtest.Text(reaskGood))
			defer srv.Close()
			opts := append([]adapter.CallOption{reaskModel, adapter.NoFallback()}, c.opts...)
			res, _ := adapter.Call(t.Context(), srv.Client(), sig, nil, adapter.Values{"question": "q"}, opts...)
			assert.Equal(t, c.calls, res.Calls)
			assert.Equal(t, c.calls-1, res.Reasks)
		})
	}
}

// TestReaskKeepsResponseFormatTier: after the provider rejected the
// structured-output schema, a re-ask asks at the tier it took, without a
// second rejected request.
func TestReaskKeepsResponseFormatTier(t *testing.T) {
	sig := mustParse(t, "question -> answer: int")
	srv := lmtest.NewServer(
		lmtest.Error(http.StatusBadRequest, `{"error":{"message":"Invalid schema for response_format 'DSPyProgramOutputs'","type":"invalid_request_error","param":"response_format","code":null}}`),
		lmtest.Text(`{"answer": "several"}`), lmtest.Text(`{"answer": 42}`), lmtest.Text(`{"answer": 43}`))
	defer srv.Close()
	res, err := adapter.Call(t.Context(), srv.Client(), sig, nil, adapter.Values{"question": "q"},
		adapter.WithRequest(openai.ChatCompletionRequest{Model: "gpt-4o"}), adapter.UseAdapter(adapter.JSON{}), adapter.NoRetry(), adapter.WithReask(1))
	require.NoError(t, err)
	assert.Equal(t, 42, res.Outputs[0]["answer"])
	assert.Equal(t, adapter.ModeJSONObject, res.Mode)
	assert.Equal(t, 3, res.Calls)
	reqs := srv.Requests()
	require.Len(t, reqs, 3)
	assert.Equal(t, openai.ChatCompletionResponseFormatTypeJSONSchema, reqs[0].Chat.ResponseFormat.Type)
	for _, r := range reqs[1:] {
		assert.Equal(t, openai.ChatCompletionResponseFormatTypeJSONObject, r.Chat.ResponseFormat.Type)
	}
	assertReask(t, reqs[1].Chat, reqs[2].Chat, `{"answer": "several"}`, "answer", `"several" is not an int`, requirementsOf(t, adapter.JSON{}, sig))
}

// FuzzReask drives a call that may re-ask once with two arbitrary
// replies, the first with any finish reason: Call and Stream agree on
// the outputs, the error and the re-asks; a call re-asks exactly when the
// first reply's error is one a re-ask may correct (a *ParseError, not
// truncated, empty or a parser panic), as a call without re-asks reports
// it; the re-ask is the first request's messages, the first reply and a
// user turn ending with the adapter's output requirements; and a failed
// re-ask is not asked again.
func FuzzReask(f *testing.F) {
	f.Add(reaskBad, reaskGood, uint8(0), false, uint8(3))
	f.Add(reaskBad, reaskBad2, uint8(0), false, uint8(1))
	f.Add(`{"answer": "x"}`, `{"answer": 1}`, uint8(0), true, uint8(7))
	f.Add("[[ ## answer ## ]]\n4", "[[ ## answer ## ]]\n5", uint8(1), false, uint8(2))
	f.Add("", reaskGood, uint8(0), false, uint8(2))
	f.Add("[[ ## answer ## ]]\n1 or 2", "no", uint8(3), true, uint8(4))
	f.Add("<think>hm</think>", "[[ ## answer ## ]]\n-0", uint8(2), false, uint8(5))
	finishes := []string{"stop", "length", "", "content_filter", "tool_calls"}
	srv := lmtest.NewServer()
	f.Cleanup(srv.Close)
	sig := mustParse(f, "question -> answer: int")
	f.Fuzz(func(t *testing.T, first, second string, finish uint8, useJSON bool, size uint8) {
		if !utf8.ValidString(first) || !utf8.ValidString(second) {
			return // the server would send U+FFFD: not the reply given
		}
		chunk := int(size%32) + 1
		one := lmtest.Text(first).WithFinish(finishes[int(finish)%len(finishes)]).ChunkSize(chunk)
		two := lmtest.Text(second).ChunkSize(chunk)
		var mu sync.Mutex
		var reqs []openai.ChatCompletionRequest
		srv.Handle(func(r lmtest.Request) lmtest.Reply {
			mu.Lock()
			defer mu.Unlock()
			reqs = append(reqs, r.Chat)
			if len(r.Chat.Messages) <= 2 {
				return one
			}
			return two
		})
		var a adapter.Adapter = adapter.Chat{}
		if useJSON {
			a = adapter.JSON{}
		}
		in := adapter.Values{"question": "q"}
		opts := []adapter.CallOption{adapter.NoRetry(), adapter.NoFallback(), adapter.UseAdapter(a)}
		_, err0 := adapter.Call(t.Context(), srv.Client(), sig, nil, in, opts...)
		var pe *adapter.ParseError
		want := errors.As(err0, &pe) && !errors.Is(err0, adapter.ErrTruncated) &&
			!errors.Is(err0, adapter.ErrEmptyResponse) && !errors.Is(err0, adapter.ErrParserPanic)

		mu.Lock()
		reqs = nil
		mu.Unlock()
		opts = append(opts, adapter.WithReask(1))
		res, err := adapter.Call(t.Context(), srv.Client(), sig, nil, in, opts...)
		mu.Lock()
		got := reqs
		reqs = nil
		mu.Unlock()
		if want != (res.Reasks == 1) || len(got) != 1+res.Reasks {
			t.Fatalf("first reply's error %v: %d re-asks, %d requests", err0, res.Reasks, len(got))
		}
		if want {
			ask := got[1].Messages
			if len(ask) != len(got[0].Messages)+2 || ask[len(ask)-2].Content != first ||
				!strings.HasSuffix(ask[len(ask)-1].Content, requirementsOf(t, a, sig)) {
				t.Fatalf("re-ask messages: %+v", ask)
			}
			if errText(res.ReaskCause) != errText(err0) {
				t.Fatalf("re-ask cause %v, first reply's error %v", res.ReaskCause, err0)
			}
		}

		var sres *adapter.Result
		var serr error
		marks := 0
		for ch, e := range adapter.Stream(t.Context(), srv.Client(), sig, nil, in, opts...) {
			if e != nil {
				serr = e
				break
			}
			if ch.Reask != 0 {
				marks++
			}
			if ch.Done {
				sres = ch.Result
			}
		}
		if errText(err) != errText(serr) {
			t.Fatalf("Call: %v\nStream: %v", err, serr)
		}
		if marks != res.Reasks {
			t.Fatalf("Call re-asked %d times, Stream %d", res.Reasks, marks)
		}
		if err == nil && (!reflect.DeepEqual(res.Outputs, sres.Outputs) || sres.Reasks != res.Reasks) {
			t.Fatalf("Call: %v (%d re-asks)\nStream: %v (%d re-asks)", res.Outputs, res.Reasks, sres.Outputs, sres.Reasks)
		}
	})
}

// TestReaskTwoStep: a TwoStep extraction that fails re-asks the main LM
// with the extractor's finding, stated as for any adapter; TwoStep has
// no output requirements to repeat.
func TestReaskTwoStep(t *testing.T) {
	sig := mustParse(t, "question -> answer: int")
	main := lmtest.NewServer(lmtest.Text("It is several."), lmtest.Text("It is 42."))
	defer main.Close()
	ext := lmtest.NewServer(lmtest.Text(reaskBad), lmtest.Text(reaskGood))
	defer ext.Close()
	two := adapter.TwoStep{Extractor: ext.Client(), ExtractorRequest: openai.ChatCompletionRequest{Model: "small"},
		ExtractorAdapter: adapter.Chat{Options: adapter.Options{NoFallback: true}}}
	res, err := adapter.Call(t.Context(), main.Client(), sig, nil, adapter.Values{"question": "q"}, reaskModel, adapter.UseAdapter(two), adapter.WithReask(1))
	require.NoError(t, err)
	assert.Equal(t, 42, res.Outputs[0]["answer"])
	assert.Equal(t, 1, res.Reasks)
	assert.Equal(t, 4, res.Calls, "two main requests, two extractions")
	reqs := main.Requests()
	require.Len(t, reqs, 2)
	assertReask(t, reqs[0].Chat, reqs[1].Chat, "It is several.", "answer", `"several" is not an int`, "Please answer again, correcting this.")
	user := reqs[1].Chat.Messages[len(reqs[1].Chat.Messages)-1].Content
	assert.NotContains(t, user, "adapter:", "the extractor's error is stated as the model's, not the library's")
	assert.NotContains(t, user, "[[ ## completed ## ]]", "the extractor's reply is not quoted")
}

// TestReaskChoices: with several choices, the one that failed is sent
// back, and the re-ask asks for as many again.
func TestReaskChoices(t *testing.T) {
	sig := mustParse(t, "question -> answer: int")
	srv := lmtest.NewServer(lmtest.Choices(reaskGood, reaskBad), lmtest.Choices(reaskGood, "[[ ## answer ## ]]\n41"))
	defer srv.Close()
	res, err := adapter.Call(t.Context(), srv.Client(), sig, nil, adapter.Values{"question": "q"},
		adapter.WithRequest(openai.ChatCompletionRequest{Model: "m", N: 2}), adapter.NoFallback(), adapter.WithReask(1))
	require.NoError(t, err)
	require.Len(t, res.Outputs, 2)
	assert.Equal(t, 41, res.Outputs[1]["answer"])
	reqs := srv.Requests()
	require.Len(t, reqs, 2)
	assert.Equal(t, 2, reqs[1].Chat.N)
	assertReask(t, reqs[0].Chat, reqs[1].Chat, reaskBad, "answer", `"several" is not an int`, requirementsOf(t, adapter.Chat{}, sig))
}

// TestReaskStreamStop: a consumer that stops at the re-ask's chunk stops
// the call: the re-ask is never sent.
func TestReaskStreamStop(t *testing.T) {
	sig := mustParse(t, "question -> answer: int")
	srv := lmtest.NewServer(lmtest.Text(reaskBad), lmtest.Text(reaskGood))
	defer srv.Close()
	seen := 0
	for ch, err := range adapter.Stream(t.Context(), srv.Client(), sig, nil, adapter.Values{"question": "q"}, reaskModel, adapter.WithReask(1)) {
		require.NoError(t, err)
		seen++
		if ch.Reask != 0 {
			break
		}
	}
	assert.Positive(t, seen)
	assert.Len(t, srv.Requests(), 1)
}
