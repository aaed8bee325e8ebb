package signature

import (
	"bytes"
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/invopop/jsonschema"
)

// StrictSchema is an OpenAI structured-outputs response schema for a
// signature's outputs (response_format json_schema with strict: true).
type StrictSchema struct {
	Name   string          // "DSPyProgramOutputs", DSPy's name
	Schema json.RawMessage // the JSON Schema object
}

// strictKey is the Memo key of a signature's strict schema.
type strictKey struct{}

// keptStrict is a signature's strict schema as built once, or the error
// building it gave.
type keptStrict struct {
	schema []byte
	err    error
}

// StrictSchema builds the strict response schema of the outputs, with
// invopop/jsonschema's Schema as the model:
//
//   - the root is an object with every output as a property, in field
//     order, all required, additionalProperties false;
//   - str, int, float and bool are string, integer, number and boolean;
//     enums and Literals are enum lists; list[T] is an array of T;
//   - Optional[T] is anyOf [T, null], unions are anyOf;
//   - structs are objects in $defs (recursion through $ref), with every
//     property required (a pointer field is nullable instead of optional)
//     and additionalProperties false; a $ref never has siblings (a
//     described $ref is wrapped in anyOf);
//   - keywords strict mode refuses (minimum, maxLength, …) are not emitted:
//     constraints are written into the description, where the model reads
//     them, and are enforced when the reply is parsed.
//
// Maps, Any and custom types that are not text give an error wrapping
// ErrNotStrict that names the field. The result is deterministic.
//
// The schema is built once per signature (a signature is immutable) and
// kept with it; every call returns a copy of its own, which the caller
// may change. Safe for concurrent use.
func (s *Signature) StrictSchema() (*StrictSchema, error) {
	k := s.Memo(strictKey{}, func() any {
		b, err := s.buildStrictSchema()
		return &keptStrict{b, err}
	}).(*keptStrict)
	if k.err != nil {
		return nil, k.err
	}
	return &StrictSchema{Name: "DSPyProgramOutputs", Schema: bytes.Clone(k.schema)}, nil
}

// buildStrictSchema builds and marshals the strict schema of the outputs
// (see StrictSchema).
func (s *Signature) buildStrictSchema() ([]byte, error) {
	g := &strictGen{names: map[reflect.Type]string{}, defs: jsonschema.Definitions{}}
	root := &jsonschema.Schema{Type: "object", Properties: jsonschema.NewProperties(), AdditionalProperties: jsonschema.FalseSchema}
	root.Required = []string{}
	for _, f := range s.outputs {
		p, err := g.property(f)
		if err != nil {
			return nil, &FieldError{f.Name, err}
		}
		root.Properties.Set(f.Name, p)
		root.Required = append(root.Required, f.Name)
	}
	if len(g.defs) > 0 {
		root.Definitions = g.defs
	}
	b, err := json.Marshal(root)
	if err != nil {
		return nil, fmt.Errorf("signature: strict schema: %w", err)
	}
	return b, nil
}

type strictGen struct {
	names map[reflect.Type]string // struct type → $defs name
	used  map[string]bool
	defs  jsonschema.Definitions
}

// property is a field's schema with its description and constraints.
func (g *strictGen) property(f Field) (*jsonschema.Schema, error) {
	p, err := g.node(f.Spec, 0)
	if err != nil {
		return nil, err
	}
	desc := f.Desc
	if len(f.Constraints) > 0 {
		parts := make([]string, len(f.Constraints))
		for i, c := range f.Constraints {
			parts[i] = c.String()
		}
		if desc != "" {
			desc += "\n"
		}
		desc += "Constraints: " + strings.Join(parts, ", ")
	}
	if desc == "" {
		return p, nil
	}
	if p.Ref != "" {
		p = &jsonschema.Schema{AnyOf: []*jsonschema.Schema{p}}
	}
	p.Description = desc
	return p, nil
}

// maxStrictDepth is OpenAI's documented nesting limit.
const maxStrictDepth = 10

var (
	textMarshalerType   = reflect.TypeFor[encoding.TextMarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

func (g *strictGen) node(t *TypeSpec, depth int) (*jsonschema.Schema, error) {
	if depth > maxStrictDepth {
		return nil, fmt.Errorf("%w: nested deeper than %d levels", ErrNotStrict, maxStrictDepth)
	}
	switch t.kind {
	case KindString:
		return &jsonschema.Schema{Type: "string"}, nil
	case KindInt:
		return &jsonschema.Schema{Type: "integer"}, nil
	case KindFloat:
		return &jsonschema.Schema{Type: "number"}, nil
	case KindBool:
		return &jsonschema.Schema{Type: "boolean"}, nil
	case KindNone:
		return &jsonschema.Schema{Type: "null"}, nil
	case KindEnum:
		vals := t.EnumValues()
		enum := make([]any, len(vals))
		for i, v := range vals {
			enum[i] = v
		}
		return &jsonschema.Schema{Type: "string", Enum: enum}, nil
	case KindLiteral:
		return literalStrict(t.literals), nil
	case KindOptional, KindUnion:
		var alts []*jsonschema.Schema
		for _, o := range t.options {
			s, err := g.node(o, depth+1)
			if err != nil {
				return nil, err
			}
			alts = append(alts, s)
		}
		return &jsonschema.Schema{AnyOf: alts}, nil
	case KindList:
		if t.origin == "tuple" {
			return nil, fmt.Errorf("%w: tuple", ErrNotStrict)
		}
		items, err := g.node(t.elem, depth+1)
		if err != nil {
			return nil, err
		}
		return &jsonschema.Schema{Type: "array", Items: items}, nil
	case KindStruct:
		return g.object(t, depth)
	case KindCustom:
		pt := reflect.PointerTo(t.goType)
		if t.goType == timeType {
			return &jsonschema.Schema{Type: "string", Format: "date-time"}, nil
		}
		if t.goType.Implements(textMarshalerType) && pt.Implements(textUnmarshalerType) {
			return &jsonschema.Schema{Type: "string"}, nil
		}
		return nil, fmt.Errorf("%w: %s does not serialize as text", ErrNotStrict, t)
	case KindDict:
		return nil, fmt.Errorf("%w: %s has open keys (a map)", ErrNotStrict, t)
	}
	return nil, fmt.Errorf("%w: %s", ErrNotStrict, t)
}

// object returns a $ref to the struct's definition, building it once.
func (g *strictGen) object(t *TypeSpec, depth int) (*jsonschema.Schema, error) {
	if name, ok := g.names[t.goType]; ok {
		return &jsonschema.Schema{Ref: "#/$defs/" + name}, nil
	}
	name := sanitizeDefName(t.String())
	if g.used == nil {
		g.used = map[string]bool{}
	}
	for i := 2; g.used[name]; i++ {
		name = sanitizeDefName(t.String()) + strconv.Itoa(i)
	}
	g.used[name] = true
	g.names[t.goType] = name
	fields, err := t.Fields()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotStrict, err)
	}
	def := &jsonschema.Schema{Type: "object", Properties: jsonschema.NewProperties(), Required: []string{}, AdditionalProperties: jsonschema.FalseSchema}
	g.defs[name] = def
	for _, sf := range fields {
		p, err := g.propertyAt(sf.Field, depth+1)
		if err != nil {
			return nil, fmt.Errorf("%s.%s: %w", t, sf.Field.Name, err)
		}
		def.Properties.Set(sf.Field.Name, p)
		def.Required = append(def.Required, sf.Field.Name)
	}
	return &jsonschema.Schema{Ref: "#/$defs/" + name}, nil
}

func (g *strictGen) propertyAt(f Field, depth int) (*jsonschema.Schema, error) {
	if depth > maxStrictDepth {
		return nil, fmt.Errorf("%w: nested deeper than %d levels", ErrNotStrict, maxStrictDepth)
	}
	return g.property(f)
}

// literalStrict renders Literal members as enums by JSON type; None is a
// null alternative.
func literalStrict(lits []any) *jsonschema.Schema {
	var groups []*jsonschema.Schema
	byType := map[string]*jsonschema.Schema{}
	for _, l := range lits {
		typ := "string"
		switch l.(type) {
		case nil:
			typ = "null"
		case bool:
			typ = "boolean"
		case int:
			typ = "integer"
		case float64:
			typ = "number"
		}
		s, ok := byType[typ]
		if !ok {
			s = &jsonschema.Schema{Type: typ}
			byType[typ] = s
			groups = append(groups, s)
		}
		if l != nil {
			s.Enum = append(s.Enum, l)
		}
	}
	if len(groups) == 1 {
		return groups[0]
	}
	return &jsonschema.Schema{AnyOf: groups}
}

// sanitizeDefName keeps [A-Za-z0-9_] of a type name for a $defs key.
func sanitizeDefName(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	if b.Len() == 0 {
		return "Object"
	}
	return b.String()
}
