package predict_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/lmtest"
	"github.com/sigwire/adapter/predict"
	"github.com/sigwire/adapter/types"
)

// TestNativeReasoningChainOfThought: WithNativeReasoning leaves DSPy's
// ChainOfThought prompt byte for byte with an LM that does not reason
// natively (and with GPT-5 over Chat Completions); with one that does, the
// reasoning field leaves the prompt, reasoning_effort is sent, and the
// reasoning is the reply's reasoning_content — by Call and by Stream.
func TestNativeReasoningChainOfThought(t *testing.T) {
	marked := "[[ ## reasoning ## ]]\nFrom the field.\n\n[[ ## answer ## ]]\nParis\n\n[[ ## completed ## ]]"
	bare := "[[ ## answer ## ]]\nParis\n\n[[ ## completed ## ]]"
	q := Question{"What is the capital of France?"}
	plain, err := predict.NewChainOfThought[Question, Answer]()
	require.NoError(t, err)
	native, err := predict.NewChainOfThought[Question, Answer](predict.WithNativeReasoning())
	require.NoError(t, err)

	for _, model := range []string{"gpt-4o-mini", "llama3.1", "gpt-5-mini"} {
		srv := lmtest.NewServer(lmtest.Text(marked), lmtest.Text(marked))
		req := adapter.WithRequest(openai.ChatCompletionRequest{Model: model})
		_, _, r1, err := plain.Call(t.Context(), srv.Client(), q, req)
		require.NoError(t, err)
		out, reasoning, _, err := native.Call(t.Context(), srv.Client(), q, req)
		require.NoError(t, err, model)
		reqs := srv.Requests()
		str, typed := reqs[0].Chat.Messages, reqs[1].Chat.Messages
		require.Len(t, typed, 2)
		assert.Equal(t, str[0], typed[0], "%s: the system message is ChainOfThought's", model)
		// DSPy's user message for ChainOfThought(sig, rationale_field_type=dspy.Reasoning):
		// a non-str annotation gets its "(must be formatted …)" note, whose name is str.
		assert.Equal(t, strings.Replace(str[1].Content, "`[[ ## reasoning ## ]]`", "`[[ ## reasoning ## ]]` (must be formatted as a valid Python str)", 1),
			typed[1].Content, model)
		assert.Empty(t, reqs[1].Chat.ReasoningEffort, model)
		assert.Equal(t, "Paris", out.Answer)
		assert.Equal(t, "From the field.", reasoning, model)
		assert.Equal(t, "From the field.", r1.Outputs[0]["reasoning"])
		srv.Close()
	}

	for _, model := range []string{"o3-mini", "deepseek-reasoner"} {
		srv := lmtest.NewServer(lmtest.Text(bare).WithReasoning("Thought natively."),
			lmtest.Text(bare).WithReasoning("Thought natively.").ChunkSize(5))
		req := adapter.WithRequest(openai.ChatCompletionRequest{Model: model})
		out, reasoning, res, err := native.Call(t.Context(), srv.Client(), q, req)
		require.NoError(t, err, model)
		assert.Equal(t, "Paris", out.Answer)
		assert.Equal(t, "Thought natively.", reasoning)
		assert.Equal(t, types.Reasoning("Thought natively."), res.Outputs[0]["reasoning"])

		var streamed strings.Builder
		fieldDeltas := 0
		var done predict.Chunk[Answer]
		for ch, err := range native.Stream(t.Context(), srv.Client(), q, req) {
			require.NoError(t, err)
			streamed.WriteString(ch.Reasoning)
			if ch.Field == "reasoning" {
				fieldDeltas++
			}
			if ch.Done {
				done = ch
			}
		}
		assert.Equal(t, "Thought natively.", streamed.String(), "the reasoning streams as Reasoning deltas")
		assert.Zero(t, fieldDeltas, "a native output has no field deltas (adapter.Chunk)")
		assert.Equal(t, "Paris", done.Out.Answer)
		assert.Equal(t, res.Outputs, done.Result.Outputs, "Call and Stream agree")

		for _, r := range srv.Requests() {
			assert.Equal(t, "low", r.Chat.ReasoningEffort, model)
			sys := r.Chat.Messages[0].Content
			assert.NotContains(t, sys, "`reasoning`", "%s: the field left the prompt", model)
			assert.Contains(t, sys, "1. `answer` (str): often between 1 and 5 words")
		}
		srv.Close()
	}

	// The call's effort is kept; "none" keeps the field in the prompt.
	srv := lmtest.NewServer(lmtest.Text(bare).WithReasoning("r"), lmtest.Text(marked))
	defer srv.Close()
	_, _, _, err = native.Call(t.Context(), srv.Client(), q, adapter.WithRequest(openai.ChatCompletionRequest{Model: "o3-mini", ReasoningEffort: "high"}))
	require.NoError(t, err)
	_, reasoning, _, err := native.Call(t.Context(), srv.Client(), q, adapter.WithRequest(openai.ChatCompletionRequest{Model: "o3-mini", ReasoningEffort: "none"}))
	require.NoError(t, err)
	assert.Equal(t, "From the field.", reasoning)
	reqs := srv.Requests()
	assert.Equal(t, "high", reqs[0].Chat.ReasoningEffort)
	assert.Empty(t, reqs[1].Chat.ReasoningEffort)
	assert.Contains(t, reqs[1].Chat.Messages[0].Content, "1. `reasoning` (str)")
}

// TestNativeReasoningModule: the untyped ChainOfThought takes the option
// too; a declared capability (adapter.WithCapabilities) turns it on for a
// model the table does not know.
func TestNativeReasoningModule(t *testing.T) {
	srv := lmtest.NewServer(lmtest.Text("[[ ## answer ## ]]\nParis\n\n[[ ## completed ## ]]").WithReasoning("Local thoughts."))
	defer srv.Close()
	m, err := predict.NewChainOfThoughtModule(mustSig(t, "question -> answer"), predict.WithNativeReasoning())
	require.NoError(t, err)
	lm := adapter.WithCapabilities(srv.Client(), adapter.Capabilities{Reasoning: true})
	res, err := m.Call(t.Context(), lm, adapter.Values{"question": "q"}, adapter.WithRequest(openai.ChatCompletionRequest{Model: "qwq-32b"}))
	require.NoError(t, err)
	assert.Equal(t, adapter.Values{"reasoning": types.Reasoning("Local thoughts."), "answer": "Paris"}, res.Outputs[0])
	assert.Equal(t, "low", srv.Requests()[0].Chat.ReasoningEffort)
}

// A ChainOfThought over a model that reasons natively: the model thinks
// once (reasoning_content), and the prompt asks for the answer alone.
func ExampleWithNativeReasoning() {
	srv := lmtest.NewServer(lmtest.Text("[[ ## answer ## ]]\n391\n\n[[ ## completed ## ]]").
		WithReasoning("17 × 23 = 17 × 20 + 17 × 3 = 340 + 51 = 391."))
	defer srv.Close()
	cot, _ := predict.NewChainOfThought[Question, Answer](predict.WithNativeReasoning())
	out, reasoning, _, err := cot.Call(context.Background(), srv.Client(), Question{"What is 17 × 23?"},
		adapter.WithRequest(openai.ChatCompletionRequest{Model: "o3-mini"}))
	fmt.Println(out.Answer, err)
	fmt.Println(reasoning)
	req := srv.Requests()[0].Chat
	fmt.Println(req.ReasoningEffort, strings.Contains(req.Messages[0].Content, "`reasoning`"))
	// Output:
	// 391 <nil>
	// 17 × 23 = 17 × 20 + 17 × 3 = 340 + 51 = 391.
	// low false
}
