package predict_test

import (
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/predict"
	"github.com/sigwire/adapter/signature"
)

func TestLoadReportsWhatItIgnored(t *testing.T) {
	prog, err := predict.ReadProgram("testdata/realworld/01-dspy-saved_program.json")
	require.NoError(t, err)
	assert.Equal(t, []string{"extract.predict", "react"}, prog.Names())
	assert.Equal(t, []string{"metadata"}, prog.Skipped)
	assert.Equal(t, "3.0.0", prog.DSPyVersion)

	sig, err := signature.Parse("question, trajectory -> next_thought, next_tool_name, next_tool_args")
	require.NoError(t, err)
	m, err := predict.NewModule(sig).Load(prog, "react")
	require.NoError(t, err, "demo keys that name no field are ignored, as DSPy ignores them")
	require.Len(t, m.Demos(), 2)
	assert.Equal(t, []string{`demo 2: "answer", "dspy_split", "dspy_uuid": not fields of the signature`}, m.Ignored())
	assert.NotContains(t, m.Demos()[1], "dspy_uuid")
	assert.Nil(t, predict.NewModule(sig).Ignored(), "a module not loaded ignored nothing")

	// A retriever's {"k": 3} is not a predictor.
	prog, err = predict.ReadProgram("testdata/realworld/26-databricks-dspy-cookbook-optimized_rag.json")
	require.NoError(t, err)
	assert.Equal(t, []string{"response_generator"}, prog.Names())
	assert.Equal(t, []string{"metadata", "retriever"}, prog.Skipped)

	// dspy.Flex's module_src (a string) neither fails the file nor is a predictor.
	prog, err = predict.ReadProgram("testdata/realworld/05-dspy-banking77_flex.json")
	require.NoError(t, err)
	assert.Equal(t, []string{"classify.predict"}, prog.Names())
	assert.Contains(t, prog.Skipped, "module_src")
}

func TestLoadKeepsSavedJSONValues(t *testing.T) {
	// A list in a str field renders as DSPy's numbered list, an object as
	// json.dumps in its saved key order, a list of objects as Python reprs
	// in saved order.
	prog, err := predict.LoadProgram(strings.NewReader(`{"p": {"demos": [
		{"context": ["a b", "c 'd'"], "question": {"zeta": 1, "alpha": [1.0, 2]}, "answer": [{"z": true, "a": null}]}
	], "signature": {"instructions": "I", "fields": [{"prefix": "C:", "description": "${context}"}, {"prefix": "Q:", "description": "${question}"}, {"prefix": "A:", "description": "${answer}"}]}, "lm": null}}`))
	require.NoError(t, err)
	sig, err := signature.Parse("context, question -> answer")
	require.NoError(t, err)
	m, err := predict.NewModule(sig).Load(prog, "p")
	require.NoError(t, err)
	msgs, err := adapter.Chat{}.Format(m.Signature(), m.Demos(), adapter.Values{"context": "c", "question": "q"})
	require.NoError(t, err)
	assert.Equal(t, "[[ ## context ## ]]\n[1] «a b»\n[2] «c 'd'»\n\n[[ ## question ## ]]\n{\"zeta\": 1, \"alpha\": [1.0, 2]}", msgs[1].Content)
	assert.Equal(t, "[[ ## answer ## ]]\n«{'z': True, 'a': None}»\n\n[[ ## completed ## ]]\n", msgs[2].Content,
		"a one-item list in a str output is DSPy's «item», a dict item its repr in saved key order")
}

func TestLoadRefusesOldFormats(t *testing.T) {
	sig, err := signature.Parse("context, question -> reasoning, answer")
	require.NoError(t, err)
	prog, err := predict.ReadProgram("testdata/realworld/35-dspy-demo-MIPROv2_program.json")
	require.NoError(t, err)
	_, err = predict.NewModule(sig).Load(prog, "generate_answer")
	assert.ErrorContains(t, err, "extended_signature", "2.5's optimised instructions are never dropped silently")

	prog, err = predict.ReadProgram("testdata/realworld/39-integrity-optimized_cot.json")
	require.NoError(t, err)
	_, err = predict.NewModule(sig).Load(prog, "generate_answer")
	assert.ErrorContains(t, err, "saved before DSPy 2.5")
}

func TestSavedLMRequest(t *testing.T) {
	prog, err := predict.ReadProgram("testdata/program.json")
	require.NoError(t, err)
	sp := prog.Predictors["generate_answer.predict"]
	assert.Equal(t, openai.ChatCompletionRequest{Temperature: adapter.ZeroTemperature, MaxTokens: 4000}, sp.Request(),
		"the generation options, never the model name (LiteLLM's) nor the endpoint")
	cot, err := predict.NewChainOfThought[Question, Answer]()
	require.NoError(t, err)
	cot, err = cot.Load(prog, "generate_answer.predict")
	require.NoError(t, err)
	assert.Equal(t, []string{`lm: the saved LM settings are not applied (model 'openai/gpt-4o-mini'); pass SavedPredictor.Request() to WithRequest to use its options`}, cot.Module().Ignored())
}
