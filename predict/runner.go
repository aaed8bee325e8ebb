package predict

import (
	"context"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/signature"
)

// Runner is a module BestOfN and Refine run, once per attempt: a
// *Predict[In, Out] or *ChainOfThought[In, Out] (typed: the reward sees
// Out), a ChainOfThought's Reasoned() (the reward sees Out and the
// reasoning, Reasoned[Out]), a *Module or *ReAct (untyped: In and Out are
// adapter.Values, the first choice's outputs, a ChainOfThought's
// "reasoning" and a ReAct's "trajectory" included), or a *BestOfN or
// *Refine of one of them. The set is closed: Refine injects its hints
// into the predictors of the program, which it must know.
type Runner[In, Out any] interface {
	// attempt runs the program once with the attempt's options.
	attempt(ctx context.Context, lm adapter.LM, in In, opts []adapter.CallOption) (Out, *adapter.Result, error)
	// streamAttempt runs it once as a stream, passing each chunk but the
	// Done chunk to yield; when yield returns false it stops and returns
	// errStopped.
	streamAttempt(ctx context.Context, lm adapter.StreamingLM, in In, opts []adapter.CallOption, yield func(adapter.Chunk) bool) (Out, *adapter.Result, error)
	// describe lists the program's predictors as DSPy's named_predictors
	// names them, and the order of its input and output keys.
	describe() (programInfo, error)
}

// programInfo is what Refine's feedback step knows of a program.
type programInfo struct {
	predictors []namedModule
	inputs     []string // the inputs' keys in order (program_inputs)
	outputs    []string // the outputs' keys in order (program_outputs)
	reasons    bool     // a ChainOfThought: its outputs hold "reasoning" (Chunk.Rationale)
}

type namedModule struct {
	name string
	m    *Module
}

func fieldNames(fs []signature.Field) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = f.Name
	}
	return out
}

// firstOutputs is an untyped module's attempt: its call's first outputs,
// or its error.
func firstOutputs(res *adapter.Result, err error) (adapter.Values, *adapter.Result, error) {
	if err != nil {
		return nil, res, err
	}
	return res.Outputs[0], res, nil
}

// moduleInfo describes one predictor named name.
func moduleInfo(name string, m *Module) programInfo {
	return programInfo{predictors: []namedModule{{name, m}}, inputs: fieldNames(m.sig.Inputs()), outputs: fieldNames(m.sig.Outputs())}
}

func (m *Module) attempt(ctx context.Context, lm adapter.LM, in adapter.Values, opts []adapter.CallOption) (adapter.Values, *adapter.Result, error) {
	return firstOutputs(m.Call(ctx, lm, in, opts...))
}

func (m *Module) describe() (programInfo, error) {
	if err := m.zero(); err != nil {
		return programInfo{}, err
	}
	if m.kind == "ChainOfThought" {
		info := moduleInfo("predict", m) // dspy.ChainOfThought holds its Predict as .predict
		info.reasons = true
		return info, nil
	}
	return moduleInfo(FlatName, m), nil // a bare dspy.Predict is its own predictor, "self"
}

func (p *Predict[In, Out]) attempt(ctx context.Context, lm adapter.LM, in In, opts []adapter.CallOption) (Out, *adapter.Result, error) {
	return p.Call(ctx, lm, in, opts...)
}

func (p *Predict[In, Out]) describe() (programInfo, error) {
	if err := p.zero(); err != nil {
		return programInfo{}, err
	}
	return moduleInfo(FlatName, p.m), nil
}

func (c *ChainOfThought[In, Out]) attempt(ctx context.Context, lm adapter.LM, in In, opts []adapter.CallOption) (Out, *adapter.Result, error) {
	out, _, res, err := c.Call(ctx, lm, in, opts...)
	return out, res, err
}

func (c *ChainOfThought[In, Out]) describe() (programInfo, error) {
	if err := c.zero(); err != nil {
		return programInfo{}, err
	}
	info := moduleInfo("predict", c.p.m)
	info.reasons = true
	return info, nil
}

func (r *ReAct) attempt(ctx context.Context, lm adapter.LM, in adapter.Values, opts []adapter.CallOption) (adapter.Values, *adapter.Result, error) {
	return firstOutputs(r.Call(ctx, lm, in, opts...))
}

func (r *ReAct) describe() (programInfo, error) {
	if r == nil || r.react == nil || r.extract == nil {
		return programInfo{}, zeroError{"ReAct", "predict.NewReAct"}
	}
	return programInfo{
		predictors: []namedModule{{"react", r.react}, {"extract.predict", r.extract}},
		inputs:     fieldNames(r.sig.Inputs()),
		// dspy.Prediction(trajectory=trajectory, **extract)
		outputs: append([]string{"trajectory"}, fieldNames(r.extract.sig.Outputs())...),
	}, nil
}

// nested is the info of a BestOfN or Refine holding this program as its
// module attribute: DSPy names a Predict held there "module", a predictor
// p of another module "module.p".
func (pi programInfo) nested() programInfo {
	out := pi
	out.predictors = make([]namedModule, len(pi.predictors))
	for i, p := range pi.predictors {
		name := "module." + p.name
		if p.name == FlatName {
			name = "module"
		}
		out.predictors[i] = namedModule{name, p.m}
	}
	return out
}

// names maps the program's predictors to their names.
func (pi programInfo) names() map[*Module]string {
	names := make(map[*Module]string, len(pi.predictors))
	for _, p := range pi.predictors {
		names[p.m] = p.name
	}
	return names
}
