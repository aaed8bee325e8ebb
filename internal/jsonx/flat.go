package jsonx

import (
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// DecodeFlat is the fast path for the common reply: one flat JSON object
// whose values are strings without escapes, numbers, true, false or null.
// It reports false for anything else, which the general decoder handles.
func DecodeFlat(t string) (map[string]any, bool) {
	if len(t) < 2 || t[0] != '{' || t[len(t)-1] != '}' {
		return nil, false
	}
	m := make(map[string]any, 4)
	i := skipWS(t, 1)
	if t[i] == '}' {
		return m, i == len(t)-1
	}
	for {
		key, j, ok := flatString(t, i)
		if !ok {
			return nil, false
		}
		if i = skipWS(t, j); t[i] != ':' {
			return nil, false
		}
		i = skipWS(t, i+1)
		var v any
		switch c := t[i]; {
		case c == '"':
			v, j, ok = flatString(t, i)
		case c == '-' || c >= '0' && c <= '9':
			j = i + 1
			for j < len(t) && strings.IndexByte("0123456789.eE+-", t[j]) >= 0 {
				j++
			}
			v, ok = json.Number(t[i:j]), json.Valid([]byte(t[i:j]))
		case strings.HasPrefix(t[i:], "true"):
			v, j, ok = true, i+4, true
		case strings.HasPrefix(t[i:], "false"):
			v, j, ok = false, i+5, true
		case strings.HasPrefix(t[i:], "null"):
			v, j, ok = nil, i+4, true
		default:
			ok = false
		}
		if _, dup := m[key]; !ok || dup {
			return nil, false // a repeated key: the general decoder judges it
		}
		m[key] = v
		switch i = skipWS(t, j); t[i] {
		case ',':
			i = skipWS(t, i+1)
		case '}':
			return m, i == len(t)-1
		default:
			return nil, false
		}
	}
}

// skipWS skips JSON whitespace; it stops at the last byte at the latest.
func skipWS(t string, i int) int {
	for i < len(t)-1 {
		switch t[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return min(i, len(t)-1)
}

// flatString reads a JSON string without escapes or control characters at
// t[i] and returns its text and the index after it.
func flatString(t string, i int) (string, int, bool) {
	if t[i] != '"' {
		return "", 0, false
	}
	for j := i + 1; j < len(t); j++ {
		switch c := t[j]; {
		case c == '"':
			s := t[i+1 : j]
			return s, j + 1, utf8.ValidString(s)
		case c == '\\' || c < 0x20:
			return "", 0, false
		}
	}
	return "", 0, false
}
