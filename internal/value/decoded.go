package value

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/sigwire/adapter/internal/jsonx"
	"github.com/sigwire/adapter/internal/pyjson"
	"github.com/sigwire/adapter/signature"
)

// fromDecoded converts a decoded value to spec's Go type. top marks a
// field's own value, where DSPy turns a non-string into str() for a str
// field; inside containers a str must be a string.
func fromDecoded(v any, spec *signature.TypeSpec, top bool, depth int, b *jsonx.Budget) (reflect.Value, error) {
	if depth > maxDepth {
		return reflect.Value{}, invalid("nested too deeply")
	}
	t := spec.GoType()
	if t.Kind() != reflect.Interface && t.Kind() != reflect.Pointer && reflect.PointerTo(t).Implements(jsonUnmarshalerType) {
		b, err := json.Marshal(v)
		if err != nil {
			return reflect.Value{}, invalid("%v", err)
		}
		p := reflect.New(t)
		if err := p.Interface().(json.Unmarshaler).UnmarshalJSON(b); err != nil {
			if s, ok := v.(string); ok {
				if out, err2 := selfParse(s, t); err2 != errNotSelfParsing {
					return out, err2
				}
			}
			return reflect.Value{}, fmt.Errorf("%w: %w", ErrInvalid, err)
		}
		return p.Elem(), nil
	}
	if s, ok := v.(string); ok {
		if out, err := selfParse(s, t); err != errNotSelfParsing {
			return out, err
		}
	}
	if v == nil {
		switch {
		case spec.Nullable():
			return reflect.Zero(t), nil
		case spec.Kind() == signature.KindLiteral:
		default:
			return reflect.Value{}, errNull
		}
	}
	switch spec.Kind() {
	case signature.KindString:
		switch x := v.(type) {
		case string:
			return reflect.ValueOf(x).Convert(t), nil
		}
		if top {
			return reflect.ValueOf(pyjson.Str(v)).Convert(t), nil
		}
		return reflect.Value{}, invalid("%s is not a string", clip(pyjson.Repr(v)))
	case signature.KindInt:
		switch x := v.(type) {
		case json.Number:
			n, err := intFromNumber(x, x.String())
			if err != nil {
				return reflect.Value{}, err
			}
			return intValue(n, t, x.String())
		case string:
			return parseText(x, spec, depth+1, b)
		}
	case signature.KindFloat:
		switch x := v.(type) {
		case json.Number:
			f, err := strconv.ParseFloat(string(x), 64)
			if err != nil {
				return reflect.Value{}, invalid("%s is out of range for a float", x)
			}
			return reflect.ValueOf(f).Convert(t), nil
		case string:
			return parseText(x, spec, depth+1, b)
		}
	case signature.KindBool:
		switch x := v.(type) {
		case bool:
			return reflect.ValueOf(x).Convert(t), nil
		case json.Number:
			if x == "0" || x == "1" {
				return reflect.ValueOf(x == "1").Convert(t), nil
			}
		case string:
			return parseText(x, spec, depth+1, b)
		}
	case signature.KindEnum:
		if x, ok := v.(string); ok {
			return parseText(x, spec, depth+1, b)
		}
	case signature.KindLiteral:
		for _, l := range spec.Literals() {
			if sameLiteral(v, l) {
				return literalValue(l, t)
			}
		}
		if x, ok := v.(string); ok {
			return parseText(x, spec, depth+1, b)
		}
		return reflect.Value{}, fmt.Errorf("%w: %s is not one of %s", ErrNoMatch, clip(pyjson.Repr(v)), pyjson.Repr(spec.Literals()))
	case signature.KindOptional:
		if x, isStr := v.(string); isStr && spec.Elem().Kind() != signature.KindString && !(spec.Elem().Kind() == signature.KindUnion && unionHasStr(spec.Elem())) {
			return parseText(x, spec, depth+1, b) // the text rules: "", "None", "Unknown – …"
		}
		out, err := fromDecoded(v, spec.Elem(), top, depth+1, b)
		if err != nil {
			return reflect.Value{}, err
		}
		return wrap(out, t), nil
	case signature.KindUnion:
		return unionFromDecoded(v, spec, depth, b)
	case signature.KindAny:
		out := reflect.New(t).Elem()
		if n := plain(v); n != nil {
			out.Set(reflect.ValueOf(n))
		}
		return out, nil
	case signature.KindList:
		switch x := v.(type) {
		case []any:
			out := reflect.MakeSlice(t, len(x), len(x))
			lists := itemsAreLists(spec.Elem())
			for i, e := range x {
				if lists {
					if err := loneItem(e, spec.Elem()); err != nil {
						return reflect.Value{}, fmt.Errorf("item %d: %w", i+1, err)
					}
				}
				ev, err := fromDecoded(e, spec.Elem(), false, depth+1, b)
				if err != nil {
					return reflect.Value{}, fmt.Errorf("item %d: %w", i+1, err)
				}
				out.Index(i).Set(ev)
			}
			return out, nil
		case string:
			return parseText(x, spec, depth+1, b)
		case json.Number, bool:
			// A lone scalar given for a list is its one item.
			ev, err := fromDecoded(x, spec.Elem(), false, depth+1, b)
			if err != nil {
				return reflect.Value{}, invalid("%s is not %s", clip(pyjson.Repr(v)), WithArticle(spec.String()))
			}
			out := reflect.MakeSlice(t, 1, 1)
			out.Index(0).Set(ev)
			return out, nil
		}
	case signature.KindDict:
		switch x := v.(type) {
		case map[string]any:
			out := reflect.MakeMapWithSize(t, len(x))
			var bad firstBad
			for k, e := range x {
				if bad.after(k) {
					continue
				}
				kv, err := parseText(k, spec.Key(), depth+1, b)
				var ev reflect.Value
				if err == nil {
					ev, err = fromDecoded(e, spec.Elem(), false, depth+1, b)
				}
				if err != nil {
					bad.note(k, fmt.Errorf("key %s: %w", clip(k), err))
					continue
				}
				if bad.err == nil {
					out.SetMapIndex(kv, ev)
				}
			}
			if bad.err != nil {
				return reflect.Value{}, bad.err
			}
			return out, nil
		case string:
			return parseText(x, spec, depth+1, b)
		}
	case signature.KindStruct:
		switch x := v.(type) {
		case map[string]any:
			return structFromMap(x, spec, depth, b)
		case string:
			return parseText(x, spec, depth+1, b)
		}
	case signature.KindNone:
		return reflect.Value{}, invalid("%s is not None", clip(pyjson.Repr(v)))
	case signature.KindCustom:
		if x, ok := v.(string); ok {
			return customFromText(x, t)
		}
		if _, ok := v.([]any); ok && isBytes(t) {
			// A JSON array of byte values, as encoding/json reads one.
			b, err := json.Marshal(v)
			if err == nil {
				return bytesFromText(string(b), t)
			}
		}
		return reflect.Value{}, invalid("type %s cannot decode %s: give it an UnmarshalJSON method", t, clip(pyjson.Repr(v)))
	}
	return reflect.Value{}, invalid("%s is not %s", clip(pyjson.Repr(v)), WithArticle(spec.String()))
}

// sameLiteral compares a decoded value with a Literal member by kind.
func sameLiteral(v, lit any) bool {
	if v == nil || lit == nil {
		return v == lit
	}
	return isLiteral(reflect.ValueOf(v), lit)
}

// unionFromDecoded picks the member for v as pydantic's smart mode does:
// a member v already is (a string for str, an integral number for int)
// first, then the first member v converts to.
func unionFromDecoded(v any, spec *signature.TypeSpec, depth int, b *jsonx.Budget) (reflect.Value, error) {
	t := spec.GoType()
	opts := spec.Options()
	set := func(x reflect.Value) reflect.Value {
		out := reflect.New(t).Elem()
		out.Set(x)
		return out
	}
	for _, o := range opts {
		if exactKind(v, o) {
			if x, err := fromDecoded(v, o, false, depth+1, b); err == nil {
				return set(x), nil
			}
		}
	}
	for _, o := range opts {
		if x, err := fromDecoded(v, o, false, depth+1, b); err == nil {
			return set(x), nil
		}
	}
	return reflect.Value{}, invalid("%s matches no member of %s", clip(pyjson.Repr(v)), spec)
}

func exactKind(v any, o *signature.TypeSpec) bool {
	switch x := v.(type) {
	case string:
		return o.Kind() == signature.KindString
	case bool:
		return o.Kind() == signature.KindBool
	case json.Number:
		if o.Kind() == signature.KindInt {
			_, err := strconv.ParseInt(string(x), 10, 64)
			return err == nil
		}
		return o.Kind() == signature.KindFloat
	case []any:
		return o.Kind() == signature.KindList
	case map[string]any:
		return o.Kind() == signature.KindDict || o.Kind() == signature.KindStruct
	case nil:
		return o.Kind() == signature.KindNone
	}
	return false
}

// plain turns decoded JSON into plain Go values for Any: integral numbers
// become int, others float64.
func plain(v any) any {
	switch x := v.(type) {
	case json.Number:
		if i, err := strconv.ParseInt(string(x), 10, 0); err == nil {
			return int(i)
		}
		f, _ := strconv.ParseFloat(string(x), 64)
		return f
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = plain(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = plain(e)
		}
		return out
	}
	return v
}

// structFromMap fills a struct from an object: each field from its key
// (exactly, else uniquely up to case and separators); a missing key takes
// the field's default, None when it is nullable, and is an error
// otherwise. Unknown keys are ignored, as pydantic does.
func structFromMap(m map[string]any, spec *signature.TypeSpec, depth int, b *jsonx.Budget) (reflect.Value, error) {
	t := spec.GoType()
	fields, err := spec.Fields()
	if err != nil {
		return reflect.Value{}, invalid("%v", err)
	}
	out := reflect.New(t).Elem()
	for _, sf := range fields {
		f := sf.Field
		raw, ok := m[f.Name]
		if !ok {
			raw, ok = lookupFolded(m, f.Name)
		}
		if !ok {
			switch {
			case f.HasDefault:
				if f.Default != nil {
					dv := reflect.ValueOf(f.Default)
					if dv.Type().ConvertibleTo(f.Type) {
						out.FieldByIndex(sf.Index).Set(dv.Convert(f.Type))
					}
				}
				continue
			case f.Spec.Nullable():
				continue
			}
			return reflect.Value{}, invalid("%s: key %q missing", spec, f.Name)
		}
		v, err := fromDecoded(raw, f.Spec, false, depth+1, b)
		if err != nil {
			return reflect.Value{}, fmt.Errorf("%s.%s: %w", spec, f.Name, err)
		}
		out.FieldByIndex(sf.Index).Set(v)
	}
	return out, nil
}

// firstBad keeps, of a map's entries that fail, the one whose key sorts
// first, so that the error names the same entry every time (Call and
// Stream alike) though a map's order varies.
type firstBad struct {
	key string
	err error
}

// after reports whether an entry of key cannot come before the one kept.
func (f *firstBad) after(key string) bool { return f.err != nil && key >= f.key }

// note keeps err of key, which after said comes first.
func (f *firstBad) note(key string, err error) { f.key, f.err = key, err }

func lookupFolded(m map[string]any, name string) (any, bool) {
	n := normChoice(name)
	var found any
	hits := 0
	for k, v := range m {
		if normChoice(k) == n {
			found = v
			hits++
		}
	}
	return found, hits == 1
}

// Format renders a field value as DSPy's format_field_value does: a list
// given to a str field as a numbered list of «» blobs (N/A when empty),
// strings as they are, None/True/3.0 as Python prints them, and lists,
// dicts and structs as json.dumps would.
func Format(v any, spec *signature.TypeSpec) (string, error) {
	if s, ok := v.(string); ok {
		return s, nil // the common case, without reflection
	}
	rv := reflect.ValueOf(v)
	if s, ok, err := partsMarker(rv); ok || err != nil {
		return s, err
	}
	for rv.IsValid() && (rv.Kind() == reflect.Pointer || rv.Kind() == reflect.Interface) {
		if rv.IsNil() {
			return "None", nil
		}
		if implementsAny(rv.Type()) {
			break
		}
		rv = rv.Elem()
	}
	if !rv.IsValid() {
		return "None", nil
	}
	if spec != nil && spec.IsStr() && (rv.Kind() == reflect.Slice || rv.Kind() == reflect.Array) && rv.Type().Elem().Kind() != reflect.Uint8 {
		return numberedList(rv), nil
	}
	if implementsAny(rv.Type()) {
		b, err := pyjson.MarshalSubst(rv.Interface(), partsMarker)
		if err != nil {
			return "", err
		}
		var s string
		if json.Unmarshal(b, &s) == nil {
			return s, nil // a JSON string is shown as its text
		}
		return string(b), nil
	}
	switch rv.Kind() {
	case reflect.String:
		return rv.String(), nil
	case reflect.Slice, reflect.Map:
		if rv.IsNil() {
			return "None", nil
		}
	}
	switch rv.Kind() {
	case reflect.Slice, reflect.Array, reflect.Map, reflect.Struct:
		b, err := pyjson.MarshalSubst(rv.Interface(), partsMarker)
		if err != nil {
			return "", err
		}
		return string(b), nil
	}
	return pyjson.Str(rv.Interface()), nil
}

func implementsAny(t reflect.Type) bool {
	return t.Implements(reflect.TypeFor[json.Marshaler]()) || t.Implements(reflect.TypeFor[interface{ MarshalText() ([]byte, error) }]())
}

// numberedList is DSPy's _format_input_list_field_value.
func numberedList(rv reflect.Value) string {
	n := rv.Len()
	if n == 0 {
		return "N/A"
	}
	blob := func(i int) string {
		s := pyjson.Str(rv.Index(i).Interface())
		if !strings.ContainsAny(s, "\n«»") {
			return "«" + s + "»"
		}
		return "«««\n    " + strings.ReplaceAll(s, "\n", "\n    ") + "\n»»»"
	}
	if n == 1 {
		return blob(0)
	}
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "[%d] %s", i+1, blob(i))
	}
	return b.String()
}
