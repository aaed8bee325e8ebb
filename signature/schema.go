package signature

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unsafe"
)

// PromptSchema returns the JSON Schema DSPy shows the model for this type in
// prompts, as pydantic's TypeAdapter(T).json_schema() would produce it for
// the equivalent Python type: titles on model fields ("tool_calls" gives
// "Tool Calls"), nested models and enums under "$defs" referenced by "$ref",
// optionals as anyOf with {"type": "null"}, defaults, and descriptions from
// the desc tag. The result is a fresh JSON object (nested map[string]any and
// []any) the caller may keep. Key order carries no meaning: DSPy prints the
// keys of every object sorted, "type" first.
func (t *TypeSpec) PromptSchema() (map[string]any, error) {
	_, s, err := t.generateSchema(false)
	return s, err
}

// generateSchema builds the type's schema; with ordered, the generator
// records each model's property order (for PydanticSchema).
func (t *TypeSpec) generateSchema(ordered bool) (*schemaGen, map[string]any, error) {
	g := &schemaGen{defs: map[string]any{}, defNames: map[reflect.Type]string{}, busy: map[reflect.Type]bool{}}
	if ordered {
		g.order = map[unsafe.Pointer][]string{}
	}
	s, err := g.schema(t, true)
	if err != nil {
		return nil, nil, err
	}
	if g.rootRecursive {
		name := g.defNames[t.goType]
		g.defs[name] = s
		s = map[string]any{"$ref": "#/$defs/" + name}
	}
	if len(g.defs) > 0 {
		s["$defs"] = g.defs
	}
	return g, s, nil
}

// PydanticSchema returns the type's JSON Schema as pydantic's
// TypeAdapter(T).json_schema() returns it, written as JSON in pydantic's
// key order: every object's keys sorted, except a model's properties,
// which keep the fields' order, and a default value, which keeps its own.
// (PromptSchema's maps hold no order; DSPy shows those with the keys of
// every object sorted, "type" first.) It is what DSPy puts in a tool's
// argument schemas, such as ReActV2's submit tool.
func (t *TypeSpec) PydanticSchema() ([]byte, error) {
	g, s, err := t.generateSchema(true)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := g.writeOrdered(&b, s, ""); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// writeOrdered writes v as JSON in pydantic's key order (see
// PydanticSchema); parent is the key v is the value of.
func (g *schemaGen) writeOrdered(b *bytes.Buffer, v any, parent string) error {
	m, ok := v.(map[string]any)
	if !ok {
		if l, ok := v.([]any); ok && parent != "default" {
			b.WriteByte('[')
			for i, e := range l {
				if i > 0 {
					b.WriteString(", ")
				}
				if err := g.writeOrdered(b, e, ""); err != nil {
					return err
				}
			}
			b.WriteByte(']')
			return nil
		}
		enc := json.NewEncoder(b)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(v); err != nil {
			return err
		}
		b.Truncate(b.Len() - 1) // Encode's newline
		return nil
	}
	keys := g.order[reflect.ValueOf(m).UnsafePointer()]
	if keys == nil || parent != "properties" {
		keys = slices.Sorted(maps.Keys(m))
	}
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteString(", ")
		}
		kb, err := json.Marshal(k)
		if err != nil {
			return err
		}
		b.Write(kb)
		b.WriteString(": ")
		if err := g.writeOrdered(b, m[k], k); err != nil {
			return err
		}
	}
	b.WriteByte('}')
	return nil
}

type schemaGen struct {
	// order, when set (PydanticSchema), records each model's property
	// names in field order, by their map.
	order         map[unsafe.Pointer][]string
	defs          map[string]any
	defNames      map[reflect.Type]string
	busy          map[reflect.Type]bool // struct types being expanded (recursion guard)
	root          reflect.Type
	rootRecursive bool
	depth         int
}

func (g *schemaGen) schema(t *TypeSpec, top bool) (map[string]any, error) {
	g.depth++
	defer func() { g.depth-- }()
	if g.depth > maxTypeDepth {
		return nil, fmt.Errorf("schema of %s nested too deeply", t)
	}
	switch t.kind {
	case KindString:
		return map[string]any{"type": "string"}, nil
	case KindInt:
		return map[string]any{"type": "integer"}, nil
	case KindFloat:
		return map[string]any{"type": "number"}, nil
	case KindBool:
		return map[string]any{"type": "boolean"}, nil
	case KindAny:
		return map[string]any{}, nil
	case KindNone:
		return map[string]any{"type": "null"}, nil
	case KindList:
		return g.list(t)
	case KindDict:
		s := map[string]any{"type": "object"}
		if t.elem.kind == KindAny {
			s["additionalProperties"] = true
			return s, nil
		}
		v, err := g.schema(t.elem, false)
		if err != nil {
			return nil, err
		}
		s["additionalProperties"] = v
		return s, nil
	case KindOptional, KindUnion:
		var members []any
		for _, o := range t.options {
			s, err := g.schema(o, false)
			if err != nil {
				return nil, err
			}
			if inner, ok := s["anyOf"].([]any); ok && len(s) == 1 {
				members = append(members, inner...)
			} else {
				members = append(members, s)
			}
		}
		return map[string]any{"anyOf": members}, nil
	case KindLiteral:
		return literalSchema(t.literals), nil
	case KindEnum:
		vals := t.EnumValues()
		enum := make([]any, len(vals))
		for i, v := range vals {
			enum[i] = v
		}
		def := map[string]any{"enum": enum, "title": t.name, "type": "string"}
		if top {
			return def, nil
		}
		return g.ref(t, def), nil
	case KindStruct, KindCustom:
		return g.named(t, top)
	}
	return nil, fmt.Errorf("no schema for kind %s", t.kind)
}

func (g *schemaGen) list(t *TypeSpec) (map[string]any, error) {
	s := map[string]any{"type": "array"}
	if t.origin == "tuple" {
		items := make([]any, len(t.options))
		for i, o := range t.options {
			is, err := g.schema(o, false)
			if err != nil {
				return nil, err
			}
			items[i] = is
		}
		s["prefixItems"] = items
		s["minItems"] = len(items)
		s["maxItems"] = len(items)
		return s, nil
	}
	items, err := g.schema(t.elem, false)
	if err != nil {
		return nil, err
	}
	s["items"] = items
	if t.origin == "set" {
		s["uniqueItems"] = true
	}
	return s, nil
}

// named renders a struct or a custom type: a type's own PromptSchema, a
// model built from its fields, or the structural schema of its underlying
// type.
func (g *schemaGen) named(t *TypeSpec, top bool) (map[string]any, error) {
	if implements(t.goType, schemerIface) {
		s := callPromptSchema(t.goType)
		if s == nil {
			return map[string]any{}, nil
		}
		if defs, ok := s["$defs"].(map[string]any); ok {
			maps.Copy(g.defs, defs)
			delete(s, "$defs")
		}
		if top || s["properties"] == nil {
			return s, nil
		}
		return g.ref(t, s), nil
	}
	switch {
	case t.goType == timeType:
		return map[string]any{"format": "date-time", "type": "string"}, nil
	case t.goType == bytesType || base64Slice(t.goType):
		// Written and read as base64, as encoding/json does: the prompt says so.
		return map[string]any{"contentEncoding": "base64", "format": "binary", "type": "string"}, nil
	case t.kind == KindCustom:
		// A named slice, map or scalar: describe its structure.
		u, err := specOf(structural(t.goType), t.names, 1)
		if err != nil {
			return nil, err
		}
		return g.schema(u, top)
	}
	if g.busy[t.goType] {
		if t.goType == g.root {
			g.rootRecursive = true
		}
		return map[string]any{"$ref": "#/$defs/" + g.defName(t)}, nil
	}
	if top {
		g.root = t.goType
	}
	g.busy[t.goType] = true
	model, err := g.model(t)
	delete(g.busy, t.goType)
	if err != nil {
		return nil, err
	}
	if top {
		return model, nil
	}
	return g.ref(t, model), nil
}

// structural returns the unnamed type with t's structure, for named slices,
// maps and scalars.
func structural(t reflect.Type) reflect.Type {
	switch t.Kind() {
	case reflect.Slice:
		return reflect.SliceOf(t.Elem())
	case reflect.Map:
		return reflect.MapOf(t.Key(), t.Elem())
	case reflect.Array:
		return reflect.SliceOf(t.Elem())
	}
	switch {
	case t.Kind() == reflect.String:
		return stringType
	case t.Kind() == reflect.Bool:
		return reflect.TypeFor[bool]()
	case t.Kind() == reflect.Float32 || t.Kind() == reflect.Float64:
		return reflect.TypeFor[float64]()
	case isNumberKind(t.Kind()):
		return reflect.TypeFor[int]()
	}
	return anyType
}

func (g *schemaGen) model(t *TypeSpec) (map[string]any, error) {
	fields, err := t.Fields()
	if err != nil {
		return nil, err
	}
	props := make(map[string]any, len(fields))
	var required []any
	for _, sf := range fields {
		f := sf.Field
		p, err := g.schema(f.Spec, false)
		if err != nil {
			return nil, err
		}
		if !refLike(f.Spec) {
			p["title"] = strings.ReplaceAll(pyTitle(f.Name), "_", " ")
		}
		if f.Desc != "" {
			p["description"] = f.Desc
		}
		if f.HasDefault {
			p["default"] = f.Default
		} else {
			required = append(required, f.Name)
		}
		for _, c := range f.Constraints {
			addConstraint(p, f.Spec, c)
		}
		props[f.Name] = p
	}
	if g.order != nil {
		names := make([]string, len(fields))
		for i, sf := range fields {
			names[i] = sf.Field.Name
		}
		g.order[reflect.ValueOf(props).UnsafePointer()] = names
	}
	s := map[string]any{"properties": props, "title": t.name, "type": "object"}
	if len(required) > 0 {
		s["required"] = required
	}
	return s, nil
}

// addConstraint adds pydantic's JSON Schema keyword for a field constraint.
func addConstraint(p map[string]any, spec *TypeSpec, c Constraint) {
	switch c.Op {
	case GT:
		p["exclusiveMinimum"] = c.Value
	case GE:
		p["minimum"] = c.Value
	case LT:
		p["exclusiveMaximum"] = c.Value
	case LE:
		p["maximum"] = c.Value
	case MultipleOf:
		p["multipleOf"] = c.Value
	case MinLength, MaxLength:
		key := map[Op]string{MinLength: "minLength", MaxLength: "maxLength"}[c.Op]
		if spec.kind == KindList || spec.kind == KindDict {
			key = map[Op]string{MinLength: "minItems", MaxLength: "maxItems"}[c.Op]
		}
		p[key] = c.Value
	}
}

// refLike reports whether pydantic leaves the title off a field of this
// type: models and enums are references, also behind Optional.
func refLike(t *TypeSpec) bool {
	switch t.kind {
	case KindEnum:
		return true
	case KindStruct:
		return t.goType != timeType
	case KindCustom:
		return implements(t.goType, schemerIface)
	case KindOptional:
		return len(t.options) == 2 && refLike(t.elem)
	}
	return false
}

// ref stores def under the type's name in $defs and returns a reference.
func (g *schemaGen) ref(t *TypeSpec, def map[string]any) map[string]any {
	name := g.defName(t)
	g.defs[name] = def
	return map[string]any{"$ref": "#/$defs/" + name}
}

// defName picks the $defs key for a type: its name, made unique when two
// different types share one.
func (g *schemaGen) defName(t *TypeSpec) string {
	if n, ok := g.defNames[t.goType]; ok {
		return n
	}
	base := t.name
	if base == "" {
		base = "Model"
	}
	name := base
	for i := 2; ; i++ {
		taken := false
		for _, n := range g.defNames {
			if n == name {
				taken = true
				break
			}
		}
		if !taken {
			break
		}
		name = base + strconv.Itoa(i)
	}
	g.defNames[t.goType] = name
	return name
}

// literalSchema follows pydantic: const for one member, enum otherwise, and
// a type when all members share one.
func literalSchema(lits []any) map[string]any {
	s := map[string]any{}
	if len(lits) == 1 {
		s["const"] = lits[0]
	} else {
		s["enum"] = append([]any(nil), lits...)
	}
	kind := ""
	for i, l := range lits {
		k := "mixed"
		switch l.(type) {
		case string:
			k = "string"
		case int:
			k = "integer"
		case float64:
			k = "number"
		case bool:
			k = "boolean"
		case nil:
			k = "null"
		}
		if i == 0 {
			kind = k
		} else if kind != k {
			kind = "mixed"
		}
	}
	if kind != "mixed" {
		s["type"] = kind
	}
	return s
}

func callPromptSchema(t reflect.Type) (s map[string]any) {
	defer func() {
		if recover() != nil {
			s = nil
		}
	}()
	if t.Implements(schemerIface) {
		return reflect.Zero(t).Interface().(PromptSchemer).PromptSchema()
	}
	return reflect.New(t).Interface().(PromptSchemer).PromptSchema()
}
