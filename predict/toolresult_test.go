package predict_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/lmtest"
	"github.com/sigwire/adapter/predict"
	"github.com/sigwire/adapter/signature"
	"github.com/sigwire/adapter/types"
)

// pageTool returns, for the query n, a page of n bytes (runes of one to
// four bytes, so that a cut can land inside one).
func pageTool(t *testing.T) types.Tool {
	t.Helper()
	tool, err := types.NewTool("fetch", "Fetch a page.", func(_ context.Context, a queryArgs) (string, error) {
		n, err := strconv.Atoi(a.Query)
		if err != nil {
			return "", err
		}
		return page(n), nil
	})
	require.NoError(t, err)
	return tool
}

func page(n int) string {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		b.WriteString([]string{"a", "é", "€", "𝄞"}[i%4])
	}
	return b.String()[:n] // may end inside a rune: a page of n bytes
}

var cutNote = regexp.MustCompile(`\n\n\[(\d+) more bytes of this result were cut: the model is shown at most (\d+) bytes of it\]$`)

// shown splits an observation into the text shown of the result, the
// bytes cut and the bound the note names (0, 0 when it was not cut).
func shown(t *testing.T, obs any) (string, int, int) {
	t.Helper()
	s, ok := obs.(string)
	require.True(t, ok, "%T", obs)
	m := cutNote.FindStringSubmatchIndex(s)
	if m == nil {
		return s, 0, 0
	}
	cut, _ := strconv.Atoi(s[m[2]:m[3]])
	bound, _ := strconv.Atoi(s[m[4]:m[5]])
	return s[:m[0]], cut, bound
}

// TestToolResultsBounded: the review's reproduction (security review 4,
// P7): a native agent whose tool returns 8 MiB four times sent 8, 16, 24
// and 32 MiB, then 32 MiB for the extract, 112 MiB in all. Now each
// result is cut to the bound on one result, and the requests stay within
// the bound on what a request carries; the model, the trajectory, the
// trace and the stream all see the same cut text and its note.
func TestToolResultsBounded(t *testing.T) {
	sig, err := signature.Parse("question -> answer")
	require.NoError(t, err)
	r, err := predict.NewReActV2(sig, []types.Tool{pageTool(t)}, nativeChat)
	require.NoError(t, err)
	const size = 8 << 20
	replies := func() []lmtest.Reply {
		var out []lmtest.Reply
		for i := range 4 {
			out = append(out, nativeStep("more", fcall(fmt.Sprint(i), "fetch", fmt.Sprintf(`{"query": "%d"}`, size))))
		}
		return append(out, nativeStep("done", fcall("f", "submit", `{"answer": "a"}`)))
	}
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "call", true: "stream"}[stream], func(t *testing.T) {
			srv := lmtest.NewServer(replies()...)
			defer srv.Close()
			var cuts []int
			trace := adapter.UseTrace(&adapter.Trace{ToolDone: func(i adapter.ToolDoneInfo) {
				if i.Tool == "fetch" {
					cuts = append(cuts, i.Cut)
				}
			}})
			in := adapter.Values{"question": "q"}
			var res *adapter.Result
			var streamed []any
			if stream {
				for ch, err := range r.Stream(t.Context(), toolsLM(srv), in, trace) {
					require.NoError(t, err)
					if ch.Tool != nil && ch.Tool.Done && ch.Tool.Name == "fetch" {
						streamed = append(streamed, ch.Tool.Observation)
					}
					if ch.Done {
						res = ch.Result
					}
				}
			} else {
				res, err = r.Call(t.Context(), toolsLM(srv), in, trace)
				require.NoError(t, err)
			}
			calls := v2Calls(t, res)
			require.Len(t, calls, 5)
			for i, s := range calls[:4] {
				text, cut, bound := shown(t, s.Value)
				assert.Equal(t, adapter.DefaultToolResultBytes, bound, "step %d", i)
				assert.True(t, strings.HasPrefix(page(size), text), "step %d shows the result's start", i)
				assert.True(t, utf8.ValidString(text), "step %d is cut on a rune boundary", i)
				assert.Equal(t, size-len(text), cut, "step %d: the note counts what was cut", i)
				assert.Equal(t, cut, cuts[i], "step %d: the trace has the count", i)
				if stream {
					assert.Equal(t, s.Value, streamed[i], "step %d: the stream shows what the model saw", i)
				}
			}
			total := 0
			for i, req := range srv.Requests() {
				b, err := json.Marshal(req.Chat)
				require.NoError(t, err)
				assert.Less(t, len(b), adapter.DefaultRequestToolBytes+64<<10, "request %d", i)
				total += len(b)
			}
			assert.Less(t, total, 2<<20, "all requests together (112 MiB before)")
		})
	}
}

// TestToolResultShares: with small bounds (WithLimits on the call), each
// result gets its share of what the earlier results left of the bound on
// a request, never less than MinToolResultShare, never more than the
// bound on one result; a run's requests carry no more than that.
func TestToolResultShares(t *testing.T) {
	sig, err := signature.Parse("question -> answer")
	require.NoError(t, err)
	r, err := predict.NewReActV2(sig, []types.Tool{pageTool(t)}, nativeChat, predict.WithToolConcurrency(1))
	require.NoError(t, err)
	limits := adapter.WithLimits(adapter.Limits{ToolResultBytes: 1000, RequestToolBytes: 3000})
	rng := rand.New(rand.NewPCG(1, 2))
	for run := range 40 {
		var sizes [][]int
		var replies []lmtest.Reply
		for turn := range 1 + rng.IntN(5) {
			var calls []openai.ToolCall
			var turnSizes []int
			for c := range 1 + rng.IntN(3) {
				n := rng.IntN(2500)
				turnSizes = append(turnSizes, n)
				calls = append(calls, fcall(fmt.Sprintf("%d_%d", turn, c), "fetch", fmt.Sprintf(`{"query": "%d"}`, n)))
			}
			sizes = append(sizes, turnSizes)
			replies = append(replies, nativeStep("t", calls...))
		}
		replies = append(replies, nativeStep("done", fcall("f", "submit", `{"answer": "a"}`)))
		srv := lmtest.NewServer(replies...)
		res, err := r.Call(t.Context(), toolsLM(srv), adapter.Values{"question": "q"}, limits)
		srv.Close()
		require.NoError(t, err)
		calls := v2Calls(t, res)
		used, k := 0, 0
		for _, turnSizes := range sizes {
			share := min(max((3000-used)/len(turnSizes), adapter.MinToolResultShare), 1000)
			turnUsed := 0
			for _, n := range turnSizes {
				s := calls[k]
				k++
				text, cut, bound := shown(t, s.Value)
				full := page(n)
				require.True(t, strings.HasPrefix(full, text), "run %d call %d", run, k)
				require.True(t, utf8.ValidString(text) || !utf8.ValidString(full), "run %d call %d", run, k)
				if n <= share {
					require.Zero(t, cut, "run %d call %d: a result within its share is whole", run, k)
				} else {
					require.Equal(t, share, bound, "run %d call %d", run, k)
					require.LessOrEqual(t, len(text), share)
					require.Greater(t, len(text), share-4, "run %d call %d: at most a rune is held back", run, k)
					require.Equal(t, n-len(text), cut)
				}
				turnUsed += len(s.Value.(string))
			}
			used += turnUsed
		}
	}
}

// TestExecuteResultBounded: ToolCalls.Execute, the loop a caller writes
// by hand, cuts a result past the bound on one result (64 KiB by default,
// WithLimits to change it, negative for none).
func TestExecuteResultBounded(t *testing.T) {
	calls := types.ToolCalls{Calls: []types.ToolCall{{ID: "1", Name: "fetch", Args: map[string]any{"query": "100000"}}}}
	tools := []types.Tool{pageTool(t)}
	res := calls.Execute(t.Context(), tools)
	text, cut, bound := shown(t, res.Results[0].Value)
	assert.Equal(t, adapter.DefaultToolResultBytes, bound)
	assert.Equal(t, 100000-len(text), cut)
	res = calls.Execute(t.Context(), tools, types.WithLimits(adapter.Limits{ToolResultBytes: 9}))
	assert.Equal(t, "aé€\n\n[99994 more bytes of this result were cut: the model is shown at most 9 bytes of it]", res.Results[0].Value)
	res = calls.Execute(t.Context(), tools, types.WithLimits(adapter.Limits{ToolResultBytes: -1}))
	assert.Equal(t, page(100000), res.Results[0].Value)
}
