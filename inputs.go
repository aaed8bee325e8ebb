package adapter

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/sigwire/adapter/internal/value"

	"github.com/sigwire/adapter/internal/pyjson"
	"github.com/sigwire/adapter/signature"
)

// nearestInput returns the input field whose name is closest to name (at
// most two edits apart, case ignored), or "".
func nearestInput(sig *signature.Signature, name string) string {
	best, bestD := "", 3
	for i := range sig.NumInputs() {
		f := sig.Input(i).Name
		if d := editDistance(strings.ToLower(name), strings.ToLower(f), bestD); d < bestD {
			best, bestD = f, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance of a and b, or max when it is
// at least max.
func editDistance(a, b string, max int) int {
	if d := len(a) - len(b); d >= max || -d >= max {
		return max
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return min(prev[len(b)], max)
}

// prepareInputs checks and converts a call's inputs before anything is
// sent: every name is an input field, every required input is given (or
// has a default, which is filled in), every value is converted to its
// field's Go type where that is lossless (int64 → int, []any of strings →
// []string, 3.0 → int; DESIGN decision 2) and meets the field's
// constraints. The result is a new map when anything changed; inputs
// itself is never modified. Errors are *InputError naming the field.
func prepareInputs(sig *signature.Signature, inputs Values) (Values, error) {
	known := 0 // the inputs' keys that name input fields
	for i := range sig.NumInputs() {
		f := sig.Input(i)
		if _, ok := inputs[f.Name]; ok {
			known++
		} else if !f.HasDefault && !f.Spec.Nullable() {
			if err := unknownInput(sig, inputs); err != nil {
				return nil, err // the misspelt name, rather than the field it misses
			}
			return nil, &InputError{Field: f.Name, Err: ErrMissingInput}
		}
	}
	if known < len(inputs) {
		return nil, unknownInput(sig, inputs)
	}
	out, err := convertInputs(sig, withDefaults(sig, inputs))
	if err != nil {
		return nil, err
	}
	for i := range sig.NumInputs() {
		f := sig.Input(i)
		v, ok := out[f.Name]
		if !ok || isNil(v) {
			continue
		}
		for _, c := range f.Constraints {
			if !satisfies(v, c) {
				return nil, &InputError{Field: f.Name, Err: fmt.Errorf("%w: %s is not %s", ErrConstraint, clipText(pyjson.Repr(v)), c)}
			}
		}
	}
	return out, nil
}

// unknownInput returns an *InputError for the first key of inputs (in
// sorted order) that names no input field, suggesting the nearest input;
// nil when every key names one.
func unknownInput(sig *signature.Signature, inputs Values) error {
	for _, name := range slices.Sorted(maps.Keys(inputs)) {
		if _, isOut, ok := sig.Field(name); !ok || isOut {
			err := ErrUnknownInput
			if near := nearestInput(sig, name); near != "" {
				err = fmt.Errorf("%w (did you mean %q?)", ErrUnknownInput, near)
			}
			return &InputError{Field: name, Err: err}
		}
	}
	return nil
}

// withDefaults returns inputs with the defaults of missing input fields
// filled in (DSPy's Predict does the same); inputs itself is not changed.
func withDefaults(sig *signature.Signature, inputs Values) Values {
	out, copied := inputs, false
	for i := range sig.NumInputs() {
		f := sig.Input(i)
		if _, ok := inputs[f.Name]; ok || !f.HasDefault {
			continue
		}
		if !copied {
			out, copied = maps.Clone(inputs), true
			if out == nil {
				out = Values{}
			}
		}
		out[f.Name] = f.Default
	}
	return out
}

// convertInputs converts the values of the input fields present in inputs
// to their fields' Go types (see prepareInputs); names that are not input
// fields are left as they are. Format applies it to the inputs it is
// given, so that what Call would refuse never reaches a prompt.
func convertInputs(sig *signature.Signature, inputs Values) (Values, error) {
	out := inputs
	for i := range sig.NumInputs() {
		f := sig.Input(i)
		v, ok := inputs[f.Name]
		if !ok {
			continue
		}
		if _, isStr := v.(string); isStr && f.Type == stringType && f.Spec.Kind() == signature.KindString {
			continue // the common case, without reflection
		}
		cv, err := convertInput(v, f.Spec, 0)
		if err != nil {
			return nil, &InputError{Field: f.Name, Err: err}
		}
		if !sameValue(cv, v) {
			if sameMap(out, inputs) {
				out = maps.Clone(inputs)
			}
			out[f.Name] = cv
		}
	}
	return out, nil
}

var stringType = reflect.TypeFor[string]()

// sameMap reports whether a and b are the same map.
func sameMap(a, b Values) bool {
	return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}

// sameValue reports whether converting v gave v itself back (the same
// type, so the same value: conversion never changes a value it keeps,
// except a nil slice or map it makes empty).
func sameValue(cv, v any) bool {
	if reflect.TypeOf(cv) != reflect.TypeOf(v) {
		return false
	}
	switch rv := reflect.ValueOf(v); rv.Kind() {
	case reflect.Slice, reflect.Map:
		return rv.IsNil() == reflect.ValueOf(cv).IsNil()
	}
	return true
}

// maxInputDepth bounds the nesting convertInput follows; deeper values are
// left to the formatter, which refuses them.
const maxInputDepth = 128

// convertInput returns v as a value of spec's Go type, converted only
// where nothing is lost.
func convertInput(v any, spec *signature.TypeSpec, depth int) (any, error) {
	rv, err := convertValue(reflect.ValueOf(v), spec, depth)
	if err != nil {
		return nil, err
	}
	if !rv.IsValid() {
		return nil, nil
	}
	return rv.Interface(), nil
}

func convertValue(v reflect.Value, spec *signature.TypeSpec, depth int) (reflect.Value, error) {
	if depth > maxInputDepth {
		return reflect.Value{}, fmt.Errorf("%w: nested over %d levels", ErrInputType, maxInputDepth)
	}
	t := spec.GoType()
	for v.IsValid() && v.Kind() == reflect.Interface {
		if v.IsNil() {
			v = reflect.Value{}
			break
		}
		v = v.Elem()
	}
	if !v.IsValid() || (v.Kind() == reflect.Pointer || v.Kind() == reflect.Map || v.Kind() == reflect.Slice) && v.IsNil() {
		switch k := spec.Kind(); {
		case (k == signature.KindList || k == signature.KindDict) && v.IsValid() && v.Kind() != reflect.Pointer:
			// A nil slice or map is Go's empty one (len 0), as
			// encoding/json/v2 writes it: [] or {}, not None.
			if t.Kind() == reflect.Map {
				return reflect.MakeMap(t), nil
			}
			if t.Kind() == reflect.Slice {
				return reflect.MakeSlice(t, 0, 0), nil
			}
		case k == signature.KindList || k == signature.KindDict:
			// None for a list or dict that is not Optional: refused below.
		case v.IsValid() && v.Type() == t:
			return v, nil
		default:
			// nil: None, for the types that can hold it.
			switch t.Kind() {
			case reflect.Pointer, reflect.Slice, reflect.Map, reflect.Interface:
				return reflect.Zero(t), nil
			}
		}
		return reflect.Value{}, fmt.Errorf("%w: None for %s, which is not Optional", ErrInputType, spec)
	}
	if v.Type() == t && spec.Kind() != signature.KindEnum && spec.Kind() != signature.KindLiteral {
		return v, checkShowable(v, depth)
	}
	switch spec.Kind() {
	case signature.KindAny:
		return v, checkShowable(v, depth)
	case signature.KindOptional:
		if t.Kind() != reflect.Pointer { // Optional[list], Optional[dict]: the same type, nil is None
			return convertValue(v, spec.Elem(), depth+1)
		}
		if v.Kind() == reflect.Pointer {
			v = v.Elem()
		}
		e, err := convertValue(v, spec.Elem(), depth+1)
		if err != nil {
			return reflect.Value{}, err
		}
		p := reflect.New(t.Elem())
		p.Elem().Set(e)
		return p, nil
	case signature.KindUnion:
		for _, o := range spec.Options() {
			if o.Kind() == signature.KindNone {
				continue
			}
			if e, err := convertValue(v, o, depth+1); err == nil {
				return e, nil
			}
		}
		return reflect.Value{}, notA(v, spec)
	case signature.KindLiteral:
		for _, l := range spec.Literals() {
			if l != nil && sameLiteralValue(v, l) {
				return reflect.ValueOf(l).Convert(t), nil
			}
		}
		return reflect.Value{}, fmt.Errorf("%w: %s is not one of %s", ErrNotInSet, clipText(pyjson.Repr(v.Interface())), pyjson.Repr(spec.Literals()))
	case signature.KindEnum:
		if v.Kind() != reflect.String {
			return reflect.Value{}, notA(v, spec)
		}
		for _, e := range spec.EnumValues() {
			if v.String() == e {
				return v.Convert(t), nil
			}
		}
		return reflect.Value{}, fmt.Errorf("%w: %q is not one of %s", ErrNotInSet, clipText(v.String()), pyjson.Repr(spec.EnumValues()))
	case signature.KindList:
		if v.Kind() != reflect.Slice && v.Kind() != reflect.Array || t.Kind() != reflect.Slice {
			return reflect.Value{}, notA(v, spec)
		}
		out := reflect.MakeSlice(t, v.Len(), v.Len())
		for i := range v.Len() {
			e, err := convertValue(v.Index(i), spec.Elem(), depth+1)
			if err != nil {
				return reflect.Value{}, fmt.Errorf("item %d: %w", i+1, err)
			}
			out.Index(i).Set(e)
		}
		return out, nil
	case signature.KindDict:
		if v.Kind() != reflect.Map || t.Kind() != reflect.Map {
			return reflect.Value{}, notA(v, spec)
		}
		out := reflect.MakeMapWithSize(t, v.Len())
		iter := v.MapRange()
		for iter.Next() {
			k, err := convertValue(iter.Key(), spec.Key(), depth+1)
			if err != nil {
				return reflect.Value{}, fmt.Errorf("key %s: %w", clipText(pyjson.Repr(iter.Key().Interface())), err)
			}
			e, err := convertValue(iter.Value(), spec.Elem(), depth+1)
			if err != nil {
				return reflect.Value{}, fmt.Errorf("key %s: %w", clipText(pyjson.Repr(iter.Key().Interface())), err)
			}
			out.SetMapIndex(k, e)
		}
		return out, nil
	}
	if v.Kind() == reflect.Pointer && v.Type().Elem() == t { // *T for T: the value it points to
		return v.Elem(), checkShowable(v.Elem(), depth)
	}
	if t.Kind() == reflect.Interface {
		if v.Type().Implements(t) {
			return v, checkShowable(v, depth)
		}
		return reflect.Value{}, notA(v, spec)
	}
	if depth == 0 && spec.IsStr() && (v.Kind() == reflect.Slice || v.Kind() == reflect.Array) {
		// A list for a str field (the field's own value, not an item) is
		// shown as DSPy shows it, a numbered list of «items» (DSPy's usual
		// way of passing passages).
		for i := range v.Len() {
			if e := indirect(v.Index(i)); !e.IsValid() || e.Kind() != reflect.String {
				return reflect.Value{}, fmt.Errorf("%w: item %d of a list for str: %s is not a string", ErrInputType, i+1, describe(v.Index(i)))
			}
		}
		return v, nil
	}
	return convertScalar(v, spec)
}

// convertScalar converts between values of the same kind family: strings
// to strings, bools to bools, numbers to numbers when the value survives.
func convertScalar(v reflect.Value, spec *signature.TypeSpec) (reflect.Value, error) {
	t := spec.GoType()
	switch t.Kind() {
	case reflect.String:
		if v.Kind() == reflect.String {
			return v.Convert(t), nil
		}
	case reflect.Bool:
		if v.Kind() == reflect.Bool {
			return v.Convert(t), nil
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		if i, ok := exactInt(v); ok {
			out := reflect.New(t).Elem()
			if t.Kind() >= reflect.Uint && t.Kind() <= reflect.Uintptr {
				if i.neg || out.OverflowUint(i.abs) {
					return reflect.Value{}, fmt.Errorf("%w: %s is out of range for %s", ErrInputType, describe(v), spec)
				}
				out.SetUint(i.abs)
				return out, nil
			}
			if i.abs > math.MaxInt64 && !(i.neg && i.abs == 1<<63) {
				return reflect.Value{}, fmt.Errorf("%w: %s is out of range for %s", ErrInputType, describe(v), spec)
			}
			n := int64(i.abs)
			if i.neg {
				n = -n
			}
			if out.OverflowInt(n) {
				return reflect.Value{}, fmt.Errorf("%w: %s is out of range for %s", ErrInputType, describe(v), spec)
			}
			out.SetInt(n)
			return out, nil
		}
	case reflect.Float32, reflect.Float64:
		if f, ok := exactFloat(v); ok {
			out := reflect.New(t).Elem()
			if t.Kind() == reflect.Float32 && !math.IsNaN(f) && float64(float32(f)) != f {
				return reflect.Value{}, fmt.Errorf("%w: %s does not fit a float32", ErrInputType, describe(v))
			}
			out.SetFloat(f)
			return out, nil
		}
	}
	return reflect.Value{}, notA(v, spec)
}

// bigInt is an integer as sign and magnitude.
type bigInt struct {
	neg bool
	abs uint64
}

func intOf(n int64) bigInt {
	if n < 0 {
		return bigInt{true, uint64(-(n + 1)) + 1}
	}
	return bigInt{false, uint64(n)}
}

// exactInt reads an integer from an integer, a float with no fraction, or
// a json.Number, when the value is exactly that integer.
func exactInt(v reflect.Value) (bigInt, bool) {
	switch {
	case v.CanInt():
		return intOf(v.Int()), true
	case v.CanUint():
		return bigInt{false, v.Uint()}, true
	case v.CanFloat():
		f := v.Float()
		if f != math.Trunc(f) || math.IsInf(f, 0) || math.Abs(f) >= 1<<64 {
			return bigInt{}, false
		}
		return bigInt{f < 0, uint64(math.Abs(f))}, true
	case v.Type() == jsonNumberType:
		s := v.String()
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			return exactInt(reflect.ValueOf(n))
		}
		if n, err := strconv.ParseUint(s, 10, 64); err == nil {
			return bigInt{false, n}, true
		}
	}
	return bigInt{}, false
}

// exactFloat reads a float from a float, an integer that float64 holds
// exactly, or a json.Number.
func exactFloat(v reflect.Value) (float64, bool) {
	switch {
	case v.CanFloat():
		return v.Float(), true
	case v.CanInt():
		n := v.Int()
		return float64(n), n > -1<<53 && n < 1<<53
	case v.CanUint():
		n := v.Uint()
		return float64(n), n < 1<<53
	case v.Type() == jsonNumberType:
		f, err := strconv.ParseFloat(v.String(), 64)
		return f, err == nil
	}
	return 0, false
}

var jsonNumberType = reflect.TypeFor[json.Number]()

// sameLiteralValue reports whether v is the literal l (a string, int,
// float64 or bool), across Go types of the same kind.
func sameLiteralValue(v reflect.Value, l any) bool {
	switch l := l.(type) {
	case string:
		return v.Kind() == reflect.String && v.String() == l
	case bool:
		return v.Kind() == reflect.Bool && v.Bool() == l
	case int:
		i, ok := exactInt(v)
		return ok && i == intOf(int64(l))
	case float64:
		f, ok := exactFloat(v)
		return ok && f == l
	}
	return false
}

// checkShowable refuses a value that holds, anywhere, what no prompt can
// show: a channel, a function, an unsafe pointer. Only values whose type
// leaves room for them (interfaces) are walked.
func checkShowable(v reflect.Value, depth int) error {
	switch v.Kind() {
	case reflect.String, reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return nil
	}
	if !mayHide(v.Type(), map[reflect.Type]bool{}) {
		return nil
	}
	return walkShowable(v, depth, map[uintptr]bool{})
}

// mayHide reports whether values of t can hold an interface value.
func mayHide(t reflect.Type, seen map[reflect.Type]bool) bool {
	if seen[t] {
		return false
	}
	seen[t] = true
	switch t.Kind() {
	case reflect.Interface, reflect.Chan, reflect.Func, reflect.UnsafePointer:
		return true
	case reflect.Pointer, reflect.Slice, reflect.Array:
		return mayHide(t.Elem(), seen)
	case reflect.Map:
		return mayHide(t.Key(), seen) || mayHide(t.Elem(), seen)
	case reflect.Struct:
		for i := range t.NumField() {
			if t.Field(i).IsExported() && mayHide(t.Field(i).Type, seen) {
				return true
			}
		}
	}
	return false
}

func walkShowable(v reflect.Value, depth int, seen map[uintptr]bool) error {
	if depth > maxInputDepth {
		return nil // the formatter refuses what is nested this deep
	}
	switch v.Kind() {
	case reflect.Chan, reflect.Func, reflect.UnsafePointer:
		return fmt.Errorf("%w: a %s cannot be shown to a model", ErrInputType, v.Type())
	case reflect.Interface:
		if !v.IsNil() {
			return walkShowable(v.Elem(), depth+1, seen)
		}
	case reflect.Pointer, reflect.Map, reflect.Slice:
		if v.IsNil() {
			return nil
		}
		if p := uintptr(v.UnsafePointer()); p != 0 {
			if seen[p] && v.Kind() != reflect.Slice {
				return nil
			}
			seen[p] = true
		}
		switch v.Kind() {
		case reflect.Pointer:
			return walkShowable(v.Elem(), depth+1, seen)
		case reflect.Map:
			iter := v.MapRange()
			for iter.Next() {
				if err := walkShowable(iter.Key(), depth+1, seen); err != nil {
					return err
				}
				if err := walkShowable(iter.Value(), depth+1, seen); err != nil {
					return err
				}
			}
			return nil
		}
		fallthrough
	case reflect.Array:
		for i := range v.Len() {
			if err := walkShowable(v.Index(i), depth+1, seen); err != nil {
				return err
			}
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				if err := walkShowable(v.Field(i), depth+1, seen); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func indirect(v reflect.Value) reflect.Value {
	for v.IsValid() && (v.Kind() == reflect.Interface || v.Kind() == reflect.Pointer) && !v.IsNil() {
		v = v.Elem()
	}
	return v
}

// notA is the error for a value of the wrong type.
func notA(v reflect.Value, spec *signature.TypeSpec) error {
	return fmt.Errorf("%w: %s is not %s", ErrInputType, describe(v), value.A(spec.String()))
}

// describe shows a value and its Go type, briefly: int 42, string "x".
func describe(v reflect.Value) string {
	v = indirect(v)
	if !v.IsValid() {
		return "None"
	}
	switch v.Kind() {
	case reflect.Chan, reflect.Func, reflect.UnsafePointer:
		return "a " + v.Type().String()
	case reflect.String:
		return v.Type().String() + " " + clipText(strconv.Quote(v.String()))
	case reflect.Slice, reflect.Array, reflect.Map, reflect.Struct:
		return "a " + v.Type().String()
	}
	return v.Type().String() + " " + clipText(fmt.Sprint(v.Interface()))
}

func clipText(s string) string {
	if len(s) > 60 {
		return s[:57] + "..."
	}
	return s
}
