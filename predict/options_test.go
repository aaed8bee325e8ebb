package predict_test

import (
	"context"
	"testing"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/lmtest"
	"github.com/sigwire/adapter/predict"
	"github.com/sigwire/adapter/signature"
)

// TestCallRequestMergesIntoModule: a call's request overrides the module's
// field by field; setting only the temperature keeps the module's model and
// max tokens.
func TestCallRequestMergesIntoModule(t *testing.T) {
	srv := lmtest.NewServer(lmtest.Text("[[ ## total ## ]]\n5"), lmtest.Text("[[ ## total ## ]]\n5"))
	defer srv.Close()
	p, err := predict.New[Sum, Total](adapter.WithRequest(openai.ChatCompletionRequest{Model: "gpt-4o-mini", MaxTokens: 300, Temperature: 0.2}))
	require.NoError(t, err)
	_, _, err = p.Call(t.Context(), srv.Client(), Sum{2, 3}, adapter.WithRequest(openai.ChatCompletionRequest{Temperature: 0.7}))
	require.NoError(t, err)
	_, _, err = p.Call(t.Context(), srv.Client(), Sum{2, 3})
	require.NoError(t, err)
	reqs := srv.Requests()
	assert.Equal(t, "gpt-4o-mini", reqs[0].Chat.Model)
	assert.Equal(t, 300, reqs[0].Chat.MaxTokens)
	assert.InDelta(t, 0.7, reqs[0].Chat.Temperature, 1e-6, "the call's temperature")
	assert.InDelta(t, 0.2, reqs[1].Chat.Temperature, 1e-6, "the next call has the module's again")
}

// TestModuleAdapterRanksBelowContext: a module's adapter (UseAdapter at
// construction) is a default: the context's adapter beats it, a call's
// UseAdapter beats both.
func TestModuleAdapterRanksBelowContext(t *testing.T) {
	srv := lmtest.NewServer()
	defer srv.Close()
	srv.Handle(func(lmtest.Request) lmtest.Reply { return lmtest.Text(`{"total": 5}`) })
	p, err := predict.New[Sum, Total](adapter.UseAdapter(adapter.JSON{}))
	require.NoError(t, err)
	name := func(ctx context.Context, opts ...adapter.CallOption) string {
		_, res, err := p.Call(ctx, srv.Client(), Sum{2, 3}, opts...)
		require.NoError(t, err)
		return res.Adapter
	}
	assert.Equal(t, "json", name(t.Context()))
	assert.Equal(t, "xml", name(adapter.WithAdapter(t.Context(), adapter.XML{})))
	assert.Equal(t, "chat", name(adapter.WithAdapter(t.Context(), adapter.XML{}), adapter.UseAdapter(adapter.Chat{})))
}

// TestCallDemosAndInstructions: WithDemos and WithInstructions given to a
// call apply to that call only.
func TestCallDemosAndInstructions(t *testing.T) {
	srv := lmtest.NewServer()
	defer srv.Close()
	srv.Handle(func(lmtest.Request) lmtest.Reply { return lmtest.Text("[[ ## answer ## ]]\nx") })
	sig, err := signature.Parse("question -> answer")
	require.NoError(t, err)
	m := predict.NewModule(sig, predict.WithDemos(adapter.Values{"question": "module demo", "answer": "a"}), predict.WithInstructions("Module instructions."))
	_, err = m.Call(t.Context(), srv.Client(), adapter.Values{"question": "q"},
		predict.WithDemos(adapter.Values{"question": "call demo", "answer": "b"}), predict.WithInstructions("Call instructions."))
	require.NoError(t, err)
	_, err = m.Call(t.Context(), srv.Client(), adapter.Values{"question": "q"})
	require.NoError(t, err)
	first, second := srv.Requests()[0].Chat.Messages, srv.Requests()[1].Chat.Messages
	assert.Contains(t, first[0].Content, "Call instructions.")
	assert.Contains(t, first[1].Content, "call demo")
	assert.Contains(t, second[0].Content, "Module instructions.")
	assert.Contains(t, second[1].Content, "module demo")
}

// TestTypedStream: a typed module streams field deltas, then the typed Out
// on the Done chunk; ChainOfThought streams its reasoning first.
func TestTypedStream(t *testing.T) {
	srv := lmtest.NewServer(
		lmtest.Text("[[ ## answer ## ]]\nParis is the capital.\n\n[[ ## completed ## ]]").ChunkSize(4),
		lmtest.Text("[[ ## reasoning ## ]]\nIt is well known.\n\n[[ ## answer ## ]]\nParis\n\n[[ ## completed ## ]]").ChunkSize(3))
	defer srv.Close()
	p, err := predict.New[Question, Answer]()
	require.NoError(t, err)
	deltas := map[string]string{}
	var out Answer
	for ch, err := range p.Stream(t.Context(), srv.Client(), Question{"Capital of France?"}) {
		require.NoError(t, err)
		deltas[ch.Field] += ch.Delta
		if ch.Done {
			out = ch.Out
		}
	}
	assert.Equal(t, "Paris is the capital.", deltas["answer"])
	assert.Equal(t, Answer{"Paris is the capital."}, out)

	cot, err := predict.NewChainOfThought[Question, Answer]()
	require.NoError(t, err)
	deltas = map[string]string{}
	var done predict.Chunk[Answer]
	for ch, err := range cot.Stream(t.Context(), srv.Client(), Question{"Capital of France?"}) {
		require.NoError(t, err)
		deltas[ch.Field] += ch.Delta
		if ch.Done {
			done = ch
		}
	}
	assert.Equal(t, "It is well known.", deltas["reasoning"])
	assert.Equal(t, Answer{"Paris"}, done.Out)
	assert.Equal(t, "It is well known.", done.Result.Outputs[0]["reasoning"])
}

// TestChainOfThoughtModule: dspy.ChainOfThought("question -> answer") from
// a signature string.
func TestChainOfThoughtModule(t *testing.T) {
	srv := lmtest.NewServer(lmtest.Text("[[ ## reasoning ## ]]\nSix sevens.\n\n[[ ## answer ## ]]\n42\n\n[[ ## completed ## ]]"))
	defer srv.Close()
	sig, err := signature.Parse("question -> answer: int")
	require.NoError(t, err)
	cot, err := predict.NewChainOfThoughtModule(sig)
	require.NoError(t, err)
	assert.Equal(t, "reasoning", cot.Signature().Output(0).Name)
	res, err := cot.Call(t.Context(), srv.Client(), adapter.Values{"question": "6*7?"})
	require.NoError(t, err)
	assert.Equal(t, adapter.Values{"reasoning": "Six sevens.", "answer": 42}, res.Outputs[0])
	_, err = predict.NewChainOfThoughtModule(nil)
	assert.Error(t, err)
}
