package value

import (
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/sigwire/adapter/internal/pyjson"
)

var (
	strongBools = map[string]bool{"yes": true, "true": true, "no": false, "false": false}
	boolWords   = map[string]bool{"true": true, "t": true, "yes": true, "y": true, "on": true, "1": true, "false": false, "f": false, "no": false, "n": false, "off": false, "0": false}
)

// parseBool reads pydantic's bool words (true/false, yes/no, on/off, t/f,
// y/n, 1/0) in any case and decoration, or an answer that starts with
// yes/no/true/false; a later opposite word makes it ambiguous.
func parseBool(raw string) (bool, error) {
	s := strings.ToLower(strings.TrimRight(cleanScalar(raw), ".!"))
	s = cleanScalar(s)
	if b, ok := boolWords[s]; ok {
		return b, nil
	}
	words := strings.FieldsFunc(s, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	if len(words) == 0 {
		return false, invalid("%s is not a bool", clip(raw))
	}
	b, ok := strongBools[words[0]]
	if !ok {
		return false, invalid("%s is not a bool", clip(raw))
	}
	start := strings.Index(s, words[0])
	end := start + len(words[0])
	if determines(s, end) {
		return false, fmt.Errorf("%w: %s", errNounPhrase, clip(raw))
	}
	if err := alternative(s, start, end, false); err != nil {
		return false, fmt.Errorf("%w: %s", err, clip(raw))
	}
	if takesBack(s[end:]) {
		return false, fmt.Errorf("%w: %s", errRefusal, clip(raw))
	}
	for _, w := range words[1:] {
		if o, ok := strongBools[w]; ok && o != b {
			return false, fmt.Errorf("%w: %s says both yes and no", ErrAmbiguous, clip(raw))
		}
	}
	// The answer word named again is read by the same rule: joined to
	// None there, the text states no value ("yes, yes or None").
	for i := end; i < len(s); {
		w, j := wordAt(s, i)
		if w == "" {
			_, size := utf8.DecodeRuneInString(s[i:])
			i += size
			continue
		}
		if _, ok := strongBools[w]; ok && !determines(s, j) {
			if err := alternative(s, i, j, false); err != nil {
				return false, fmt.Errorf("%w: %s", err, clip(raw))
			}
		}
		i = j
	}
	return b, nil
}

// cleanChoice strips decorations around an enum or Literal answer: those
// of cleanScalar, a Literal[...] or str[...] wrapper, a trailing period.
func cleanChoice(raw string) string {
	s := cleanScalar(raw)
	for _, p := range [...]string{"Literal[", "str["} {
		if strings.HasPrefix(s, p) && strings.HasSuffix(s, "]") {
			s = cleanScalar(s[len(p) : len(s)-1])
		}
	}
	if t := strings.TrimRight(s, "."); t != s && t != "" {
		s = cleanScalar(t)
	}
	return s
}

// normChoice folds case and word separators, so "In Progress",
// "IN_PROGRESS", "InProgress" and "in-progress" compare equal.
func normChoice(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '_', '-', ' ':
			continue
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}

// matchEnum finds the enum value raw names: exactly, after stripping
// decorations, or uniquely up to case and separators (which also matches
// the Go-style and upper-case names of the value).
func matchEnum(raw string, values []string) (string, error) {
	for _, v := range values {
		if v == raw {
			return v, nil
		}
	}
	s := cleanChoice(raw)
	for _, v := range values {
		if v == s {
			return v, nil
		}
	}
	n := normChoice(s)
	var found []string
	for _, v := range values {
		if normChoice(v) == n {
			found = append(found, v)
		}
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		if i, err := explainedChoice(s, values); err != nil {
			return "", err
		} else if i >= 0 {
			return values[i], nil
		}
		return "", fmt.Errorf("%w: %s is not one of %s", ErrNoMatch, clip(raw), pyjson.Repr(values))
	}
	return "", fmt.Errorf("%w: %s matches %s", ErrAmbiguous, clip(raw), pyjson.Repr(found))
}

// orUnlabelled reads raw with read, and when that fails for a reason
// other than ambiguity, once more without a leading label ("Answer:
// **True**", "**Category:** billing"). A None answer is no label
// ("Unknown: probably 7" guesses a value it disowns).
func orUnlabelled[T any](raw string, read func(string) (T, error)) (T, error) {
	v, err := read(raw)
	if err == nil || errors.Is(err, ErrAmbiguous) {
		return v, err
	}
	if m := labelRE.FindStringIndex(cleanScalar(raw)); m != nil && !noneHead(cleanScalar(raw)[:m[1]]) {
		if rest := cleanScalar(raw)[m[1]:]; rest != "" {
			if v2, err2 := read(rest); err2 == nil || errors.Is(err2, ErrAmbiguous) {
				return v2, err2
			}
		}
	}
	return v, err
}

// explainedChoice reads an answer that starts with one choice and goes on
// to explain it ("technical - the user cannot log in", "High priority"):
// the index of the choice its head names, or -1. The explanation naming
// another choice makes it ErrAmbiguous.
func explainedChoice(s string, choices []string) (int, error) {
	head := s
	for i, r := range s {
		sep := false
		switch r {
		case ':', ',', ';', '(', '\n', '—', '–':
			sep = true
		case '-', '.':
			sep = i+1 == len(s) || s[i+1] == ' '
		}
		if sep {
			head = s[:i]
			break
		}
	}
	pick := func(h string) int {
		n := normChoice(cleanScalar(h))
		found := -1
		for i, c := range choices {
			if normChoice(c) == n && n != "" {
				if found >= 0 {
					return -1
				}
				found = i
			}
		}
		return found
	}
	at, start, end := pick(head), 0, len(head)
	if at < 0 {
		if f := strings.Fields(s); len(f) > 1 {
			start = strings.Index(s, f[0])
			at, end = pick(f[0]), start+len(f[0])
		}
	}
	rest := s[end:]
	if at < 0 || strings.TrimSpace(rest) == "" {
		return -1, nil
	}
	if _, yesNo := strongBools[normChoice(choices[at])]; yesNo && determines(s, end) {
		return -1, fmt.Errorf("%w: %s", errNounPhrase, clip(s))
	}
	if err := alternative(s, start, end, false); err != nil {
		return -1, fmt.Errorf("%w: %s", err, clip(s))
	}
	if _, yesNo := strongBools[normChoice(choices[at])]; yesNo && takesBack(rest) {
		return -1, fmt.Errorf("%w: %s", errRefusal, clip(s))
	}
	// Every other mention of a choice in the explanation is read as the
	// prose rule reads it: qualified anywhere (joined to None, negated,
	// taken back), the text states no value ("no, no or unknown").
	for _, c := range choiceCandidates(choices)(s) {
		if c.blocked != nil {
			return -1, fmt.Errorf("%w: %s", c.blocked, clip(s))
		}
	}
	lower := strings.ToLower(rest)
	for i, c := range choices {
		if i != at && c != "" && (containsWord(lower, strings.ToLower(c)) || containsWord(lower, strings.ToLower(strings.ReplaceAll(c, "_", " ")))) {
			return at, fmt.Errorf("%w: %s names both %s and %s", ErrAmbiguous, clip(s), pyjson.Repr(choices[at]), pyjson.Repr(c))
		}
	}
	return at, nil
}

// containsWord reports whether w occurs in s between non-letters.
func containsWord(s, w string) bool {
	for off := 0; off < len(s); {
		i := strings.Index(s[off:], w)
		if i < 0 {
			return false
		}
		i += off
		before, after := i == 0 || !isLetterByte(s[i-1]), i+len(w) == len(s) || !isLetterByte(s[i+len(w)])
		if before && after {
			return true
		}
		off = i + 1
	}
	return false
}

func isLetterByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c >= 0x80
}

// matchLiteral finds the Literal member raw names: a str member exactly or
// after stripping decorations; an int, float, bool or None member by its
// value ("1" is the member 1); a str member uniquely up to case.
func matchLiteral(raw string, lits []any) (any, error) {
	for _, l := range lits {
		if s, ok := l.(string); ok && s == raw {
			return l, nil
		}
	}
	s := cleanChoice(raw)
	for _, l := range lits {
		switch x := l.(type) {
		case string:
			if x == s {
				return l, nil
			}
		case nil:
			if isNone(s) {
				return nil, nil
			}
		case bool:
			if b, ok := boolWords[strings.ToLower(s)]; ok && b == x && strings.ToLower(s) != "1" && strings.ToLower(s) != "0" {
				return l, nil
			}
		case int:
			if n, ok := pyNumber(s); ok {
				if i, err := strconv.ParseInt(string(n), 10, 64); err == nil && int(i) == x {
					return l, nil
				}
			}
		case float64:
			if n, ok := pyNumber(s); ok {
				if f, err := strconv.ParseFloat(string(n), 64); err == nil && f == x {
					return l, nil
				}
			}
		}
	}
	n := normChoice(s)
	var found []any
	for _, l := range lits {
		if x, ok := l.(string); ok && normChoice(x) == n {
			found = append(found, l)
		}
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		var strs []string
		var members []any
		for _, l := range lits {
			if x, ok := l.(string); ok {
				strs, members = append(strs, x), append(members, l)
			}
		}
		if i, err := explainedChoice(s, strs); err != nil {
			return nil, err
		} else if i >= 0 {
			return members[i], nil
		}
		return nil, fmt.Errorf("%w: %s is not one of %s", ErrNoMatch, clip(raw), pyjson.Repr(lits))
	}
	return nil, fmt.Errorf("%w: %s matches %s", ErrAmbiguous, clip(raw), pyjson.Repr(found))
}

// literalValue returns a Literal member as the field's Go type.
func literalValue(lit any, t reflect.Type) (reflect.Value, error) {
	if lit == nil {
		return reflect.Zero(t), nil
	}
	v := reflect.ValueOf(lit)
	switch {
	case t.Kind() == reflect.Interface:
		out := reflect.New(t).Elem()
		out.Set(v)
		return out, nil
	case t.Kind() == reflect.Pointer:
		return wrap(v.Convert(t.Elem()), t), nil
	}
	return v.Convert(t), nil
}
