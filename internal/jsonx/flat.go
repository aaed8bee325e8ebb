package jsonx

import (
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// DecodeFlat is the fast path for the common reply: one flat JSON object
// whose values are strings without escapes, numbers, true, false or null.
// It reports false for anything else (a repeated key too), which the
// general decoder handles.
func DecodeFlat(t string) (map[string]any, bool) {
	m := make(map[string]any, 4)
	dup := false
	ok := FlatMembers(t, func(key, val string, str bool) bool {
		if _, seen := m[key]; seen {
			dup = true
			return false
		}
		switch {
		case str:
			m[key] = val
		case val == "true":
			m[key] = true
		case val == "false":
			m[key] = false
		case val == "null":
			m[key] = nil
		default:
			m[key] = json.Number(val)
		}
		return true
	})
	if !ok || dup {
		return nil, false
	}
	return m, true
}

// FlatMembers walks the members of a flat JSON object (the fast path's
// shape, see DecodeFlat) without allocating: for each member, yield gets
// its key and its value — a string's text (str set), or the literal of a
// number, true, false or null. It stops when yield returns false and
// reports whether t is such an object and every member was taken.
func FlatMembers(t string, yield func(key, val string, str bool) bool) bool {
	if len(t) < 2 || t[0] != '{' || t[len(t)-1] != '}' {
		return false
	}
	i := skipWS(t, 1)
	if t[i] == '}' {
		return i == len(t)-1
	}
	for {
		key, j, ok := flatString(t, i)
		if !ok {
			return false
		}
		if i = skipWS(t, j); t[i] != ':' {
			return false
		}
		i = skipWS(t, i+1)
		var val string
		str := false
		switch c := t[i]; {
		case c == '"':
			val, j, ok = flatString(t, i)
			str = true
		case c == '-' || c >= '0' && c <= '9':
			j = i + 1
			for j < len(t) && strings.IndexByte("0123456789.eE+-", t[j]) >= 0 {
				j++
			}
			val, ok = t[i:j], validNumber(t[i:j])
		case strings.HasPrefix(t[i:], "true"):
			val, j, ok = "true", i+4, true
		case strings.HasPrefix(t[i:], "false"):
			val, j, ok = "false", i+5, true
		case strings.HasPrefix(t[i:], "null"):
			val, j, ok = "null", i+4, true
		default:
			ok = false
		}
		if !ok || !yield(key, val, str) {
			return false
		}
		switch i = skipWS(t, j); t[i] {
		case ',':
			i = skipWS(t, i+1)
		case '}':
			return i == len(t)-1
		default:
			return false
		}
	}
}

// validNumber reports a JSON number: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func validNumber(s string) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	digits := func() int {
		k := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		return i - k
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case digits() == 0:
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(s)
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
