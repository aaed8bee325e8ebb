package predict_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
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

// answeringServer answers every request with text.
func answeringServer(t *testing.T, text string) *lmtest.Server {
	t.Helper()
	srv := lmtest.NewServer()
	srv.Handle(func(lmtest.Request) lmtest.Reply { return lmtest.Text(text) })
	t.Cleanup(srv.Close)
	return srv
}

// samePrepared checks Prepare's property for one module and inputs:
// prepare sends nothing, and call then sends, first, the prepared request,
// byte for byte as go-openai marshals it. call's outcome is not checked
// (a script may end it early).
func samePrepared(t *testing.T, srv *lmtest.Server, prepare func() (openai.ChatCompletionRequest, error), call func()) openai.ChatCompletionRequest {
	t.Helper()
	before := len(srv.Requests())
	req, err := prepare()
	require.NoError(t, err)
	require.Len(t, srv.Requests(), before, "Prepare sends nothing")
	call()
	reqs := srv.Requests()
	require.Greater(t, len(reqs), before, "Call sent a request")
	b, err := json.Marshal(req)
	require.NoError(t, err)
	require.Equal(t, string(reqs[before].Body), string(b), "Call's first request")
	return req
}

// TestPrepareRealWorldPrograms: every real saved program DSPy 3.3.1 loads,
// loaded onto a Module (and, where its first output is a plain
// reasoning, onto a ChainOfThought module too): the request Prepare
// returns for the reference's sample inputs carries DSPy's recorded
// messages, and is, byte for byte, the request Call sends first.
func TestPrepareRealWorldPrograms(t *testing.T) {
	ref, metas := readReal(t)
	keys := make([]string, 0, len(ref))
	for k, c := range ref {
		if c.Loaded {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	srv := answeringServer(t, "[[ ## completed ## ]]")
	var modules, cots int
	for _, key := range keys {
		want := ref[key]
		parts := strings.Split(key, "|")
		file, pred, variant := parts[0], parts[1], parts[2]
		t.Run(key, func(t *testing.T) {
			sig, err := signature.Parse(metas[file].Signatures[pred][variant], signature.WithTypes(types.Names()))
			require.NoError(t, err)
			prog, err := predict.ReadProgram(filepath.Join("testdata", "realworld", file))
			require.NoError(t, err)
			m, err := predict.NewModule(sig).Load(prog, pred)
			require.NoError(t, err)
			in := sampleInputs(t, m.Signature())
			ctx := context.Background()
			got := samePrepared(t, srv, func() (openai.ChatCompletionRequest, error) { return m.Prepare(ctx, srv.Client(), in) },
				func() { _, _ = m.Call(ctx, srv.Client(), in) })
			gotMsgs := messagesJSON(got.Messages)
			require.Len(t, gotMsgs, len(want.Messages))
			for i, w := range want.Messages {
				g := gotMsgs[i]
				require.Equal(t, w.Role, g.Role, "message %d role", i)
				if w.Content != nil {
					require.NotNil(t, g.Content, "message %d is text", i)
					require.Equal(t, *w.Content, *g.Content, "message %d: DSPy's", i)
				} else {
					require.Equal(t, w.Parts, g.Parts, "message %d parts: DSPy's", i)
				}
			}
			modules++

			first := sig.Output(0)
			if first.Name != "reasoning" || first.Spec.Kind() != signature.KindString || sig.NumOutputs() < 2 {
				return
			}
			cot, err := predict.NewChainOfThoughtModule(sig.Delete("reasoning"))
			require.NoError(t, err)
			cot, err = cot.Load(prog, pred)
			require.NoError(t, err)
			cotReq := samePrepared(t, srv, func() (openai.ChatCompletionRequest, error) { return cot.Prepare(ctx, srv.Client(), in) },
				func() { _, _ = cot.Call(ctx, srv.Client(), in) })
			assert.Equal(t, got, cotReq, "a ChainOfThought sends what the Module with its reasoning sends")
			cots++
		})
	}
	t.Logf("%d loaded predictors prepared as DSPy's prompts and Call's requests; %d as ChainOfThought modules too", modules, cots)
	assert.Positive(t, cots)
}

// TestPrepareReActGolden: for each public ReAct golden, the request
// ReAct.Prepare returns holds the messages of DSPy 3.3.1's own first
// request (what dspy.inspect_history shows for it), and Call sends it
// first, byte for byte.
func TestPrepareReActGolden(t *testing.T) {
	for _, c := range readReactCases(t) {
		t.Run(c.ID, func(t *testing.T) {
			script := &toolScript{t: t, calls: c.ToolCalls, invoked: c.Invocations}
			r, err := predict.NewReAct(goldenSignature(t, c.Signature), goldenTools(t, script, c.Tools), predict.WithMaxIters(c.MaxIters))
			require.NoError(t, err)
			if c.Demos != nil {
				r, err = r.Load(predict.Program{Predictors: map[string]predict.SavedPredictor{
					"react":           {Demos: c.Demos.React, Signature: r.React().Signature().State()},
					"extract.predict": {Demos: c.Demos.Extract, Signature: r.Extract().Signature().State()},
				}})
				require.NoError(t, err)
			}
			inputs := adapter.Values{}
			for k, raw := range c.Inputs {
				var v any
				require.NoError(t, json.Unmarshal(raw, &v))
				inputs[k] = v
			}
			for k, raw := range c.CallKwargs {
				var v int
				require.NoError(t, json.Unmarshal(raw, &v))
				inputs[k] = v
			}
			ctx := adapter.WithTrace(context.Background(), script.trace())
			if c.Adapter == "JSONAdapter" {
				ctx = adapter.WithAdapter(ctx, adapter.JSON{})
			}
			srv := lmtest.NewServer() // Call's first request gets an error: only it is compared
			defer srv.Close()
			got := samePrepared(t, srv, func() (openai.ChatCompletionRequest, error) { return r.Prepare(ctx, srv.Client(), inputs) },
				func() { _, _ = r.Call(ctx, srv.Client(), inputs) })
			want := c.LMRequests[0]
			require.Len(t, got.Messages, len(want.Messages), "%s request", want.Predictor)
			for i, w := range want.Messages {
				require.Equal(t, w.Role, got.Messages[i].Role, "message %d role", i)
				require.Equal(t, w.Content, got.Messages[i].Content, "message %d: DSPy's", i)
			}
			assert.Zero(t, script.started, "no tool ran")
		})
	}
}

// TestPrepareRealReActPrograms: the dspy.ReAct programs among the real
// files, loaded onto NewReAct: the first request is the react
// predictor's, with DSPy's system message and demos and an empty
// trajectory, and it is Call's first; a ReActV2 over the same tools with
// the native Chat adapter (not loaded) sends them in the request.
func TestPrepareRealReActPrograms(t *testing.T) {
	ref, _ := readReal(t)
	tool := func(name string) types.Tool {
		tl, err := types.NewTool(name, "", func(context.Context, queryArgs) (string, error) { return "", nil })
		require.NoError(t, err)
		return tl
	}
	lookup, err := types.NewTool("lookup_wikipedia", "", func(context.Context, titleArgs) (string, error) { return "", nil })
	require.NoError(t, err)
	for _, c := range []struct {
		file, path, sig string
		tools           []types.Tool
		inputs          adapter.Values
	}{
		{file: "01-dspy-saved_program.json", sig: "question: str -> answer: str", tools: []types.Tool{tool("search_wikipedia")},
			inputs: adapter.Values{"question": "Which studio produced That Darn Cat!?"}},
		{file: "22-hello-dspy-optimized_react.json", sig: "claim: str -> titles: list[str]",
			tools:  []types.Tool{tool("search_wikipedia"), lookup},
			inputs: adapter.Values{"claim": "That Darn Cat! was made by Disney."}},
		{file: "25-dspy-tool-use-optimized_react.json", sig: "question: str -> answer: str", tools: []types.Tool{tool("search")},
			inputs: adapter.Values{"question": "Which studio produced That Darn Cat!?"}},
		{file: "29-dspy-testing-optimized_agent.json", path: "react",
			sig: "question: str, context: str, history: list[str] -> sql_query: str, answer: str", tools: []types.Tool{tool("execute_sql")},
			inputs: adapter.Values{"question": "How many customers?", "context": "customers(id)", "history": []string{}}},
	} {
		t.Run(c.file, func(t *testing.T) {
			prog, err := predict.ReadProgram(filepath.Join("testdata", "realworld", c.file))
			require.NoError(t, err)
			prefix := ""
			if c.path != "" {
				prog, prefix = prog.Sub(c.path), c.path+"."
			}
			sig, err := signature.Parse(c.sig)
			require.NoError(t, err)
			tools := c.tools
			r, err := predict.NewReAct(sig, tools)
			require.NoError(t, err)
			r, err = r.Load(prog)
			require.NoError(t, err)
			srv := answeringServer(t, "[[ ## completed ## ]]")
			ctx := context.Background()
			got := samePrepared(t, srv, func() (openai.ChatCompletionRequest, error) { return r.Prepare(ctx, srv.Client(), c.inputs) },
				func() { _, _ = r.Call(ctx, srv.Client(), c.inputs) })
			want := ref[c.file+"|"+prefix+"react|faithful"]
			require.True(t, want.Loaded)
			require.Len(t, got.Messages, len(want.Messages))
			for i := range len(want.Messages) - 1 { // the last holds the sample trajectory
				require.Equal(t, *want.Messages[i].Content, got.Messages[i].Content, "message %d: DSPy's", i)
			}
			last := got.Messages[len(got.Messages)-1].Content
			assert.Contains(t, last, "[[ ## trajectory ## ]]\n\n\nRespond with", "an empty trajectory")

			if _, _, ok := sig.Field("history"); ok {
				return // ReActV2's react predictor has a history of its own
			}
			native, err := predict.NewReActV2(sig, tools, nativeChat)
			require.NoError(t, err)
			nreq := samePrepared(t, srv, func() (openai.ChatCompletionRequest, error) { return native.Prepare(ctx, toolsLM(srv), c.inputs) },
				func() { _, _ = native.Call(ctx, toolsLM(srv), c.inputs) })
			assert.Len(t, nreq.Tools, len(tools)+1, "the tools and submit, natively")
		})
	}
}

// TestPrepareTyped: typed Predict and ChainOfThought: the module's
// instructions, typed demos and request template, a call's instructions
// over the module's, as Call sends them; a ChainOfThought with native
// reasoning on a reasoning LM asks for it natively.
func TestPrepareTyped(t *testing.T) {
	ctx := context.Background()
	srv := answeringServer(t, "[[ ## total ## ]]\n5\n\n[[ ## completed ## ]]")
	p, err := predict.New[Sum, Total](predict.WithInstructions("Add the numbers."),
		adapter.WithRequest(openai.ChatCompletionRequest{Model: "m", Temperature: 0.3}))
	require.NoError(t, err)
	p, err = p.WithDemos(predict.Demo[Sum, Total]{In: Sum{1, 1}, Out: Total{2}})
	require.NoError(t, err)
	got := samePrepared(t, srv, func() (openai.ChatCompletionRequest, error) { return p.Prepare(ctx, srv.Client(), Sum{2, 3}) },
		func() { _, _, _ = p.Call(ctx, srv.Client(), Sum{2, 3}) })
	assert.Equal(t, "m", got.Model)
	want, err := adapter.Chat{}.Format(p.Signature(), []adapter.Values{{"a": 1, "b": 1, "total": 2}}, adapter.Values{"a": 2, "b": 3})
	require.NoError(t, err)
	assert.Equal(t, want, got.Messages)

	call := []adapter.CallOption{predict.WithInstructions("Sum them."), adapter.WithRequest(openai.ChatCompletionRequest{Temperature: 0.9})}
	got = samePrepared(t, srv, func() (openai.ChatCompletionRequest, error) { return p.Prepare(ctx, srv.Client(), Sum{2, 3}, call...) },
		func() { _, _, _ = p.Call(ctx, srv.Client(), Sum{2, 3}, call...) })
	assert.Contains(t, got.Messages[0].Content, "Sum them.")
	assert.Equal(t, "m", got.Model)
	assert.InDelta(t, 0.9, got.Temperature, 1e-6)

	cot, err := predict.NewChainOfThought[Question, Answer]()
	require.NoError(t, err)
	q := Question{"What is the capital of France?"}
	got = samePrepared(t, srv, func() (openai.ChatCompletionRequest, error) { return cot.Prepare(ctx, srv.Client(), q) },
		func() { _, _, _, _ = cot.Call(ctx, srv.Client(), q) })
	assert.Contains(t, got.Messages[0].Content, "1. `reasoning` (str)")

	native, err := predict.NewChainOfThought[Question, Answer](predict.WithNativeReasoning())
	require.NoError(t, err)
	reasoner := adapter.WithCapabilities(srv.Client(), adapter.Capabilities{Reasoning: true})
	got = samePrepared(t, srv, func() (openai.ChatCompletionRequest, error) { return native.Prepare(ctx, reasoner, q) },
		func() { _, _, _, _ = native.Call(ctx, reasoner, q) })
	assert.Equal(t, "low", got.ReasoningEffort)
	assert.NotContains(t, got.Messages[0].Content, "`reasoning`", "the reasoning left the prompt")
}

// TestPrepareAttempts: BestOfN's and Refine's first attempt: the program's
// request at temperature 1.0 with the first rollout as seed, over the
// module's template; Call sends it first. Refine over a ReAct prepares
// the agent's first step.
func TestPrepareAttempts(t *testing.T) {
	ctx := context.Background()
	q := Question{"What is the capital of France?"}
	qa, err := predict.New[Question, Answer](adapter.WithRequest(openai.ChatCompletionRequest{Model: "m", Temperature: 0.2}))
	require.NoError(t, err)
	best, err := predict.NewBestOfN(qa, 3, parisOnly, 1.0, predict.WithFirstRollout(5))
	require.NoError(t, err)
	srv := answeringServer(t, "[[ ## answer ## ]]\nParis, France\n\n[[ ## completed ## ]]")
	got := samePrepared(t, srv, func() (openai.ChatCompletionRequest, error) { return best.Prepare(ctx, srv.Client(), q) },
		func() { _, _, _ = best.Call(ctx, srv.Client(), q) })
	assert.InDelta(t, 1.0, got.Temperature, 0)
	require.NotNil(t, got.Seed)
	assert.Equal(t, 5, *got.Seed)
	assert.Equal(t, "m", got.Model)
	assert.Len(t, srv.Requests(), 3, "three attempts, none reached the threshold")

	cot, err := predict.NewChainOfThought[Question, Answer]()
	require.NoError(t, err)
	refine, err := predict.NewRefine(cot, 2, parisOnly, 1.0)
	require.NoError(t, err)
	srv = answeringServer(t, "[[ ## reasoning ## ]]\nr\n\n[[ ## answer ## ]]\nParis, France\n\n[[ ## discussion ## ]]\nd\n\n[[ ## advice ## ]]\n{}\n\n[[ ## completed ## ]]")
	got = samePrepared(t, srv, func() (openai.ChatCompletionRequest, error) { return refine.Prepare(ctx, srv.Client(), q) },
		func() { _, _, _ = refine.Call(ctx, srv.Client(), q) })
	require.NotNil(t, got.Seed)
	assert.Equal(t, 0, *got.Seed)
	assert.NotContains(t, got.Messages[len(got.Messages)-1].Content, "hint_", "no advice before the first attempt")

	agent, err := predict.NewRefine(searchAgent(t), 2, valuesParisOnly, 1.0, predict.WithFirstRollout(7))
	require.NoError(t, err)
	srv = answeringServer(t, "[[ ## completed ## ]]")
	in := adapter.Values{"question": "Capital of France?"}
	got = samePrepared(t, srv, func() (openai.ChatCompletionRequest, error) { return agent.Prepare(ctx, srv.Client(), in) },
		func() { _, _, _ = agent.Call(ctx, srv.Client(), in) })
	require.NotNil(t, got.Seed)
	assert.Equal(t, 7, *got.Seed)
	assert.Contains(t, got.Messages[0].Content, "next_tool_name", "the react step's request")

	nested, err := predict.NewBestOfN(best, 2, parisOnly, 1.0, predict.WithFirstRollout(1))
	require.NoError(t, err)
	srv = answeringServer(t, "[[ ## answer ## ]]\nParis, France\n\n[[ ## completed ## ]]")
	got = samePrepared(t, srv, func() (openai.ChatCompletionRequest, error) { return nested.Prepare(ctx, srv.Client(), q) },
		func() { _, _, _ = nested.Call(ctx, srv.Client(), q) })
	assert.Equal(t, 5, *got.Seed, "the inner BestOfN's rollout, set last")
}

// TestPrepareReActSteps: a ReAct without steps (WithMaxIters(0), or
// max_iters 0 in the inputs) sends the extract request first, and Prepare
// returns it; a ReAct's call errors before any request are Call's.
func TestPrepareReActSteps(t *testing.T) {
	ctx := context.Background()
	in := adapter.Values{"question": "Capital of France?"}
	srv := answeringServer(t, "[[ ## reasoning ## ]]\nr\n\n[[ ## answer ## ]]\nParis\n\n[[ ## completed ## ]]")
	for name, c := range map[string]struct {
		r  *predict.ReAct
		in adapter.Values
	}{
		"WithMaxIters(0)": {searchAgent(t, predict.WithMaxIters(0)), in},
		"max_iters 0":     {searchAgent(t), adapter.Values{"question": "Capital of France?", "max_iters": 0}},
	} {
		t.Run(name, func(t *testing.T) {
			got := samePrepared(t, srv, func() (openai.ChatCompletionRequest, error) { return c.r.Prepare(ctx, srv.Client(), c.in) },
				func() { _, _ = c.r.Call(ctx, srv.Client(), c.in) })
			assert.Contains(t, got.Messages[0].Content, "`reasoning`", "the extract predictor's request")
			assert.Empty(t, got.Tools)
		})
	}
	r := searchAgent(t)
	for _, opts := range [][]adapter.CallOption{{predict.WithToolConcurrency(0)}, {predict.WithDemos()}, {predict.WithMaxIters(-1)}} {
		_, perr := r.Prepare(ctx, srv.Client(), in, opts...)
		_, cerr := r.Call(ctx, srv.Client(), in, opts...)
		require.Error(t, cerr)
		assert.Equal(t, cerr.Error(), perr.Error())
	}
	var ie *adapter.InputError
	_, err := r.Prepare(ctx, srv.Client(), adapter.Values{})
	assert.ErrorAs(t, err, &ie, "a missing input is Call's *InputError")
}

// countedCache is an LRU that counts its uses.
type countedCache struct {
	lru  *adapter.LRU
	used atomic.Int64
}

func (c *countedCache) Get(ctx context.Context, key string) (adapter.CacheEntry, bool) {
	c.used.Add(1)
	return c.lru.Get(ctx, key)
}

func (c *countedCache) Put(ctx context.Context, key string, e adapter.CacheEntry) {
	c.used.Add(1)
	c.lru.Put(ctx, key, e)
}

// TestPrepareSendsNothingModules: a module's Prepare makes no request,
// leaves a cache untouched and reports nothing to a trace, for every
// module.
func TestPrepareSendsNothingModules(t *testing.T) {
	ctx := context.Background()
	srv := answeringServer(t, "[[ ## answer ## ]]\nParis\n\n[[ ## completed ## ]]")
	cache := &countedCache{lru: adapter.NewLRU(0)}
	var mw atomic.Int64
	lm := adapter.WithMiddleware(srv.Client(), func(next adapter.Invoker) adapter.Invoker {
		return func(ctx context.Context, req openai.ChatCompletionRequest) (openai.ChatCompletionResponse, error) {
			mw.Add(1)
			return next(ctx, req)
		}
	}, adapter.Cached(cache))
	var events atomic.Int64
	trace := &adapter.Trace{
		ModuleStart: func(adapter.ModuleStartInfo) { events.Add(1) },
		CallStart:   func(adapter.CallStartInfo) { events.Add(1) },
		FormatStart: func(adapter.FormatStartInfo) { events.Add(1) },
	}
	ctx = adapter.WithTrace(ctx, trace)
	q := Question{"What is the capital of France?"}
	in := adapter.Values{"question": "What is the capital of France?"}
	qa, err := predict.New[Question, Answer]()
	require.NoError(t, err)
	cot, err := predict.NewChainOfThought[Question, Answer]()
	require.NoError(t, err)
	best, err := predict.NewBestOfN(qa, 2, parisOnly, 1)
	require.NoError(t, err)
	refine, err := predict.NewRefine(cot, 2, parisOnly, 1)
	require.NoError(t, err)
	for name, prepare := range map[string]func() (openai.ChatCompletionRequest, error){
		"Module":         func() (openai.ChatCompletionRequest, error) { return qaModule(t).Prepare(ctx, lm, in) },
		"Predict":        func() (openai.ChatCompletionRequest, error) { return qa.Prepare(ctx, lm, q) },
		"ChainOfThought": func() (openai.ChatCompletionRequest, error) { return cot.Prepare(ctx, lm, q) },
		"ReAct":          func() (openai.ChatCompletionRequest, error) { return searchAgent(t).Prepare(ctx, lm, in) },
		"BestOfN":        func() (openai.ChatCompletionRequest, error) { return best.Prepare(ctx, lm, q) },
		"Refine":         func() (openai.ChatCompletionRequest, error) { return refine.Prepare(ctx, lm, q) },
	} {
		req, err := prepare()
		require.NoError(t, err, name)
		assert.NotEmpty(t, req.Messages, name)
	}
	assert.Empty(t, srv.Requests(), "no request")
	assert.Zero(t, mw.Load(), "no middleware ran")
	assert.Zero(t, events.Load(), "no trace event")
	assert.Zero(t, cache.used.Load(), "the cache is neither read nor written")
	_, res, err := qa.Call(ctx, lm, q)
	require.NoError(t, err)
	assert.Zero(t, res.CacheHits, "the cache held nothing")
	assert.Positive(t, cache.used.Load(), "Call uses it")

	var zero *predict.Module
	_, err = zero.Prepare(ctx, lm, in)
	assert.ErrorIs(t, err, predict.ErrZeroModule)
	var zeroReAct predict.ReAct
	_, err = zeroReAct.Prepare(ctx, lm, in)
	assert.ErrorIs(t, err, predict.ErrZeroModule)
	var zeroBest *predict.BestOfN[Question, Answer]
	_, err = zeroBest.Prepare(ctx, lm, q)
	assert.ErrorIs(t, err, predict.ErrZeroModule)
}
