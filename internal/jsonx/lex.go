package jsonx

// lexer holds the string state of the lenient lexer that CloseOne, the
// truncation scan and the span finder share: JSON's double-quoted strings,
// and Python's single-quoted ones only where a value or key can start, so
// that an apostrophe in a bare word does not open a string.
type lexer struct {
	quote byte // the quote of the string being read; 0 outside strings
	last  byte // the last significant byte outside strings, 's' after a string
	begun bool // a significant byte was seen (last holds one, a NUL byte too)
}

// saw records c, a significant byte outside strings, as the last one.
func (l *lexer) saw(c byte) { l.last, l.begun = c, true }

// skip reads span[j] as far as strings and white space go: inside a
// string (where a backslash escapes the next byte, whose index it
// returns), a quote that opens one, or white space, it reports true and
// the caller goes on with the next byte; any other byte is the caller's,
// who records it with saw.
func (l *lexer) skip(span string, j int) (int, bool) {
	c := span[j]
	if l.quote != 0 {
		switch c {
		case '\\':
			j++
		case l.quote:
			l.quote = 0
			l.saw('s')
		}
		return j, true
	}
	switch c {
	case ' ', '\t', '\n', '\r':
		return j, true
	case '"':
		l.quote = c
		return j, true
	case '\'':
		if l.valueMayStart() {
			l.quote = c
			return j, true
		}
	}
	return j, false
}

// valueMayStart reports a place where a value or key can start: the start
// of the span, or after an opening bracket, a comma or a colon.
func (l *lexer) valueMayStart() bool {
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
