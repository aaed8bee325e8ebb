package value

import (
	"fmt"
	"reflect"

	"github.com/sigwire/adapter/internal/pyjson"
)

// The markers DSPy wraps a custom type's content parts in while a message
// is rendered as text; the adapter then splits user messages at them.
const (
	PartsStart = "<<CUSTOM-TYPE-START-IDENTIFIER>>"
	PartsEnd   = "<<CUSTOM-TYPE-END-IDENTIFIER>>"
)

var errorType = reflect.TypeFor[error]()

// partsMarker renders a value with a FormatParts method (the root's
// Formatter) as its marker string. ok is false for other values.
func partsMarker(v reflect.Value) (string, bool, error) {
	for v.IsValid() && v.Kind() == reflect.Interface && !v.IsNil() {
		v = v.Elem()
	}
	if !v.IsValid() {
		return "", false, nil
	}
	m := v.MethodByName("FormatParts")
	if !m.IsValid() && v.Kind() != reflect.Pointer && v.CanAddr() {
		m = v.Addr().MethodByName("FormatParts")
	}
	if !m.IsValid() {
		return "", false, nil
	}
	t := m.Type()
	if t.NumIn() != 0 || t.NumOut() != 2 || t.Out(1) != errorType {
		return "", false, nil
	}
	if v.Kind() == reflect.Pointer && v.IsNil() {
		return "", false, nil
	}
	out := m.Call(nil)
	if err, _ := out[1].Interface().(error); err != nil {
		return "", false, err
	}
	b, err := pyjson.Marshal(out[0].Interface())
	if err != nil {
		return "", false, fmt.Errorf("content parts: %w", err)
	}
	return PartsStart + string(b) + PartsEnd, true, nil
}
