package predict

import (
	"context"
	"fmt"
	"iter"

	openai "github.com/sashabaranov/go-openai"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/signature"
	"github.com/sigwire/adapter/types"
)

// Agent is a typed ReActV2: In's fields are the task's inputs and Out's
// its outputs (named by json tags, described by desc tags, as for New),
// which the agent's submit tool returns. Call gives Out, not Values to
// assert.
type Agent[In, Out any] struct {
	a *ReActV2
}

// NewAgent returns an Agent for In and Out that may call tools (see
// NewReActV2 for the tools and the options).
func NewAgent[In, Out any](tools []types.Tool, opts ...Option) (*Agent[In, Out], error) {
	sig, err := signature.FromStructs[In, Out]()
	if err != nil {
		return nil, err
	}
	if sig.NumOutputs() == 0 {
		return nil, fmt.Errorf("predict: %T has no output fields: nothing for the agent to submit", *new(Out))
	}
	a, err := NewReActV2(sig, tools, opts...)
	if err != nil {
		return nil, err
	}
	return &Agent[In, Out]{a: a}, nil
}

// ReActV2 returns the untyped agent underneath (nil for a nil or zero
// Agent).
func (g *Agent[In, Out]) ReActV2() *ReActV2 {
	if g == nil {
		return nil
	}
	return g.a
}

// Signature returns the task signature (nil for a nil or zero Agent).
func (g *Agent[In, Out]) Signature() *signature.Signature { return g.ReActV2().Signature() }

// Tools returns the tools the agent may call, submit last.
func (g *Agent[In, Out]) Tools() []types.Tool { return g.ReActV2().Tools() }

// Load returns a copy of g with the saved "react" predictor of prog
// loaded (see ReActV2.Load).
func (g *Agent[In, Out]) Load(prog Program, opts ...LoadOption) (*Agent[In, Out], error) {
	a, err := g.ReActV2().Load(prog, opts...)
	if err != nil {
		return nil, err
	}
	return &Agent[In, Out]{a: a}, nil
}

// Call runs the agent on in (see ReActV2.Call) and returns its outputs as
// Out, with the Result, whose Outputs[0] also holds the "history"
// (HistoryOf) and the "termination_reason" (TerminationOf). A run that
// ended without outputs returns the zero Out, the Result and an error
// matching ErrNoSubmit.
func (g *Agent[In, Out]) Call(ctx context.Context, lm adapter.LM, in In, opts ...adapter.CallOption) (Out, *adapter.Result, error) {
	var zero Out
	if g == nil || !g.a.built() {
		return zero, nil, errAgentNotBuilt
	}
	vals, err := adapter.ValuesOf(in)
	if err != nil {
		return zero, nil, err
	}
	res, err := g.a.Call(ctx, lm, vals, opts...)
	if err != nil {
		return zero, res, err
	}
	out, err := decodeOutputs[Out](g.a.r.sig, res)
	return out, res, err
}

// Stream runs the agent on in as ReActV2.Stream does; the Done chunk
// carries Out.
func (g *Agent[In, Out]) Stream(ctx context.Context, lm adapter.StreamingLM, in In, opts ...adapter.CallOption) iter.Seq2[Chunk[Out], error] {
	if g == nil || !g.a.built() {
		return errSeq[Chunk[Out]](errAgentNotBuilt)
	}
	return func(yield func(Chunk[Out], error) bool) {
		vals, err := adapter.ValuesOf(in)
		if err != nil {
			yield(Chunk[Out]{}, err)
			return
		}
		for ch, err := range g.a.Stream(ctx, lm, vals, opts...) {
			c := Chunk[Out]{Chunk: ch}
			if err == nil && ch.Done {
				c.Out, err = decodeOutputs[Out](g.a.r.sig, ch.Result)
			}
			if !yield(c, err) || err != nil {
				return
			}
		}
	}
}

// Prepare returns the request Call would send first for in, without
// sending it (see ReActV2.Prepare).
func (g *Agent[In, Out]) Prepare(ctx context.Context, lm adapter.LM, in In, opts ...adapter.CallOption) (openai.ChatCompletionRequest, error) {
	if g == nil || !g.a.built() {
		return openai.ChatCompletionRequest{}, errAgentNotBuilt
	}
	vals, err := adapter.ValuesOf(in)
	if err != nil {
		return openai.ChatCompletionRequest{}, err
	}
	return g.a.Prepare(ctx, lm, vals, opts...)
}

func (g *Agent[In, Out]) prepare(ctx context.Context, lm adapter.LM, in In, opts []adapter.CallOption) (openai.ChatCompletionRequest, error) {
	return g.Prepare(ctx, lm, in, opts...)
}

// decodeOutputs is the signature's outputs of a run's Result as Out.
func decodeOutputs[Out any](sig *signature.Signature, res *adapter.Result) (Out, error) {
	vals := adapter.Values{}
	for _, f := range sig.Outputs() {
		vals[f.Name] = res.Outputs[0][f.Name]
	}
	out, err := adapter.Decode[Out](vals)
	if err != nil {
		return out, fmt.Errorf("predict: %w", err)
	}
	return out, nil
}

var errAgentNotBuilt error = zeroError{"Agent", "predict.NewAgent"}

// HistoryOf returns the history of an agent's run (ReActV2, Agent) from
// its Result: one turn per step (see ReActV2.Call); empty for another
// Result.
func HistoryOf(res *adapter.Result) types.History {
	if res == nil || len(res.Outputs) == 0 {
		return types.History{}
	}
	h, _ := res.Outputs[0][historyField].(types.History)
	return h
}

// TerminationOf returns why an agent's run (ReActV2, Agent) ended
// (TerminatedBySubmit, TerminatedByForcedSubmit, …) from its Result; ""
// for another Result.
func TerminationOf(res *adapter.Result) string {
	if res == nil || len(res.Outputs) == 0 {
		return ""
	}
	s, _ := res.Outputs[0][terminationReasonField].(string)
	return s
}

// A ReActV2 is a program for BestOfN and Refine, on Values; an Agent on
// its structs.
func (a *ReActV2) attempt(ctx context.Context, lm adapter.LM, in adapter.Values, opts []adapter.CallOption) (adapter.Values, *adapter.Result, error) {
	res, err := a.Call(ctx, lm, in, opts...)
	if err != nil {
		return nil, res, err
	}
	return res.Outputs[0], res, nil
}

func (a *ReActV2) streamAttempt(ctx context.Context, lm adapter.StreamingLM, in adapter.Values, opts []adapter.CallOption, yield func(adapter.Chunk) bool) (adapter.Values, *adapter.Result, error) {
	return untyped(a.Stream(ctx, lm, in, opts...), yield)
}

func (a *ReActV2) describe() (programInfo, error) {
	if !a.built() {
		return programInfo{}, errV2NotBuilt
	}
	// dspy.Prediction(**outputs, history=…, termination_reason=…)
	return programInfo{
		predictors: []namedModule{{"react", a.r.react}},
		inputs:     fieldNames(a.r.sig.Inputs()),
		outputs:    append(fieldNames(a.r.sig.Outputs()), historyField, terminationReasonField),
	}, nil
}

func (g *Agent[In, Out]) attempt(ctx context.Context, lm adapter.LM, in In, opts []adapter.CallOption) (Out, *adapter.Result, error) {
	return g.Call(ctx, lm, in, opts...)
}

func (g *Agent[In, Out]) streamAttempt(ctx context.Context, lm adapter.StreamingLM, in In, opts []adapter.CallOption, yield func(adapter.Chunk) bool) (Out, *adapter.Result, error) {
	return typed(g.Stream(ctx, lm, in, opts...), yield)
}

func (g *Agent[In, Out]) describe() (programInfo, error) {
	if g == nil {
		return programInfo{}, errAgentNotBuilt
	}
	return g.a.describe()
}

var (
	_ Runner[adapter.Values, adapter.Values] = (*ReActV2)(nil)
	_ Runner[struct{}, struct{ A string }]   = (*Agent[struct{}, struct{ A string }])(nil)
	_ preparer[adapter.Values]               = (*ReActV2)(nil)
	_ preparer[struct{}]                     = (*Agent[struct{}, struct{ A string }])(nil)
)
