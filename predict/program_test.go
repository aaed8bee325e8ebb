package predict_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"unicode"

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

// TestSavedLMRequestBounded: a program file is configuration, but what it
// sets through Request stays within what a provider accepts (security
// review 4): n up to 128, max_tokens up to MaxSavedTokens (2^31-1 went
// through before), temperature, top_p and the penalties in their ranges,
// at most four stops; anything outside is left out, never clamped into a
// value the file did not give.
func TestSavedLMRequestBounded(t *testing.T) {
	load := func(lm string) openai.ChatCompletionRequest {
		t.Helper()
		prog, err := predict.LoadProgram(strings.NewReader(`{"predict": {"demos": [], "signature": {"instructions": "", "fields": [{"prefix": "Q:", "description": "${q}"}, {"prefix": "A:", "description": "${a}"}]}, "lm": ` + lm + `}}`))
		require.NoError(t, err)
		return prog.Predictors["predict"].Request()
	}
	assert.Equal(t, openai.ChatCompletionRequest{}, load(`{"n": 100000, "max_tokens": 2147483647, "temperature": 50, "top_p": 3,
		"presence_penalty": -9, "frequency_penalty": 9, "seed": 1e300, "stop": ["a", "b", "c", "d", "e"]}`), "every option out of range is left out")
	seed := 7
	assert.Equal(t, openai.ChatCompletionRequest{N: 128, MaxTokens: predict.MaxSavedTokens, Temperature: 2, TopP: 1,
		PresencePenalty: -2, FrequencyPenalty: 2, Seed: &seed, Stop: []string{"a", "b", "c", "d"}},
		load(`{"n": 128, "max_tokens": 262144, "temperature": 2, "top_p": 1, "presence_penalty": -2, "frequency_penalty": 2, "seed": 7, "stop": ["a", "b", "c", "d"]}`),
		"the bounds themselves are in")
	assert.Zero(t, load(`{"max_tokens": 262145}`).MaxTokens)
	assert.Zero(t, load(`{"n": 2.5}`).N, "a count is whole")
}

// spellings returns every upper/lower-case spelling of s, and s with its
// separators as '-', none, or camel case.
func spellings(s string) []string {
	var out []string
	letters := []rune(s)
	for mask := range 1 << len(letters) {
		r := slices.Clone(letters)
		for i := range r {
			if mask&(1<<i) != 0 {
				r[i] = unicode.ToUpper(r[i])
			}
		}
		out = append(out, string(r))
	}
	parts := strings.Split(s, "_")
	camel := parts[0]
	for _, p := range parts[1:] {
		camel += strings.ToUpper(p[:1]) + p[1:]
	}
	return append(out, strings.ReplaceAll(s, "_", "-"), strings.ReplaceAll(s, "_", ""), camel,
		strings.ReplaceAll(s, "s", "ſ"), strings.ReplaceAll(strings.ToUpper(s), "K", "\u212a")) // long s, Kelvin sign: they fold to s and k
}

// lmHolds reports whether a decoded LM value holds key k at any depth.
func lmHolds(v any, k string) bool {
	switch v := v.(type) {
	case map[string]any:
		for key, x := range v {
			if key == k || lmHolds(x, k) {
				return true
			}
		}
	case []any:
		for _, x := range v {
			if lmHolds(x, k) {
				return true
			}
		}
	}
	return false
}

// TestLoadProgramDropsUnsafeLMKeys: the endpoint keys DSPy drops from an
// untrusted file (api_base, base_url, model_list) and api_key are dropped
// from a predictor's saved LM in every spelling (any case, '-' or no
// separator, camel case, Unicode case folding) and at every depth (inside
// nested objects and lists), top-level and flat programs alike; the other
// settings stay.
func TestLoadProgramDropsUnsafeLMKeys(t *testing.T) {
	var checked int
	for _, base := range []string{"api_base", "base_url", "model_list", "api_key"} {
		for _, k := range spellings(base) {
			kq, err := json.Marshal(k)
			require.NoError(t, err)
			lm := fmt.Sprintf(`{"model": "openai/m", "temperature": 0.5, %s: "http://attacker.example",
				"kwargs": {%s: "x", "keep": {"deeper": [{%s: "y", "ok": 1}]}}, "list": [[{%s: {"nested": true}}]]}`, kq, kq, kq, kq)
			for _, doc := range []string{
				`{"p": {"demos": [], "signature": {"instructions": "", "fields": []}, "lm": ` + lm + `}}`,
				`{"demos": [], "signature": {"instructions": "", "fields": []}, "lm": ` + lm + `}`, // a bare Predict's own state
			} {
				prog, err := predict.LoadProgram(strings.NewReader(doc))
				require.NoError(t, err)
				require.Len(t, prog.Predictors, 1, doc)
				for _, sp := range prog.Predictors {
					require.False(t, lmHolds(sp.LM, k), "%q is dropped at every depth: %v", k, sp.LM)
					assert.Equal(t, "openai/m", sp.LM["model"])
					assert.Equal(t, 0.5, sp.LM["temperature"])
					assert.Equal(t, map[string]any{"keep": map[string]any{"deeper": []any{map[string]any{"ok": 1.0}}}}, sp.LM["kwargs"])
					assert.Equal(t, []any{[]any{map[string]any{}}}, sp.LM["list"])
				}
				checked++
			}
		}
	}
	t.Logf("%d spellings × layouts checked", checked)
	prog, err := predict.LoadProgram(strings.NewReader(`{"p": {"demos": [], "signature": {"instructions": "", "fields": []},
		"lm": {"model": "m", "api_base_note": "kept", "my_api_key_hint": "kept", "base": "kept"}}}`))
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"model": "m", "api_base_note": "kept", "my_api_key_hint": "kept", "base": "kept"}, prog.Predictors["p"].LM,
		"only those keys, not every key that contains them")
}

// TestLoadFlatPredict: a bare dspy.Predict saved on its own (its state at
// the top level, as dspy.Predict(...).save(path) writes it; file 48, from
// noelo/dspy-experiments) is a program of one predictor, "self", which
// loads as DSPy's Predict.load loads it.
func TestLoadFlatPredict(t *testing.T) {
	prog, err := predict.ReadProgram("testdata/realworld/48-dspy-experiments-mipro-prompt.json")
	require.NoError(t, err)
	assert.Equal(t, []string{predict.FlatName}, prog.Names())
	assert.Equal(t, []string{"metadata"}, prog.Skipped)
	assert.Equal(t, "3.0.3", prog.DSPyVersion, "metadata is read")

	type Text struct {
		InputText string `json:"input_text"`
	}
	type Verdict struct {
		Result int `json:"result"`
	}
	p, err := predict.New[Text, Verdict]()
	require.NoError(t, err)
	p, err = p.Load(prog, "self")
	require.NoError(t, err)
	assert.Len(t, p.Module().Demos(), 4)
	assert.Equal(t, "text to be evaluated", p.Signature().Input(0).Desc)
	assert.Contains(t, p.Signature().Instructions(), "return `Result: 1`")

	_, err = p.Load(prog, "predict")
	assert.EqualError(t, err, `predict: saved program has no predictor "predict" (it has self: a bare Predict saved on its own)`)
}
