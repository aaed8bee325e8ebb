package signature

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sigwire/adapter/internal/pyjson"
)

// Kind classifies a field type the way DSPy's adapters treat it.
type Kind uint8

// The kinds of [TypeSpec].
const (
	KindString   Kind = iota + 1 // str
	KindInt                      // int
	KindFloat                    // float
	KindBool                     // bool
	KindAny                      // Any: whatever value the model writes
	KindNone                     // NoneType, only inside a union
	KindList                     // list[T] (also set[T] and tuple[...]): Elem
	KindDict                     // dict[K, V]: Key and Elem
	KindOptional                 // Optional[T], T | None: Elem is T
	KindUnion                    // Union[A, B, ...] without None: Options
	KindLiteral                  // Literal[...]: Literals
	KindEnum                     // a named string type implementing [EnumValuer]
	KindStruct                   // a Go struct, DSPy's pydantic model
	KindCustom                   // any other named type with its own serialization (time.Time, []byte, ...)
)

var kindNames = [...]string{"", "string", "int", "float", "bool", "any", "none", "list", "dict", "optional", "union", "literal", "enum", "struct", "custom"}

// String returns the kind's name.
func (k Kind) String() string {
	if int(k) < len(kindNames) && k != 0 {
		return kindNames[k]
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// EnumValuer is implemented by a named string type whose values form a closed
// set, the Go spelling of a Python Enum. The values are what the model sees
// and what it must answer with; parsing also accepts the Go-style and
// upper-case names case-insensitively (see the adapter package).
//
//	type Sentiment string
//
//	func (Sentiment) EnumValues() []string { return []string{"positive", "negative"} }
type EnumValuer interface {
	EnumValues() []string
}

// TypeNamer is implemented by types that choose the name the model sees for
// them in prompts, DSPy's get_annotation_name. Without it a named Go type
// shows its Go name and built-in types show Python names (str, int, float,
// bool, list[T], dict[K, V]). The method is called on the zero value.
type TypeNamer interface {
	TypeName() string
}

// PromptSchemer is implemented by types that supply the JSON Schema shown
// for them in prompts (pydantic's model_json_schema in DSPy). The result is a
// JSON object as nested map[string]any / []any values; a "$defs" member is
// hoisted into the enclosing schema. The method is called on the zero value.
type PromptSchemer interface {
	PromptSchema() map[string]any
}

// TypeSpec describes a field type as DSPy sees it: the Go type values have,
// the name the model is shown, and the structure (element types, union
// members, literal values) that adapters format and parse by. A TypeSpec is
// immutable and safe for concurrent use. Build one with [Literal] or
// [SpecOf], or get it from [Field.Spec].
type TypeSpec struct {
	kind     Kind
	goType   reflect.Type
	name     string // type name shown to the model for named kinds and literal/custom overrides
	elem     *TypeSpec
	key      *TypeSpec
	options  []*TypeSpec
	literals []any
	pep604   bool   // written as "A | B": DSPy 3.3.1 on Python 3.11 names it UnionType[...]
	origin   string // generic origin for lists: "list", "set" or "tuple"
	names    map[reflect.Type]string

	descOnce sync.Once // TypeDescriptions computed on first use
	descs    []string

	fieldsOnce sync.Once // struct kinds: Fields computed on first use
	fields     []StructField
	fieldsErr  error
}

// Kind reports the kind of the type.
func (t *TypeSpec) Kind() Kind { return t.kind }

// GoType is the Go type of values of this type (see the package doc for the
// mapping, e.g. *int for Optional[int], []string for list[str]).
func (t *TypeSpec) GoType() reflect.Type { return t.goType }

// Elem is the element type of a list, the value type of a dict and the
// non-None type of an optional; nil for other kinds.
func (t *TypeSpec) Elem() *TypeSpec { return t.elem }

// Key is the key type of a dict; nil for other kinds.
func (t *TypeSpec) Key() *TypeSpec { return t.key }

// Options are the members of a union or an optional, in order (an
// optional lists NoneType among them); nil for other kinds.
func (t *TypeSpec) Options() []*TypeSpec { return append([]*TypeSpec(nil), t.options...) }

// Literals are the allowed values of a Literal type, in order, each a
// string, int, float64, bool or nil; nil for other kinds.
func (t *TypeSpec) Literals() []any { return append([]any(nil), t.literals...) }

// EnumValues returns the allowed values of an enum type; nil for other kinds.
func (t *TypeSpec) EnumValues() []string {
	if t.kind != KindEnum {
		return nil
	}
	return enumValues(t.goType)
}

// Nullable reports whether None is a valid value: optionals, Any, and unions
// or literals that include None.
func (t *TypeSpec) Nullable() bool {
	switch t.kind {
	case KindOptional, KindAny, KindNone:
		return true
	case KindUnion:
		for _, o := range t.options {
			if o.Nullable() {
				return true
			}
		}
	case KindLiteral:
		for _, l := range t.literals {
			if l == nil {
				return true
			}
		}
	}
	return false
}

// String returns the type name DSPy shows the model: str, list[str],
// dict[str, int], Union[int, NoneType], Literal['a', 'b'], a struct's name.
func (t *TypeSpec) String() string {
	switch t.kind {
	case KindList, KindDict:
		if t.name != "" {
			return t.name
		}
	case KindUnion, KindOptional, KindLiteral:
	default:
		return t.name
	}
	var b strings.Builder
	t.writeName(&b, false)
	return b.String()
}

// writeName writes the DSPy type name; with source set, a registered custom
// type is written under its WithTypes name, so that Parse can read it back.
func (t *TypeSpec) writeName(b *strings.Builder, source bool) {
	if source && t.goType != nil {
		if n, ok := t.names[t.goType]; ok {
			switch t.kind {
			case KindCustom, KindStruct, KindEnum, KindString:
				b.WriteString(n)
				return
			}
		}
	}
	if source && (t.kind == KindInt || t.kind == KindFloat) && t.goType != nil && t.goType.PkgPath() == "" &&
		t.goType != reflect.TypeFor[int]() && t.goType != reflect.TypeFor[float64]() {
		// Go's sized numbers have no DSPy spelling: keep the Go one so
		// that String round-trips (int8, uint32, float32).
		b.WriteString(t.goType.String())
		return
	}
	switch t.kind {
	case KindList:
		if t.name != "" {
			b.WriteString(t.name)
			return
		}
		origin := t.origin
		if origin == "" {
			origin = "list"
		}
		b.WriteString(origin)
		if origin == "tuple" {
			b.WriteByte('[')
			for i, o := range t.options {
				if i > 0 {
					b.WriteString(", ")
				}
				o.writeName(b, source)
			}
			b.WriteByte(']')
			return
		}
		b.WriteByte('[')
		t.elem.writeName(b, source)
		b.WriteByte(']')
	case KindDict:
		if t.name != "" {
			b.WriteString(t.name)
			return
		}
		b.WriteString("dict[")
		t.key.writeName(b, source)
		b.WriteString(", ")
		t.elem.writeName(b, source)
		b.WriteByte(']')
	case KindUnion, KindOptional:
		if t.pep604 {
			b.WriteString("UnionType[")
		} else {
			b.WriteString("Union[")
		}
		for i, o := range t.options {
			if i > 0 {
				b.WriteString(", ")
			}
			o.writeName(b, source)
		}
		b.WriteByte(']')
	case KindLiteral:
		b.WriteString("Literal[")
		for i, l := range t.literals {
			if i > 0 {
				b.WriteString(", ")
			}
			if s, ok := l.(string); ok {
				b.WriteString(quoteLiteral(s))
			} else {
				b.WriteString(pyjson.Str(l))
			}
		}
		b.WriteByte(']')
	default:
		b.WriteString(t.name)
	}
}

// quoteLiteral quotes a str member of a Literal the way DSPy's
// _quoted_string_for_literal_type_annotation does.
func quoteLiteral(s string) string {
	hasSingle := strings.Contains(s, "'")
	hasDouble := strings.Contains(s, `"`)
	switch {
	case hasSingle && !hasDouble:
		return `"` + s + `"`
	case hasSingle && hasDouble:
		return "'" + strings.ReplaceAll(s, "'", `\'`) + "'"
	default:
		return "'" + s + "'"
	}
}

// IsStr reports whether the type is exactly DSPy's str (not a custom type
// that merely renders as str).
func (t *TypeSpec) IsStr() bool {
	return t.kind == KindString && t.name == "str" && t.goType == stringType
}

// FormatHinter is implemented by types that tell the model how to write
// their value in the output reminder of the user message, in place of
// "must be formatted as a valid Python <name>" (DSPy writes ToolCalls' as
// 'must be a JSON object like {"tool_calls": [...]}'). It is called on the
// zero value.
type FormatHinter interface {
	FormatHint() string
}

// FormatHint returns the reminder hint of a type that gives one (see
// FormatHinter): only the field's own type, as DSPy matches it.
func (t *TypeSpec) FormatHint() string {
	if t.goType == nil || !implements(t.goType, hinterIface) {
		return ""
	}
	defer func() { _ = recover() }()
	if t.goType.Implements(hinterIface) {
		return reflect.Zero(t.goType).Interface().(FormatHinter).FormatHint()
	}
	return reflect.New(t.goType).Interface().(FormatHinter).FormatHint()
}

// TypeDescriber is implemented by types that explain themselves to the
// model: the text follows the field's description as "Type description of
// <name>: <text>" (DSPy's Type.description()). It is called on the zero
// value.
type TypeDescriber interface {
	TypeDescription() string
}

// TypeDescriptions returns the "Type description of X: ..." texts of the
// described types in the type, outermost first, each type once (DSPy's
// extract_custom_type_from_annotation).
func (t *TypeSpec) TypeDescriptions() []string {
	t.descOnce.Do(func() { t.descs = t.typeDescriptions() })
	return t.descs
}

func (t *TypeSpec) typeDescriptions() []string {
	var out []string
	seen := map[reflect.Type]bool{}
	var walk func(*TypeSpec)
	walk = func(u *TypeSpec) {
		if u == nil || seen[u.goType] {
			return
		}
		if u.goType != nil && implements(u.goType, describerIface) {
			seen[u.goType] = true
			if d := callDescription(u.goType); d != "" {
				out = append(out, "Type description of "+u.String()+": "+d)
			}
			return
		}
		walk(u.elem)
		walk(u.key)
		for _, o := range u.options {
			walk(o)
		}
	}
	walk(t)
	return out
}

func callDescription(t reflect.Type) (d string) {
	defer func() {
		if recover() != nil {
			d = ""
		}
	}()
	if t.Implements(describerIface) {
		return reflect.Zero(t).Interface().(TypeDescriber).TypeDescription()
	}
	return reflect.New(t).Interface().(TypeDescriber).TypeDescription()
}

// Literal returns the type Literal[values...]. Members must be strings,
// bools, integers, floats or nil; they keep their kinds, so Literal(1, 2) is
// an int field. Its Go type is string, int, float64 or bool when all members
// share that kind (ints and floats mixed give float64), otherwise any.
func Literal(values ...any) (*TypeSpec, error) {
	if len(values) == 0 {
		return nil, fmt.Errorf("signature: Literal needs at least one value")
	}
	lits := make([]any, len(values))
	kinds := map[Kind]bool{}
	hasNone := false
	for i, v := range values {
		switch x := v.(type) {
		case nil:
			hasNone = true
		case string:
			kinds[KindString] = true
		case bool:
			kinds[KindBool] = true
		case int:
			kinds[KindInt] = true
		case int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
			n, err := strconv.ParseInt(fmt.Sprint(x), 10, 64)
			if err != nil {
				return nil, fmt.Errorf("signature: Literal value %v: %w", x, err)
			}
			v = int(n)
			kinds[KindInt] = true
		case float32:
			v = float64(x)
			kinds[KindFloat] = true
		case float64:
			kinds[KindFloat] = true
		default:
			return nil, fmt.Errorf("signature: Literal value %v has unsupported type %T", v, v)
		}
		lits[i] = v
	}
	var gt reflect.Type
	switch {
	case len(kinds) == 1 && kinds[KindString]:
		gt = reflect.TypeFor[string]()
	case len(kinds) == 1 && kinds[KindBool]:
		gt = reflect.TypeFor[bool]()
	case len(kinds) == 1 && kinds[KindInt]:
		gt = reflect.TypeFor[int]()
	case len(kinds) == 1 && kinds[KindFloat], len(kinds) == 2 && kinds[KindInt] && kinds[KindFloat]:
		gt = reflect.TypeFor[float64]()
	default:
		gt = reflect.TypeFor[any]()
	}
	if hasNone && gt.Kind() != reflect.Interface {
		gt = reflect.PointerTo(gt)
	}
	return &TypeSpec{kind: KindLiteral, goType: gt, literals: lits}, nil
}

// SpecOf describes the Go type t as DSPy would see it: string is str, int
// kinds are int, float kinds are float, *T is Optional[T], []T is list[T],
// map[K]V is dict[K, V], a struct is a model named after its Go type, a named
// string type implementing [EnumValuer] is an enum. It fails for kinds no
// adapter can carry (chan, func, complex, unsafe pointers).
func SpecOf(t reflect.Type) (*TypeSpec, error) {
	return specOf(t, nil, 0)
}

var (
	timeType       = reflect.TypeFor[time.Time]()
	rawJSONType    = reflect.TypeFor[json.RawMessage]()
	bytesType      = reflect.TypeFor[[]byte]()
	anyType        = reflect.TypeFor[any]()
	stringType     = reflect.TypeFor[string]()
	enumIface      = reflect.TypeFor[EnumValuer]()
	namerIface     = reflect.TypeFor[TypeNamer]()
	hinterIface    = reflect.TypeFor[FormatHinter]()
	describerIface = reflect.TypeFor[TypeDescriber]()
	schemerIface   = reflect.TypeFor[PromptSchemer]()
)

const maxTypeDepth = 64

var jsonMarshalerType = reflect.TypeFor[json.Marshaler]()

// base64Slice reports a slice that encoding/json writes as a base64
// string, as it does []byte: its items are bytes, and neither it nor its
// items marshal themselves. Such a type is bytes, not list[int]: a value
// formatted as base64 must be read back as base64.
func base64Slice(t reflect.Type) bool {
	if t.Kind() != reflect.Slice || t.Elem().Kind() != reflect.Uint8 {
		return false
	}
	for _, u := range [...]reflect.Type{t, t.Elem()} {
		if implements(u, jsonMarshalerType) || implements(u, textMarshalerType) {
			return false
		}
	}
	return true
}

func specOf(t reflect.Type, names map[reflect.Type]string, depth int) (*TypeSpec, error) {
	if t == nil {
		return &TypeSpec{kind: KindString, goType: stringType, name: "str"}, nil
	}
	if depth > maxTypeDepth {
		return nil, fmt.Errorf("type %s is nested too deeply", t)
	}
	name, hasName := typeName(t, names)
	s := &TypeSpec{goType: t, names: names}
	switch {
	case t.Kind() == reflect.String && implements(t, enumIface):
		s.kind = KindEnum
		s.name = name
		if !hasName {
			s.name = t.Name()
		}
		return s, nil
	case t == timeType:
		s.kind, s.name = KindCustom, "datetime"
		if hasName {
			s.name = name
		}
		return s, nil
	case t == bytesType || base64Slice(t) && !hasName:
		s.kind, s.name = KindCustom, "bytes"
		return s, nil
	case t == rawJSONType:
		s.kind, s.name = KindAny, "Any"
		return s, nil
	}
	switch t.Kind() {
	case reflect.String:
		s.kind, s.name = KindString, "str"
	case reflect.Bool:
		s.kind, s.name = KindBool, "bool"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		s.kind, s.name = KindInt, "int"
	case reflect.Float32, reflect.Float64:
		s.kind, s.name = KindFloat, "float"
	case reflect.Interface:
		s.kind, s.name = KindAny, "Any"
	case reflect.Slice, reflect.Array:
		if hasName {
			s.kind, s.name = KindCustom, name
			return s, nil
		}
		elem, err := specOf(t.Elem(), names, depth+1)
		if err != nil {
			return nil, err
		}
		s.kind, s.elem = KindList, elem
		return s, nil
	case reflect.Map:
		if hasName {
			s.kind, s.name = KindCustom, name
			return s, nil
		}
		key, err := specOf(t.Key(), names, depth+1)
		if err != nil {
			return nil, err
		}
		switch key.kind {
		case KindString, KindInt, KindEnum:
		default:
			return nil, fmt.Errorf("map key type %s is not supported (use string or integer keys)", t.Key())
		}
		elem, err := specOf(t.Elem(), names, depth+1)
		if err != nil {
			return nil, err
		}
		s.kind, s.key, s.elem = KindDict, key, elem
		return s, nil
	case reflect.Pointer:
		elem, err := specOf(t.Elem(), names, depth+1)
		if err != nil {
			return nil, err
		}
		o := optionalOf(elem, false)
		o.goType, o.names = t, names
		return o, nil
	case reflect.Struct:
		s.kind, s.name = KindStruct, name
		if !hasName {
			s.name = structName(t)
		}
		return s, nil
	default:
		return nil, fmt.Errorf("type %s (kind %s) cannot be a field type", t, t.Kind())
	}
	if hasName {
		// A named scalar with its own name (TypeNamer or registered) is a custom type.
		s.kind, s.name = KindCustom, name
		if name == "str" {
			s.kind = KindString
		}
	}
	return s, nil
}

// typeName returns the name t gives itself (TypeNamer) or, failing that,
// the name it was registered under with WithTypes. A type's own name wins:
// Reasoning registered as "Reasoning" still shows as "str".
func typeName(t reflect.Type, names map[reflect.Type]string) (string, bool) {
	if implements(t, namerIface) {
		if n := callTypeName(t); n != "" {
			return n, true
		}
	}
	if n, ok := names[t]; ok {
		return n, true
	}
	return "", false
}

func callTypeName(t reflect.Type) (name string) {
	defer func() {
		if recover() != nil {
			name = ""
		}
	}()
	if t.Implements(namerIface) {
		return reflect.Zero(t).Interface().(TypeNamer).TypeName()
	}
	return reflect.New(t).Interface().(TypeNamer).TypeName()
}

// implements reports whether T or *T implements iface.
func implements(t reflect.Type, iface reflect.Type) bool {
	return t.Implements(iface) || (t.Kind() != reflect.Pointer && t.Kind() != reflect.Interface && reflect.PointerTo(t).Implements(iface))
}

func enumValues(t reflect.Type) (vals []string) {
	defer func() {
		if recover() != nil {
			vals = nil
		}
	}()
	if t.Implements(enumIface) {
		return reflect.Zero(t).Interface().(EnumValuer).EnumValues()
	}
	return reflect.New(t).Interface().(EnumValuer).EnumValues()
}

// structName names a struct type for the model: its Go name without the
// package, generic arguments reduced to their Go names ("Page[Item]"), and
// "object" for an unnamed struct.
func structName(t reflect.Type) string {
	n := t.Name()
	if n == "" {
		return "object"
	}
	if i := strings.IndexByte(n, '['); i >= 0 {
		args := strings.Split(strings.TrimSuffix(n[i+1:], "]"), ",")
		for j, a := range args {
			if k := strings.LastIndexAny(a, "./"); k >= 0 {
				args[j] = a[k+1:]
			}
		}
		n = n[:i] + "[" + strings.Join(args, ", ") + "]"
	}
	return n
}

// OrNone returns the type written `T | None` in Python, as DSPy names it
// (UnionType[T, NoneType]), with the Go type Optional[T] has; a type that
// already takes None is returned as it is (DSPy's ReActV2 makes its
// inputs optional so).
func (t *TypeSpec) OrNone() *TypeSpec {
	if t.Nullable() {
		return t
	}
	return optionalOf(t, true)
}

// optionalOf returns Optional[elem], choosing the Go type per the package
// rules: *T for scalars and structs, the type itself for containers and Any.
// An optional of an optional collapses to one optional, and an optional
// of NoneType is NoneType (as Optional[None] is in Python's typing).
func optionalOf(elem *TypeSpec, pep604 bool) *TypeSpec {
	if elem.kind == KindNone {
		return elem
	}
	if elem.kind == KindOptional {
		// Optional[Optional[T]] is Optional[T], as in Python's typing.
		return &TypeSpec{kind: KindOptional, goType: elem.goType, name: elem.name, elem: elem.elem,
			options: elem.options, pep604: elem.pep604 || pep604, origin: elem.origin, names: elem.names}
	}
	gt := elem.goType
	switch gt.Kind() {
	case reflect.Slice, reflect.Map, reflect.Interface, reflect.Pointer:
	default:
		gt = reflect.PointerTo(gt)
	}
	opts := []*TypeSpec{elem, noneSpec}
	if elem.kind == KindUnion {
		opts = append(append([]*TypeSpec(nil), elem.options...), noneSpec)
	}
	return &TypeSpec{kind: KindOptional, goType: gt, elem: elem, options: opts, pep604: pep604}
}

// noneSpec is NoneType, a member of optionals.
var noneSpec = &TypeSpec{kind: KindNone, goType: anyType, name: "NoneType"}

// equal reports whether two specs describe the same type.
func (t *TypeSpec) equal(u *TypeSpec) bool {
	if t == u {
		return true
	}
	if t == nil || u == nil || t.kind != u.kind || t.goType != u.goType || t.String() != u.String() {
		return false
	}
	return true
}
