package predict

import (
	"context"
	"fmt"

	openai "github.com/sashabaranov/go-openai"

	adapter "github.com/sigwire/adapter"
)

// Every module's Prepare returns the request its Call would send first,
// through adapter.Prepare: the same signature, demos, inputs and options
// as that call, without sending it. A module run's trace events
// (adapter.StartModule) are not fired: nothing runs.

// Prepare returns the request Call would send for inputs, without sending
// it (see adapter.Prepare): the module's signature, demos and defaults,
// then opts (which may set this call's demos and instructions), as for
// Call; inside a Refine attempt after advice, the hint_ input too. Its
// errors are those Call returns before any request. Nothing is reported
// to a trace.
func (m *Module) Prepare(ctx context.Context, lm adapter.LM, inputs adapter.Values, opts ...adapter.CallOption) (openai.ChatCompletionRequest, error) {
	if err := m.zero(); err != nil {
		return openai.ChatCompletionRequest{}, err
	}
	sig, demos, all := m.forCall(opts)
	sig, inputs, _, err := m.inAttempt(ctx, sig, inputs)
	if err != nil {
		return openai.ChatCompletionRequest{}, err
	}
	return adapter.Prepare(ctx, lm, sig, demos, inputs, all...)
}

// Prepare returns the request Call would send for in, without sending it
// (see Module.Prepare).
func (p *Predict[In, Out]) Prepare(ctx context.Context, lm adapter.LM, in In, opts ...adapter.CallOption) (openai.ChatCompletionRequest, error) {
	if err := p.zero(); err != nil {
		return openai.ChatCompletionRequest{}, err
	}
	vals, err := adapter.ValuesOf(in)
	if err != nil {
		return openai.ChatCompletionRequest{}, err
	}
	return p.m.Prepare(ctx, lm, vals, opts...)
}

// Prepare returns the request Call would send for in, without sending it
// (see Module.Prepare): the reasoning is asked for as Call asks for it.
func (c *ChainOfThought[In, Out]) Prepare(ctx context.Context, lm adapter.LM, in In, opts ...adapter.CallOption) (openai.ChatCompletionRequest, error) {
	if err := c.zero(); err != nil {
		return openai.ChatCompletionRequest{}, err
	}
	return c.p.Prepare(ctx, lm, in, opts...)
}

// Prepare returns the request Call would send first for inputs, without
// sending it (see adapter.Prepare): the first step's react request, with
// an empty trajectory, or,
// when the call's step limit is 0 (WithMaxIters, "max_iters" in inputs), the
// extract request. The limits and options of Call apply; its errors are
// those Call returns before any request.
func (r *ReAct) Prepare(ctx context.Context, lm adapter.LM, inputs adapter.Values, opts ...adapter.CallOption) (openai.ChatCompletionRequest, error) {
	st, err := r.start(ctx, lm, inputs, opts)
	if err != nil {
		return openai.ChatCompletionRequest{}, err
	}
	if st.maxIters == 0 { // no step: Call goes to the extract call at once
		in, err := st.extractInputs()
		if err != nil {
			return openai.ChatCompletionRequest{}, err
		}
		return r.extract.Prepare(ctx, lm, in, st.opts...)
	}
	in, err := st.reactInputs()
	if err != nil {
		return openai.ChatCompletionRequest{}, err
	}
	return r.react.Prepare(ctx, lm, in, st.stepOpts...)
}

// Prepare returns the request Call would send first for in, without
// sending it: the program's first request in the first attempt, with the
// attempt's temperature 1.0 and its rollout number (WithFirstRollout) as seed
// over the request template (see the program's Prepare).
func (b *BestOfN[In, Out]) Prepare(ctx context.Context, lm adapter.LM, in In, opts ...adapter.CallOption) (openai.ChatCompletionRequest, error) {
	if b == nil || b.s == nil {
		return openai.ChatCompletionRequest{}, zeroError{"BestOfN", "predict.NewBestOfN"}
	}
	return b.s.prepare(ctx, lm, in, opts)
}

// Prepare returns the request Call would send first for in, without
// sending it, as BestOfN.Prepare does: the first attempt has no advice
// yet.
func (r *Refine[In, Out]) Prepare(ctx context.Context, lm adapter.LM, in In, opts ...adapter.CallOption) (openai.ChatCompletionRequest, error) {
	if r == nil || r.s == nil {
		return openai.ChatCompletionRequest{}, zeroError{"Refine", "predict.NewRefine"}
	}
	return r.s.prepare(ctx, lm, in, opts)
}

// preparer is a Runner whose first request can be prepared: every Runner
// of this package.
type preparer[In any] interface {
	prepare(ctx context.Context, lm adapter.LM, in In, opts []adapter.CallOption) (openai.ChatCompletionRequest, error)
}

// prepare is the first attempt's first request.
func (s *search[In, Out]) prepare(ctx context.Context, lm adapter.LM, in In, opts []adapter.CallOption) (openai.ChatCompletionRequest, error) {
	if ctx == nil {
		return openai.ChatCompletionRequest{}, fmt.Errorf("predict: %s: nil context", s.kind)
	}
	p, ok := s.program.(preparer[In])
	if !ok {
		return openai.ChatCompletionRequest{}, fmt.Errorf("predict: %s: %T cannot prepare its request", s.kind, s.program)
	}
	_, actx, aopts := beginAttempt(ctx, opts, s.firstRollout, s.info.names(), nil)
	req, err := p.prepare(actx, lm, in, aopts)
	if err != nil {
		return openai.ChatCompletionRequest{}, fmt.Errorf("predict: %s: %w", s.kind, err)
	}
	return req, nil
}

func (m *Module) prepare(ctx context.Context, lm adapter.LM, in adapter.Values, opts []adapter.CallOption) (openai.ChatCompletionRequest, error) {
	return m.Prepare(ctx, lm, in, opts...)
}

func (p *Predict[In, Out]) prepare(ctx context.Context, lm adapter.LM, in In, opts []adapter.CallOption) (openai.ChatCompletionRequest, error) {
	return p.Prepare(ctx, lm, in, opts...)
}

func (c *ChainOfThought[In, Out]) prepare(ctx context.Context, lm adapter.LM, in In, opts []adapter.CallOption) (openai.ChatCompletionRequest, error) {
	return c.Prepare(ctx, lm, in, opts...)
}

func (r *ReAct) prepare(ctx context.Context, lm adapter.LM, in adapter.Values, opts []adapter.CallOption) (openai.ChatCompletionRequest, error) {
	return r.Prepare(ctx, lm, in, opts...)
}

func (b *BestOfN[In, Out]) prepare(ctx context.Context, lm adapter.LM, in In, opts []adapter.CallOption) (openai.ChatCompletionRequest, error) {
	return b.Prepare(ctx, lm, in, opts...)
}

func (r *Refine[In, Out]) prepare(ctx context.Context, lm adapter.LM, in In, opts []adapter.CallOption) (openai.ChatCompletionRequest, error) {
	return r.Prepare(ctx, lm, in, opts...)
}

// Every Runner of the package prepares.
var (
	_ preparer[adapter.Values] = (*Module)(nil)
	_ preparer[adapter.Values] = (*ReAct)(nil)
	_ preparer[struct{}]       = (*Predict[struct{}, struct{}])(nil)
	_ preparer[struct{}]       = (*ChainOfThought[struct{}, struct{}])(nil)
	_ preparer[struct{}]       = (*BestOfN[struct{}, struct{}])(nil)
	_ preparer[struct{}]       = (*Refine[struct{}, struct{}])(nil)
)
