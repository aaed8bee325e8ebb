package wire

import (
	"bytes"
	"encoding/json"
)

// ChoiceExtras is what one choice of a reply carried on the wire beyond
// go-openai's types: the root's ChoiceExtras, field for field, which it
// converts to. Each item is a JSON object as the server sent it, compacted
// and escaped as encoding/json writes a json.RawMessage (see canonical).
type ChoiceExtras struct {
	Index int // the choice's index
	// Annotations are the message's "annotations", in order; a stream's
	// come from its deltas, exact repeats dropped.
	Annotations []json.RawMessage
	// Citations are provider citation blocks ("provider_specific_fields":
	// "citations" on a message, "citation" on a stream's deltas), in order.
	Citations []json.RawMessage
}

// wireExtras is the part of a message or a delta that ChoiceExtras come
// from, kept raw so that a malformed value is skipped without failing the
// rest of the chunk or body.
type wireExtras struct {
	Annotations json.RawMessage `json:"annotations"`
	Provider    json.RawMessage `json:"provider_specific_fields"`
}

// collect appends what w carries to dst: the JSON objects among the
// annotations, and the citation objects in provider_specific_fields
// ("citations": a list of objects or of lists of objects; "citation": an
// object). Anything else is skipped. With seen (a stream), annotations
// already received are not added again. Each item is read once, from the
// bytes encoding/json already checked, into one slice of its own (see
// canonical); more than max items in dst is an error (Limits.WireItems),
// reported before the next item is copied.
func (w *wireExtras) collect(dst *ChoiceExtras, seen *map[string]struct{}, max int) error {
	var scratch bytes.Buffer // reused by every item's compaction
	var err error
	add := func(list *[]json.RawMessage, it []byte, dedup bool) bool {
		if len(dst.Annotations)+len(dst.Citations) >= max {
			err = tooManyItems(dst.Index, max)
			return false
		}
		c := canonical(&scratch, it)
		if dedup {
			if *seen == nil {
				*seen = map[string]struct{}{}
			}
			if _, dup := (*seen)[string(c)]; dup {
				return true
			}
			(*seen)[string(c)] = struct{}{}
		}
		*list = append(*list, c)
		return true
	}
	eachElement(w.Annotations, func(it []byte) bool {
		return !isObject(it) || add(&dst.Annotations, it, seen != nil)
	})
	if err != nil || len(w.Provider) == 0 {
		return err
	}
	var p struct {
		Citations json.RawMessage `json:"citations"`
		Citation  json.RawMessage `json:"citation"`
	}
	if json.Unmarshal(w.Provider, &p) != nil {
		return nil
	}
	eachElement(p.Citations, func(it []byte) bool {
		if isObject(it) {
			return add(&dst.Citations, it, false)
		}
		return eachElement(it, func(c []byte) bool {
			return !isObject(c) || add(&dst.Citations, c, false)
		})
	})
	if err == nil && isObject(p.Citation) {
		add(&dst.Citations, p.Citation, false)
	}
	return err
}

// canonical is a JSON value as encoding/json writes a json.RawMessage:
// compact, with <, >, &, U+2028 and U+2029 escaped, so that an extra reads
// the same from a cache that stores entries as JSON as from the wire. It
// compacts into scratch and returns a slice of its own.
func canonical(scratch *bytes.Buffer, b []byte) json.RawMessage {
	scratch.Reset()
	if json.Compact(scratch, b) != nil {
		return bytes.Clone(b)
	}
	c := scratch.Bytes()
	n := len(c)
	for i := 0; i < len(c); i++ {
		switch {
		case c[i] == '<', c[i] == '>', c[i] == '&':
			n += 5
		case c[i] == 0xE2 && i+2 < len(c) && c[i+1] == 0x80 && c[i+2]&^1 == 0xA8:
			n += 3
		}
	}
	out := make([]byte, 0, n)
	const hex = "0123456789abcdef"
	start := 0
	for i := 0; i < len(c); i++ {
		switch {
		case c[i] == '<', c[i] == '>', c[i] == '&':
			out = append(out, c[start:i]...)
			out = append(out, '\\', 'u', '0', '0', hex[c[i]>>4], hex[c[i]&0xF])
			start = i + 1
		case c[i] == 0xE2 && i+2 < len(c) && c[i+1] == 0x80 && c[i+2]&^1 == 0xA8:
			out = append(out, c[start:i]...)
			out = append(out, '\\', 'u', '2', '0', '2', hex[c[i+2]&0xF])
			i += 2
			start = i + 1
		}
	}
	return append(out, c[start:]...)
}

// eachElement calls f with each element of the JSON array raw, in order,
// until f reports false (which eachElement then reports); anything but an
// array has no elements. raw is JSON that encoding/json has checked, so
// the walk only finds where each element ends.
func eachElement(raw []byte, f func(elem []byte) bool) bool {
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '[' {
		return true
	}
	i = skipSpace(raw, i+1)
	if i < len(raw) && raw[i] == ']' {
		return true
	}
	for i < len(raw) {
		end := valueEnd(raw, i)
		if end <= i {
			return true // not JSON after all
		}
		if !f(raw[i:end]) {
			return false
		}
		i = skipSpace(raw, end)
		if i >= len(raw) || raw[i] != ',' {
			return true
		}
		i = skipSpace(raw, i+1)
	}
	return true
}

// skipSpace returns the index of the first byte at or after i that is not
// JSON whitespace.
func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// valueEnd returns the index after the JSON value that starts at b[i]
// (checked JSON: strings end at their closing quote, containers at the
// bracket that closes them, scalars at the next delimiter).
func valueEnd(b []byte, i int) int {
	depth := 0
	for j := i; j < len(b); j++ {
		switch b[j] {
		case '"':
			j++
			for j < len(b) && b[j] != '"' {
				if b[j] == '\\' {
					j++
				}
				j++
			}
			if depth == 0 {
				return min(j+1, len(b))
			}
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				return j
			}
			if depth--; depth == 0 {
				return j + 1
			}
		case ',', ' ', '\t', '\n', '\r':
			if depth == 0 {
				return j
			}
		}
	}
	return len(b)
}

// isObject reports a JSON object.
func isObject(b json.RawMessage) bool {
	b = bytes.TrimSpace(b)
	return len(b) > 0 && b[0] == '{'
}
