package jsonx

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The repairer (kaptinlin/jsonrepair) rewrites strings it was not asked
// to repair: a string holding '/' or '\' that looks like a file path
// ("<entry key=\"k\">v</entry>", "a\"b/c.txt") has its escapes read as
// literal backslashes, so \"k\" came back as the three characters \"k.
// A repair fixes structure; a string the text states is what its escapes
// say, decoded once. So before the repairer runs, every stated string is
// swapped for a placeholder it has no reason to touch, and after it the
// placeholders are swapped back for the strings, re-encoded.

// stated is a double-quoted string of a span that JSON's grammar reads
// unambiguously: it opens where a key or value starts (the span's start,
// after '{', '[', ',' or ':'), closes where one ends (before ',', ':',
// ']', '}' or the span's end), and holds only JSON's escapes.
type stated struct {
	start, end int    // the token, quotes included
	value      string // decoded
}

// statedStrings lists the stated strings of span (see stated), reading
// quotes by the Lexer's rule (a single-quoted string skipped where one may
// start).
func statedStrings(span string) []stated {
	var out []stated
	var l Lexer
	for i := 0; i < len(span); i++ {
		if span[i] == '"' && l.quote == 0 {
			j := closingQuote(span, i)
			if j >= len(span) {
				return out // cut inside the string: scan's to judge
			}
			n := skipBlanksAndComments(span, j+1)
			closes := n == len(span) || strings.IndexByte(",:]}", span[n]) >= 0
			var s string
			if l.ValueMayStart() && closes && json.Unmarshal([]byte(span[i:j+1]), &s) == nil {
				out = append(out, stated{start: i, end: j + 1, value: s})
			}
			i = j
			l.Saw('s')
			continue
		}
		if span[i] == '/' && l.quote == 0 {
			if e := skipBlanksAndComments(span, i); e > i {
				i = e - 1 // a comment is blank (a repair drops it)
				continue
			}
		}
		if !l.Skip(span[i]) {
			l.Saw(span[i])
		}
	}
	return out
}

// skipBlanksAndComments returns where the blanks and the comments
// ("// …" to the line's end, "/* … */") from span[i] on end: a string
// followed by a comment closes where the comment ends (a repair drops
// comments).
func skipBlanksAndComments(span string, i int) int {
	for i < len(span) {
		switch {
		case strings.IndexByte(" \t\r\n", span[i]) >= 0:
			i++
		case strings.HasPrefix(span[i:], "//"):
			nl := strings.IndexByte(span[i:], '\n')
			if nl < 0 {
				return len(span)
			}
			i += nl + 1
		case strings.HasPrefix(span[i:], "/*"):
			end := strings.Index(span[i+2:], "*/")
			if end < 0 {
				return i // an unclosed comment: not known to close
			}
			i += 2 + end + 2
		default:
			return i
		}
	}
	return i
}

// protect replaces the stated strings st of span that hold anything the
// repairer might reread (a backslash, a '/', a non-ASCII letter: all but
// plain text) with placeholders: a private-use rune the span does not
// hold, the string's index, the rune again. It returns span unchanged and
// no strings when there is nothing to protect or no free rune.
func protect(span string, st []stated) (string, []string, rune) {
	var toks []stated
	for _, t := range st {
		if plainToken(span[t.start:t.end]) {
			continue
		}
		toks = append(toks, t)
	}
	if len(toks) == 0 {
		return span, nil, 0
	}
	mark := rune(-1)
	for r := rune(0xE000); r < 0xE010; r++ {
		if !strings.ContainsRune(span, r) {
			mark = r
			break
		}
	}
	if mark < 0 {
		return span, nil, 0
	}
	var b strings.Builder
	b.Grow(len(span))
	values := make([]string, len(toks))
	at := 0
	for k, t := range toks {
		b.WriteString(span[at:t.start])
		b.WriteByte('"')
		b.WriteRune(mark)
		b.WriteString(strconv.Itoa(k))
		b.WriteRune(mark)
		b.WriteByte('"')
		values[k] = t.value
		at = t.end
	}
	b.WriteString(span[at:])
	return b.String(), values, mark
}

// plainToken reports a quoted token the repairer leaves as it is: printable
// ASCII without '\' or '/'.
func plainToken(tok string) bool {
	for i := 0; i < len(tok); i++ {
		if c := tok[i]; c < 0x20 || c >= 0x7f || c == '\\' || c == '/' {
			return false
		}
	}
	return true
}

// restore puts the strings protect took out back into fixed, the
// repairer's valid JSON: each string token holding placeholders is
// decoded, its placeholders replaced by their strings, and re-encoded. It
// returns the result and its strings (keys and values, decoded, in
// order), or false when a placeholder came back altered (a mark without a
// known index after it), which makes the repair unusable.
func restore(fixed string, values []string, mark rune) (string, []string, bool) {
	var b strings.Builder
	var strs []string
	at := 0
	for i := 0; i < len(fixed); i++ {
		if fixed[i] != '"' {
			continue
		}
		j := closingQuote(fixed, i)
		if j >= len(fixed) {
			return "", nil, false
		}
		var s string
		if err := json.Unmarshal([]byte(fixed[i:j+1]), &s); err != nil {
			return "", nil, false
		}
		if len(values) > 0 && strings.ContainsRune(s, mark) {
			r, ok := replaceMarks(s, values, mark)
			if !ok {
				return "", nil, false
			}
			b.WriteString(fixed[at:i])
			b.WriteString(encodeString(r))
			at, s = j+1, r
		}
		strs = append(strs, s)
		i = j
	}
	if at == 0 {
		return fixed, strs, true
	}
	b.WriteString(fixed[at:])
	return b.String(), strs, true
}

// keepsStated reports whether the repaired strings out hold every stated
// string st, in order: where the repairer paired a span's quotes
// otherwise than JSON's grammar does (a stray quote after a number,
// {"a": 0"", "b": "x"}), it reads strings the text does not state and
// drops ones it does.
func keepsStated(st []stated, out []string) bool {
	k := 0
	for _, s := range st {
		for k < len(out) && out[k] != s.value {
			k++
		}
		if k == len(out) {
			return false
		}
		k++
	}
	return true
}

// replaceMarks replaces each mark-index-mark placeholder of s by its
// string.
func replaceMarks(s string, values []string, mark rune) (string, bool) {
	var b strings.Builder
	w := utf8.RuneLen(mark)
	for {
		i := strings.IndexRune(s, mark)
		if i < 0 {
			b.WriteString(s)
			return b.String(), true
		}
		b.WriteString(s[:i])
		rest := s[i+w:]
		j := strings.IndexRune(rest, mark)
		if j < 0 {
			return "", false
		}
		k, err := strconv.Atoi(rest[:j])
		if err != nil || k < 0 || k >= len(values) || strconv.Itoa(k) != rest[:j] {
			return "", false
		}
		b.WriteString(values[k])
		s = rest[j+w:]
	}
}

// encodeString writes s as a JSON string, without encoding/json's HTML
// escapes.
func encodeString(s string) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return strings.TrimSuffix(buf.String(), "\n")
}
