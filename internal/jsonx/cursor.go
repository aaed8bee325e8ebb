package jsonx

import (
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// Cursor reads one JSON document from left to right without building
// values: the fast path for documents of a known shape, such as a
// stream's events. Each method reads the value at the cursor. A value of
// another kind than the method reads, a string with invalid UTF-8, a key
// with escapes, nesting deeper than MaxDepth, or any syntax error makes it
// report false; the caller then decodes the document with encoding/json,
// which reports the error or reads the unusual value. What a Cursor reads
// is what encoding/json reads (FuzzCursor).
type Cursor struct {
	s     string
	i     int
	depth int
}

// Reset points c at the start of s.
func (c *Cursor) Reset(s string) { *c = Cursor{s: s} }

// ws skips whitespace.
func (c *Cursor) ws() {
	for c.i < len(c.s) {
		switch c.s[c.i] {
		case ' ', '\t', '\n', '\r':
			c.i++
		default:
			return
		}
	}
}

// peek returns the next byte after whitespace, or 0 at the end.
func (c *Cursor) peek() byte {
	c.ws()
	if c.i < len(c.s) {
		return c.s[c.i]
	}
	return 0
}

// End reports whether only whitespace is left.
func (c *Cursor) End() bool {
	c.ws()
	return c.i == len(c.s)
}

// Null reads a null if one is next, and reports whether it did.
func (c *Cursor) Null() bool {
	if c.peek() == 'n' && strings.HasPrefix(c.s[c.i:], "null") {
		c.i += 4
		return true
	}
	return false
}

// String reads a string, its escapes decoded.
func (c *Cursor) String() (string, bool) {
	if c.peek() != '"' {
		return "", false
	}
	end, escaped, ok := stringEndValid(c.s, c.i)
	if !ok {
		return "", false
	}
	lit := c.s[c.i:end]
	c.i = end
	if !escaped {
		return lit[1 : len(lit)-1], true
	}
	return Unquote(lit), true
}

// Int reads an integer: a number without fraction or exponent, of at
// most 18 digits.
func (c *Cursor) Int() (int64, bool) {
	c.ws()
	j, neg := c.i, false
	if j < len(c.s) && c.s[j] == '-' {
		j, neg = j+1, true
	}
	k := j
	var n int64
	for k < len(c.s) && c.s[k] >= '0' && c.s[k] <= '9' {
		n = n*10 + int64(c.s[k]-'0')
		k++
	}
	switch {
	case k == j, k-j > 18, c.s[j] == '0' && k-j > 1:
		return 0, false
	case k < len(c.s) && strings.IndexByte(".eE", c.s[k]) >= 0:
		return 0, false
	}
	c.i = k
	if neg {
		n = -n
	}
	return n, true
}

// Skip reads any value.
func (c *Cursor) Skip() bool {
	switch b := c.peek(); {
	case b == '{':
		return c.Object(func(string) bool { return c.Skip() })
	case b == '[':
		return c.Array(c.Skip)
	case b == '"':
		end, _, ok := stringEndValid(c.s, c.i)
		c.i = end
		return ok
	case b == 't' && strings.HasPrefix(c.s[c.i:], "true"):
		c.i += 4
	case b == 'f' && strings.HasPrefix(c.s[c.i:], "false"):
		c.i += 5
	case b == 'n':
		return c.Null()
	case b == '-' || b >= '0' && b <= '9':
		j := c.i + 1
		for j < len(c.s) && strings.IndexByte("0123456789.eE+-", c.s[j]) >= 0 {
			j++
		}
		if !validNumber(c.s[c.i:j]) {
			return false
		}
		c.i = j
	default:
		return false
	}
	return true
}

// Object reads an object: for each member, member gets its key and must
// read the value (or report false, which stops the walk). Keys with
// escapes are refused.
func (c *Cursor) Object(member func(key string) bool) bool {
	return c.container('{', '}', func() bool {
		if c.peek() != '"' {
			return false
		}
		end, escaped, ok := stringEndValid(c.s, c.i)
		if !ok || escaped {
			return false
		}
		key := c.s[c.i+1 : end-1]
		c.i = end
		if c.peek() != ':' {
			return false
		}
		c.i++
		return member(key)
	})
}

// Array reads an array: elem must read each element (or report false,
// which stops the walk).
func (c *Cursor) Array(elem func() bool) bool {
	return c.container('[', ']', elem)
}

// container reads an object or an array, item reading each member or
// element.
func (c *Cursor) container(open, close byte, item func() bool) bool {
	if c.peek() != open || c.depth >= MaxDepth {
		return false
	}
	c.i++
	c.depth++
	defer func() { c.depth-- }()
	if c.peek() == close {
		c.i++
		return true
	}
	for {
		if !item() {
			return false
		}
		switch c.peek() {
		case ',':
			c.i++
		case close:
			c.i++
			return true
		default:
			return false
		}
	}
}

// stringEndValid checks the JSON string literal at s[i] and returns the
// index after it and whether it holds escapes; ok is false for a literal
// that is not well formed or holds invalid UTF-8.
func stringEndValid(s string, i int) (end int, escaped, ok bool) {
	ascii := true
	for j := i + 1; j < len(s); j++ {
		for j < len(s) && plain[s[j]] {
			j++
		}
		if j == len(s) {
			break
		}
		switch c := s[j]; {
		case c == '"':
			return j + 1, escaped, ascii || utf8.ValidString(s[i+1:j])
		case c < 0x20:
			return j, false, false
		case c >= 0x80:
			ascii = false
		case c == '\\':
			if j+1 >= len(s) {
				return j, false, false
			}
			escaped = true
			switch s[j+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				j++
			case 'u':
				if j+6 > len(s) || !isHex4(s[j+2:j+6]) {
					return j, false, false
				}
				j += 5
			default:
				return j, false, false
			}
		}
	}
	return len(s), false, false
}

// plain marks the bytes a string literal holds as they are: ASCII but
// control characters, quotes and backslashes.
var plain = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

func isHex4(h string) bool {
	for k := range 4 {
		c := h[k]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

// Unquote decodes a well-formed JSON string literal (quotes included) as
// encoding/json does: a lone surrogate becomes U+FFFD.
func Unquote(lit string) string {
	b := lit[1 : len(lit)-1]
	i := strings.IndexByte(b, '\\')
	if i < 0 {
		return b
	}
	out := make([]byte, 0, len(b))
	for i >= 0 {
		out = append(out, b[:i]...)
		n, text, _ := Escape(b[i:], true)
		out = append(out, text...)
		b = b[i+n:]
		i = strings.IndexByte(b, '\\')
	}
	return string(append(out, b...))
}

// Escape decodes the escape sequence at the start of s (s[0] is the
// backslash), reporting its length in s, its text, and false when s ends
// before the escape does and final is false (a stream waits for more).
// It decodes as encoding/json does: a high surrogate followed by a low
// one is the pair; a lone surrogate, or \u with bad hex digits, is
// U+FFFD. The one-shot Unquote and the JSON field stream both decode
// through it.
func Escape(s string, final bool) (int, string, bool) {
	if len(s) < 2 {
		if final {
			return len(s), "", true
		}
		return 0, "", false
	}
	switch s[1] {
	case 'n':
		return 2, "\n", true
	case 't':
		return 2, "\t", true
	case 'r':
		return 2, "\r", true
	case 'b':
		return 2, "\b", true
	case 'f':
		return 2, "\f", true
	case 'u':
	default:
		return 2, s[1:2], true
	}
	if len(s) < 6 {
		if final {
			return len(s), string(utf8.RuneError), true
		}
		return 0, "", false
	}
	if !isHex4(s[2:6]) {
		return 6, string(utf8.RuneError), true
	}
	r := rune(hex4(s[2:6]))
	if !utf16.IsSurrogate(r) {
		return 6, string(r), true
	}
	if r >= 0xDC00 {
		return 6, string(utf8.RuneError), true // a lone low half
	}
	if !final && len(s) < 12 && (len(s) < 7 || s[6] == '\\' && (len(s) < 8 || s[7] == 'u')) {
		return 0, "", false // the low half may still come
	}
	if len(s) >= 12 && s[6] == '\\' && s[7] == 'u' && isHex4(s[8:12]) {
		if p := utf16.DecodeRune(r, rune(hex4(s[8:12]))); p != utf8.RuneError {
			return 12, string(p), true
		}
	}
	return 6, string(utf8.RuneError), true
}

// hex4 reads four hex digits.
func hex4(b string) int {
	n := 0
	for _, c := range []byte(b[:4]) {
		n <<= 4
		switch {
		case c >= '0' && c <= '9':
			n |= int(c - '0')
		case c >= 'a' && c <= 'f':
			n |= int(c-'a') + 10
		case c >= 'A' && c <= 'F':
			n |= int(c-'A') + 10
		}
	}
	return n
}
