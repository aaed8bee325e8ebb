package wire

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	openai "github.com/sashabaranov/go-openai"
)

// rawPartType marks a content part that go-openai's types cannot express;
// its Text is the part's JSON, which the wrapper puts on the wire in its
// place.
const rawPartType openai.ChatMessagePartType = "x-sigwire-raw-part"

// RawPart returns the content part that carries part, a JSON object with
// a "type", compacted; false for anything else.
func RawPart(part json.RawMessage) (openai.ChatMessagePart, bool) {
	var compact bytes.Buffer
	compact.Grow(len(part))
	if err := json.Compact(&compact, part); err != nil || compact.Len() == 0 || compact.Bytes()[0] != '{' || partType(compact.Bytes()) == "" {
		return openai.ChatMessagePart{}, false
	}
	return openai.ChatMessagePart{Type: rawPartType, Text: compact.String()}, true
}

// RawPartJSON returns the JSON of a part made by [RawPart], and false for
// any other part.
func RawPartJSON(p openai.ChatMessagePart) (json.RawMessage, bool) {
	if p.Type != rawPartType {
		return nil, false
	}
	return json.RawMessage(p.Text), true
}

// FirstRawPart returns the type of the first raw part in msgs, if any.
func FirstRawPart(msgs []openai.ChatCompletionMessage) (string, bool) {
	for _, m := range msgs {
		for _, p := range m.MultiContent {
			if raw, ok := RawPartJSON(p); ok {
				return partType(raw), true
			}
		}
	}
	return "", false
}

// partType reads the "type" of a part's JSON object, "" when it has none
// (or it is not a string). The rest of the object is not decoded when
// "type" comes first, as it does in the parts the library writes, so a
// megabyte of audio is not read twice.
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

// rawPartsKey marks a request whose body holds raw parts for the wrapper.
type rawPartsKey struct{}

// MarkRawParts returns ctx marking its request's body as holding raw
// parts, for the wrapper to put on the wire.
func MarkRawParts(ctx context.Context) context.Context {
	return context.WithValue(ctx, rawPartsKey{}, true)
}

// replaceRawParts walks a request body and replaces, inside
// messages[].content[], every raw part object
// ({"type":"x-sigwire-raw-part","text":"<json>"}) by the JSON it carries,
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
