package jsonx

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/kaptinlin/jsonrepair"
)

// MaxRepair is the largest span Repair accepts (16 KiB). The repairer
// (kaptinlin/jsonrepair) copies its whole output for each fix it makes, so
// its worst case is quadratic in the span: a span of this size full of
// missing commas costs tens of milliseconds; at 64 KiB it cost over a
// second. Real replies that need repair are far smaller.
const MaxRepair = 16 << 10

// MaxDepth is the deepest nesting Repair accepts.
const MaxDepth = 512

// maxStarts bounds how many candidate starts Extract tries, so prose full
// of brackets costs O(maxStarts·n), not O(n²).
const maxStarts = 8

// Errors returned by Repair.
var (
	ErrTooLarge = fmt.Errorf("jsonx: JSON span over the %d-byte repair limit", MaxRepair)
	ErrTooDeep  = fmt.Errorf("jsonx: JSON nested over %d levels", MaxDepth)
	ErrInvalid  = errors.New("jsonx: not repairable JSON")
)

// RepairInfo says what Repair found.
type RepairInfo struct {
	// Truncated: the text ends where a value was still being written (inside
	// a string, after a key or ":", inside an array). Repairing it would
	// invent the rest. Only closing braces after complete values are
	// supplied; a number at the very end counts as complete (whether the
	// token limit cut it is for the caller to judge from finish_reason).
	Truncated bool
	// EndsInNumber: the span ends in a number with only closing braces
	// missing after it ({"n": 12). Repair reads it as complete; whether
	// the text was cut inside the number ({"n": 120}) only the caller can
	// judge (finish_reason). Callers that act on the value, such as tool
	// arguments, treat it as truncated.
	EndsInNumber bool
}

// Extract returns the JSON object or array in text: the body of the first
// ```json (or bare ```) fence that holds one; else the first valid {...};
// else an unclosed '{' running to the end (a cut-off value, for Repair to
// judge); else the first valid [...]; else the first balanced bracketed
// span. start is the span's byte offset in text.
//
// A bracketed span's nested brackets are part of it, valid or not: the
// spans tried are the outermost ones, so the inner [1, 2] of an invalid
// [[1, 2], [3, x]] or the first object of [{...}, {...}] is never taken
// for the whole value.
func Extract(text string) (span string, start int, ok bool) {
	if s, at, found := fenced(text); found {
		text2 := s
		if sp, st, ok := Extract(text2); ok && !strings.Contains(text2, "```") {
			return sp, at + st, true
		}
	}
	var firstArray, firstBalanced string
	arrayAt, balancedAt := -1, -1
	tries := 0
	for i := 0; i < len(text) && tries < maxStarts; i++ {
		c := text[i]
		if c != '{' && c != '[' {
			continue
		}
		tries++
		end, balanced := matchEnd(text, i)
		if !balanced {
			if c == '{' || (arrayAt < 0 && balancedAt < 0) {
				return text[i:], i, true
			}
			break
		}
		cand := text[i:end]
		switch {
		case json.Valid([]byte(cand)) && c == '{':
			return cand, i, true
		case json.Valid([]byte(cand)) && arrayAt < 0:
			firstArray, arrayAt = cand, i
		case balancedAt < 0:
			firstBalanced, balancedAt = cand, i
		}
		i = end - 1 // its nested brackets are part of it
	}
	switch {
	case arrayAt >= 0:
		return firstArray, arrayAt, true
	case balancedAt >= 0:
		return firstBalanced, balancedAt, true
	}
	return "", 0, false
}

// Decode decodes exactly one JSON value with numbers kept as json.Number
// (encoding/json's UseNumber), the form every parser here works on. An
// object giving a key twice with different values is a
// *DuplicateKeyError, not the last value.
func Decode(s string) (any, error) {
	if s == "" || (s[0] != '{' && s[0] != '[' && s[0] != '"' && s[0] != '-' && (s[0] < '0' || s[0] > '9') && s[0] != 't' && s[0] != 'f' && s[0] != 'n') {
		return nil, errors.New("jsonx: not a JSON value")
	}
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("jsonx: trailing data after the JSON value")
	}
	if err := checkDuplicates(s, v); err != nil {
		return nil, err
	}
	return v, nil
}

// fenced returns the body of the first ``` fence in text and its offset.
// An unclosed fence runs to the end of the text.
func fenced(text string) (string, int, bool) {
	i := strings.Index(text, "```")
	if i < 0 {
		return "", 0, false
	}
	body := i + 3
	nl := strings.IndexByte(text[body:], '\n')
	if nl < 0 {
		return "", 0, false
	}
	lang := strings.TrimSpace(text[body : body+nl])
	if lang != "" && !strings.EqualFold(lang, "json") && !strings.EqualFold(lang, "json5") && !strings.EqualFold(lang, "javascript") {
		return "", 0, false
	}
	body += nl + 1
	end := strings.Index(text[body:], "```")
	if end < 0 {
		return text[body:], body, true
	}
	return text[body : body+end], body, true
}

// matchEnd finds the end of the bracketed value starting at text[i],
// honouring double- and single-quoted strings. It reports false when the
// text ends first.
func matchEnd(text string, i int) (int, bool) {
	depth := 0
	var lx Lexer
	for j := i; j < len(text); j++ {
		if lx.Skip(text[j]) {
			continue
		}
		switch c := text[j]; c {
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				return j + 1, true
			}
		}
		lx.Saw(text[j])
	}
	return len(text), false
}

func prevSignificant(text string, from, j int) byte {
	for k := j - 1; k >= from; k-- {
		switch text[k] {
		case ' ', '\t', '\n', '\r':
			continue
		}
		return text[k]
	}
	return 0
}

// Repair fixes span — single quotes, Python literals, trailing commas,
// comments, missing closing braces after complete values — and returns
// valid JSON. A span that was cut off while a value was being written is
// reported in info.Truncated (with no repaired text).
func Repair(span string) (string, RepairInfo, error) {
	return (*Budget)(nil).Repair(span)
}

// Repair is [Repair] paid from b: the repair itself (the quadratic step)
// is refused with ErrBudget once b is spent. A nil b bounds only the span.
func (b *Budget) Repair(span string) (string, RepairInfo, error) {
	if len(span) > MaxRepair {
		return "", RepairInfo{}, ErrTooLarge
	}
	if fixed, changed := escapeInnerQuotes(span); changed && json.Valid([]byte(fixed)) {
		return fixed, RepairInfo{}, nil
	}
	trunc, depth, badNumber, endsInNumber := scan(span)
	if depth > MaxDepth {
		return "", RepairInfo{}, ErrTooDeep
	}
	if trunc {
		return "", RepairInfo{Truncated: true}, nil
	}
	if badNumber != "" {
		// Repair would make "-" a 0 and "1.5e" a 1.5: a guess.
		return "", RepairInfo{}, fmt.Errorf("%w: %q is not a number", ErrInvalid, badNumber)
	}
	if !b.spend(len(span)) {
		return "", RepairInfo{}, ErrBudget
	}
	// The strings the span states go through the repairer as placeholders
	// (see protect.go): it fixes structure, never what a string says.
	// A repair that reads the strings otherwise than the text states them
	// is refused.
	st := statedStrings(span)
	guarded, values, mark := protect(span, st)
	fixed, err := repair(guarded)
	if err != nil {
		return "", RepairInfo{}, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if !json.Valid([]byte(fixed)) {
		return "", RepairInfo{}, ErrInvalid
	}
	fixed, strs, ok := restore(fixed, values, mark)
	if !ok || !keepsStated(st, strs) {
		return "", RepairInfo{}, fmt.Errorf("%w: the repair reads the text's strings otherwise than it states them", ErrInvalid)
	}
	if n, ok := inventedNumber(span, fixed); ok {
		return "", RepairInfo{}, fmt.Errorf("%w: the repair reads a number %s the text does not hold", ErrInvalid, n)
	}
	return fixed, RepairInfo{EndsInNumber: endsInNumber}, nil
}

// inventedNumber returns a number of the repaired text that span does not
// hold as written (up to a sign and the trailing zeros of a fraction: a
// repairer writes "1." as 1.0).
func inventedNumber(span, fixed string) (string, bool) {
	v, err := Decode(fixed)
	if err != nil {
		return "", false
	}
	for _, n := range numbers(v, nil) {
		digits := strings.TrimLeft(n, "-")
		if strings.Contains(digits, ".") && !strings.ContainsAny(digits, "eE") {
			digits = strings.TrimRight(strings.TrimRight(digits, "0"), ".")
		}
		if !strings.Contains(span, digits) {
			return n, true
		}
	}
	return "", false
}

// numbers lists the numbers in a decoded value.
func numbers(v any, acc []string) []string {
	switch v := v.(type) {
	case json.Number:
		acc = append(acc, v.String())
	case map[string]any:
		for _, e := range v {
			acc = numbers(e, acc)
		}
	case []any:
		for _, e := range v {
			acc = numbers(e, acc)
		}
	}
	return acc
}

// escapeInnerQuotes escapes double quotes inside strings that cannot be
// string ends because no ',', ':', '}' or ']' follows them, as in
// "the project „Phoenix" is late". It reports whether it changed anything.
func escapeInnerQuotes(span string) (string, bool) {
	var b []byte
	copied := 0 // span[:copied] is in b
	in := false
	for j := 0; j < len(span); j++ {
		c := span[j]
		if !in {
			in = c == '"'
			continue
		}
		switch c {
		case '\\':
			j++
		case '"':
			k := j + 1
			for k < len(span) && (span[k] == ' ' || span[k] == '\t' || span[k] == '\n' || span[k] == '\r') {
				k++
			}
			if k == len(span) || strings.IndexByte(",:}]", span[k]) >= 0 {
				in = false
				continue
			}
			b = append(b, span[copied:j]...)
			b = append(b, '\\', '"')
			copied = j + 1
		}
	}
	if b == nil {
		return span, false
	}
	return string(append(b, span[copied:]...)), true
}

// repair calls jsonrepair, turning a panic inside it into an error: the
// span is model output and must never crash the caller.
func repair(span string) (out string, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = "", fmt.Errorf("jsonrepair: %v", r)
		}
	}()
	return jsonrepair.Repair(span)
}

// scan reports whether span ends while a value is still being written,
// the deepest nesting seen, a number that is not one ("-", "1.", "1.5e")
// before the end, and whether the span ends in a number inside an object
// left open.
func scan(span string) (truncated bool, maxDepth int, badNumber string, endsInNumber bool) {
	var stack []byte
	var lx Lexer
	for j := 0; j < len(span); j++ {
		if lx.Skip(span[j]) {
			continue
		}
		c := span[j]
		switch c {
		case '{', '[':
			stack = append(stack, c)
			maxDepth = max(maxDepth, len(stack))
		case '}', ']':
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
		case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
			// Wherever a number starts (the repairer may see a value where
			// this scan does not), not inside a word.
			if j == 0 || !isLetter(span[j-1]) && (span[j-1] < '0' || span[j-1] > '9') && span[j-1] != '.' {
				end := j + 1
				for end < len(span) && strings.IndexByte("0123456789.eE+-", span[end]) >= 0 {
					end++
				}
				if tok := span[j:end]; !completeNumber(tok) || strings.HasSuffix(tok, ".") {
					if strings.TrimSpace(span[end:]) == "" {
						return true, maxDepth, "", false // cut inside the number
					}
					if badNumber == "" && !completeNumber(tok) {
						badNumber = tok
					}
				}
				j = end - 1
				c = '0'
			}
		default:
			if isLetter(c) && lx.ValueMayStart() {
				end := j + 1
				for end < len(span) && (isLetter(span[end]) || span[end] >= '0' && span[end] <= '9') {
					end++
				}
				if strings.TrimSpace(span[end:]) == "" && !literals[span[j:end]] {
					return true, maxDepth, "", false // cut inside a word ("tru")
				}
				j = end - 1
				c = 'w'
			}
		}
		lx.Saw(c)
	}
	if lx.quote != 0 || len(stack) == 0 {
		return lx.quote != 0, maxDepth, badNumber, false
	}
	last := lx.last
	for _, open := range stack {
		if open == '[' {
			return true, maxDepth, badNumber, false
		}
	}
	switch {
	case last == ':' || last == ',':
		return true, maxDepth, badNumber, false // a value or member was to follow
	case last == 's' && endsWithKey(span):
		return true, maxDepth, badNumber, false
	}
	return false, maxDepth, badNumber, last == '0'
}

// literals are the complete bare words a value can be.
var literals = map[string]bool{"true": true, "false": true, "null": true, "True": true, "False": true, "None": true}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' }

// completeNumber reports a token that ends where a number can end: a
// digit after its sign or exponent, or Python's "1." (Leading zeros and
// the like are left to the repairer.)
func completeNumber(tok string) bool {
	last := tok[len(tok)-1]
	if last == '.' && len(tok) > 1 {
		last = tok[len(tok)-2]
	}
	return last >= '0' && last <= '9'
}

// endsWithKey reports whether the final complete string of span is an
// object key still waiting for ":" and a value, i.e. the significant text
// before it is "{" or ",".
func endsWithKey(span string) bool {
	s := strings.TrimRight(span, " \t\r\n")
	if s == "" {
		return false
	}
	q := s[len(s)-1]
	if q != '"' && q != '\'' {
		return false
	}
	// Walk back to the opening quote (skipping escaped quotes).
	for k := len(s) - 2; k >= 0; k-- {
		if s[k] != q {
			continue
		}
		bs := 0
		for m := k - 1; m >= 0 && s[m] == '\\'; m-- {
			bs++
		}
		if bs%2 == 1 {
			continue
		}
		p := prevSignificant(s, 0, k)
		return p == '{' || p == ','
	}
	return false
}

// Objects returns up to max balanced {...} spans of text, in order, each
// outside the others (a span's nested objects are part of it). An unclosed
// '{' ends the scan.
func Objects(text string, max int) []string {
	var spans []string
	tries := 0
	for i := 0; i < len(text) && len(spans) < max && tries < maxStarts; i++ {
		if text[i] != '{' {
			continue
		}
		tries++
		end, balanced := matchEnd(text, i)
		if !balanced {
			break
		}
		spans = append(spans, text[i:end])
		i = end - 1
	}
	return spans
}
