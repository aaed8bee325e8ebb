package value

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"

	"github.com/sigwire/adapter/internal/pyjson"
	"github.com/sigwire/adapter/signature"
)

// ErrInputType: a Go value does not fit the field's type and cannot be
// converted to it without loss, or holds what no prompt can show.
var ErrInputType = errors.New("input value does not fit the field's type")

// maxInputDepth bounds the nesting Convert follows; deeper values are
// left to the formatter, which refuses them.
const maxInputDepth = 128

// Convert returns v, a Go value given for a field (an input), as a value
// of spec's Go type, converted only where nothing is lost: int64 to int,
// 3.0 to int, []any of strings to []string, a json.Number to a number
// that holds it, a string to an enum or Literal member it names, nil to
// None for a type that can hold it; a nil slice or map is the empty one.
// A list for a str field is kept, shown as DSPy shows it. A value that
// does not fit, or that holds what no prompt can show (a channel, a
// function), is an ErrInputType error (ErrNoMatch for an enum or Literal
// value that is none of the members), saying where in the value.
func Convert(v any, spec *signature.TypeSpec) (any, error) {
	rv, err := convert(reflect.ValueOf(v), spec, 0)
	if err != nil {
		return nil, err
	}
	if !rv.IsValid() {
		return nil, nil
	}
	return rv.Interface(), nil
}

// convert is Convert for a value depth levels down.
func convert(v reflect.Value, spec *signature.TypeSpec, depth int) (reflect.Value, error) {
	if depth > maxInputDepth {
		return reflect.Value{}, fmt.Errorf("%w: nested over %d levels", ErrInputType, maxInputDepth)
	}
	for v.IsValid() && v.Kind() == reflect.Interface {
		if v.IsNil() {
			v = reflect.Value{}
			break
		}
		v = v.Elem()
	}
	if !v.IsValid() || (v.Kind() == reflect.Pointer || v.Kind() == reflect.Map || v.Kind() == reflect.Slice) && v.IsNil() {
		return convertNil(v, spec)
	}
	t := spec.GoType()
	if v.Type() == t && spec.Kind() != signature.KindEnum && spec.Kind() != signature.KindLiteral {
		return v, checkShowable(v, depth)
	}
	switch spec.Kind() {
	case signature.KindAny:
		return v, checkShowable(v, depth)
	case signature.KindOptional:
		if t.Kind() != reflect.Pointer { // Optional[list], Optional[dict]: the same type, nil is None
			return convert(v, spec.Elem(), depth+1)
		}
		if v.Kind() == reflect.Pointer {
			v = v.Elem()
		}
		e, err := convert(v, spec.Elem(), depth+1)
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
			if e, err := convert(v, o, depth+1); err == nil {
				return e, nil
			}
		}
		return reflect.Value{}, notA(v, spec)
	case signature.KindLiteral, signature.KindEnum:
		return convertMember(v, spec)
	case signature.KindList:
		return convertList(v, spec, depth)
	case signature.KindDict:
		return convertDict(v, spec, depth)
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

// convertNil converts v, nil or a nil pointer, slice or map: None for the
// types that can hold it; a nil slice or map for a list or dict is Go's
// empty one (len 0), as encoding/json/v2 writes it: [] or {}, not None.
func convertNil(v reflect.Value, spec *signature.TypeSpec) (reflect.Value, error) {
	t := spec.GoType()
	switch k := spec.Kind(); {
	case (k == signature.KindList || k == signature.KindDict) && v.IsValid() && v.Kind() != reflect.Pointer:
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
		switch t.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Map, reflect.Interface:
			return reflect.Zero(t), nil
		}
	}
	return reflect.Value{}, fmt.Errorf("%w: None for %s, which is not Optional", ErrInputType, spec)
}

// convertMember converts v to the Literal or enum member it is.
func convertMember(v reflect.Value, spec *signature.TypeSpec) (reflect.Value, error) {
	t := spec.GoType()
	if spec.Kind() == signature.KindLiteral {
		for _, l := range spec.Literals() {
			if l != nil && isLiteral(v, l) {
				return reflect.ValueOf(l).Convert(t), nil
			}
		}
		return reflect.Value{}, fmt.Errorf("%w: %s is not one of %s", ErrNoMatch, Brief(pyjson.Repr(v.Interface())), pyjson.Repr(spec.Literals()))
	}
	if v.Kind() != reflect.String {
		return reflect.Value{}, notA(v, spec)
	}
	for _, e := range spec.EnumValues() {
		if v.String() == e {
			return v.Convert(t), nil
		}
	}
	return reflect.Value{}, fmt.Errorf("%w: %q is not one of %s", ErrNoMatch, Brief(v.String()), pyjson.Repr(spec.EnumValues()))
}

// convertList converts a slice or array to a list type, item by item.
func convertList(v reflect.Value, spec *signature.TypeSpec, depth int) (reflect.Value, error) {
	t := spec.GoType()
	if v.Kind() != reflect.Slice && v.Kind() != reflect.Array || t.Kind() != reflect.Slice {
		return reflect.Value{}, notA(v, spec)
	}
	out := reflect.MakeSlice(t, v.Len(), v.Len())
	for i := range v.Len() {
		e, err := convert(v.Index(i), spec.Elem(), depth+1)
		if err != nil {
			return reflect.Value{}, fmt.Errorf("item %d: %w", i+1, err)
		}
		out.Index(i).Set(e)
	}
	return out, nil
}

// convertDict converts a map to a dict type, key and value by key and
// value.
func convertDict(v reflect.Value, spec *signature.TypeSpec, depth int) (reflect.Value, error) {
	t := spec.GoType()
	if v.Kind() != reflect.Map || t.Kind() != reflect.Map {
		return reflect.Value{}, notA(v, spec)
	}
	out := reflect.MakeMapWithSize(t, v.Len())
	var bad firstBad
	iter := v.MapRange()
	for iter.Next() {
		var name string
		if bad.err != nil {
			if name = pyjson.Repr(iter.Key().Interface()); bad.after(name) {
				continue
			}
		}
		k, err := convert(iter.Key(), spec.Key(), depth+1)
		var e reflect.Value
		if err == nil {
			e, err = convert(iter.Value(), spec.Elem(), depth+1)
		}
		if err != nil {
			if name == "" {
				name = pyjson.Repr(iter.Key().Interface())
			}
			bad.note(name, fmt.Errorf("key %s: %w", Brief(name), err))
			continue
		}
		if bad.err == nil {
			out.SetMapIndex(k, e)
		}
	}
	if bad.err != nil {
		return reflect.Value{}, bad.err
	}
	return out, nil
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

// isLiteral reports whether v is the Literal member l (a string, int,
// float64 or bool), across Go types of the same kind: a json.Number is the
// number it holds exactly.
func isLiteral(v reflect.Value, l any) bool {
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
	return fmt.Errorf("%w: %s is not %s", ErrInputType, describe(v), WithArticle(spec.String()))
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
		return v.Type().String() + " " + Brief(strconv.Quote(v.String()))
	case reflect.Slice, reflect.Array, reflect.Map, reflect.Struct:
		return "a " + v.Type().String()
	}
	return v.Type().String() + " " + Brief(fmt.Sprint(v.Interface()))
}

// Brief shortens s, a value shown in an error message, to 60 bytes.
func Brief(s string) string {
	if len(s) > 60 {
		return s[:57] + "..."
	}
	return s
}
