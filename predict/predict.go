package predict

import (
	"context"
	"fmt"

	openai "github.com/sashabaranov/go-openai"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/signature"
)

// Option sets a module default.
type Option func(*config)

type config struct {
	sigOpts []signature.Option
	adapter adapter.Adapter
	req     *openai.ChatCompletionRequest
	demos   []adapter.Values
	opts    []adapter.CallOption
	// maxIters is ReAct's step limit (MaxIters); nil means the default.
	maxIters *int
}

// WithInstructions sets the signature's instructions (typed modules).
func WithInstructions(text string) Option {
	return func(c *config) { c.sigOpts = append(c.sigOpts, signature.WithInstructions(text)) }
}

// WithAdapter sets the module's adapter; WithAdapter on the context and
// adapter.UseAdapter on a call still win.
func WithAdapter(a adapter.Adapter) Option { return func(c *config) { c.adapter = a } }

// WithRequest sets the module's LM options (model, temperature, n, …); a
// call's adapter.WithRequest replaces them.
func WithRequest(req openai.ChatCompletionRequest) Option {
	return func(c *config) { c.req = &req }
}

// WithDemos sets the module's demos as Values.
func WithDemos(demos ...adapter.Values) Option {
	return func(c *config) { c.demos = append([]adapter.Values(nil), demos...) }
}

// WithCallOptions adds call options to every call (retries, hooks, …).
func WithCallOptions(opts ...adapter.CallOption) Option {
	return func(c *config) { c.opts = append(c.opts, opts...) }
}

// Module is the untyped Predict: a signature, its demos and defaults.
// It is safe for concurrent use; Load and the With methods return new
// modules.
type Module struct {
	sig     *signature.Signature
	cfg     config
	ignored []string // what Load left out
}

// NewModule returns a module for sig.
func NewModule(sig *signature.Signature, opts ...Option) *Module {
	m := &Module{sig: sig}
	for _, o := range opts {
		o(&m.cfg)
	}
	return m
}

// Signature returns the module's signature.
func (m *Module) Signature() *signature.Signature { return m.sig }

// Demos returns the module's demos.
func (m *Module) Demos() []adapter.Values { return append([]adapter.Values(nil), m.cfg.demos...) }

// Call runs the module: its demos and defaults, then opts.
func (m *Module) Call(ctx context.Context, lm adapter.LM, inputs adapter.Values, opts ...adapter.CallOption) (*adapter.Result, error) {
	return adapter.Call(ctx, lm, m.sig, m.cfg.demos, inputs, m.callOptions(opts)...)
}

func (m *Module) callOptions(extra []adapter.CallOption) []adapter.CallOption {
	var opts []adapter.CallOption
	if m.cfg.adapter != nil {
		opts = append(opts, adapter.Default(m.cfg.adapter))
	}
	if m.cfg.req != nil {
		opts = append(opts, adapter.WithRequest(*m.cfg.req))
	}
	opts = append(opts, m.cfg.opts...)
	return append(opts, extra...)
}

// Predict is DSPy's Predict over Go structs: In's fields are the inputs,
// Out's the outputs (named by json tags, described by desc tags; see
// signature.FromStructs).
type Predict[In, Out any] struct {
	m *Module
}

// New returns a Predict for In and Out.
func New[In, Out any](opts ...Option) (*Predict[In, Out], error) {
	var c config
	for _, o := range opts {
		o(&c)
	}
	sig, err := signature.FromStructs[In, Out](c.sigOpts...)
	if err != nil {
		return nil, err
	}
	return &Predict[In, Out]{m: &Module{sig: sig, cfg: c}}, nil
}

// Module returns the untyped module underneath.
func (p *Predict[In, Out]) Module() *Module { return p.m }

// Signature returns the signature.
func (p *Predict[In, Out]) Signature() *signature.Signature { return p.m.sig }

// Demo is a typed example: its inputs and outputs.
type Demo[In, Out any] struct {
	In  In
	Out Out
}

// WithDemos returns a copy of p whose demos are demos.
func (p *Predict[In, Out]) WithDemos(demos ...Demo[In, Out]) (*Predict[In, Out], error) {
	vals := make([]adapter.Values, len(demos))
	for i, d := range demos {
		in, err := adapter.ValuesOf(d.In)
		if err != nil {
			return nil, err
		}
		out, err := adapter.ValuesOf(d.Out)
		if err != nil {
			return nil, err
		}
		for k, v := range out {
			in[k] = v
		}
		vals[i] = in
	}
	c := *p.m
	c.cfg.demos = vals
	return &Predict[In, Out]{m: &c}, nil
}

// Call runs the module on in and returns the first choice as Out, with the
// Result (usage, calls, every choice).
func (p *Predict[In, Out]) Call(ctx context.Context, lm adapter.LM, in In, opts ...adapter.CallOption) (Out, *adapter.Result, error) {
	outs, res, err := p.CallAll(ctx, lm, in, opts...)
	if err != nil {
		var zero Out
		return zero, res, err
	}
	return outs[0], res, nil
}

// CallAll returns one Out per choice (a request with n > 1).
func (p *Predict[In, Out]) CallAll(ctx context.Context, lm adapter.LM, in In, opts ...adapter.CallOption) ([]Out, *adapter.Result, error) {
	vals, err := adapter.ValuesOf(in)
	if err != nil {
		return nil, nil, err
	}
	res, err := p.m.Call(ctx, lm, vals, opts...)
	if err != nil {
		return nil, res, err
	}
	outs := make([]Out, len(res.Outputs))
	for i, o := range res.Outputs {
		if outs[i], err = adapter.Decode[Out](o); err != nil {
			return nil, res, fmt.Errorf("predict: %w", err)
		}
	}
	return outs, res, nil
}

// ChainOfThought is DSPy's ChainOfThought: Predict with a reasoning output
// (str, no description) placed before Out's fields.
type ChainOfThought[In, Out any] struct {
	p *Predict[In, Out]
}

// NewChainOfThought returns a ChainOfThought for In and Out.
func NewChainOfThought[In, Out any](opts ...Option) (*ChainOfThought[In, Out], error) {
	p, err := New[In, Out](opts...)
	if err != nil {
		return nil, err
	}
	sig, err := p.m.sig.Prepend(signature.Output, signature.Field{Name: "reasoning"})
	if err != nil {
		return nil, err
	}
	p.m.sig = sig
	return &ChainOfThought[In, Out]{p: p}, nil
}

// Module returns the untyped module underneath.
func (c *ChainOfThought[In, Out]) Module() *Module { return c.p.m }

// Signature returns the signature, reasoning included.
func (c *ChainOfThought[In, Out]) Signature() *signature.Signature { return c.p.m.sig }

// Call runs the module and returns Out and the reasoning.
func (c *ChainOfThought[In, Out]) Call(ctx context.Context, lm adapter.LM, in In, opts ...adapter.CallOption) (Out, string, *adapter.Result, error) {
	out, res, err := c.p.Call(ctx, lm, in, opts...)
	if err != nil {
		return out, "", res, err
	}
	reasoning, _ := res.Outputs[0]["reasoning"].(string)
	return out, reasoning, res, nil
}
