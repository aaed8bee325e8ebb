package predict

import (
	"context"
	"fmt"
	"slices"
	"sync"

	openai "github.com/sashabaranov/go-openai"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/internal/pyjson"
	"github.com/sigwire/adapter/signature"
)

// beginAttempt returns the state, context and options of the attempt
// numbered rollout: its predictors by name, the advice each gets (hints,
// or an enclosing Refine's when there is none of its own), and
// temperature 1.0 with the rollout as seed over opts.
func beginAttempt(ctx context.Context, opts []adapter.CallOption, rollout int, names, hints map[*Module]string) (*attemptState, context.Context, []adapter.CallOption) {
	st := &attemptState{names: names, hints: hints}
	if parent := attemptFrom(ctx); st.hints == nil && parent != nil {
		st.hints = parent.hints // an enclosing Refine's advice still holds
	}
	seed := rollout
	aopts := append(slices.Clip(opts), adapter.WithRequest(openai.ChatCompletionRequest{Temperature: 1, Seed: &seed}))
	return st, context.WithValue(ctx, attemptKey{}, st), aopts
}

// An attempt's state, on the context of its calls: which predictors it
// runs (by name), the hint each gets, and the trace of their runs (DSPy's
// dspy.settings.trace within the attempt).
type attemptKey struct{}

type attemptState struct {
	names map[*Module]string
	hints map[*Module]string // nil: no hints in this attempt

	mu    sync.Mutex
	trace []traceEntry
}

// traceEntry is one predictor run: DSPy's (predictor, inputs, prediction).
type traceEntry struct {
	m               *Module
	inputs, outputs pyjson.Object
}

func attemptFrom(ctx context.Context) *attemptState {
	if ctx == nil {
		return nil
	}
	st, _ := ctx.Value(attemptKey{}).(*attemptState)
	return st
}

func (st *attemptState) add(e ...traceEntry) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.trace = append(st.trace, e...)
}

func (st *attemptState) entries() []traceEntry {
	st.mu.Lock()
	defer st.mu.Unlock()
	return slices.Clone(st.trace)
}

// Refine's hint input, as DSPy's WrapperAdapter appends it.
const (
	hintName = "hint_"
	hintDesc = "A hint to the module from an earlier run"
)

// inAttempt is what Module.Call does inside a BestOfN or Refine attempt
// that runs m: a Refine attempt after advice appends the hint_ input to
// the signature and gives it m's advice (DSPy's WrapperAdapter); record
// adds the run to the attempt's trace. Outside an attempt it changes
// nothing.
func (m *Module) inAttempt(ctx context.Context, sig *signature.Signature, inputs adapter.Values) (*signature.Signature, adapter.Values, func(*adapter.Result, error), error) {
	st := attemptFrom(ctx)
	if st == nil || sig == nil {
		return sig, inputs, func(*adapter.Result, error) {}, nil
	}
	name, ok := st.names[m]
	if !ok {
		return sig, inputs, func(*adapter.Result, error) {}, nil
	}
	if hint, ok := st.hints[m]; ok {
		hinted, err := sig.Append(signature.Input, signature.Field{Name: hintName, Desc: hintDesc})
		if err != nil {
			return nil, nil, nil, fmt.Errorf("predict: Refine: the hint to %s: %w", name, err)
		}
		sig, inputs = hinted, withInput(inputs, hintName, hint)
	}
	return sig, inputs, func(res *adapter.Result, err error) {
		if err != nil || res == nil || len(res.Outputs) == 0 {
			return // DSPy traces a predictor's run once it returned
		}
		st.add(traceEntry{m: m, inputs: ordered(inputs, fieldNames(sig.Inputs())), outputs: ordered(res.Outputs[0], fieldNames(sig.Outputs()))})
	}, nil
}

// ordered is vals as an object whose members come in the order of keys
// (the signature's fields, as DSPy's dicts keep them), then any others
// sorted.
func ordered(vals adapter.Values, keys []string) pyjson.Object {
	var o pyjson.Object
	for _, k := range keys {
		if v, ok := vals[k]; ok {
			o.Set(k, v)
		}
	}
	var rest []string
	for k := range vals {
		if !slices.Contains(keys, k) {
			rest = append(rest, k)
		}
	}
	slices.Sort(rest)
	for _, k := range rest {
		o.Set(k, vals[k])
	}
	return o
}
