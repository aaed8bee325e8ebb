package jsonx

import (
	"encoding/json"
	"strings"
)

// DecodePython is Decode for the JSON Python writes and reads
// (json.dumps, json.loads): it also reads the constants NaN, Infinity and
// -Infinity where a number may stand, as json.Number "NaN", "+Inf" and
// "-Inf" (strconv.ParseFloat reads them). DSPy renders a float's
// infinity inside a list or dict so (json.dumps), and reads it back.
func DecodePython(s string) (any, error) {
	v, err := Decode(s)
	if err == nil || !strings.Contains(s, "NaN") && !strings.Contains(s, "Infinity") {
		return v, err
	}
	subst, ok := substConstants(s)
	if !ok {
		return v, err
	}
	v2, err2 := Decode(subst)
	if err2 != nil {
		return v, err
	}
	return restoreConstants(v2), nil
}

// The number literals the constants stand in for while encoding/json
// decodes: valid JSON, out of any float's range, never in a reply that
// also holds a constant (substConstants checks).
const (
	nanLit    = "1e+9999999991"
	infLit    = "1e+9999999992"
	negInfLit = "-1e+9999999992"
)

// substConstants replaces NaN, Infinity and -Infinity outside strings by
// their stand-in literals. It reports false when there is none, or when
// the text already holds a stand-in.
func substConstants(s string) (string, bool) {
	if strings.Contains(s, "e+999999999") {
		return "", false
	}
	var b strings.Builder
	found := false
	last := 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"':
			i = closingQuote(s, i)
		case c == 'N' && strings.HasPrefix(s[i:], "NaN") && constantStarts(s, i) && constantEnds(s, i+3):
			b.WriteString(s[last:i])
			b.WriteString(nanLit)
			i += 2
			last, found = i+1, true
		case c == 'I' && strings.HasPrefix(s[i:], "Infinity") && constantStarts(s, i) && constantEnds(s, i+8):
			b.WriteString(s[last:i])
			b.WriteString(infLit)
			i += 7
			last, found = i+1, true
		}
	}
	if !found {
		return "", false
	}
	b.WriteString(s[last:])
	return b.String(), true
}

// constantStarts and constantEnds report that a constant starting at
// s[i] (ending before s[i]) is a whole token.
func constantStarts(s string, i int) bool { return i == 0 || !isWord(s[i-1]) }

func constantEnds(s string, i int) bool { return i == len(s) || !isWord(s[i]) }

func isWord(c byte) bool {
	return c == '_' || c == '.' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// restoreConstants turns the stand-in literals back into the constants.
func restoreConstants(v any) any {
	switch x := v.(type) {
	case json.Number:
		switch string(x) {
		case nanLit:
			return json.Number("NaN")
		case infLit:
			return json.Number("+Inf")
		case negInfLit:
			return json.Number("-Inf")
		}
	case []any:
		for i, e := range x {
			x[i] = restoreConstants(e)
		}
	case map[string]any:
		for k, e := range x {
			x[k] = restoreConstants(e)
		}
	}
	return v
}
