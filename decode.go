package adapter

import (
	"fmt"
	"reflect"
	"sync"
	"unsafe"

	"github.com/sigwire/adapter/signature"
)

// Decode copies Values into a struct T whose fields are named as
// signature.FromStructs names them (json tags, else snake_case). A value
// of another type than its field is converted when Go can convert it
// losslessly (int to int64), otherwise it is an error naming the field;
// keys without a field are ignored and fields without a key are left zero.
func Decode[T any](vals Values) (T, error) {
	var out T
	t := reflect.TypeFor[T]()
	if t.Kind() != reflect.Struct {
		return out, fmt.Errorf("adapter: Decode needs a struct type, not %s", t)
	}
	if decodeExact(unsafe.Pointer(&out), topFields(t), vals) {
		return out, nil
	}
	return decodeReflect[T](vals)
}

// decodeExact is Decode for values that are each exactly their field's
// type, one of the kinds values most often are (string, int, float64,
// bool), stored through out (a T) without reflection; false when a value
// is of another type or a field of another kind has a value, for
// decodeReflect to decode from the start.
func decodeExact(out unsafe.Pointer, fields []namedField, vals Values) bool {
	for _, f := range fields {
		v, ok := vals[f.name]
		if !ok || v == nil {
			continue
		}
		p := unsafe.Add(out, f.offset)
		stored := false
		switch f.exact {
		case exactString:
			stored = storeExact[string](p, v)
		case exactInt:
			stored = storeExact[int](p, v)
		case exactFloat:
			stored = storeExact[float64](p, v)
		case exactBool:
			stored = storeExact[bool](p, v)
		}
		if !stored {
			return false
		}
	}
	return true
}

// storeExact stores v at p when v is a T, and reports whether it was.
func storeExact[T any](p unsafe.Pointer, v any) bool {
	x, ok := v.(T)
	if ok {
		*(*T)(p) = x
	}
	return ok
}

// decodeReflect is Decode through reflection, for any field type.
func decodeReflect[T any](vals Values) (T, error) {
	var out T
	rv := reflect.ValueOf(&out).Elem()
	for _, f := range topFields(rv.Type()) {
		v, ok := vals[f.name]
		if !ok || v == nil {
			continue
		}
		dst := rv.FieldByIndex(f.index)
		src := reflect.ValueOf(v)
		switch {
		case src.Type().AssignableTo(dst.Type()):
			dst.Set(src)
		case src.Type().ConvertibleTo(dst.Type()) && sameKindFamily(src.Type(), dst.Type()):
			dst.Set(src.Convert(dst.Type()))
		default:
			return out, fmt.Errorf("adapter: Decode: field %q: %s does not fit %s", f.name, src.Type(), dst.Type())
		}
	}
	return out, nil
}

// ValuesOf is Decode's inverse: a struct's fields as Values, named as
// signature.FromStructs names them.
func ValuesOf(v any) (Values, error) {
	rv := reflect.ValueOf(v)
	for rv.Kind() == reflect.Pointer && !rv.IsNil() {
		rv = rv.Elem()
	}
	if rv.Kind() != reflect.Struct {
		return nil, fmt.Errorf("adapter: ValuesOf needs a struct, not %T", v)
	}
	fields := topFields(rv.Type())
	out := make(Values, len(fields))
	for _, f := range fields {
		out[f.name] = rv.FieldByIndex(f.index).Interface()
	}
	return out, nil
}

type namedField struct {
	name  string
	index []int
	// offset and exact are the field's offset in the struct and, for a
	// field of type string, int, float64 or bool exactly, that type
	// (decodeExact).
	offset uintptr
	exact  exactKind
}

// exactKind is the type of a field that decodeExact stores directly.
type exactKind uint8

const (
	exactNone exactKind = iota
	exactString
	exactInt
	exactFloat
	exactBool
)

// exactKindOf is t's exactKind: t must be the type itself, not a type
// defined on it.
func exactKindOf(t reflect.Type) exactKind {
	switch t {
	case reflect.TypeFor[string]():
		return exactString
	case reflect.TypeFor[int]():
		return exactInt
	case reflect.TypeFor[float64]():
		return exactFloat
	case reflect.TypeFor[bool]():
		return exactBool
	}
	return exactNone
}

// fieldsByType keeps topFields' result per struct type (reflect.Type →
// []namedField), as encoding/json keeps its field lists: a type's fields
// never change, and Decode and ValuesOf run on every typed call.
var fieldsByType sync.Map

// topFields lists a struct's fields by their signature names (a slice kept
// for t: not to be changed).
func topFields(t reflect.Type) []namedField {
	if f, ok := fieldsByType.Load(t); ok {
		return f.([]namedField)
	}
	f, _ := fieldsByType.LoadOrStore(t, structFields(t))
	return f.([]namedField)
}

// structFields lists a struct's fields by their signature names.
func structFields(t reflect.Type) []namedField {
	var out []namedField
	for i := range t.NumField() {
		sf := t.Field(i)
		if !sf.IsExported() || sf.Tag.Get("json") == "-" {
			continue
		}
		out = append(out, namedField{name: signature.StructFieldName(sf), index: sf.Index, offset: sf.Offset, exact: exactKindOf(sf.Type)})
	}
	return out
}

// sameKindFamily keeps conversions lossless in spirit: numbers to numbers
// of the same family, strings to strings.
func sameKindFamily(a, b reflect.Type) bool {
	fam := func(t reflect.Type) int {
		switch {
		case t.Kind() >= reflect.Int && t.Kind() <= reflect.Int64:
			return 1
		case t.Kind() >= reflect.Uint && t.Kind() <= reflect.Uintptr:
			return 2
		case t.Kind() == reflect.Float32 || t.Kind() == reflect.Float64:
			return 3
		case t.Kind() == reflect.String:
			return 4
		}
		return 0
	}
	return fam(a) != 0 && fam(a) == fam(b)
}
