package predict_test

import (
	"encoding/json"
	"fmt"
	"iter"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/lmtest"
	"github.com/sigwire/adapter/predict"
)

// transcript reads a ReAct stream into lines, one per event: consecutive
// deltas of one field of one step are joined. It also counts the delta
// chunks of each step's thought.
type transcript struct {
	lines  []string
	deltas map[int]int // step → next_thought delta chunks
	res    *adapter.Result
	err    error
}

func readStream(seq iter.Seq2[adapter.Chunk, error]) transcript {
	tr := transcript{deltas: map[int]int{}}
	last := ""
	add := func(step int, kind, text string) {
		tr.lines = append(tr.lines, fmt.Sprintf("%d %s: %s", step, kind, text))
		last = ""
	}
	delta := func(step int, field, text string) {
		key := fmt.Sprintf("%d %s: ", step, field)
		if last == key {
			tr.lines[len(tr.lines)-1] += text
			return
		}
		tr.lines = append(tr.lines, key+text)
		last = key
	}
	for ch, err := range seq {
		if err != nil {
			tr.err = err
			break
		}
		switch {
		case ch.Done:
			tr.res = ch.Result
		case ch.Tool != nil && !ch.Tool.Done:
			add(ch.Step, "start", fmt.Sprintf("%s %s %s | %s", ch.Tool.ID, ch.Tool.Name, ch.Tool.Args, ch.Status))
		case ch.Tool != nil:
			add(ch.Step, "end", fmt.Sprintf("%s %s %v %v | %s", ch.Tool.ID, ch.Tool.Name, ch.Tool.Observation, ch.Tool.Err, ch.Status))
		case ch.ToolCalls != nil:
			for _, c := range ch.ToolCalls {
				add(ch.Step, "call", strings.TrimSpace(c.ID+" "+c.Function.Name+" "+c.Function.Arguments))
			}
		case ch.Reasoning != "":
			delta(ch.Step, "reasoning~", ch.Reasoning)
		case ch.Status != "":
			add(ch.Step, "status", ch.Status)
		default:
			if ch.Field == "next_thought" {
				tr.deltas[ch.Step]++
			}
			if ch.Replace {
				if key := fmt.Sprintf("%d %s: ", ch.Step, ch.Field); last == key {
					tr.lines[len(tr.lines)-1] = key
				}
			}
			delta(ch.Step, ch.Field, ch.Delta)
		}
	}
	return tr
}

const endStatus = "Tool calling finished! Querying the LLM with tool calling results..."

// TestReActStreamSteps: a text ReAct streams each step's thought as
// deltas, tagged with its step, then the chosen tool whole, its start and
// its end with the observation, then the extract call's deltas, then Done.
func TestReActStreamSteps(t *testing.T) {
	srv := lmtest.NewServer(
		step("Search the web.", "search", `{"query": "go"}`).ChunkSize(4),
		step("Done.", "finish", "{}"),
		answer("Go is a language.").ChunkSize(5))
	defer srv.Close()
	tr := readStream(searchAgent(t).Stream(t.Context(), srv.Client(), adapter.Values{"question": "q"}))
	require.NoError(t, tr.err)
	assert.Equal(t, []string{
		"1 next_thought: Search the web.",
		`1 call: search {"query":"go"}`,
		`1 start:  search {"query":"go"} | Calling tool search...`,
		"1 end:  search result for go <nil> | " + endStatus,
		"2 next_thought: Done.",
		"2 call: finish {}",
		"2 start:  finish {} | Calling tool finish...",
		"2 end:  finish Completed. <nil> | " + endStatus,
		"0 reasoning: r",
		"0 answer: Go is a language.",
	}, tr.lines)
	assert.Greater(t, tr.deltas[1], 2, "the thought arrives as it is written, in pieces")
	require.NotNil(t, tr.res)
	assert.Len(t, tr.res.Outputs[0]["trajectory"], 2)
	assert.Equal(t, 3, tr.res.Calls)
}

// TestReActV2StreamSteps: the same vocabulary for a native ReActV2: a
// step's calls come together, with their ids; each starts and ends; a
// failed run carries its error; submit ends it.
func TestReActV2StreamSteps(t *testing.T) {
	srv := lmtest.NewServer(
		nativeStep("Both cities.", fcall("a", "weather", `{"city": "Oslo"}`), fcall("b", "weather", `{"city": "Rome"}`)).ChunkSize(3),
		nativeStep("", fcall("c", "submit", `{"answer": "Oslo."}`)))
	defer srv.Close()
	tr := readStream(weatherAgent(t, nil, predict.WithToolConcurrency(1)).Stream(t.Context(), toolsLM(srv), adapter.Values{"question": "q"}))
	require.NoError(t, tr.err)
	assert.Equal(t, []string{
		"1 next_thought: Both cities.",
		`1 call: a weather {"city":"Oslo"}`,
		`1 call: b weather {"city":"Rome"}`,
		`1 start: a weather {"city":"Oslo"} | Calling tool weather...`,
		"1 end: a weather sunny, 19 °C <nil> | " + endStatus,
		`1 start: b weather {"city":"Rome"} | Calling tool weather...`,
		`1 end: b weather Execution error in weather: no forecast for "Rome" no forecast for "Rome" | ` + endStatus,
		`2 call: c submit {"answer":"Oslo."}`,
		`2 start: c submit {"answer":"Oslo."} | Calling tool submit...`,
		`2 end: c submit {"answer":"Oslo."} <nil> | ` + endStatus,
	}, tr.lines)
	assert.Greater(t, tr.deltas[1], 2)
	require.NotNil(t, tr.res)
	assert.Len(t, v2Calls(t, tr.res), 3)
	assert.Equal(t, "Oslo.", tr.res.Outputs[0]["answer"])
}

// TestReActCallStreamAgree: over generated runs — tool calls that work,
// fail, name no tool, have arguments cut off; several per ReActV2 step;
// replies without calls; a context window exceeded; runs out of steps —
// the same replies through Call and through Stream give the same Result
// (trajectory or history, outputs, counters) or the same error, for a
// ReAct and a native ReActV2.
func TestReActCallStreamAgree(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 34))
	for i := range 60 {
		native := i%2 == 1
		replies := generatedRun(rng, native)
		t.Run(fmt.Sprintf("%d native=%v", i, native), func(t *testing.T) {
			var agent agentRun = searchAgent(t, predict.WithMaxIters(3))
			lm := func(srv *lmtest.Server) adapter.StreamingLM { return srv.Client() }
			if native {
				agent = weatherAgent(t, nil, predict.WithMaxIters(3))
				lm = toolsLM
			}
			in := adapter.Values{"question": "q"}
			srv := lmtest.NewServer(replies...)
			defer srv.Close()
			want, werr := agent.Call(t.Context(), lm(srv), in)
			srv2 := lmtest.NewServer(replies...)
			defer srv2.Close()
			tr := readStream(agent.Stream(t.Context(), lm(srv2), in))
			if werr != nil {
				require.Error(t, tr.err)
				assert.Equal(t, werr.Error(), tr.err.Error())
				return
			}
			require.NoError(t, tr.err)
			if native { // the history's ToolCalls hold errors: compared as JSON, and each error's text
				wb, err := json.Marshal(want.Outputs)
				require.NoError(t, err)
				gb, err := json.Marshal(tr.res.Outputs)
				require.NoError(t, err)
				assert.Equal(t, string(wb), string(gb))
				wc, gc := v2Calls(t, want), v2Calls(t, tr.res)
				require.Len(t, gc, len(wc))
				for i := range wc {
					assert.Equal(t, fmt.Sprint(wc[i].Err), fmt.Sprint(gc[i].Err), "call %d's error", i)
				}
				want.Outputs, tr.res.Outputs = nil, nil
			}
			assert.Equal(t, want, tr.res)
			assert.Equal(t, len(srv.Requests()), len(srv2.Requests()))
		})
	}
}

// generatedRun is a random scripted run: up to four react replies, then
// the extract reply, each with a fixed usage.
func generatedRun(rng *rand.Rand, native bool) []lmtest.Reply {
	var out []lmtest.Reply
	for s := range 1 + rng.IntN(4) {
		var r lmtest.Reply
		switch k := rng.IntN(10); {
		case k == 0:
			r = lmtest.ContextLengthExceeded()
		case native:
			var calls []openai.ToolCall
			for c := range rng.IntN(4) {
				id := fmt.Sprintf("id%d", rng.IntN(3)) // ids repeat, as some providers' do
				if rng.IntN(4) == 0 {
					id = ""
				}
				args := [...]string{`{"city": "Oslo"}`, `{"city": "Rome"}`, `{"city": "Oslo"`, `{"query": "x"}`, `{}`}[rng.IntN(5)]
				name := [...]string{"weather", "weather", "search", "submit", "nope"}[rng.IntN(5)]
				if name == "submit" {
					args = [...]string{`{"answer": "sunny"}`, `{"answer": 3}`, `{}`}[rng.IntN(3)]
				}
				_ = c
				calls = append(calls, fcall(id, name, args))
			}
			thought := [...]string{"", "Think.", "Look it up."}[rng.IntN(3)]
			r = nativeStep(thought, calls...)
			if len(calls) == 0 && thought == "" {
				r = lmtest.Text("The answer is plain text.")
			}
		default:
			tool := [...]string{"search", "search", "finish", "google"}[rng.IntN(4)]
			args := [...]string{`{"query": "go"}`, `{"query": "fail"}`, `{}`}[rng.IntN(3)]
			r = step(fmt.Sprintf("Step %d.", s), tool, args)
		}
		out = append(out, r.WithUsage(10, 3).ChunkSize(1+rng.IntN(8)))
	}
	if native { // the forced submit's reply, if it comes to that
		return append(out, nativeStep("", fcall("s", "submit", `{"answer": "done"}`)).WithUsage(7, 2))
	}
	return append(out, answer("done").WithUsage(7, 2))
}

// TestReActStreamTruncated: a step that exceeded the context window is
// asked again without the oldest step, and a Stream's caller is told so,
// on that step, before the new call's chunks.
func TestReActStreamTruncated(t *testing.T) {
	srv := lmtest.NewServer(
		step("a", "search", `{"query": "1"}`),
		step("b", "search", `{"query": "2"}`),
		lmtest.ContextLengthExceeded(),
		step("c", "finish", "{}"),
		answer("x"))
	defer srv.Close()
	tr := readStream(searchAgent(t).Stream(t.Context(), srv.Client(), adapter.Values{"question": "q"}))
	require.NoError(t, tr.err)
	i := slices.Index(tr.lines, "3 status: The prompt exceeded the context window: dropping the oldest step of the trajectory and asking again...")
	require.GreaterOrEqual(t, i, 0, "%q", tr.lines)
	assert.Equal(t, "3 next_thought: c", tr.lines[i+1])
	assert.Len(t, tr.res.Outputs[0]["trajectory"], 2)
}
