package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"iter"

	openai "github.com/sashabaranov/go-openai"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/predict"
	"github.com/sigwire/adapter/signature"
)

// TypedModule is a typed module of package predict: a Predict, a
// BestOfN, a Refine, an Agent.
type TypedModule[In, Out any] interface {
	Call(ctx context.Context, lm adapter.LM, in In, opts ...adapter.CallOption) (Out, *adapter.Result, error)
	Stream(ctx context.Context, lm adapter.StreamingLM, in In, opts ...adapter.CallOption) iter.Seq2[predict.Chunk[Out], error]
}

// Typed serves a typed module whose signature is sig: the inputs are
// read into In as encoding/json reads the body (an input In has no
// field for, or a value of the wrong type, is a 400 naming it), and the
// outputs are Out as encoding/json writes it. A Predict or a
// ChainOfThought is served as well through its untyped Module().
func Typed[In, Out any](sig *signature.Signature, m TypedModule[In, Out]) Module {
	return typed[In, Out]{sig: sig, m: m}
}

type typed[In, Out any] struct {
	sig *signature.Signature
	m   TypedModule[In, Out]
}

func (t typed[In, Out]) Signature() *signature.Signature { return t.sig }

// in reads inputs into an In.
func (t typed[In, Out]) in(inputs adapter.Values) (In, error) {
	var in In
	b, err := json.Marshal(inputs)
	if err != nil {
		return in, &adapter.InputError{Err: err}
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		var te *json.UnmarshalTypeError
		field := ""
		if errors.As(err, &te) {
			field = te.Field
		}
		return in, &adapter.InputError{Field: field, Err: err}
	}
	return in, nil
}

// outputs are out as JSON's Values, in res.Outputs[0].
func outputsOf[Out any](out Out, res *adapter.Result) (*adapter.Result, error) {
	b, err := json.Marshal(out)
	if err != nil {
		return res, err
	}
	var v adapter.Values
	if err := json.Unmarshal(b, &v); err != nil {
		return res, err
	}
	if res == nil {
		res = &adapter.Result{}
	}
	cp := *res
	cp.Outputs = append([]adapter.Values{v}, res.Outputs[min(1, len(res.Outputs)):]...)
	return &cp, nil
}

func (t typed[In, Out]) Call(ctx context.Context, lm adapter.LM, inputs adapter.Values, opts ...adapter.CallOption) (*adapter.Result, error) {
	in, err := t.in(inputs)
	if err != nil {
		return nil, err
	}
	out, res, err := t.m.Call(ctx, lm, in, opts...)
	if err != nil {
		return res, err
	}
	return outputsOf(out, res)
}

func (t typed[In, Out]) Stream(ctx context.Context, lm adapter.StreamingLM, inputs adapter.Values, opts ...adapter.CallOption) iter.Seq2[adapter.Chunk, error] {
	return func(yield func(adapter.Chunk, error) bool) {
		in, err := t.in(inputs)
		if err != nil {
			yield(adapter.Chunk{}, err)
			return
		}
		for c, err := range t.m.Stream(ctx, lm, in, opts...) {
			ch := c.Chunk
			if err == nil && ch.Done {
				if ch.Result, err = outputsOf(c.Out, ch.Result); err != nil {
					ch.Done = false
				}
			}
			if !yield(ch, err) {
				return
			}
		}
	}
}

// Prepare shows the request when the typed module can.
func (t typed[In, Out]) Prepare(ctx context.Context, lm adapter.LM, inputs adapter.Values, opts ...adapter.CallOption) (openai.ChatCompletionRequest, error) {
	p, ok := t.m.(interface {
		Prepare(ctx context.Context, lm adapter.LM, in In, opts ...adapter.CallOption) (openai.ChatCompletionRequest, error)
	})
	if !ok {
		return openai.ChatCompletionRequest{}, errors.ErrUnsupported
	}
	in, err := t.in(inputs)
	if err != nil {
		return openai.ChatCompletionRequest{}, err
	}
	return p.Prepare(ctx, lm, in, opts...)
}
