package predict_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/internal/pyjson"
	"github.com/sigwire/adapter/lmtest"
	"github.com/sigwire/adapter/predict"
	"github.com/sigwire/adapter/signature"
	"github.com/sigwire/adapter/types"
)

// testdata/dspy_react_public.json: dspy.ReAct run by DSPy 3.3.1 itself
// with a scripted LM (its _about explains the file). Each case runs here
// with Go tools that return what the Python tools returned, against lmtest
// answering the same scripted replies; every request must be byte-identical
// and the prediction equal.

type reactField struct {
	Name, Type, Desc, Prefix string
}

type reactSig struct {
	Instructions    string
	Inputs, Outputs []reactField
}

type reactTool struct {
	Name string
	Desc string
	Args json.RawMessage
}

type reactToolCall struct {
	Iteration        int
	ToolName         string          `json:"tool_name"`
	ToolArgs         json.RawMessage `json:"tool_args"`
	Observation      json.RawMessage
	IsExecutionError bool   `json:"is_execution_error"`
	ErrorFinalLine   string `json:"error_final_line"`
}

type reactInvocation struct {
	Function     string
	ReceivedArgs map[string]struct {
		Value json.RawMessage
	} `json:"received_args"`
}

type reactMessage struct {
	Role, Content string
}

type reactCase struct {
	ID             string
	Description    string
	Adapter        string
	Signature      reactSig
	MaxIters       int                        `json:"max_iters"`
	CallKwargs     map[string]json.RawMessage `json:"call_kwargs"`
	Inputs         map[string]json.RawMessage
	Tools          []reactTool
	ReactSignature reactSig `json:"react_signature"`
	Demos          *struct {
		React   []map[string]json.RawMessage `json:"react_demos"`
		Extract []map[string]json.RawMessage `json:"extract_demos"`
	}
	ScriptedCompletions []struct {
		Text    *string
		Raise   string
		Message string
	} `json:"scripted_completions"`
	LMRequests []struct {
		Predictor string
		Adapter   string
		Messages  []reactMessage
	} `json:"lm_requests"`
	ToolCalls   []reactToolCall   `json:"tool_calls"`
	Invocations []reactInvocation `json:"tool_function_invocations"`
	Prediction  *struct {
		TrajectoryKeys []string        `json:"trajectory_keys"`
		Trajectory     json.RawMessage `json:"trajectory"`
		Raw            map[string]json.RawMessage
	}
	Raises                  *struct{ Type, Message string }
	ContainsPythonTraceback bool `json:"contains_python_traceback"`
	DumpState               map[string]struct {
		Demos     []json.RawMessage
		Signature signature.State
	} `json:"dump_state"`
}

func readReactCases(t *testing.T) []reactCase {
	t.Helper()
	b, err := os.ReadFile("testdata/dspy_react_public.json")
	require.NoError(t, err)
	var file struct {
		Cases []json.RawMessage
	}
	require.NoError(t, json.Unmarshal(b, &file))
	cases := make([]reactCase, len(file.Cases))
	for i, raw := range file.Cases {
		require.NoError(t, json.Unmarshal(raw, &cases[i]))
		var all struct {
			Prediction map[string]json.RawMessage
		}
		require.NoError(t, json.Unmarshal(raw, &all))
		if cases[i].Prediction != nil {
			cases[i].Prediction.Raw = all.Prediction
		}
	}
	return cases
}

// tracebackRE is the golden's normalisation of tool-error observations.
var tracebackRE = regexp.MustCompile(`(Execution error in [^:\n]+: )[\s\S]*?(\n\n\[\[ ## |\n\nRespond with|$)`)

func normTraceback(s string) string { return tracebackRE.ReplaceAllString(s, "${1}<error>${2}") }

// goldenSignature builds the task signature as DSPy held it.
func goldenSignature(t *testing.T, s reactSig) *signature.Signature {
	side := func(fs []reactField) string {
		parts := make([]string, len(fs))
		for i, f := range fs {
			parts[i] = f.Name + ": " + f.Type
		}
		return strings.Join(parts, ", ")
	}
	sig, err := signature.Parse(side(s.Inputs) + " -> " + side(s.Outputs))
	require.NoError(t, err)
	for _, f := range append(append([]reactField(nil), s.Inputs...), s.Outputs...) {
		sig, err = sig.Update(f.Name, func(g *signature.Field) {
			g.Prefix = f.Prefix
			if f.Desc != "${"+f.Name+"}" {
				g.Desc = f.Desc
			}
		})
		require.NoError(t, err)
	}
	return sig.WithInstructions(s.Instructions)
}

// toolScript replays the Python tools: the n-th tool run answers with the
// n-th recorded observation (or its error), and each function entered is
// checked against the arguments the Python function received.
type toolScript struct {
	t       *testing.T
	mu      sync.Mutex
	calls   []reactToolCall
	invoked []reactInvocation
	started int // tool runs started (ToolStart events)
	entered int // functions entered
}

func (s *toolScript) trace() *adapter.Trace {
	return &adapter.Trace{ToolStart: func(adapter.ToolStartInfo) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.started++
	}}
}

// answer is the current run's recorded outcome, for a function that
// received args (as JSON after its defaults were applied).
func (s *toolScript) answer(name string, args any) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	require.LessOrEqual(s.t, s.started, len(s.calls), "more tool runs than DSPy made")
	call := s.calls[s.started-1]
	require.Equal(s.t, call.ToolName, name)
	require.Less(s.t, s.entered, len(s.invoked), "tool %s entered where DSPy's was not", name)
	inv := s.invoked[s.entered]
	s.entered++
	require.Equal(s.t, inv.Function, name)
	got, err := json.Marshal(args)
	require.NoError(s.t, err)
	var gotArgs map[string]any
	require.NoError(s.t, json.Unmarshal(got, &gotArgs))
	for k, v := range inv.ReceivedArgs {
		var want any
		require.NoError(s.t, json.Unmarshal(v.Value, &want))
		assert.Equal(s.t, want, gotArgs[k], "tool %s argument %s", name, k)
	}
	if call.IsExecutionError {
		_, msg, _ := strings.Cut(call.ErrorFinalLine, ": ")
		return nil, errors.New(msg)
	}
	v, err := pyjson.Decode(call.Observation)
	require.NoError(s.t, err)
	return v, nil
}

type searchArgs struct {
	Query string `json:"query"`
}

type populationArgs struct {
	City string `json:"city"`
	Year int    `json:"year,omitempty"`
}

type itemsArgs struct {
	Items []string `json:"items"`
}

type divideArgs struct {
	A float64 `json:"a"`
	B float64 `json:"b"`
}

type weatherLocation struct {
	Location map[string]string `json:"location"`
	Units    string            `json:"units,omitempty"`
}

type cityArgs struct {
	City string `json:"city"`
}

type currencyArgs struct {
	Amount float64 `json:"amount"`
	From   string  `json:"from_currency"`
	To     string  `json:"to_currency"`
}

// goldenTools are Go functions for the Python tools of the public cases,
// with DSPy's argument schemas and defaults.
func goldenTools(t *testing.T, s *toolScript, specs []reactTool) []types.Tool {
	makers := map[string]func(name, desc string) (types.Tool, error){
		"search_wiki": func(n, d string) (types.Tool, error) {
			return types.NewTool(n, d, func(_ context.Context, a searchArgs) (any, error) { return s.answer(n, a) })
		},
		"lookup_population": func(n, d string) (types.Tool, error) {
			return types.NewTool(n, d, func(_ context.Context, a populationArgs) (any, error) {
				if a.Year == 0 {
					a.Year = 2020
				}
				return s.answer(n, a)
			})
		},
		"count_items": func(n, d string) (types.Tool, error) {
			return types.NewTool(n, d, func(_ context.Context, a itemsArgs) (any, error) { return s.answer(n, a) })
		},
		"get_current_date": func(n, d string) (types.Tool, error) {
			return types.NewTool(n, d, func(_ context.Context, a struct{}) (any, error) { return s.answer(n, a) })
		},
		"divide": func(n, d string) (types.Tool, error) {
			return types.NewTool(n, d, func(_ context.Context, a divideArgs) (any, error) { return s.answer(n, a) })
		},
		"get_weather": func(n, d string) (types.Tool, error) {
			return types.NewTool(n, d, func(_ context.Context, a weatherLocation) (any, error) {
				if a.Units == "" {
					a.Units = "celsius"
				}
				return s.answer(n, a)
			})
		},
		"list_landmarks": func(n, d string) (types.Tool, error) {
			return types.NewTool(n, d, func(_ context.Context, a cityArgs) (any, error) { return s.answer(n, a) })
		},
		"convert_currency": func(n, d string) (types.Tool, error) {
			return types.NewTool(n, d, func(_ context.Context, a currencyArgs) (any, error) { return s.answer(n, a) })
		},
	}
	var tools []types.Tool
	for _, spec := range specs {
		if spec.Name == "finish" {
			continue
		}
		mk, ok := makers[spec.Name]
		require.True(t, ok, "no Go function for tool %s", spec.Name)
		tool, err := mk(spec.Name, spec.Desc)
		require.NoError(t, err)
		tool.Args = spec.Args // DSPy's schema, byte for byte (pydantic's key order)
		tools = append(tools, tool)
	}
	return tools
}

func TestReActGolden(t *testing.T) {
	for _, c := range readReactCases(t) {
		t.Run(c.ID, func(t *testing.T) {
			runReactCase(t, c)
		})
	}
}

func runReactCase(t *testing.T, c reactCase) {
	sig := goldenSignature(t, c.Signature)
	script := &toolScript{t: t, calls: c.ToolCalls, invoked: c.Invocations}
	r, err := predict.NewReAct(sig, goldenTools(t, script, c.Tools), predict.WithMaxIters(c.MaxIters))
	require.NoError(t, err)
	assert.Equal(t, c.ReactSignature.Instructions, r.React().Signature().Instructions(), "react instructions")
	if c.Demos != nil {
		prog := predict.Program{Predictors: map[string]predict.SavedPredictor{
			"react":           {Demos: c.Demos.React, Signature: r.React().Signature().State()},
			"extract.predict": {Demos: c.Demos.Extract, Signature: r.Extract().Signature().State()},
		}}
		r, err = r.Load(prog)
		require.NoError(t, err)
	}

	var replies []lmtest.Reply
	for _, s := range c.ScriptedCompletions {
		if s.Text != nil {
			replies = append(replies, lmtest.Text(*s.Text))
			continue
		}
		require.Equal(t, "ContextWindowExceededError", s.Raise)
		replies = append(replies, lmtest.ContextLengthExceeded())
	}
	srv := lmtest.NewServer(replies...)
	defer srv.Close()

	inputs := adapter.Values{}
	for k, raw := range c.Inputs {
		var v any
		require.NoError(t, json.Unmarshal(raw, &v))
		inputs[k] = v
	}
	for k, raw := range c.CallKwargs {
		var v int
		require.NoError(t, json.Unmarshal(raw, &v), "call kwarg %s", k)
		inputs[k] = v
	}
	ctx := adapter.WithTrace(context.Background(), script.trace())
	switch c.Adapter {
	case "JSONAdapter":
		ctx = adapter.WithAdapter(ctx, adapter.JSON{})
	default:
		require.Equal(t, "ChatAdapter", c.Adapter)
	}
	res, err := r.Call(ctx, srv.Client(), inputs)

	reqs := srv.Requests()
	n := min(len(reqs), len(c.LMRequests))
	for i := range n {
		want := c.LMRequests[i].Messages
		got := reqs[i].Chat.Messages
		require.Len(t, got, len(want), "request %d (%s, %s): messages", i, c.LMRequests[i].Predictor, c.LMRequests[i].Adapter)
		for j := range want {
			w, g := want[j].Content, got[j].Content
			if c.ContainsPythonTraceback {
				w, g = normTraceback(w), normTraceback(g)
			}
			require.Equal(t, want[j].Role, got[j].Role, "request %d message %d role", i, j)
			require.Equal(t, w, g, "request %d (%s, %s) message %d", i, c.LMRequests[i].Predictor, c.LMRequests[i].Adapter, j)
		}
	}
	require.Len(t, reqs, len(c.LMRequests), "LM requests")
	assert.Equal(t, script.started, len(c.ToolCalls), "tool runs")
	assert.Equal(t, script.entered, len(c.Invocations), "tool functions entered")

	if c.Raises != nil {
		require.Error(t, err, "DSPy raises %s: %s", c.Raises.Type, c.Raises.Message)
		return
	}
	require.NoError(t, err)
	require.NotNil(t, c.Prediction)
	out := res.Outputs[0]
	traj, ok := out["trajectory"].(predict.Trajectory)
	require.True(t, ok, "the trajectory is a predict.Trajectory")
	gotTraj, err := json.Marshal(traj)
	require.NoError(t, err)
	assert.Equal(t, reprNormalized(t, c.Prediction.Trajectory), reprNormalized(t, gotTraj), "trajectory, keys in order")
	for k, raw := range c.Prediction.Raw {
		switch k {
		case "keys", "trajectory_keys", "trajectory":
			continue
		}
		var want any
		require.NoError(t, json.Unmarshal(raw, &want))
		got, err := json.Marshal(out[k])
		require.NoError(t, err)
		var gotV any
		require.NoError(t, json.Unmarshal(got, &gotV))
		assert.Equal(t, want, gotV, "output %s", k)
		assert.Equal(t, string(raw), string(got), "output %s as JSON (int vs float)", k)
	}
	assert.Equal(t, len(c.LMRequests), res.Calls, "Result.Calls counts every LM call")

	// dump_state: the signature texts of both predictors and their demos.
	for name, m := range map[string]*predict.Module{"react": r.React(), "extract.predict": r.Extract()} {
		st := c.DumpState[name]
		assert.Equal(t, st.Signature, m.Signature().State(), "%s signature state", name)
		require.Len(t, m.Demos(), len(st.Demos), "%s demos", name)
		for i, raw := range st.Demos {
			want, err := pyjson.Decode(raw)
			require.NoError(t, err)
			for _, mb := range want.(pyjson.Object).Members() {
				if mb.Key != "augmented" {
					assert.Equal(t, pyjson.Str(mb.Value), pyjson.Str(m.Demos()[i][mb.Key]), "%s demo %d %s", name, i, mb.Key)
				}
			}
		}
	}
}

// reprNormalized is Python's repr of a JSON value (key order and int vs
// float kept), tool-error observations normalised.
func reprNormalized(t *testing.T, raw []byte) string {
	v, err := pyjson.Decode(raw)
	require.NoError(t, err)
	return normTraceback(fmt.Sprint(pyjson.Str(normStrings(v))))
}

func normStrings(v any) any {
	switch x := v.(type) {
	case string:
		return normTraceback(x)
	case pyjson.Object:
		var o pyjson.Object
		for _, m := range x.Members() {
			o.Set(m.Key, normStrings(m.Value))
		}
		return o
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = normStrings(e)
		}
		return out
	}
	return v
}
