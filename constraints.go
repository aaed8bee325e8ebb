package adapter

import (
	"fmt"
	"maps"
	"math"
	"reflect"
	"unicode/utf8"

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
					Err: fmt.Errorf("%w: %v is not %s", ErrConstraint, v, c)}
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
		n := -1
		switch rv.Kind() {
		case reflect.String:
			n = utf8.RuneCountInString(rv.String())
		case reflect.Slice, reflect.Array, reflect.Map:
			n = rv.Len()
		}
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
