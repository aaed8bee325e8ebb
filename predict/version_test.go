package predict_test

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/lmtest"
	"github.com/sigwire/adapter/predict"
	"github.com/sigwire/adapter/signature"
	"github.com/sigwire/adapter/types"
)

// withVersion returns a saved program's text with its metadata's DSPy
// version replaced by version, a JSON value (`"3.5.0"`, `3.5`), or the
// metadata removed when version is "".
func withVersion(t *testing.T, text, version string) predict.Program {
	t.Helper()
	const saved = `"dspy": "3.3.1"`
	require.Contains(t, text, saved)
	if version == "" {
		i := strings.Index(text, `"metadata"`)
		require.Positive(t, i)
		text = strings.TrimRight(text[:i], " \n\t,") + "\n}"
	} else {
		text = strings.Replace(text, saved, `"dspy": `+version, 1)
	}
	prog, err := predict.LoadProgram(strings.NewReader(text))
	require.NoError(t, err)
	return prog
}

func readText(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(b)
}

// predictText is a saved dspy.Predict("question -> answer") of DSPy 3.3.1,
// with one demo.
const predictText = `{
  "predict": {"traces": [], "train": [], "demos": [{"question": "Who wrote Hamlet?", "answer": "William Shakespeare"}],
    "signature": {"instructions": "Answer questions with short factoid answers.",
      "fields": [{"prefix": "Question:", "description": "${question}"}, {"prefix": "Answer:", "description": "often between 1 and 5 words"}]},
    "lm": null},
  "metadata": {"dependency_versions": {"python": "3.11", "dspy": "3.3.1", "cloudpickle": "3.1"}}
}`

// loaders loads a program of each kind of module: a Predict (untyped and
// typed), a ChainOfThought (untyped and typed) and a ReAct, from the same
// DSPy version; each returns Load's error.
func loaders(t *testing.T, version string, opts ...predict.LoadOption) map[string]error {
	t.Helper()
	sig, err := signature.Parse("question -> answer")
	require.NoError(t, err)
	pred := withVersion(t, predictText, version)
	cotProg := withVersion(t, readText(t, "testdata/program.json"), version)
	reactProg := withVersion(t, strings.Replace(readText(t, "testdata/realworld/01-dspy-saved_program.json"), `"dspy": "3.0.0"`, `"dspy": "3.3.1"`, 1), version)

	errs := map[string]error{}
	_, errs["Module"] = predict.NewModule(sig).Load(pred, "predict", opts...)
	p, err := predict.New[Question, Answer]()
	require.NoError(t, err)
	_, errs["Predict"] = p.Load(pred, "predict", opts...)
	cotModule, err := predict.NewChainOfThoughtModule(sig)
	require.NoError(t, err)
	_, errs["ChainOfThoughtModule"] = cotModule.Load(cotProg, "generate_answer.predict", opts...)
	cot, err := predict.NewChainOfThought[Question, Answer]()
	require.NoError(t, err)
	_, errs["ChainOfThought"] = cot.Load(cotProg, "generate_answer.predict", opts...)
	tool, err := types.NewTool("search_wikipedia", "Search Wikipedia.", func(_ context.Context, a queryArgs) (string, error) { return a.Query, nil })
	require.NoError(t, err)
	r, err := predict.NewReAct(sig, []types.Tool{tool})
	require.NoError(t, err)
	_, errs["ReAct"] = r.Load(reactProg, opts...)
	return errs
}

// TestLoadDSPyVersion: a program saved by DSPy 3.5 or later (pre-releases
// of 3.5 and versions compared as numbers: 3.10 and 3.49 are after 3.5)
// is a *VersionError for every kind of module, matching ErrDSPyVersion,
// whose text names the version, what that DSPy changed for the module and
// the option that goes on; with WithAnyDSPyVersion every module but ReAct
// loads, and ReAct's error names NewReActV2 with the option. Programs of
// DSPy 3.4 and earlier, with no version, or with a version that is not a
// version number load without it, as before.
func TestLoadDSPyVersion(t *testing.T) {
	kinds := map[string]string{"Module": "Predict", "Predict": "Predict", "ChainOfThoughtModule": "ChainOfThought", "ChainOfThought": "ChainOfThought", "ReAct": "ReAct"}
	changed := map[string][]string{
		"Predict":        {"XMLAdapter with native function calling, not ChatAdapter", "load it with predict.WithAnyDSPyVersion()"},
		"ChainOfThought": {"native reasoning", `"a short plan"`, "not public", "XMLAdapter with native function calling", "load it with predict.WithAnyDSPyVersion()"},
		"ReAct": {"dspy.ReAct is what DSPy 3.3.1 called ReActV2 (native tool calls, a History, a typed submit tool, no extract step)",
			"predict.NewReActV2(sig, tools).Load(prog, predict.WithAnyDSPyVersion())"},
	}
	for _, v := range []string{"3.5.0", "3.5.1", "3.6.0", "3.5.0b1", "3.5.0rc1", "3.5.0.dev0", "3.10.0", "3.49.0", "4.0", "v3.5.0", "3.5"} {
		for _, opts := range [][]predict.LoadOption{nil, {predict.WithFieldsByPosition()}} {
			for name, err := range loaders(t, `"`+v+`"`, opts...) {
				kind := kinds[name]
				require.Error(t, err, "%s %s", name, v)
				assert.ErrorIs(t, err, predict.ErrDSPyVersion, "%s %s", name, v)
				var ve *predict.VersionError
				require.ErrorAs(t, err, &ve, "%s %s", name, v)
				assert.Equal(t, v, ve.Version)
				assert.Equal(t, kind, ve.Module)
				assert.Contains(t, err.Error(), "saved by DSPy "+v+",", name)
				for _, s := range changed[kind] {
					assert.Contains(t, err.Error(), s, "%s %s", name, v)
				}
			}
		}
		for name, err := range loaders(t, `"`+v+`"`, predict.WithAnyDSPyVersion()) {
			if name != "ReAct" {
				assert.NoError(t, err, "%s %s: the option goes on", name, v)
				continue
			}
			assert.ErrorIs(t, err, predict.ErrDSPyVersion, "a ReAct cannot load a program of DSPy %s even with the option", v)
			assert.ErrorContains(t, err, "NewReActV2(sig, tools).Load(prog, predict.WithAnyDSPyVersion())")
		}
	}

	for _, v := range []string{`"3.3.1"`, `"3.4.1"`, `"3.4.0b1"`, `"3.4.99"`, `"3.0.0b2"`, `"2.5.43"`, `"3"`, ``} {
		for _, opts := range [][]predict.LoadOption{nil, {predict.WithAnyDSPyVersion()}} {
			for name, err := range loaders(t, v, opts...) {
				assert.NoError(t, err, "%s %s", name, v)
			}
		}
	}

	// A version that is not a version number loads as one of DSPy 3.4 or
	// earlier, and Ignored says so; a number is read as its text.
	sig, err := signature.Parse("question -> answer")
	require.NoError(t, err)
	for _, v := range []string{`"unknown"`, `"dev"`, `"1!3.5.0"`, `""`, `{"major": 3}`, `true`} {
		m, err := predict.NewModule(sig).Load(withVersion(t, predictText, v), "predict")
		require.NoError(t, err, v)
		if v == `""` {
			assert.Empty(t, m.Ignored(), "an empty version is no version")
			continue
		}
		require.NotEmpty(t, m.Ignored(), v)
		assert.Contains(t, m.Ignored()[0], "is not a version number: loaded as a program of DSPy 3.4 or earlier (profile dspy-3.3.1)", v)
	}
	prog := withVersion(t, predictText, `3.5`)
	assert.Equal(t, "3.5", prog.DSPyVersion, "a version written as a JSON number")
	_, err = predict.NewModule(sig).Load(prog, "predict")
	assert.ErrorIs(t, err, predict.ErrDSPyVersion)
}

// TestLoadDSPy35RunsXML: with WithAnyDSPyVersion a program of DSPy 3.5 runs
// with DSPy 3.5's default adapter, XML with native function calling: the
// lmtest server receives the XML adapter's prompt, the tools of a
// tool-calling signature as native tools, and Result.Profile is
// "dspy-3.5". The same program saved by DSPy 3.3.1 sends Chat's prompt
// under "dspy-3.3.1". The profile's adapter is a module default: the
// call's UseAdapter, the context's WithAdapter and the adapter the module
// was built with all beat it.
func TestLoadDSPy35RunsXML(t *testing.T) {
	sig, err := signature.Parse("question -> answer")
	require.NoError(t, err)
	m35, err := predict.NewModule(sig).Load(withVersion(t, predictText, `"3.5.0"`), "predict", predict.WithAnyDSPyVersion())
	require.NoError(t, err)
	m331, err := predict.NewModule(sig).Load(withVersion(t, predictText, `"3.3.1"`), "predict", predict.WithAnyDSPyVersion())
	require.NoError(t, err)
	assert.Equal(t, m331.Signature(), m35.Signature(), "the saved texts load alike")
	assert.Equal(t, m331.Demos(), m35.Demos())

	in := adapter.Values{"question": "What is the capital of France?"}
	req := adapter.WithRequest(openai.ChatCompletionRequest{Model: "gpt-4o-mini"})
	srv := lmtest.NewServer()
	defer srv.Close()
	call := func(m *predict.Module, reply string, ctx context.Context, opts ...adapter.CallOption) (*adapter.Result, []openai.ChatCompletionMessage) {
		t.Helper()
		srv.Push(lmtest.Text(reply))
		res, err := m.Call(ctx, srv.Client(), in, append([]adapter.CallOption{req}, opts...)...)
		require.NoError(t, err)
		reqs := srv.Requests()
		return res, reqs[len(reqs)-1].Chat.Messages
	}
	xmlReply, chatReply := "<answer>\nParis\n</answer>", "[[ ## answer ## ]]\nParis\n\n[[ ## completed ## ]]"
	jsonReply := `{"answer": "Paris"}`

	res, msgs := call(m35, xmlReply, t.Context())
	want, err := adapter.XML{}.Format(m35.Signature(), m35.Demos(), in)
	require.NoError(t, err)
	assert.Equal(t, want, msgs, "the XML adapter's prompt")
	assert.Equal(t, "xml", res.Adapter)
	assert.Equal(t, "dspy-3.5", res.Profile)
	assert.Equal(t, "Paris", res.Outputs[0]["answer"])

	res, msgs = call(m331, chatReply, t.Context())
	want, err = adapter.Chat{}.Format(m331.Signature(), m331.Demos(), in)
	require.NoError(t, err)
	assert.Equal(t, want, msgs, "DSPy 3.3.1's Chat prompt, as before")
	assert.Equal(t, "chat", res.Adapter)
	assert.Equal(t, "dspy-3.3.1", res.Profile)

	res, _ = call(m35, chatReply, t.Context(), adapter.UseAdapter(adapter.Chat{}))
	assert.Equal(t, "chat", res.Adapter, "the call's adapter beats the profile's")
	assert.Equal(t, "dspy-3.5", res.Profile)
	res, _ = call(m35, jsonReply, adapter.WithAdapter(t.Context(), adapter.JSON{}))
	assert.Equal(t, "json", res.Adapter, "the context's adapter beats the profile's")
	built, err := predict.NewModule(sig, adapter.UseAdapter(adapter.Chat{})).Load(withVersion(t, predictText, `"3.5.0"`), "predict", predict.WithAnyDSPyVersion())
	require.NoError(t, err)
	res, _ = call(built, chatReply, t.Context())
	assert.Equal(t, "chat", res.Adapter, "the adapter the module was built with beats the profile's")

	// Reloading a loaded module takes the new program's profile.
	back, err := m35.Load(withVersion(t, predictText, `"3.4.1"`), "predict")
	require.NoError(t, err)
	res, _ = call(back, chatReply, t.Context())
	assert.Equal(t, "chat", res.Adapter)
	assert.Equal(t, "dspy-3.3.1", res.Profile)

	// Native function calling: a tool-calling signature's tools go to the
	// provider, as XML with NativeTools on sends them, and not as with
	// DSPy 3.3.1's default (text).
	toolSig, err := signature.Parse("question, tools: list[Tool] -> answer, tool_calls: ToolCalls", signature.WithTypes(types.Names()))
	require.NoError(t, err)
	toolText := strings.Replace(predictText, `{"prefix": "Answer:", "description": "often between 1 and 5 words"}`,
		`{"prefix": "Tools:", "description": "${tools}"}, {"prefix": "Answer:", "description": "often between 1 and 5 words"}, {"prefix": "Tool Calls:", "description": "${tool_calls}"}`, 1)
	toolText = strings.Replace(toolText, `"demos": [{"question": "Who wrote Hamlet?", "answer": "William Shakespeare"}]`, `"demos": []`, 1)
	tool, err := types.NewTool("search", "Search the web.", func(_ context.Context, a queryArgs) (string, error) { return a.Query, nil })
	require.NoError(t, err)
	toolIn := adapter.Values{"question": "q", "tools": []types.Tool{tool}}
	reply := lmtest.Text("<answer>\nParis\n</answer>").WithToolCalls(openai.ToolCall{ID: "c1", Type: openai.ToolTypeFunction,
		Function: openai.FunctionCall{Name: "search", Arguments: `{"query": "q"}`}})
	var reqs []lmtest.Request
	for _, c := range []struct {
		version string
		opts    []adapter.CallOption
	}{
		{`"3.5.0"`, nil},
		{`"3.3.1"`, []adapter.CallOption{adapter.UseAdapter(adapter.XML{Options: adapter.Options{NativeTools: adapter.On}})}},
		{`"3.3.1"`, nil},
	} {
		m, err := predict.NewModule(toolSig).Load(withVersion(t, toolText, c.version), "predict", predict.WithAnyDSPyVersion())
		require.NoError(t, err)
		before := len(srv.Requests())
		srv.Push(reply, reply)
		_, err = m.Call(t.Context(), srv.Client(), toolIn, append([]adapter.CallOption{req}, c.opts...)...)
		if c.version == `"3.5.0"` {
			require.NoError(t, err)
		}
		reqs = append(reqs, srv.Requests()[before])
	}
	require.Len(t, reqs[0].Chat.Tools, 1, "the tools are sent natively")
	assert.Equal(t, "search", reqs[0].Chat.Tools[0].Function.Name)
	assert.Equal(t, reqs[1].Chat, reqs[0].Chat, "the request XML with NativeTools on sends")
	assert.NotContains(t, reqs[0].Chat.Messages[0].Content, "tool_calls", "the native fields leave the prompt")
	assert.Empty(t, reqs[2].Chat.Tools, "DSPy 3.3.1's default asks for the calls in the text")
	assert.Contains(t, reqs[2].Chat.Messages[0].Content, "[[ ## tool_calls ## ]]")
}

// TestLoadDSPy35ChainOfThought: under "dspy-3.5" a ChainOfThought's
// reasoning is a types.Reasoning: a model that reasons natively gets no
// reasoning field and reasoning_effort "low", and its reasoning_content is
// the reasoning; another gets the XML prompt with the reasoning field.
// Loading a program of DSPy 3.3.1 again gives back the module's own
// choice: str, or types.Reasoning when built with WithNativeReasoning.
func TestLoadDSPy35ChainOfThought(t *testing.T) {
	prog35 := withVersion(t, readText(t, "testdata/program.json"), `"3.5.0"`)
	prog331 := withVersion(t, readText(t, "testdata/program.json"), `"3.3.1"`)
	cot, err := predict.NewChainOfThought[Question, Answer]()
	require.NoError(t, err)
	cot35, err := cot.Load(prog35, "generate_answer.predict", predict.WithAnyDSPyVersion())
	require.NoError(t, err)
	reasoningType := func(c *predict.ChainOfThought[Question, Answer]) any {
		f, _, ok := c.Signature().Field("reasoning")
		require.True(t, ok)
		return f.Type
	}
	assert.Equal(t, typeOf[types.Reasoning](), reasoningType(cot35))
	assert.Equal(t, "Reasoning: Let's think step by step in order to", cot35.Signature().Output(0).Prefix, "the saved texts are loaded")

	q := Question{"What is the capital of France?"}
	srv := lmtest.NewServer(lmtest.Text("<answer>\nParis\n</answer>").WithReasoning("Thought natively."),
		lmtest.Text("<reasoning>\nFrom the field.\n</reasoning>\n<answer>\nParis\n</answer>"))
	defer srv.Close()
	out, reasoning, res, err := cot35.Call(t.Context(), srv.Client(), q, adapter.WithRequest(openai.ChatCompletionRequest{Model: "o3-mini"}))
	require.NoError(t, err)
	assert.Equal(t, "Paris", out.Answer)
	assert.Equal(t, "Thought natively.", reasoning)
	assert.Equal(t, "dspy-3.5", res.Profile)
	assert.Equal(t, "xml", res.Adapter)
	native := srv.Requests()[0].Chat
	assert.Equal(t, "low", native.ReasoningEffort)
	for _, m := range native.Messages {
		assert.NotContains(t, m.Content, "<reasoning>", "the reasoning field leaves the prompt")
	}

	out, reasoning, res, err = cot35.Call(t.Context(), srv.Client(), q, adapter.WithRequest(openai.ChatCompletionRequest{Model: "gpt-4o-mini"}))
	require.NoError(t, err)
	assert.Equal(t, "Paris", out.Answer)
	assert.Equal(t, "From the field.", reasoning)
	assert.Equal(t, "dspy-3.5", res.Profile)
	want, err := adapter.XML{}.Format(cot35.Signature(), cot35.Module().Demos(), adapter.Values{"question": q.Question})
	require.NoError(t, err)
	assert.Equal(t, want, srv.Requests()[1].Chat.Messages, "the XML prompt of the reasoning-typed signature")

	back, err := cot35.Load(prog331, "generate_answer.predict")
	require.NoError(t, err)
	assert.Equal(t, typeOf[string](), reasoningType(back), "DSPy 3.3.1's ChainOfThought: a str reasoning")
	nativeCot, err := predict.NewChainOfThought[Question, Answer](predict.WithNativeReasoning())
	require.NoError(t, err)
	nativeCot, err = nativeCot.Load(prog331, "generate_answer.predict")
	require.NoError(t, err)
	assert.Equal(t, typeOf[types.Reasoning](), reasoningType(nativeCot), "WithNativeReasoning is kept")
}

// TestLoadReActV2State: DSPy's ReActV2 state (a "react" predictor with
// history, tools and tool_calls, no "extract.predict"; testdata/
// dspy_reactv2_saved.json is what DSPy 3.3.1's dspy.ReActV2 saved in the
// golden case v2_chat_one_tool_then_submit of
// shared/golden/dspy_reactv2_public.json) does not load into a ReAct,
// with or without WithFieldsByPosition, whatever its version: an error matching
// ErrWrongModule that names NewReActV2 (before, ReAct suggested
// WithFieldsByPosition). Saved by DSPy 3.5 it is a VersionError naming NewReActV2
// and the option.
func TestLoadReActV2State(t *testing.T) {
	text := readText(t, "testdata/dspy_reactv2_saved.json")
	for _, agent := range []*predict.ReAct{searchAgent(t)} {
		for _, version := range []string{`"3.3.1"`, `"3.4.1"`, ``} {
			for _, opts := range [][]predict.LoadOption{nil, {predict.WithFieldsByPosition()}, {predict.WithAnyDSPyVersion()}} {
				_, err := agent.Load(withVersion(t, text, version), opts...)
				require.ErrorIs(t, err, predict.ErrWrongModule, version)
				assert.NotErrorIs(t, err, predict.ErrDSPyVersion)
				assert.EqualError(t, err, `predict: ReAct: the saved "react" predictor is DSPy's ReActV2 (fields question, history, tools, next_thought, tool_calls; no "extract.predict"), `+
					`which dspy.ReActV2 saves, and dspy.ReAct since DSPy 3.5; ReAct cannot load it: load it with predict.NewReActV2(sig, tools).Load(prog)`)
			}
		}
		for _, opts := range [][]predict.LoadOption{nil, {predict.WithAnyDSPyVersion()}} {
			_, err := agent.Load(withVersion(t, text, `"3.5.0"`), opts...)
			var ve *predict.VersionError
			require.ErrorAs(t, err, &ve)
			assert.Equal(t, predict.VersionError{Version: "3.5.0", Module: "ReAct", Predictor: "react"}, *ve)
			assert.EqualError(t, err, "predict: ReAct: the program was saved by DSPy 3.5.0, whose prompts this library does not reproduce "+
				"(it sends DSPy 3.3.1's, for programs of DSPy 3.4 and earlier): since DSPy 3.5 dspy.ReAct is what DSPy 3.3.1 called ReActV2 "+
				"(native tool calls, a History, a typed submit tool, no extract step), whose state ReAct cannot load, with predict.WithAnyDSPyVersion() or without; "+
				"load it with predict.NewReActV2(sig, tools).Load(prog, predict.WithAnyDSPyVersion())")
		}
	}

	// DSPy's own ReAct state, with a History input of the task's, is not
	// ReActV2's.
	prog, err := predict.ReadProgram("testdata/realworld/01-dspy-saved_program.json")
	require.NoError(t, err)
	sig, err := signature.Parse("question -> answer")
	require.NoError(t, err)
	tool, err := types.NewTool("search_wikipedia", "Search Wikipedia.", func(_ context.Context, a queryArgs) (string, error) { return a.Query, nil })
	require.NoError(t, err)
	r, err := predict.NewReAct(sig, []types.Tool{tool})
	require.NoError(t, err)
	_, err = r.Load(prog)
	require.NoError(t, err, "ReAct.Load without options, as before")
	delete(prog.Predictors, "extract.predict")
	_, err = r.Load(prog)
	assert.NotErrorIs(t, err, predict.ErrWrongModule, "ReAct's react predictor alone is not ReActV2's")
}

// TestProfileInResultAndTrace: which profile a module ran under is in its
// Result — Call's, Stream's Done chunk's, a ReAct's, a BestOfN's — and in
// the trace's ModuleDone; a bare adapter.Call follows none.
func TestProfileInResultAndTrace(t *testing.T) {
	sig, err := signature.Parse("question -> answer")
	require.NoError(t, err)
	m35, err := predict.NewModule(sig).Load(withVersion(t, predictText, `"3.5.0"`), "predict", predict.WithAnyDSPyVersion())
	require.NoError(t, err)
	in := adapter.Values{"question": "q"}
	srv := lmtest.NewServer()
	defer srv.Close()
	var done []string
	tr := adapter.UseTrace(&adapter.Trace{ModuleDone: func(i adapter.ModuleDoneInfo) {
		if i.Result != nil {
			done = append(done, i.Module+" "+i.Result.Profile)
		}
	}})

	srv.Push(lmtest.Text("<answer>\nParis\n</answer>"))
	res, err := m35.Call(t.Context(), srv.Client(), in, tr)
	require.NoError(t, err)
	assert.Equal(t, "dspy-3.5", res.Profile)

	srv.Push(lmtest.Text("<answer>\nParis\n</answer>").ChunkSize(4))
	var last *adapter.Result
	for ch, err := range m35.Stream(t.Context(), srv.Client(), in, tr) {
		require.NoError(t, err)
		if ch.Done {
			last = ch.Result
		}
	}
	require.NotNil(t, last)
	assert.Equal(t, "dspy-3.5", last.Profile)

	srv.Push(lmtest.Error(400, `{"error": {"message": "bad request"}}`))
	res, err = m35.Call(t.Context(), srv.Client(), in, tr)
	require.Error(t, err)
	require.NotNil(t, res)
	assert.Equal(t, "dspy-3.5", res.Profile, "a failed call's Result too")

	srv.Push(step("Done.", "finish", "{}"), answer("Paris"))
	res, err = searchAgent(t).Call(t.Context(), srv.Client(), in, tr)
	require.NoError(t, err)
	assert.Equal(t, "dspy-3.3.1", res.Profile)

	best, err := predict.NewBestOfN[adapter.Values, adapter.Values](m35, 2, func(context.Context, adapter.Values, adapter.Values) (float64, error) { return 1, nil }, 1)
	require.NoError(t, err)
	srv.Push(lmtest.Text("<answer>\nParis\n</answer>"))
	_, res, err = best.Call(t.Context(), srv.Client(), in, tr)
	require.NoError(t, err)
	assert.Equal(t, "dspy-3.5", res.Profile)

	srv.Push(lmtest.Text("[[ ## answer ## ]]\nParis\n\n[[ ## completed ## ]]"))
	res, err = adapter.Call(t.Context(), srv.Client(), sig, nil, in)
	require.NoError(t, err)
	assert.Empty(t, res.Profile, "a bare Call follows no profile")

	assert.Equal(t, []string{"Predict dspy-3.5", "Predict dspy-3.5", "Predict dspy-3.5",
		"Predict dspy-3.3.1", "ChainOfThought dspy-3.3.1", "ReAct dspy-3.3.1",
		"Predict dspy-3.5", "BestOfN dspy-3.5"}, done)
}

// TestRealWorldProgramsProfile: every case of the real saved programs
// that DSPy 3.3.1 loads (testdata/realworld, all saved by DSPy 2.5 to
// 3.3) still sends DSPy 3.3.1's messages through Call, byte for byte,
// with and without WithAnyDSPyVersion, under the profile "dspy-3.3.1".
func TestRealWorldProgramsProfile(t *testing.T) {
	ref, metas := readReal(t)
	srv := lmtest.NewServer()
	defer srv.Close()
	srv.Handle(func(lmtest.Request) lmtest.Reply { return lmtest.Error(400, `{"error": {"message": "recorded"}}`) })
	keys := slices.Sorted(func(yield func(string) bool) {
		for k, c := range ref {
			if c.Loaded && !yield(k) {
				return
			}
		}
	})
	require.NotEmpty(t, keys)
	for _, key := range keys {
		want := ref[key]
		parts := strings.Split(key, "|")
		sig, err := signature.Parse(metas[parts[0]].Signatures[parts[1]][parts[2]], signature.WithTypes(types.Names()))
		require.NoError(t, err, key)
		prog, err := predict.ReadProgram(filepath.Join("testdata", "realworld", parts[0]))
		require.NoError(t, err, key)
		for _, opts := range [][]predict.LoadOption{nil, {predict.WithAnyDSPyVersion()}} {
			m, err := predict.NewModule(sig).Load(prog, parts[1], opts...)
			require.NoError(t, err, key)
			res, err := m.Call(t.Context(), srv.Client(), sampleInputs(t, m.Signature()))
			var lmErr *adapter.LMError
			require.ErrorAs(t, err, &lmErr, key)
			require.NotNil(t, res, key)
			assert.Equal(t, "dspy-3.3.1", res.Profile, key)
			reqs := srv.Requests()
			if diff := diffMessages(want.Messages, messagesJSON(reqs[len(reqs)-1].Chat.Messages)); diff != "" {
				t.Fatalf("%s: %s", key, diff)
			}
		}
	}
	t.Logf("%d real cases: DSPy 3.3.1's messages through Call under dspy-3.3.1", len(keys))
}

func typeOf[T any]() reflect.Type { return reflect.TypeFor[T]() }
