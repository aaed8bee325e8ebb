package jsonx

// Lexer holds the string state of the lenient lexer that CloseOne, the
// truncation scan, the span finder, the stated-string scan and the JSON
// field stream share: JSON's double-quoted strings, and Python's
// single-quoted ones only where a value or key can start, so that an
// apostrophe in a bare word does not open a string. It reads a byte at a
// time, so a text may arrive in pieces; its zero value is at the start of
// a text.
type Lexer struct {
	quote byte // the quote of the string being read; 0 outside strings
	esc   bool // a backslash inside a string escapes the next byte
	last  byte // the last significant byte outside strings, 's' after a string
	begun bool // a significant byte was seen (last holds one, a NUL byte too)
}

// Saw records c, a significant byte outside strings, as the last one.
func (l *Lexer) Saw(c byte) { l.last, l.begun = c, true }

// Skip reads c as far as strings and white space go: inside a string
// (where a backslash escapes the next byte), a quote that opens one, or
// white space, it reports true and the caller goes on with the next byte;
// any other byte is the caller's, who records it with Saw.
func (l *Lexer) Skip(c byte) bool {
	if l.quote != 0 {
		switch {
		case l.esc:
			l.esc = false
		case c == '\\':
			l.esc = true
		case c == l.quote:
			l.quote = 0
			l.Saw('s')
		}
		return true
	}
	switch c {
	case ' ', '\t', '\n', '\r':
		return true
	case '"':
		l.quote = c
		return true
	case '\'':
		if l.ValueMayStart() {
			l.quote = c
			return true
		}
	}
	return false
}

// ValueMayStart reports a place where a value or key can start: the start
// of the text, or after an opening bracket, a comma or a colon.
func (l *Lexer) ValueMayStart() bool {
	switch l.last {
	case '{', '[', ',', ':':
		return true
	}
	return !l.begun
}

// closingQuote returns the index of the quote that closes the string
// opened by the quote at s[i] (a backslash escapes the byte after it), or
// len(s) when s ends first.
func closingQuote(s string, i int) int {
	j := i + 1
	for j < len(s) && s[j] != s[i] {
		if s[j] == '\\' {
			j++
		}
		j++
	}
	return min(j, len(s))
}
