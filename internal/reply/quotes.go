package reply

import (
	"strings"
	"unicode/utf8"

	"github.com/sigwire/adapter/signature"
)

// Unquote drops one pair of double quotes (straight or curly) that
// wraps a whole str value in a text protocol (Chat, XML): models quote
// titles and names ("\"Dune\""). A value with another double quote inside
// is kept as written: the quotes may be the value's own.
func Unquote(s string, f signature.Field) string {
	if f.Spec == nil || f.Spec.Kind() != signature.KindString {
		return s
	}
	t := strings.TrimSpace(s)
	if !strings.HasPrefix(t, `"`) && !strings.HasPrefix(t, "“") {
		return s // not quoted: the common case, at once
	}
	for _, q := range [...][2]string{{`"`, `"`}, {"“", "”"}} {
		if len(t) > len(q[0])+len(q[1]) && strings.HasPrefix(t, q[0]) && strings.HasSuffix(t, q[1]) {
			inner := t[len(q[0]) : len(t)-len(q[1])]
			if !strings.ContainsAny(inner, "\"“”\n") && strings.TrimSpace(inner) == inner && inner != "" {
				return inner
			}
		}
	}
	return s
}

// mayBeQuoted reports whether q, the start of a str value that opens
// with a quote, may still be one quoted value: no line break, and no quote
// but the opening one and possibly one at the very end.
func mayBeQuoted(q string) bool {
	body := q[1:]
	if strings.HasPrefix(q, "“") {
		body = q[len("“"):]
	}
	if strings.Contains(body, "\n") {
		return false
	}
	j := strings.IndexAny(body, "\"“”")
	if j < 0 {
		return true
	}
	_, size := utf8.DecodeRuneInString(body[j:])
	return j+size == len(body)
}
