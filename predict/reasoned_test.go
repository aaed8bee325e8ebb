package predict_test

import (
	"context"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/lmtest"
	"github.com/sigwire/adapter/predict"
)

// reasonedAnswer is a ChainOfThought's Chat reply.
func reasonedAnswer(reasoning, answer string) lmtest.Reply {
	return lmtest.Text("[[ ## reasoning ## ]]\n" + reasoning + "\n\n[[ ## answer ## ]]\n" + answer + "\n\n[[ ## completed ## ]]")
}

// doneChunk runs a typed stream to its end and returns the Done chunk,
// checking that no other chunk carries a Rationale.
func doneChunk[Out any](t *testing.T, seq func(func(predict.Chunk[Out], error) bool)) predict.Chunk[Out] {
	t.Helper()
	var done predict.Chunk[Out]
	for ch, err := range seq {
		require.NoError(t, err)
		if ch.Done {
			done = ch
			continue
		}
		assert.Empty(t, ch.Rationale, "only the Done chunk carries the reasoning")
	}
	require.True(t, done.Done, "the stream ended with a Done chunk")
	return done
}

// TestChainOfThoughtStreamRationale: the typed Done chunk of a
// ChainOfThought's Stream carries the reasoning (Rationale) beside Out,
// as Call returns them for the same reply: in the text, in small chunks,
// and native (reasoning_content, whose deltas are the chunks' Reasoning).
// A Predict's Done chunk has none.
func TestChainOfThoughtStreamRationale(t *testing.T) {
	q := Question{capitalQuestion}
	plain, err := predict.NewChainOfThought[Question, Answer]()
	require.NoError(t, err)
	native, err := predict.NewChainOfThought[Question, Answer](predict.WithNativeReasoning())
	require.NoError(t, err)
	bare := lmtest.Text("[[ ## answer ## ]]\nParis\n\n[[ ## completed ## ]]").WithReasoning("Thought natively.")
	for _, c := range []struct {
		name  string
		cot   *predict.ChainOfThought[Question, Answer]
		model string
		reply lmtest.Reply
		want  string
	}{
		{"text", plain, "gpt-4o-mini", reasonedAnswer("France's capital is Paris.", "Paris"), "France's capital is Paris."},
		{"text, 3-byte chunks", plain, "gpt-4o-mini", reasonedAnswer("France's capital\nis Paris.", "Paris").ChunkSize(3), "France's capital\nis Paris."},
		{"native", native, "o3-mini", bare, "Thought natively."},
		{"native, 4-byte chunks", native, "o3-mini", bare.ChunkSize(4), "Thought natively."},
	} {
		srv := lmtest.NewServer(c.reply, c.reply)
		req := adapter.WithRequest(openai.ChatCompletionRequest{Model: c.model})
		out, reasoning, res, err := c.cot.Call(t.Context(), srv.Client(), q, req)
		require.NoError(t, err, c.name)
		assert.Equal(t, c.want, reasoning, c.name)
		done := doneChunk(t, c.cot.Stream(t.Context(), srv.Client(), q, req))
		assert.Equal(t, out, done.Out, "%s: Call and Stream agree", c.name)
		assert.Equal(t, reasoning, done.Rationale, "%s: Call and Stream agree", c.name)
		assert.Equal(t, res.Outputs, done.Result.Outputs, c.name)
		srv.Close()
	}

	srv := lmtest.NewServer(answerReply("Paris"))
	defer srv.Close()
	p, err := predict.New[Question, Answer]()
	require.NoError(t, err)
	done := doneChunk(t, p.Stream(t.Context(), srv.Client(), q))
	assert.Equal(t, "Paris", done.Out.Answer)
	assert.Empty(t, done.Rationale, "a Predict has no reasoning")
}

// TestRewardSeesReasoning: over a ChainOfThought's Reasoned(), a BestOfN's
// and a Refine's reward sees each attempt's reasoning beside Out, and
// Call and Stream return the chosen attempt's Out and reasoning; the
// requests and Refine's feedback are those over the ChainOfThought
// itself. Over the ChainOfThought, the stream's Done chunk carries the
// chosen reasoning as Rationale.
func TestRewardSeesReasoning(t *testing.T) {
	q := Question{capitalQuestion}
	cot, err := predict.NewChainOfThought[Question, Answer]()
	require.NoError(t, err)
	var seen []predict.Reasoned[Answer]
	// The reward wants an answer whose reasoning gives a reason.
	reasoned := func(_ context.Context, in Question, p predict.Reasoned[Answer]) (float64, error) {
		assert.Equal(t, q, in)
		seen = append(seen, p)
		if p.Out.Answer == "Paris" && strings.Contains(p.Reasoning, "because") {
			return 1, nil
		}
		return 0, nil
	}
	replies := func() []lmtest.Reply {
		return []lmtest.Reply{reasonedAnswer("A guess.", "Paris"), reasonedAnswer("Paris, because it is the seat of government.", "Paris")}
	}
	best, err := predict.NewBestOfN(cot.Reasoned(), 3, reasoned, 1)
	require.NoError(t, err)

	srv := lmtest.NewServer(append(replies(), replies()...)...)
	defer srv.Close()
	got, res, err := best.Call(t.Context(), srv.Client(), q)
	require.NoError(t, err)
	want := predict.Reasoned[Answer]{Out: Answer{"Paris"}, Reasoning: "Paris, because it is the seat of government."}
	assert.Equal(t, want, got)
	assert.Equal(t, []predict.Reasoned[Answer]{{Out: Answer{"Paris"}, Reasoning: "A guess."}, want}, seen, "the reward saw each attempt's reasoning")
	assert.Equal(t, want.Reasoning, res.Outputs[0]["reasoning"])

	seen = nil
	done := doneChunk(t, best.Stream(t.Context(), srv.Client(), q))
	assert.Equal(t, got, done.Out, "Call and Stream agree")
	assert.Equal(t, want.Reasoning, done.Rationale)
	assert.Len(t, seen, 2)

	// The same requests as over the ChainOfThought itself.
	plainBest, err := predict.NewBestOfN(cot, 3, parisOnly, 1)
	require.NoError(t, err)
	plain := lmtest.NewServer(replies()...)
	defer plain.Close()
	out, _, err := plainBest.Call(t.Context(), plain.Client(), q)
	require.NoError(t, err)
	assert.Equal(t, Answer{"Paris"}, out)
	require.Len(t, plain.Requests(), 1, "the first attempt is Paris")
	assert.Equal(t, plain.Requests()[0].Body, srv.Requests()[0].Body)

	plainStream := lmtest.NewServer(replies()...)
	defer plainStream.Close()
	done2 := doneChunk(t, plainBest.Stream(t.Context(), plainStream.Client(), q))
	assert.Equal(t, Answer{"Paris"}, done2.Out)
	assert.Equal(t, "A guess.", done2.Rationale, "over the ChainOfThought, the chosen attempt's reasoning")

	// Refine: the reward sees the reasoning; the feedback and the hint are
	// those over the ChainOfThought.
	seen = nil
	refSrv := lmtest.NewServer(
		reasonedAnswer("A guess.", "Paris"),
		feedbackReply("No reason given.", `{"predict": "Say why."}`),
		reasonedAnswer("Paris, because it is the seat of government.", "Paris"),
	)
	defer refSrv.Close()
	ref, err := predict.NewRefine(cot.Reasoned(), 2, reasoned, 1)
	require.NoError(t, err)
	got, _, err = ref.Call(t.Context(), refSrv.Client(), q)
	require.NoError(t, err)
	assert.Equal(t, want, got)
	require.Len(t, seen, 2)
	assert.Equal(t, "A guess.", seen[0].Reasoning)
	reqs := refSrv.Requests()
	require.Len(t, reqs, 3)
	fb := lastUser(reqs[1])
	assert.Contains(t, fb, "[[ ## program_outputs ## ]]\n{\n  \"reasoning\": \"A guess.\",\n  \"answer\": \"Paris\"\n}\n\n")
	assert.Contains(t, fb, "[[ ## program_code ## ]]\n*predict.ChainOfThought[github.com/sigwire/adapter/predict_test.Question,github.com/sigwire/adapter/predict_test.Answer]\n\n")
	assert.Contains(t, lastUser(reqs[2]), "[[ ## hint_ ## ]]\nSay why.\n\n")

	// A zero ChainOfThought's Reasoned is refused as the zero module.
	_, err = predict.NewBestOfN((&predict.ChainOfThought[Question, Answer]{}).Reasoned(), 2, reasoned, 1)
	assert.ErrorIs(t, err, predict.ErrZeroModule)
}
