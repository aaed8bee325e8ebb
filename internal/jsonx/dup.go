package jsonx

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// DuplicateKeyError reports an object that gives one key twice with
// different values: decoding would silently keep the last, a guess. The
// same value written twice (in other spacing, key order or number
// spelling: see Equal) is no error.
type DuplicateKeyError struct {
	Key string
}

func (e *DuplicateKeyError) Error() string {
	return fmt.Sprintf("jsonx: key %q appears twice in one object with different values", e.Key)
}

// checkDuplicates reports a key given twice with different values in one
// object of s, a valid JSON text whose decoded form is v. The common case
// costs one scan: every member of valid JSON has exactly one ':' outside
// strings, so as many colons as decoded members means no key repeats.
func checkDuplicates(s string, v any) error {
	if colons(s) == members(v) {
		return nil
	}
	return findDuplicate(s)
}

// colons counts the ':' outside strings.
func colons(s string) int {
	n := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '"':
			i = closingQuote(s, i)
		case ':':
			n++
		}
	}
	return n
}

// members counts the members of every object in v.
func members(v any) int {
	switch v := v.(type) {
	case map[string]any:
		n := len(v)
		for _, e := range v {
			n += members(e)
		}
		return n
	case []any:
		n := 0
		for _, e := range v {
			n += members(e)
		}
		return n
	}
	return 0
}

// findDuplicate scans valid JSON for a key repeated in one object with a
// different value: values written alike (blanks trimmed) are the same;
// values written otherwise are decoded and compared by Equal.
func findDuplicate(s string) error {
	type frame struct {
		object   bool
		seen     map[string]string
		key      string
		valStart int // -1: no member open
	}
	var stack []*frame
	closeMember := func(f *frame, end int) error {
		if !f.object || f.valStart < 0 {
			return nil
		}
		val := strings.TrimSpace(s[f.valStart:end])
		if old, ok := f.seen[f.key]; ok && old != val && !sameText(old, val) {
			return &DuplicateKeyError{Key: f.key}
		}
		f.seen[f.key] = val
		f.valStart = -1
		return nil
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"':
			end := closingQuote(s, i)
			if n := len(stack); n > 0 && stack[n-1].object && stack[n-1].valStart < 0 {
				key := s[i+1 : min(end, len(s))]
				if strings.Contains(key, `\`) {
					var k string
					if json.Unmarshal([]byte(s[i:min(end+1, len(s))]), &k) == nil {
						key = k
					}
				}
				stack[n-1].key = key
			}
			i = end
		case ':':
			if n := len(stack); n > 0 {
				stack[n-1].valStart = i + 1
			}
		case '{', '[':
			stack = append(stack, &frame{object: c == '{', seen: map[string]string{}, valStart: -1})
		case '}', ']', ',':
			n := len(stack)
			if n == 0 {
				continue
			}
			if err := closeMember(stack[n-1], i); err != nil {
				return err
			}
			if c != ',' {
				stack = stack[:n-1]
			}
		}
	}
	return nil
}

// sameText reports whether two valid JSON texts hold equal values (Equal).
func sameText(a, b string) bool {
	va, err := decodeNumbers(a)
	if err != nil {
		return false
	}
	vb, err := decodeNumbers(b)
	return err == nil && Equal(va, vb)
}

func decodeNumbers(s string) (any, error) {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	err := dec.Decode(&v)
	return v, err
}

// Equal reports whether two decoded JSON values (json.Number for numbers)
// are the same JSON value: strings by their content, numbers by value as
// Python reads them (see numberEqual: 1.0 and 1e0 are one float, 1 and
// 1.0 are not one value), objects by their members in any order, arrays
// item by item.
func Equal(a, b any) bool {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !Equal(v, w) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !Equal(x[i], y[i]) {
				return false
			}
		}
		return true
	case json.Number:
		y, ok := b.(json.Number)
		return ok && numberEqual(string(x), string(y))
	case float64:
		y, ok := b.(float64)
		return ok && x == y
	}
	return a == b
}

// numberEqual reports whether two JSON numbers are the same value as
// Python reads them (and so as every field type reads them): integers by
// their digits (-0 is 0), numbers with a fraction or an exponent as
// float64s (1.0, 1.00, 1e0 and 10e-1 are one float, whose str() DSPy
// writes as "1.0"). An integer and a float are different values even when
// equal (1 and 1.0: str() gives "1" and "1.0").
func numberEqual(a, b string) bool {
	if a == b {
		return true
	}
	fa, fb := strings.ContainsAny(a, ".eE"), strings.ContainsAny(b, ".eE")
	switch {
	case fa != fb:
		return false
	case !fa:
		return canonInt(a) == canonInt(b)
	}
	x, errA := strconv.ParseFloat(a, 64)
	y, errB := strconv.ParseFloat(b, 64)
	// Out of range is ±Inf or 0, as Python reads it.
	return (errA == nil || errors.Is(errA, strconv.ErrRange)) && (errB == nil || errors.Is(errB, strconv.ErrRange)) && x == y && math.Signbit(x) == math.Signbit(y)
}

// canonInt is a JSON integer without a sign on zero.
func canonInt(s string) string {
	if s == "-0" {
		return "0"
	}
	return s
}
