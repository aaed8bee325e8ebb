package adapter

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strconv"

	openai "github.com/sashabaranov/go-openai"
)

// rawPartType marks a content part that go-openai's types cannot express;
// its Text is the part's JSON, which the HTTPDoer wrapper puts on the wire
// in its place.
const rawPartType openai.ChatMessagePartType = "x-sigwire-raw-part"

// ErrUnsupportedPart reports a content part (audio, a file, a document)
// that the LM's client cannot send: go-openai's message parts carry text
// and images only. Through an *openai.Client whose HTTP client is wrapped
// with [HTTPDoer], they are sent.
var ErrUnsupportedPart = errors.New("go-openai cannot send this content part (only text and image_url); wrap the client's HTTP client: cfg.HTTPClient = adapter.HTTPDoer(cfg.HTTPClient)")

// RawPart returns a content part that go-openai's types cannot express,
// such as DSPy's input_audio, file and document parts, for a [Formatter]
// to return: part is the part's JSON object, with its "type". The
// [HTTPDoer] wrapper puts it on the wire exactly as given; the pipeline
// refuses to send it through a client without the wrapper
// ([ErrUnsupportedPart]). An LM of your own that sends such parts itself
// declares it with a CarriesRawParts() bool method, and finds each part as
// a ChatMessagePart whose Text is the part's JSON (see [RawPartJSON]).
func RawPart(part json.RawMessage) (openai.ChatMessagePart, error) {
	var compact bytes.Buffer
	compact.Grow(len(part))
	if err := json.Compact(&compact, part); err != nil || compact.Len() == 0 || compact.Bytes()[0] != '{' || partType(compact.Bytes()) == "" {
		return openai.ChatMessagePart{}, fmt.Errorf("adapter: a raw content part must be a JSON object with a type: %s", clipBytes(part))
	}
	return openai.ChatMessagePart{Type: rawPartType, Text: compact.String()}, nil
}

// partType reads the "type" of a part's JSON object, "" when it has none
// (or it is not a string). The rest of the object is not decoded when
// "type" comes first, as it does in the parts this package and package
// types write, so a megabyte of audio is not read twice.
func partType(b []byte) string {
	d := json.NewDecoder(bytes.NewReader(b))
	if t, err := d.Token(); err != nil || t != json.Delim('{') {
		return ""
	}
	for d.More() {
		k, err := d.Token()
		if err != nil {
			return ""
		}
		if k == "type" {
			var s string
			if d.Decode(&s) != nil {
				return ""
			}
			return s
		}
		var skip json.RawMessage
		if d.Decode(&skip) != nil {
			return ""
		}
	}
	return ""
}

// RawPartJSON returns the JSON of a part made by [RawPart], and false for
// any other part.
func RawPartJSON(p openai.ChatMessagePart) (json.RawMessage, bool) {
	if p.Type != rawPartType {
		return nil, false
	}
	return json.RawMessage(p.Text), true
}

func clipBytes(b []byte) string {
	if len(b) > 80 {
		return string(b[:80]) + "…"
	}
	return string(b)
}

// rawParts returns the type of the first raw part in msgs, if any.
func rawParts(msgs []openai.ChatCompletionMessage) (string, bool) {
	for _, m := range msgs {
		for _, p := range m.MultiContent {
			if raw, ok := RawPartJSON(p); ok {
				return partType(raw), true
			}
		}
	}
	return "", false
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
			doer := reflect.ValueOf(c).Elem().FieldByName("config").FieldByName("HTTPClient")
			return doer.IsValid() && !doer.IsNil() && doer.Elem().Type() == reflect.TypeFor[wireDoer]()
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

// rawPartsKey marks a request whose body holds raw parts for the wrapper.
type rawPartsKey struct{}

// withRawParts rewrites a request body whose messages hold raw parts: each
// {"type":"x-sigwire-raw-part","text":"<json>"} object becomes <json>.
func withRawParts(req *http.Request) (*http.Request, error) {
	return rewriteBody(req, replaceRawParts)
}

// rewriteBody returns req with its body rewritten by f: the wrapper's one
// way to change what goes on the wire.
func rewriteBody(req *http.Request, f func([]byte) ([]byte, error)) (*http.Request, error) {
	if req.Body == nil {
		return req, nil
	}
	body, err := io.ReadAll(req.Body)
	req.Body.Close()
	if err != nil {
		return nil, err
	}
	out, err := f(body)
	if err != nil {
		return nil, err
	}
	r := req.Clone(req.Context())
	r.Body = io.NopCloser(bytes.NewReader(out))
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(out)), nil }
	r.ContentLength = int64(len(out))
	r.Header.Set("Content-Length", strconv.Itoa(len(out)))
	return r, nil
}

// replaceRawParts walks a request body and replaces, inside
// messages[].content[], every raw part object by the JSON it carries,
// leaving every other byte as go-openai wrote it.
func replaceRawParts(body []byte) ([]byte, error) {
	var req struct {
		Messages []struct {
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, fmt.Errorf("adapter: reading the request body for raw parts: %w", err)
	}
	var out bytes.Buffer
	out.Grow(len(body))
	rest := body
	for _, m := range req.Messages {
		if len(m.Content) == 0 || m.Content[0] != '[' {
			continue
		}
		var parts []json.RawMessage
		if json.Unmarshal(m.Content, &parts) != nil {
			continue
		}
		for _, p := range parts {
			var part struct {
				Type string `json:"type"`
				Text string `json:"text"`
			}
			if json.Unmarshal(p, &part) != nil || part.Type != string(rawPartType) {
				continue
			}
			// The part's bytes are a slice of body: find them after what is
			// already written.
			i := bytes.Index(rest, p)
			if i < 0 {
				return nil, errors.New("adapter: a raw part is not where the request body holds it")
			}
			out.Write(rest[:i])
			out.WriteString(part.Text)
			rest = rest[i+len(p):]
		}
	}
	out.Write(rest)
	if !json.Valid(out.Bytes()) {
		return nil, errors.New("adapter: a raw part made the request body invalid JSON")
	}
	return out.Bytes(), nil
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
				if p.Type == rawPartType {
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
