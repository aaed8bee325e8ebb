package pyjson

import (
	"bytes"
	"encoding"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// maxDepth bounds nesting so a cyclic value fails instead of overflowing
// the stack.
const maxDepth = 1000

// ErrTooDeep reports a value nested deeper than 1000 levels (or cyclic).
var ErrTooDeep = errors.New("pyjson: value nested too deeply (cyclic?)")

// Quote returns s as a JSON string the way Python's json.dumps writes it
// with ensure_ascii=False: only the quote, the backslash and control
// characters are escaped; other characters, U+2028 included, are kept.
// Invalid UTF-8 becomes U+FFFD.
func Quote(s string) string {
	return string(appendQuote(make([]byte, 0, len(s)+2), s))
}

func appendQuote(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"':
				b = append(b, '\\', '"')
			case '\\':
				b = append(b, '\\', '\\')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			default:
				b = fmt.Appendf(b, `\u%04x`, c)
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, "\ufffd"...)
			i++
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// WriteQuote writes Quote(s) to w.
func WriteQuote(w *strings.Builder, s string) {
	w.WriteByte('"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			w.WriteString(s[start:i])
			switch c {
			case '"':
				w.WriteString(`\"`)
			case '\\':
				w.WriteString(`\\`)
			case '\n':
				w.WriteString(`\n`)
			case '\r':
				w.WriteString(`\r`)
			case '\t':
				w.WriteString(`\t`)
			case '\b':
				w.WriteString(`\b`)
			case '\f':
				w.WriteString(`\f`)
			default:
				fmt.Fprintf(w, `\u%04x`, c)
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			w.WriteString(s[start:i])
			w.WriteString("\ufffd")
			i++
			start = i
			continue
		}
		i += size
	}
	w.WriteString(s[start:])
	w.WriteByte('"')
}

// Float returns repr(f) as Python prints a float: the shortest digits that
// round-trip, ".0" on integral values, exponent form outside
// 1e-4 <= |f| < 1e16 ("1e-05", "1e+16"), and nan, inf, -inf.
func Float(f float64) string {
	return string(appendFloat(nil, f, false))
}

func appendFloat(b []byte, f float64, inJSON bool) []byte {
	switch {
	case math.IsNaN(f):
		if inJSON {
			return append(b, "NaN"...)
		}
		return append(b, "nan"...)
	case math.IsInf(f, 1):
		if inJSON {
			return append(b, "Infinity"...)
		}
		return append(b, "inf"...)
	case math.IsInf(f, -1):
		if inJSON {
			return append(b, "-Infinity"...)
		}
		return append(b, "-inf"...)
	}
	abs := math.Abs(f)
	if abs != 0 && (abs < 1e-4 || abs >= 1e16) {
		s := strconv.AppendFloat(nil, f, 'e', -1, 64)
		// Go writes e-05 / e+16 already with two exponent digits.
		return append(b, s...)
	}
	n := len(b)
	b = strconv.AppendFloat(b, f, 'f', -1, 64)
	if bytes.IndexByte(b[n:], '.') < 0 {
		b = append(b, '.', '0')
	}
	return b
}

// Str returns Python's str() of the value Python would hold for v: None,
// True, 3, 3.0, strings as they are, and repr() for lists, dicts and
// structs (['a', 1], {'k': None}).
func Str(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	rv := reflect.ValueOf(v)
	if rv.IsValid() && rv.Kind() == reflect.String && !implementsMarshaler(rv.Type()) {
		return rv.String()
	}
	b, err := appendRepr(nil, rv, 0)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// Repr returns Python's repr() of v: strings in quotes, otherwise as Str.
func Repr(v any) string {
	b, err := appendRepr(nil, reflect.ValueOf(v), 0)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// appendPyString writes s as Python's repr of a str: single quotes unless
// the text holds a single quote and no double quote.
func appendPyString(b []byte, s string) []byte {
	q := byte('\'')
	if strings.IndexByte(s, '\'') >= 0 && strings.IndexByte(s, '"') < 0 {
		q = '"'
	}
	b = append(b, q)
	for _, r := range s {
		switch {
		case r == rune(q) || r == '\\':
			b = append(b, '\\', byte(r))
		case r == '\n':
			b = append(b, '\\', 'n')
		case r == '\r':
			b = append(b, '\\', 'r')
		case r == '\t':
			b = append(b, '\\', 't')
		case r < 0x20 || r == 0x7f:
			b = fmt.Appendf(b, `\x%02x`, r)
		default:
			b = utf8.AppendRune(b, r)
		}
	}
	return append(b, q)
}

func appendRepr(b []byte, v reflect.Value, depth int) ([]byte, error) {
	if depth > maxDepth {
		return nil, ErrTooDeep
	}
	if !v.IsValid() {
		return append(b, "None"...), nil
	}
	if v.Type() == objectType {
		return appendObjectRepr(b, v.Interface().(Object), depth)
	}
	if implementsMarshaler(v.Type()) {
		j, err := marshal(v, depth)
		if err != nil {
			return nil, err
		}
		var x any
		d := json.NewDecoder(bytes.NewReader(j))
		d.UseNumber()
		if err := d.Decode(&x); err != nil {
			return nil, err
		}
		return appendRepr(b, reflect.ValueOf(x), depth+1)
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return append(b, "None"...), nil
		}
		return appendRepr(b, v.Elem(), depth+1)
	case reflect.Bool:
		if v.Bool() {
			return append(b, "True"...), nil
		}
		return append(b, "False"...), nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.AppendInt(b, v.Int(), 10), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return strconv.AppendUint(b, v.Uint(), 10), nil
	case reflect.Float32, reflect.Float64:
		return appendFloat(b, v.Float(), false), nil
	case reflect.String:
		if v.Type() == numberType {
			return append(b, v.String()...), nil
		}
		return appendPyString(b, v.String()), nil
	case reflect.Slice, reflect.Array:
		if v.Kind() == reflect.Slice && v.IsNil() {
			return append(b, "None"...), nil
		}
		b = append(b, '[')
		for i := range v.Len() {
			if i > 0 {
				b = append(b, ", "...)
			}
			var err error
			if b, err = appendRepr(b, v.Index(i), depth+1); err != nil {
				return nil, err
			}
		}
		return append(b, ']'), nil
	case reflect.Map:
		if v.IsNil() {
			return append(b, "None"...), nil
		}
		keys, err := sortedKeys(v)
		if err != nil {
			return nil, err
		}
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ", "...)
			}
			b = appendPyString(b, k.name)
			b = append(b, ": "...)
			if b, err = appendRepr(b, v.MapIndex(k.key), depth+1); err != nil {
				return nil, err
			}
		}
		return append(b, '}'), nil
	case reflect.Struct:
		b = append(b, '{')
		first := true
		var err error
		err = eachField(v, func(name string, fv reflect.Value) error {
			if !first {
				b = append(b, ", "...)
			}
			first = false
			b = appendPyString(b, name)
			b = append(b, ": "...)
			b, err = appendRepr(b, fv, depth+1)
			return err
		})
		if err != nil {
			return nil, err
		}
		return append(b, '}'), nil
	}
	return nil, fmt.Errorf("pyjson: cannot render %s", v.Type())
}

var (
	marshalerType     = reflect.TypeFor[json.Marshaler]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
	numberType        = reflect.TypeFor[json.Number]()
)

// implementsMarshaler reports whether t (or *t) serializes itself.
func implementsMarshaler(t reflect.Type) bool {
	if t == numberType {
		return false
	}
	return t.Implements(marshalerType) || t.Implements(textMarshalerType)
}

// Subst replaces a value by a string while marshaling: DSPy's custom types
// serialize as marker strings inside JSON dumps. It reports ok false for
// values it leaves alone.
type Subst func(v reflect.Value) (s string, ok bool, err error)

// MarshalSubst is Marshal with subst consulted for every value.
func MarshalSubst(v any, subst Subst) ([]byte, error) {
	e := encoder{subst: subst}
	c, err := e.appendJSON(nil, reflect.ValueOf(v), 0)
	if err != nil {
		return nil, err
	}
	return reformat(c, "", ""), nil
}

// MarshalIndentSubst is MarshalIndent with subst consulted for every value.
func MarshalIndentSubst(v any, prefix, indent string, subst Subst) ([]byte, error) {
	e := encoder{subst: subst}
	c, err := e.appendJSON(nil, reflect.ValueOf(v), 0)
	if err != nil {
		return nil, err
	}
	return reformat(c, prefix, indent), nil
}

// Marshal returns json.dumps(v) as Python writes it: ", " and ": "
// separators, non-ASCII kept, floats as repr(float) (3.0, 1e-05).
func Marshal(v any) ([]byte, error) {
	c, err := marshal(reflect.ValueOf(v), 0)
	if err != nil {
		return nil, err
	}
	return reformat(c, "", ""), nil
}

// MarshalASCII is Python's json.dumps(v) with its default
// ensure_ascii=True: Marshal's layout, every non-ASCII character written
// as a \uXXXX escape (two, a surrogate pair, beyond U+FFFF). DSPy writes
// the arguments of the tool calls it replays so.
func MarshalASCII(v any) ([]byte, error) {
	b, err := Marshal(v)
	if err != nil {
		return nil, err
	}
	return escapeNonASCII(b), nil
}

// escapeNonASCII escapes the non-ASCII characters of JSON text (they can
// only be inside strings).
func escapeNonASCII(b []byte) []byte {
	i := 0
	for i < len(b) && b[i] < utf8.RuneSelf {
		i++
	}
	if i == len(b) {
		return b
	}
	out := make([]byte, 0, len(b)+len(b)/2)
	out = append(out, b[:i]...)
	const hex = "0123456789abcdef"
	esc := func(r rune) {
		out = append(out, '\\', 'u', hex[r>>12&0xf], hex[r>>8&0xf], hex[r>>4&0xf], hex[r&0xf])
	}
	for i < len(b) {
		if b[i] < utf8.RuneSelf {
			out = append(out, b[i])
			i++
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		i += size
		if r > 0xffff {
			r1, r2 := utf16.EncodeRune(r)
			esc(r1)
			esc(r2)
			continue
		}
		esc(r)
	}
	return out
}

// MarshalIndent is json.dumps(v, indent=len(indent)) in Python's layout,
// with prefix written at the start of every line after the first.
func MarshalIndent(v any, prefix, indent string) ([]byte, error) {
	c, err := marshal(reflect.ValueOf(v), 0)
	if err != nil {
		return nil, err
	}
	return reformat(c, prefix, indent), nil
}

// marshal writes v as compact JSON with Python's float and string
// rendering; reformat then adds the separators and indentation.
func marshal(v reflect.Value, depth int) ([]byte, error) {
	var e encoder
	return e.appendJSON(nil, v, depth)
}

type encoder struct {
	subst Subst
}

func (e encoder) appendJSON(b []byte, v reflect.Value, depth int) ([]byte, error) {
	if depth > maxDepth {
		return nil, ErrTooDeep
	}
	if !v.IsValid() {
		return append(b, "null"...), nil
	}
	if e.subst != nil {
		s, ok, err := e.subst(v)
		if err != nil {
			return nil, err
		}
		if ok {
			return appendQuote(b, s), nil
		}
	}
	t := v.Type()
	if t == objectType {
		return e.appendObject(b, v.Interface().(Object), depth)
	}
	if t != numberType && (v.Kind() != reflect.Pointer || !v.IsNil()) && (v.Kind() != reflect.Interface) {
		if t.Implements(marshalerType) {
			j, err := v.Interface().(json.Marshaler).MarshalJSON()
			if err != nil {
				return nil, err
			}
			var buf bytes.Buffer
			if err := json.Compact(&buf, j); err != nil {
				return nil, fmt.Errorf("pyjson: %s.MarshalJSON: %w", t, err)
			}
			return append(b, buf.Bytes()...), nil
		}
		if t.Implements(textMarshalerType) {
			txt, err := v.Interface().(encoding.TextMarshaler).MarshalText()
			if err != nil {
				return nil, err
			}
			return appendQuote(b, string(txt)), nil
		}
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return append(b, "null"...), nil
		}
		return e.appendJSON(b, v.Elem(), depth+1)
	case reflect.Bool:
		return strconv.AppendBool(b, v.Bool()), nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.AppendInt(b, v.Int(), 10), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return strconv.AppendUint(b, v.Uint(), 10), nil
	case reflect.Float32, reflect.Float64:
		return appendFloat(b, v.Float(), true), nil
	case reflect.String:
		if t == numberType {
			return append(b, v.String()...), nil
		}
		return appendQuote(b, v.String()), nil
	case reflect.Slice, reflect.Array:
		if v.Kind() == reflect.Slice && v.IsNil() {
			return append(b, "null"...), nil
		}
		if t.Elem().Kind() == reflect.Uint8 && v.Kind() == reflect.Slice {
			return appendQuote(b, base64.StdEncoding.EncodeToString(v.Bytes())), nil
		}
		b = append(b, '[')
		for i := range v.Len() {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = e.appendJSON(b, v.Index(i), depth+1); err != nil {
				return nil, err
			}
		}
		return append(b, ']'), nil
	case reflect.Map:
		if v.IsNil() {
			return append(b, "null"...), nil
		}
		keys, err := sortedKeys(v)
		if err != nil {
			return nil, err
		}
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendQuote(b, k.name)
			b = append(b, ':')
			if b, err = e.appendJSON(b, v.MapIndex(k.key), depth+1); err != nil {
				return nil, err
			}
		}
		return append(b, '}'), nil
	case reflect.Struct:
		b = append(b, '{')
		first := true
		var err error
		err = eachField(v, func(name string, fv reflect.Value) error {
			if !first {
				b = append(b, ',')
			}
			first = false
			b = appendQuote(b, name)
			b = append(b, ':')
			b, err = e.appendJSON(b, fv, depth+1)
			return err
		})
		if err != nil {
			return nil, err
		}
		return append(b, '}'), nil
	}
	return nil, fmt.Errorf("pyjson: cannot encode %s", t)
}

type mapKey struct {
	name string
	key  reflect.Value
}

// sortedKeys names map keys as encoding/json does (strings, integers,
// TextMarshalers) and sorts them.
func sortedKeys(v reflect.Value) ([]mapKey, error) {
	keys := make([]mapKey, 0, v.Len())
	for _, k := range v.MapKeys() {
		var name string
		switch {
		case k.Kind() == reflect.String:
			name = k.String()
		case k.Type().Implements(textMarshalerType):
			t, err := k.Interface().(encoding.TextMarshaler).MarshalText()
			if err != nil {
				return nil, err
			}
			name = string(t)
		case k.CanInt():
			name = strconv.FormatInt(k.Int(), 10)
		case k.CanUint():
			name = strconv.FormatUint(k.Uint(), 10)
		default:
			return nil, fmt.Errorf("pyjson: unsupported map key type %s", k.Type())
		}
		keys = append(keys, mapKey{name, k})
	}
	slices.SortFunc(keys, func(a, b mapKey) int { return strings.Compare(a.name, b.name) })
	return keys, nil
}

// eachField calls f for the fields encoding/json would write, in order:
// exported, not tagged "-", omitempty honoured, embedded structs inlined.
func eachField(v reflect.Value, f func(name string, fv reflect.Value) error) error {
	t := v.Type()
	for i := range t.NumField() {
		sf := t.Field(i)
		tag := sf.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		fv := v.Field(i)
		if sf.Anonymous && name == "" {
			ft := sf.Type
			if ft.Kind() == reflect.Pointer {
				if fv.IsNil() {
					continue
				}
				fv, ft = fv.Elem(), ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				if err := eachField(fv, f); err != nil {
					return err
				}
				continue
			}
		}
		if !sf.IsExported() {
			continue
		}
		if name == "" {
			name = sf.Name
		}
		if strings.Contains(","+opts+",", ",omitempty,") && isEmpty(fv) {
			continue
		}
		if strings.Contains(","+opts+",", ",omitzero,") && fv.IsZero() {
			continue
		}
		if err := f(name, fv); err != nil {
			return err
		}
	}
	return nil
}

func isEmpty(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Interface, reflect.Pointer:
		return v.IsZero()
	}
	return false
}

// reformat lays out compact JSON as Python's json.dumps does: without
// indent, ", " and ": " separators; with indent, one member per line,
// "," at line ends and empty containers as [] and {}.
func reformat(c []byte, prefix, indent string) []byte {
	out := make([]byte, 0, len(c)+len(c)/4)
	depth := 0
	inStr := false
	newline := func() {
		out = append(out, '\n')
		out = append(out, prefix...)
		for range depth {
			out = append(out, indent...)
		}
	}
	for i := 0; i < len(c); i++ {
		ch := c[i]
		if inStr {
			out = append(out, ch)
			switch ch {
			case '\\':
				i++
				out = append(out, c[i])
			case '"':
				inStr = false
			}
			continue
		}
		switch ch {
		case '"':
			inStr = true
			out = append(out, ch)
		case '{', '[':
			out = append(out, ch)
			if i+1 < len(c) && (c[i+1] == '}' || c[i+1] == ']') {
				out = append(out, c[i+1])
				i++
				continue
			}
			depth++
			if indent != "" {
				newline()
			}
		case '}', ']':
			depth--
			if indent != "" {
				newline()
			}
			out = append(out, ch)
		case ',':
			out = append(out, ',')
			if indent != "" {
				newline()
			} else {
				out = append(out, ' ')
			}
		case ':':
			out = append(out, ':', ' ')
		default:
			out = append(out, ch)
		}
	}
	return out
}
