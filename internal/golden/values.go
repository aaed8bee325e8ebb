package golden

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"github.com/sigwire/adapter/signature"
)

// Value decodes a golden value into a Go value of type t; null is None. {"$raw": v}
// passes v through uncoerced (decoded generically). Numbers decoded into
// untyped places keep Python's distinction: 1 is an int, 1.0 a float64.
func Value(raw json.RawMessage, t reflect.Type) (any, error) {
	if string(bytes.TrimSpace(raw)) == "null" {
		// Python None: a typed nil where the Go type has one, else nil
		// (a None demo value for a str field is not "").
		switch t.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Map, reflect.Interface:
			return reflect.Zero(t).Interface(), nil
		}
		return nil, nil
	}
	var probe map[string]json.RawMessage
	if json.Unmarshal(raw, &probe) == nil && len(probe) == 1 {
		if r, ok := probe["$raw"]; ok {
			return Value(r, reflect.TypeFor[any]())
		}
	}
	p := reflect.New(t)
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(p.Interface()); err != nil {
		return nil, fmt.Errorf("golden: decode %s into %s: %w", raw, t, err)
	}
	return pythonNumbers(p.Elem().Interface()), nil
}

// pythonNumbers replaces json.Number in generic values by int or float64.
func pythonNumbers(v any) any {
	switch x := v.(type) {
	case json.Number:
		if !strings.ContainsAny(x.String(), ".eE") {
			if i, err := x.Int64(); err == nil {
				return int(i)
			}
		}
		f, _ := x.Float64()
		return f
	case map[string]any:
		for k, e := range x {
			x[k] = pythonNumbers(e)
		}
	case []any:
		for i, e := range x {
			x[i] = pythonNumbers(e)
		}
	}
	return v
}

// Values decodes an object of field values (inputs, a demo) into Go values
// of the fields' types. Keys that name no field are decoded generically.
func Values(sig *signature.Signature, o Object) (map[string]any, error) {
	out := make(map[string]any, len(o.Keys))
	for _, k := range o.Keys {
		t := reflect.TypeFor[any]()
		if f, _, ok := sig.Field(k); ok {
			t = f.Type
		}
		v, err := Value(o.Values[k], t)
		if err != nil {
			return nil, fmt.Errorf("field %s: %w", k, err)
		}
		out[k] = v
	}
	return out, nil
}
