package predict

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"reflect"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/signature"
	"github.com/sigwire/adapter/types"
)

// Module is the untyped Predict: a signature, its demos and defaults.
// It is safe for concurrent use; Load and the With methods return new
// modules.
type Module struct {
	kind     string // Predict or ChainOfThought, in trace events
	sig      *signature.Signature
	demos    []adapter.Values
	defaults adapter.CallOption // adapter.Defaults(the constructor's pipeline options)
	// defaultsOnly is the profile's defaults, if any, then defaults, its
	// capacity its length: the options of every call that gives none of
	// its own. Shared by those calls: nothing writes to an option list,
	// and an append copies it.
	defaultsOnly []adapter.CallOption
	ignored      []string // what Load left out
	// profile is the DSPy profile the module runs under: that of the
	// program Load read, dspy331 for a module not loaded.
	profile *profile
	// nativeReasoning: the constructor typed a ChainOfThought's reasoning
	// as types.Reasoning (WithNativeReasoning).
	nativeReasoning bool
}

// NewModule returns a module for sig: DSPy's Predict with a signature
// string (signature.Parse), or any signature.
func NewModule(sig *signature.Signature, opts ...Option) *Module {
	c, rest := split(opts)
	if c.instructions != nil && sig != nil {
		sig = sig.WithInstructions(*c.instructions)
	}
	defaults := adapter.Defaults(rest...)
	return &Module{kind: "Predict", sig: sig, demos: c.demos, defaults: defaults, defaultsOnly: dspy331.options(defaults), profile: dspy331}
}

// NewChainOfThoughtModule returns an untyped ChainOfThought for sig: sig
// with a reasoning output (str, no description) before its outputs, as
// dspy.ChainOfThought("question -> answer") builds it.
func NewChainOfThoughtModule(sig *signature.Signature, opts ...Option) (*Module, error) {
	if sig == nil {
		return nil, errors.New("predict: nil signature")
	}
	c, _ := split(opts)
	cot, err := withReasoning(sig, c.nativeReasoning)
	if err != nil {
		return nil, err
	}
	m := NewModule(cot, opts...)
	m.kind, m.nativeReasoning = "ChainOfThought", c.nativeReasoning
	return m, nil
}

// withReasoning prepends ChainOfThought's reasoning output: a str, or a
// types.Reasoning (native).
func withReasoning(sig *signature.Signature, native bool) (*signature.Signature, error) {
	f := signature.Field{Name: "reasoning"}
	if native {
		f.Type = reflect.TypeFor[types.Reasoning]()
	}
	s, err := sig.Prepend(signature.Output, f)
	if err != nil {
		return nil, fmt.Errorf("predict: ChainOfThought adds its own reasoning output before the others: rename yours, or use Predict: %w", err)
	}
	return s, nil
}

// Signature returns the module's signature (nil for a nil Module).
func (m *Module) Signature() *signature.Signature {
	if m == nil {
		return nil
	}
	return m.sig
}

// Demos returns the module's demos (nil for a nil Module).
func (m *Module) Demos() []adapter.Values {
	if m == nil {
		return nil
	}
	return append([]adapter.Values(nil), m.demos...)
}

// Call runs the module: its demos and defaults, then opts (which may set
// this call's demos and instructions).
//
// Each run is reported to the call's trace as a module run
// (adapter.StartModule), its LM call as part of it.
func (m *Module) Call(ctx context.Context, lm adapter.LM, inputs adapter.Values, opts ...adapter.CallOption) (*adapter.Result, error) {
	if err := m.zero(); err != nil {
		return nil, err
	}
	sig, demos, all := m.forCall(opts)
	sig, inputs, record, err := m.inAttempt(ctx, sig, inputs) // Refine's hint, its trajectory (attempt.go)
	if err != nil {
		return nil, err
	}
	ctx, done := adapter.StartModule(ctx, m.kind, inputs, all...)
	res, err := adapter.Call(ctx, lm, sig, demos, inputs, all...)
	if res != nil {
		res.Profile = m.profile.name
	}
	record(res, err)
	done(res, err)
	return res, err
}

// Stream runs the module as adapter.Stream does: field deltas, then a Done
// chunk with the Result.
func (m *Module) Stream(ctx context.Context, lm adapter.StreamingLM, inputs adapter.Values, opts ...adapter.CallOption) iter.Seq2[adapter.Chunk, error] {
	if err := m.zero(); err != nil {
		return errSeq[adapter.Chunk](err)
	}
	sig, demos, all := m.forCall(opts)
	return func(yield func(adapter.Chunk, error) bool) {
		sig, inputs, record, err := m.inAttempt(ctx, sig, inputs) // Refine's hint, its trajectory, as Call
		if err != nil {
			yield(adapter.Chunk{}, err)
			return
		}
		ctx, done := adapter.StartModule(ctx, m.kind, inputs, all...)
		var res *adapter.Result
		defer func() { done(res, err) }()
		for ch, e := range adapter.Stream(ctx, lm, sig, demos, inputs, all...) {
			if ch.Result != nil {
				ch.Result.Profile = m.profile.name
			}
			if ch.Done || e != nil {
				res = ch.Result
				record(res, e)
			}
			if err = e; !yield(ch, e) || e != nil {
				return
			}
		}
	}
}

// forCall returns a call's signature, demos and pipeline options: the
// module's, overridden by the call's.
func (m *Module) forCall(opts []adapter.CallOption) (*signature.Signature, []adapter.Values, []adapter.CallOption) {
	c, rest := split(opts)
	sig, demos := m.sig, m.demos
	if c.instructions != nil && sig != nil {
		sig = sig.WithInstructions(*c.instructions)
	}
	if c.demosSet {
		demos = c.demos
	}
	return sig, demos, m.callOptions(rest)
}

// callOptions puts the module's defaults (its profile's, then its own)
// before a call's options.
func (m *Module) callOptions(extra []adapter.CallOption) []adapter.CallOption {
	if len(extra) == 0 {
		return m.defaultsOnly
	}
	return append(m.defaultsOnly, extra...) // a copy: len(m.defaultsOnly) is its capacity
}

// Predict is DSPy's Predict over Go structs: In's fields are the inputs,
// Out's the outputs (named by json tags, described by desc tags; see
// signature.FromStructs).
type Predict[In, Out any] struct {
	m *Module
}

// New returns a Predict for In and Out.
func New[In, Out any](opts ...Option) (*Predict[In, Out], error) {
	sig, err := signature.FromStructs[In, Out]()
	if err != nil {
		return nil, err
	}
	if sig.NumOutputs() == 0 {
		return nil, fmt.Errorf("predict: %T has no output fields: nothing to ask the LM for", *new(Out))
	}
	return &Predict[In, Out]{m: NewModule(sig, opts...)}, nil
}

// Module returns the untyped module underneath (nil for a nil or zero
// Predict).
func (p *Predict[In, Out]) Module() *Module {
	if p == nil {
		return nil
	}
	return p.m
}

// Signature returns the signature (nil for a nil or zero Predict).
func (p *Predict[In, Out]) Signature() *signature.Signature { return p.Module().Signature() }

// Demo is a typed example: its inputs and outputs.
type Demo[In, Out any] struct {
	In  In
	Out Out
}

// WithDemos returns a copy of p whose demos are demos.
func (p *Predict[In, Out]) WithDemos(demos ...Demo[In, Out]) (*Predict[In, Out], error) {
	if err := p.zero(); err != nil {
		return nil, err
	}
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
	c.demos = vals
	return &Predict[In, Out]{m: &c}, nil
}

// Call runs the module on in and returns the first choice as Out, with the
// Result (usage, calls, every choice).
func (p *Predict[In, Out]) Call(ctx context.Context, lm adapter.LM, in In, opts ...adapter.CallOption) (Out, *adapter.Result, error) {
	var first, zero Out
	res, err := p.call(ctx, lm, in, opts)
	if err != nil {
		return zero, res, err
	}
	// Every choice is decoded, as CallAll does, without a slice to hold
	// them: the first is returned.
	for i, o := range res.Outputs {
		out, err := adapter.Decode[Out](o)
		if err != nil {
			return zero, res, fmt.Errorf("predict: %w", err)
		}
		if i == 0 {
			first = out
		}
	}
	return first, res, nil
}

// CallAll returns one Out per choice (a request with n > 1).
func (p *Predict[In, Out]) CallAll(ctx context.Context, lm adapter.LM, in In, opts ...adapter.CallOption) ([]Out, *adapter.Result, error) {
	res, err := p.call(ctx, lm, in, opts)
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

// call runs the module on in's values: Call's and CallAll's pipeline.
func (p *Predict[In, Out]) call(ctx context.Context, lm adapter.LM, in In, opts []adapter.CallOption) (*adapter.Result, error) {
	if err := p.zero(); err != nil {
		return nil, err
	}
	vals, err := adapter.ValuesOf(in)
	if err != nil {
		return nil, err
	}
	return p.m.Call(ctx, lm, vals, opts...)
}

// Chunk is a typed module's stream event: the adapter's chunk (a field
// delta, reasoning, tool calls, or the Done chunk with the Result) and, on
// the Done chunk, the first choice's outputs as Out.
type Chunk[Out any] struct {
	adapter.Chunk
	// Out is the first choice's outputs, on the Done chunk.
	Out Out
	// Rationale is, on the Done chunk of a ChainOfThought's Stream (and of
	// a BestOfN's or Refine's over one), the reasoning that came before
	// Out, as text: what ChainOfThought.Call returns as its second result
	// for the same reply. It is "" on the other chunks and for other
	// modules. (Reasoning, the embedded chunk's, is a delta of native
	// reasoning as it arrives.)
	Rationale string
}

// Stream runs the module on in as a stream: field deltas as they arrive,
// then a Done chunk carrying the Result and Out.
func (p *Predict[In, Out]) Stream(ctx context.Context, lm adapter.StreamingLM, in In, opts ...adapter.CallOption) iter.Seq2[Chunk[Out], error] {
	if err := p.zero(); err != nil {
		return errSeq[Chunk[Out]](err)
	}
	return func(yield func(Chunk[Out], error) bool) {
		vals, err := adapter.ValuesOf(in)
		if err != nil {
			yield(Chunk[Out]{}, err)
			return
		}
		for ch, err := range p.m.Stream(ctx, lm, vals, opts...) {
			c := Chunk[Out]{Chunk: ch}
			if err == nil && ch.Done {
				if c.Out, err = adapter.Decode[Out](ch.Result.Outputs[0]); err != nil {
					err = fmt.Errorf("predict: %w", err)
				}
			}
			if !yield(c, err) || err != nil {
				return
			}
		}
	}
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
	c, _ := split(opts)
	sig, err := withReasoning(p.m.sig, c.nativeReasoning)
	if err != nil {
		return nil, err
	}
	p.m.sig, p.m.kind, p.m.nativeReasoning = sig, "ChainOfThought", c.nativeReasoning
	return &ChainOfThought[In, Out]{p: p}, nil
}

// Module returns the untyped module underneath (nil for a nil or zero
// ChainOfThought).
func (c *ChainOfThought[In, Out]) Module() *Module {
	if c == nil {
		return nil
	}
	return c.p.Module()
}

// Signature returns the signature, reasoning included (nil for a nil or
// zero ChainOfThought).
func (c *ChainOfThought[In, Out]) Signature() *signature.Signature {
	return c.Module().Signature()
}

// Stream runs the module as a stream: the reasoning's deltas (Field
// "reasoning", or Reasoning deltas when it is native), Out's fields'
// deltas, then a Done chunk carrying the Result, Out and the reasoning as
// text (Rationale): what Call returns for the same reply.
func (c *ChainOfThought[In, Out]) Stream(ctx context.Context, lm adapter.StreamingLM, in In, opts ...adapter.CallOption) iter.Seq2[Chunk[Out], error] {
	if err := c.zero(); err != nil {
		return errSeq[Chunk[Out]](err)
	}
	return func(yield func(Chunk[Out], error) bool) {
		for ch, err := range c.p.Stream(ctx, lm, in, opts...) {
			if err == nil && ch.Done {
				ch.Rationale = reasoningText(ch.Result.Outputs[0]["reasoning"])
			}
			if !yield(ch, err) {
				return
			}
		}
	}
}

// Call runs the module and returns Out and the reasoning.
func (c *ChainOfThought[In, Out]) Call(ctx context.Context, lm adapter.LM, in In, opts ...adapter.CallOption) (Out, string, *adapter.Result, error) {
	if err := c.zero(); err != nil {
		var zero Out
		return zero, "", nil, err
	}
	out, res, err := c.p.Call(ctx, lm, in, opts...)
	if err != nil {
		return out, "", res, err
	}
	return out, reasoningText(res.Outputs[0]["reasoning"]), res, nil
}

// Reasoned is a ChainOfThought's prediction with its reasoning: Out and
// the text ChainOfThought.Call returns beside it. It is the Out of the
// Runner that ChainOfThought.Reasoned returns, for a BestOfN's or
// Refine's reward that scores the reasoning too.
type Reasoned[Out any] struct {
	// Out is the prediction's outputs.
	Out Out
	// Reasoning is the reasoning before them, as text.
	Reasoning string
}

// Reasoned returns c as a Runner for NewBestOfN and NewRefine whose
// predictions are Reasoned[Out]: the reward sees each attempt's reasoning
// beside Out, Call returns the chosen attempt's, and so does Stream's Done
// chunk's Out. The attempts, their requests, Refine's feedback and hints
// are the same as over c.
func (c *ChainOfThought[In, Out]) Reasoned() Runner[In, Reasoned[Out]] {
	return reasonedRunner[In, Out]{c}
}

// reasonedRunner is ChainOfThought.Reasoned's Runner.
type reasonedRunner[In, Out any] struct {
	c *ChainOfThought[In, Out]
}

func (r reasonedRunner[In, Out]) attempt(ctx context.Context, lm adapter.LM, in In, opts []adapter.CallOption) (Reasoned[Out], *adapter.Result, error) {
	out, reasoning, res, err := r.c.Call(ctx, lm, in, opts...)
	return Reasoned[Out]{Out: out, Reasoning: reasoning}, res, err
}

func (r reasonedRunner[In, Out]) streamAttempt(ctx context.Context, lm adapter.StreamingLM, in In, opts []adapter.CallOption, yield func(adapter.Chunk) bool) (Reasoned[Out], *adapter.Result, error) {
	return streamOf(r.c.Stream(ctx, lm, in, opts...), func(c Chunk[Out]) adapter.Chunk { return c.Chunk },
		func(c Chunk[Out]) Reasoned[Out] { return Reasoned[Out]{Out: c.Out, Reasoning: c.Rationale} }, yield)
}

func (r reasonedRunner[In, Out]) describe() (programInfo, error) { return r.c.describe() }

// goType is the Go type Refine's feedback shows as the program's code:
// the ChainOfThought's.
func (r reasonedRunner[In, Out]) goType() string { return fmt.Sprintf("%T", r.c) }

// reasoningText is a ChainOfThought's reasoning as text: a str, or a
// types.Reasoning (WithNativeReasoning).
func reasoningText(v any) string {
	switch r := v.(type) {
	case string:
		return r
	case types.Reasoning:
		return string(r)
	}
	return ""
}

// zeroError is ErrZeroModule for one type.
type zeroError struct{ kind, build string }

func (e zeroError) Error() string {
	return "predict: a nil or zero " + e.kind + ": build it with " + e.build
}

func (e zeroError) Is(target error) bool { return target == ErrZeroModule }

// zero reports whether m is nil or a zero Module (one no constructor
// built: NewModule always sets its kind).
func (m *Module) zero() error {
	if m == nil || m.kind == "" {
		return zeroError{"Module", "predict.NewModule or predict.NewChainOfThoughtModule"}
	}
	return nil
}

// zero reports whether p is nil or a zero Predict.
func (p *Predict[In, Out]) zero() error {
	if p == nil || p.m.zero() != nil {
		return zeroError{"Predict", "predict.New"}
	}
	return nil
}

// zero reports whether c is nil or a zero ChainOfThought.
func (c *ChainOfThought[In, Out]) zero() error {
	if c == nil || c.p.zero() != nil {
		return zeroError{"ChainOfThought", "predict.NewChainOfThought"}
	}
	return nil
}

// errSeq is a stream that yields err alone.
func errSeq[T any](err error) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		var zero T
		yield(zero, err)
	}
}
