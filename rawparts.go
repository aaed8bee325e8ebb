package adapter

import (
	"encoding/json"
	"fmt"
	"reflect"

	openai "github.com/sashabaranov/go-openai"

	"github.com/sigwire/adapter/internal/wire"
)

// RawPart returns a content part that go-openai's types cannot express,
// such as DSPy's input_audio, file and document parts, for a [Formatter]
// to return: part is the part's JSON object, with its "type". The
// [HTTPDoer] wrapper puts it on the wire exactly as given; the pipeline
// refuses to send it through a client without the wrapper
// ([ErrUnsupportedPart]). An LM of your own that sends such parts itself
// declares it with a CarriesRawParts() bool method, and finds each part as
// a ChatMessagePart whose Text is the part's JSON (see [RawPartJSON]).
func RawPart(part json.RawMessage) (openai.ChatMessagePart, error) {
	p, ok := wire.RawPart(part)
	if !ok {
		return openai.ChatMessagePart{}, fmt.Errorf("adapter: a raw content part must be a JSON object with a type: %s", clipBytes(part))
	}
	return p, nil
}

// RawPartJSON returns the JSON of a part made by [RawPart], and false for
// any other part. An LM of your own that declares CarriesRawParts finds
// the parts it must put on the wire itself with it (their type is the
// package's own).
func RawPartJSON(p openai.ChatMessagePart) (json.RawMessage, bool) { return wire.RawPartJSON(p) }

func clipBytes(b []byte) string {
	if len(b) > 80 {
		return string(b[:80]) + "…"
	}
	return string(b)
}

// rawPartCarrier is implemented by LMs that send raw parts themselves.
type rawPartCarrier interface {
	CarriesRawParts() bool
}

// carriesRawParts reports whether lm can put raw parts on the wire: it
// says so, or it is an *openai.Client whose HTTP client is the HTTPDoer
// wrapper.
func carriesRawParts(lm LM) bool {
	for w := lm; w != nil; {
		if c, ok := w.(rawPartCarrier); ok {
			return c.CarriesRawParts()
		}
		if c, ok := w.(*openai.Client); ok && c != nil {
			return wire.Wraps(c)
		}
		switch x := w.(type) {
		case *middlewareLM:
			w = x.lm
		case Unwrapper:
			w = x.Unwrap()
		default:
			return false
		}
	}
	return false
}

// unsupportedPart is the error for raw parts the LM cannot send, naming
// the input that holds them when it is found: in the request's inputs
// (alone, in a list, a map, a struct or a History turn), else in a demo.
func (r *run) unsupportedPart(typ string) error {
	err := fmt.Errorf("%w (a content part of type %s)", ErrUnsupportedPart, typ)
	for i := range r.sig.NumInputs() {
		name := r.sig.Input(i).Name
		if holdsRawPart(reflect.ValueOf(r.inputs[name]), 0) {
			return &InputError{Field: name, Err: err}
		}
	}
	for d, demo := range r.demos {
		for i := range r.sig.NumInputs() {
			name := r.sig.Input(i).Name
			if holdsRawPart(reflect.ValueOf(demo[name]), 0) {
				return &InputError{Field: name, Err: fmt.Errorf("%w (a content part of type %s, in demo %d)", ErrUnsupportedPart, typ, d)}
			}
		}
	}
	return fmt.Errorf("adapter: %w", err)
}

// holdsRawPart reports a Formatter value that formats as a raw part,
// found in v or, to a bounded depth, inside it: list items, map values,
// exported struct fields, a Conversation's turns.
func holdsRawPart(v reflect.Value, depth int) bool {
	if !v.IsValid() || depth > 32 {
		return false
	}
	if v.CanInterface() {
		if f, ok := v.Interface().(Formatter); ok {
			if v.Kind() == reflect.Pointer && v.IsNil() {
				return false
			}
			parts, err := f.FormatParts()
			if err != nil {
				return false
			}
			for _, p := range parts {
				if _, ok := wire.RawPartJSON(p); ok {
					return true
				}
			}
			return false
		}
		if c, ok := asConversation(v.Interface()); ok {
			for _, turn := range c.Turns() {
				for _, x := range turn {
					if holdsRawPart(reflect.ValueOf(x), depth+1) {
						return true
					}
				}
			}
			return false
		}
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		return !v.IsNil() && holdsRawPart(v.Elem(), depth+1)
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			if holdsRawPart(v.Index(i), depth+1) {
				return true
			}
		}
	case reflect.Map:
		for it := v.MapRange(); it.Next(); {
			if holdsRawPart(it.Value(), depth+1) {
				return true
			}
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() && holdsRawPart(v.Field(i), depth+1) {
				return true
			}
		}
	}
	return false
}
