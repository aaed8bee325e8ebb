package adapter

import (
	"fmt"
	"maps"
	"math"
	"reflect"
	"unicode/utf8"

	"github.com/sigwire/adapter/internal/pyjson"
	"github.com/sigwire/adapter/signature"
)

// checkConstraints enforces the outputs' constraints on parsed values, as
// pydantic validates them in DSPy: numbers against bounds and multiples,
// lengths of strings (in characters), lists and maps. The error names the
// first field in violation; its Partial holds the values that satisfy
// their constraints, never one that violates them.
func checkConstraints(sig *signature.Signature, vals Values) *ParseError {
	var pe *ParseError
	for i := range sig.NumOutputs() {
		f := sig.Output(i)
		if len(f.Constraints) == 0 {
			continue
		}
		v, ok := vals[f.Name]
		if !ok || isNil(v) {
			continue
		}
		for _, c := range f.Constraints {
			if satisfies(v, c) {
				continue
			}
			if pe == nil {
				pe = &ParseError{Field: f.Name, Partial: maps.Clone(vals),
					Err: fmt.Errorf("%w: %s", ErrConstraint, violation(v, c))}
			}
			delete(pe.Partial, f.Name)
			break
		}
	}
	return pe
}

func satisfies(v any, c signature.Constraint) bool {
	rv := reflect.ValueOf(v)
	for rv.Kind() == reflect.Pointer {
		if rv.IsNil() {
			return true
		}
		rv = rv.Elem()
	}
	limit, isNum := number(c.Value)
	switch c.Op {
	case signature.MinLength, signature.MaxLength:
		n := lengthOf(rv)
		if n < 0 || !isNum {
			return true
		}
		if c.Op == signature.MinLength {
			return float64(n) >= limit
		}
		return float64(n) <= limit
	}
	x, ok := numeric(rv)
	if !ok || !isNum {
		return true
	}
	switch c.Op {
	case signature.GE:
		return x >= limit
	case signature.GT:
		return x > limit
	case signature.LE:
		return x <= limit
	case signature.LT:
		return x < limit
	case signature.MultipleOf:
		if limit == 0 {
			return true
		}
		q := x / limit
		return math.Abs(q-math.Round(q)) < 1e-9
	}
	return true
}

// lengthOf is a value's length as its length constraints count it: a
// string's characters, a list's or map's entries; -1 for anything else.
func lengthOf(rv reflect.Value) int {
	switch rv.Kind() {
	case reflect.String:
		return utf8.RuneCountInString(rv.String())
	case reflect.Slice, reflect.Array, reflect.Map:
		return rv.Len()
	}
	return -1
}

// violation says how v breaks c: "7 is not less than or equal to 5";
// for a length, the length, not the value (which may be long).
func violation(v any, c signature.Constraint) string {
	bound := pyjson.Str(c.Value)
	switch c.Op {
	case signature.GT:
		return fmt.Sprintf("%v is not greater than %s", v, bound)
	case signature.GE:
		return fmt.Sprintf("%v is not greater than or equal to %s", v, bound)
	case signature.LT:
		return fmt.Sprintf("%v is not less than %s", v, bound)
	case signature.LE:
		return fmt.Sprintf("%v is not less than or equal to %s", v, bound)
	case signature.MultipleOf:
		return fmt.Sprintf("%v is not a multiple of %s", v, bound)
	case signature.MinLength, signature.MaxLength:
		rv := reflect.ValueOf(v)
		for rv.Kind() == reflect.Pointer {
			rv = rv.Elem()
		}
		if c.Op == signature.MinLength {
			return fmt.Sprintf("its length %d is under the minimum length %s", lengthOf(rv), bound)
		}
		return fmt.Sprintf("its length %d is over the maximum length %s", lengthOf(rv), bound)
	}
	return fmt.Sprintf("%v is not %s", v, c)
}

func numeric(rv reflect.Value) (float64, bool) {
	switch {
	case rv.CanInt():
		return float64(rv.Int()), true
	case rv.CanUint():
		return float64(rv.Uint()), true
	case rv.CanFloat():
		return rv.Float(), true
	}
	return 0, false
}

func number(v any) (float64, bool) {
	switch x := v.(type) {
	case int:
		return float64(x), true
	case float64:
		return x, true
	}
	return 0, false
}
