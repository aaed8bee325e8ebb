package predict_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/lmtest"
	"github.com/sigwire/adapter/predict"
)

// attemptTexts is what a consumer of a BestOfN or Refine stream holds: each
// text (by Step and Field) joined as adapter.Chunk says, anew at a Replace.
type attemptTexts map[string]string

func (h attemptTexts) apply(c adapter.Chunk) {
	if c.Field == "" {
		return
	}
	k := fmt.Sprint(c.Step, "/", c.Field)
	if c.Replace {
		h[k] = ""
	}
	h[k] += c.Delta
}

// scriptedServer answers an attempt by its seed (its rollout number) from
// answers, in Chat markers streamed in small pieces, and Refine's
// feedback call with advice; an answer "!" is a reply cut by the token
// limit (an attempt that fails after streaming some text).
func scriptedServer(t *testing.T, answers []string) *lmtest.Server {
	srv := lmtest.NewServer()
	t.Cleanup(srv.Close)
	srv.Handle(func(r lmtest.Request) lmtest.Reply {
		if strings.Contains(r.Chat.Messages[0].Content, "`advice`") {
			return feedbackReply("Say the city only.", `{"self": "Answer with the city alone."}`).WithUsage(40, 8).ChunkSize(5)
		}
		a := answers[*r.Chat.Seed%len(answers)]
		if a == "!" {
			return answerReply("Par").WithFinish("length").WithUsage(10, 3).ChunkSize(4)
		}
		return answerReply(a).WithUsage(10, 2).ChunkSize(3)
	})
	return srv
}

// rewardOf scores an answer: 1 for "Paris", 0.5 for an answer naming it,
// else 0; an answer "boom" is a failing reward.
func rewardOf(_ context.Context, _ adapter.Values, out adapter.Values) (float64, error) {
	a, _ := out["answer"].(string)
	switch {
	case a == "boom":
		return 0, fmt.Errorf("reward failed on %q", a)
	case a == "Paris":
		return 1, nil
	case strings.Contains(a, "Paris"):
		return 0.5, nil
	}
	return 0, nil
}

// TestSearchStreamAgreesWithCall: over generated runs (the answers each
// attempt gets, the number of attempts, the threshold, WithFailCount), a
// BestOfN's or Refine's Stream gives what its Call gives — the outputs,
// the error, the counters — and its consumer ends holding the chosen
// outputs' text, whatever attempts came before; every chunk but Done
// carries its attempt, and the Done chunk the chosen one's.
func TestSearchStreamAgreesWithCall(t *testing.T) {
	pool := []string{"Paris", "Paris, France", "Lyon", "!", "boom", "Marseille, not Paris", ""}
	rng := rand.New(rand.NewPCG(3, 27))
	for i := range 120 {
		answers := make([]string, 1+rng.IntN(4))
		for j := range answers {
			answers[j] = pool[rng.IntN(len(pool))]
		}
		n := 1 + rng.IntN(4)
		threshold := []float64{1, 0.5, 2}[rng.IntN(3)]
		opts := []predict.AttemptOption{}
		if rng.IntN(3) == 0 {
			opts = append(opts, predict.WithFailCount(rng.IntN(2)))
		}
		refine := rng.IntN(2) == 0
		name := fmt.Sprintf("%d/refine=%v/n=%d/threshold=%v/%q", i, refine, n, threshold, answers)
		t.Run(name, func(t *testing.T) {
			srv := scriptedServer(t, answers)
			var call func() (adapter.Values, *adapter.Result, error)
			var stream func(yield func(predict.Chunk[adapter.Values], error) bool)
			in := adapter.Values{"question": "What is the capital of France?"}
			if refine {
				m, err := predict.NewRefine(qaModule(t), n, rewardOf, threshold, opts...)
				require.NoError(t, err)
				call = func() (adapter.Values, *adapter.Result, error) { return m.Call(t.Context(), srv.Client(), in) }
				stream = m.Stream(t.Context(), srv.Client(), in)
			} else {
				m, err := predict.NewBestOfN(qaModule(t), n, rewardOf, threshold, opts...)
				require.NoError(t, err)
				call = func() (adapter.Values, *adapter.Result, error) { return m.Call(t.Context(), srv.Client(), in) }
				stream = m.Stream(t.Context(), srv.Client(), in)
			}
			out, res, err := call()
			calls := len(srv.Requests())

			texts := attemptTexts{}
			var last predict.Chunk[adapter.Values]
			var serr error
			begun := 0
			for ch, e := range stream {
				if e != nil {
					serr, last = e, ch
					break
				}
				last = ch
				if ch.Done {
					break
				}
				require.Positive(t, ch.Attempt, "a chunk of an attempt: %+v", ch.Chunk)
				if strings.HasPrefix(ch.Status, "Attempt ") && strings.HasSuffix(ch.Status, fmt.Sprintf(" of %d", n)) {
					begun++
					assert.Equal(t, begun, ch.Attempt, "attempts begin in order")
				}
				texts.apply(ch.Chunk)
				if strings.Contains(ch.Status, ": reward ") {
					assert.Equal(t, answers[(ch.Attempt-1)%len(answers)], texts["0/answer"], "at its end, the consumer holds the attempt's answer")
				}
			}
			assert.Equal(t, 2*calls, len(srv.Requests()), "Stream made the calls Call made")
			if err != nil {
				require.Error(t, serr)
				assert.Equal(t, err.Error(), serr.Error())
				require.NotNil(t, last.Result)
				assert.Equal(t, res.Calls, last.Result.Calls)
				return
			}
			require.NoError(t, serr)
			require.True(t, last.Done)
			assert.Equal(t, out, last.Out)
			assert.Equal(t, res.Outputs, last.Result.Outputs)
			assert.Equal(t, res.Calls, last.Result.Calls)
			assert.Equal(t, res.Usage, last.Result.Usage)
			assert.Equal(t, out["answer"], texts["0/answer"], "the consumer holds the chosen answer")
			require.Positive(t, last.Attempt)
			assert.Equal(t, answers[(last.Attempt-1)%len(answers)], out["answer"], "Done names the chosen attempt")
		})
	}
}

// TestSearchStreamTyped: a typed program's BestOfN streams its attempts
// and ends with Out; a Replace starts the second attempt's answer, whose
// text the consumer ends with.
func TestSearchStreamTyped(t *testing.T) {
	srv := scriptedServer(t, []string{"Paris, France", "Paris"})
	p, err := predict.New[Question, Answer]()
	require.NoError(t, err)
	best, err := predict.NewBestOfN(p, 3, parisOnly, 1)
	require.NoError(t, err)
	texts := attemptTexts{}
	var statuses []string
	replaced := 0
	var done predict.Chunk[Answer]
	for ch, err := range best.Stream(t.Context(), srv.Client(), Question{"What is the capital of France?"}) {
		require.NoError(t, err)
		if ch.Done {
			done = ch
			continue
		}
		if ch.Status != "" {
			statuses = append(statuses, ch.Status)
		}
		if ch.Replace {
			replaced++
			assert.Equal(t, 2, ch.Attempt)
		}
		texts.apply(ch.Chunk)
	}
	assert.Equal(t, []string{"Attempt 1 of 3", "Attempt 1 of 3: reward 0", "Attempt 2 of 3", "Attempt 2 of 3: reward 1"}, statuses)
	assert.Equal(t, 1, replaced, "the second attempt's first delta of answer")
	assert.Equal(t, "Paris", done.Out.Answer)
	assert.Equal(t, 2, done.Attempt)
	assert.Equal(t, "Paris", texts["0/answer"])
	assert.Equal(t, 2, done.Result.Calls)
}

// TestSearchStreamSettlesOnTheBest: when the best attempt is not the last,
// the stream replaces the last one's text with the best's before Done.
func TestSearchStreamSettlesOnTheBest(t *testing.T) {
	srv := scriptedServer(t, []string{"Paris, France", "Lyon", "Marseille"})
	best, err := predict.NewBestOfN(qaModule(t), 3, rewardOf, 1)
	require.NoError(t, err)
	texts := attemptTexts{}
	var settled []adapter.Chunk
	var done predict.Chunk[adapter.Values]
	for ch, err := range best.Stream(t.Context(), srv.Client(), adapter.Values{"question": "q"}) {
		require.NoError(t, err)
		if ch.Done {
			done = ch
			continue
		}
		if ch.Replace && ch.Attempt == 1 {
			settled = append(settled, ch.Chunk)
		}
		texts.apply(ch.Chunk)
	}
	assert.Equal(t, "Paris, France", done.Out["answer"])
	assert.Equal(t, 1, done.Attempt)
	require.Len(t, settled, 1)
	assert.Equal(t, adapter.Chunk{Field: "answer", Delta: "Paris, France", Replace: true, Attempt: 1}, settled[0])
	assert.Equal(t, "Paris, France", texts["0/answer"])
}

// TestSearchStreamStops: breaking out of a Refine's stream stops the run:
// no further attempt, no feedback call.
func TestSearchStreamStops(t *testing.T) {
	srv := scriptedServer(t, []string{"Lyon"})
	ref, err := predict.NewRefine(qaModule(t), 3, rewardOf, 1)
	require.NoError(t, err)
	for ch, err := range ref.Stream(t.Context(), srv.Client(), adapter.Values{"question": "q"}) {
		require.NoError(t, err)
		if ch.Field == "answer" {
			break
		}
	}
	assert.Len(t, srv.Requests(), 1, "the first attempt's call only")

	var statuses []string
	for ch, err := range ref.Stream(t.Context(), srv.Client(), adapter.Values{"question": "q"}) {
		require.NoError(t, err)
		if ch.Status != "" {
			statuses = append(statuses, ch.Status)
		}
	}
	assert.Equal(t, []string{
		"Attempt 1 of 3", "Attempt 1 of 3: reward 0", "Asking for advice after attempt 1",
		"Attempt 2 of 3", "Attempt 2 of 3: reward 0", "Asking for advice after attempt 2",
		"Attempt 3 of 3", "Attempt 3 of 3: reward 0",
	}, statuses)
}

// TestSearchStreamReAct: a ReAct under BestOfN streams each attempt's
// steps (Step set, Attempt set) and its extract call; the consumer ends
// with the chosen attempt's thoughts and answer.
func TestSearchStreamReAct(t *testing.T) {
	srv := lmtest.NewServer()
	defer srv.Close()
	srv.Handle(func(r lmtest.Request) lmtest.Reply {
		first := strings.Contains(r.Chat.Messages[0].Content, "next_thought")
		city := "Lyon"
		if *r.Chat.Seed == 1 {
			city = "Paris"
		}
		if first {
			return lmtest.Text("[[ ## next_thought ## ]]\nI know it: " + city + ".\n\n[[ ## next_tool_name ## ]]\nfinish\n\n[[ ## next_tool_args ## ]]\n{}\n\n[[ ## completed ## ]]").ChunkSize(4)
		}
		return answer(city).ChunkSize(4)
	})
	agent := searchAgent(t)
	best, err := predict.NewBestOfN(agent, 2, rewardOf, 1)
	require.NoError(t, err)
	texts := attemptTexts{}
	var done predict.Chunk[adapter.Values]
	steps := map[int]bool{}
	for ch, err := range best.Stream(t.Context(), srv.Client(), adapter.Values{"question": "q"}) {
		require.NoError(t, err)
		if ch.Done {
			done = ch
			continue
		}
		if ch.Step > 0 {
			steps[ch.Attempt] = true
		}
		texts.apply(ch.Chunk)
	}
	assert.Equal(t, "Paris", done.Out["answer"])
	assert.Equal(t, 2, done.Attempt)
	assert.Equal(t, map[int]bool{1: true, 2: true}, steps)
	assert.Equal(t, "I know it: Paris.", texts["1/next_thought"])
	assert.Equal(t, "Paris", texts["0/answer"])
}

// TestRefineStreamSendsWhatCallSends: Refine's Stream gives each attempt
// after advice its hint_ and the feedback step the attempt's trajectory,
// as Call does: for the same replies, the requests are Call's (it sent
// no hint and an empty trajectory).
func TestRefineStreamSendsWhatCallSends(t *testing.T) {
	refine, err := predict.NewRefine(qaModule(t), 3, rewardOf, 1)
	require.NoError(t, err)
	in := adapter.Values{"question": "What is the capital of France?"}
	answers := []string{"It is Paris.", "Lyon", "Paris"}

	call := scriptedServer(t, answers)
	_, _, err = refine.Call(t.Context(), call.Client(), in)
	require.NoError(t, err)
	stream := scriptedServer(t, answers)
	for _, err := range refine.Stream(t.Context(), stream.Client(), in) {
		require.NoError(t, err)
	}
	want, got := call.Requests(), stream.Requests()
	require.Equal(t, len(want), len(got))
	require.Equal(t, 5, len(got), "3 attempts, 2 advice calls")
	for i := range want {
		assert.Equal(t, want[i].Chat.Messages, got[i].Chat.Messages, "request %d", i+1)
	}
	assert.Contains(t, lastUser(got[2]), "[[ ## hint_ ## ]]\nAnswer with the city alone.\n\n")
	assert.Contains(t, lastUser(got[1]), `"module_name": "self"`, "the feedback step sees the attempt's trajectory")
}
