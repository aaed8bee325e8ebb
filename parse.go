package adapter

import (
	"fmt"
	"strings"

	"github.com/sigwire/adapter/internal/value"
	"github.com/sigwire/adapter/signature"
)

// FieldParser is implemented (on the pointer) by types that parse
// themselves from a field's text. It takes precedence over
// encoding.TextUnmarshaler, which takes precedence over the rules for the
// field's kind.
type FieldParser interface {
	ParseField(raw string) error
}

// ParseValue turns a field's raw text into a Go value of exactly the
// field's type. It is the one coercion routine every adapter uses: text for
// str fields is kept as is; numbers, bools, enums, Literals, lists, dicts
// and structs are read the ways models write them, but never guessed: a
// non-integral int, a percentage, an ambiguous bool or enum is an error
// naming the field and keeping the raw text.
func ParseValue(raw string, f signature.Field) (any, error) {
	v, err := value.Parse(raw, f.Spec)
	if err != nil {
		return nil, fmt.Errorf("adapter: field %q: %w", f.Name, err)
	}
	return v, nil
}

// parseValue is ParseValue without the field name in the error, for
// adapters that report the field in a *ParseError.
func parseValue(raw string, f signature.Field) (any, error) {
	return value.Parse(raw, f.Spec)
}

// unquoteText drops one pair of double quotes (straight or curly) that
// wraps a whole str value in a text protocol (Chat, XML): models quote
// titles and names ("\"Dune\""). A value with another double quote inside
// is kept as written: the quotes may be the value's own.
func unquoteText(s string, f signature.Field) string {
	if f.Spec == nil || f.Spec.Kind() != signature.KindString {
		return s
	}
	t := strings.TrimSpace(s)
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
