package jsonx

import "strings"

// CloseOne supplies the one closing bracket a JSON or Python-literal span
// lacks, when the rest of the span proves where it goes:
//
//   - a closing bracket of the other kind where one is still open: "[{'a':
//     1]" lacks a "}" before the "]";
//   - a key inside a list, or a list item where an object expects a key:
//     {"a": [1, 2, "b": 3} lacks a "]" before ", \"b\"", and
//     [{"a": 1, {"a": 2}] a "}" before ", {";
//   - the end of the span after a complete value with exactly one bracket
//     still open: [{'a': 1}, {'b': 2} lacks a "]".
//
// It reports false when nothing or more than one bracket is missing, or
// the span ends inside a value (a string, a number cut short, after ':'
// or ','), which is a cut, not a slip.
func CloseOne(span string) (string, bool) {
	type open struct {
		c     byte
		comma int // the last ',' directly inside, or -1
	}
	var stack []open
	var lx Lexer
	insert, at := byte(0), -1
	fix := func(k int) bool {
		// The innermost bracket closes at k.
		if at >= 0 || k < 0 || len(stack) < 2 {
			return false
		}
		insert, at = closer(stack[len(stack)-1].c), k
		stack = stack[:len(stack)-1]
		return true
	}
	for j := 0; j < len(span); j++ {
		if lx.Skip(span[j]) {
			continue
		}
		last := lx.last
		switch c := span[j]; c {
		case ',':
			if len(stack) > 0 {
				stack[len(stack)-1].comma = j
			}
		case ':':
			if n := len(stack); n > 0 && stack[n-1].c == '[' && last == 's' {
				// A key inside a list: the list ended before its comma.
				if !fix(stack[n-1].comma) || stack[len(stack)-1].c != '{' {
					return "", false
				}
			}
		case '{', '[':
			if n := len(stack); n > 0 && stack[n-1].c == '{' && last == ',' {
				// An item where a key belongs: the object ended before.
				if !fix(stack[n-1].comma) || stack[len(stack)-1].c != '[' {
					return "", false
				}
			}
			if len(stack) >= MaxDepth {
				return "", false
			}
			stack = append(stack, open{c, -1})
		case '}', ']':
			want := byte('{')
			if c == ']' {
				want = '['
			}
			switch n := len(stack); {
			case n == 0:
				return "", false
			case stack[n-1].c == want:
				stack = stack[:n-1]
			case n >= 2 && stack[n-2].c == want && last != ':' && last != ',':
				if !fix(j) {
					return "", false
				}
				stack = stack[:len(stack)-1]
			default:
				return "", false
			}
		}
		lx.Saw(span[j])
	}
	if lx.quote != 0 {
		return "", false
	}
	last := lx.last
	switch {
	case len(stack) == 0 && at >= 0:
		return span[:at] + string(insert) + span[at:], true
	case len(stack) == 1 && at < 0 && last != ':' && last != ',' && last != '{' && last != '[':
		t := strings.TrimRight(span, " \t\r\n")
		if !completeTail(t) {
			return "", false
		}
		return t + string(closer(stack[0].c)), true
	}
	return "", false
}

// completeTail reports whether t ends with a complete token: a closing
// bracket or quote, a literal word, or a number that can end there.
func completeTail(t string) bool {
	switch c := t[len(t)-1]; {
	case c == '}' || c == ']' || c == '"' || c == '\'':
		return true
	case c >= '0' && c <= '9' || c == '.':
		k := len(t)
		for k > 0 && strings.IndexByte("0123456789.eE+-", t[k-1]) >= 0 {
			k--
		}
		tok := t[k:]
		return completeNumber(tok) && !strings.HasSuffix(tok, ".")
	case isLetter(c):
		k := len(t)
		for k > 0 && isLetter(t[k-1]) {
			k--
		}
		return literals[t[k:]]
	}
	return false
}

func closer(open byte) byte {
	if open == '[' {
		return ']'
	}
	return '}'
}

// Span is a JSON value's place in a text.
type Span struct {
	Start, End int
	Fenced     bool // the body of a code fence
	Open       bool // an opening bracket the text ends inside
}

// Spans returns up to max JSON-looking spans of text in order: the body
// of each code fence that starts with '{' or '[', and outside fences each
// balanced {...} or [...] (its nested brackets are part of it). An
// unclosed bracket runs to the end of the text and ends the list. At most
// maxStarts unbalanced or balanced bracket spans are tried outside fences,
// so prose full of brackets costs O(maxStarts·n).
func Spans(text string, max int) []Span {
	var out []Span
	tries := 0
	for i := 0; i < len(text) && len(out) < max; {
		f := strings.Index(text[i:], "```")
		proseEnd := len(text)
		if f >= 0 {
			proseEnd = i + f
		}
		for j := i; j < proseEnd && len(out) < max && tries < maxStarts; j++ {
			c := text[j]
			if c != '{' && c != '[' {
				continue
			}
			tries++
			end, balanced := matchEnd(text[:proseEnd], j)
			if !balanced {
				if proseEnd == len(text) {
					return append(out, Span{Start: j, End: len(text), Open: true})
				}
				break
			}
			out = append(out, Span{Start: j, End: end})
			j = end - 1
		}
		if f < 0 || len(out) >= max {
			return out
		}
		// A fence: its body, up to the closing fence (or the end).
		open := i + f + 3
		nl := strings.IndexByte(text[open:], '\n')
		if nl < 0 {
			return out
		}
		body := open + nl + 1
		close := strings.Index(text[body:], "```")
		bodyEnd, next := len(text), len(text)
		if close >= 0 {
			bodyEnd, next = body+close, body+close+3
		}
		b := strings.TrimSpace(text[body:bodyEnd])
		if b != "" && (b[0] == '{' || b[0] == '[') {
			s := body + strings.Index(text[body:bodyEnd], b)
			out = append(out, Span{Start: s, End: s + len(b), Fenced: true, Open: close < 0})
		}
		i = next
	}
	return out
}
