package signature

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"unicode"
)

// StructField is one field of a struct type: its JSON name, its type and
// metadata (Field), and the index path for reflect.Value.FieldByIndex.
type StructField struct {
	Field Field
	Index []int
}

// constraintTags are the constraint struct tags (the package doc lists
// every tag read from Go structs).
var constraintTags = []Op{GT, GE, LT, LE, MinLength, MaxLength, MultipleOf, AllowInfNaN}

// Fields returns the fields of a struct type in declaration order, named as
// encoding/json names them (the json tag, else the Go name). It fails for
// embedded or unexported fields (tag them json:"-" to leave them out) and for
// field types no adapter can carry. It returns nil for other kinds.
func (t *TypeSpec) Fields() ([]StructField, error) {
	if t.kind != KindStruct {
		return nil, nil
	}
	t.fieldsOnce.Do(func() {
		t.fields, t.fieldsErr = structFields(t.goType, t.names, false)
	})
	return t.fields, t.fieldsErr
}

// structFields lists the fields of struct type st. Top-level signature
// fields (topLevel) fall back to the snake_case of the Go name; nested model
// fields use the Go name, as encoding/json does.
func structFields(st reflect.Type, names map[reflect.Type]string, topLevel bool) ([]StructField, error) {
	var out []StructField
	seen := map[string]bool{}
	for i := 0; i < st.NumField(); i++ {
		sf := st.Field(i)
		tag := sf.Tag.Get("json")
		jsonName, _, _ := strings.Cut(tag, ",")
		if tag == "-" {
			continue
		}
		if sf.Anonymous {
			return nil, fmt.Errorf("%s.%s: embedded fields are not supported; give the field a name", st, sf.Name)
		}
		if !sf.IsExported() {
			return nil, fmt.Errorf("%s.%s: unexported field; export it or tag it json:\"-\"", st, sf.Name)
		}
		name := jsonName
		if name == "" {
			name = sf.Name
			if topLevel {
				name = snakeCase(sf.Name)
			}
		}
		f, err := fieldFromStruct(sf, name, names)
		if err != nil {
			return nil, fmt.Errorf("%s.%s: %w", st, sf.Name, err)
		}
		if seen[f.Name] {
			return nil, fmt.Errorf("%s.%s: %w %q", st, sf.Name, ErrDuplicate, f.Name)
		}
		seen[f.Name] = true
		out = append(out, StructField{Field: f, Index: sf.Index})
	}
	return out, nil
}

func fieldFromStruct(sf reflect.StructField, name string, names map[reflect.Type]string) (Field, error) {
	f := Field{Name: name, Type: sf.Type, Desc: sf.Tag.Get("desc"), Prefix: sf.Tag.Get("prefix")}
	spec, err := specOf(sf.Type, names, 1)
	if err != nil {
		return f, fmt.Errorf("%w: %v", ErrUnsupported, err)
	}
	if lit, ok := sf.Tag.Lookup("literal"); ok {
		if spec, err = parseLiteralTag(lit); err != nil {
			return f, fmt.Errorf("tag literal:%q: %v", lit, err)
		}
		if spec.goType != sf.Type {
			return f, fmt.Errorf("tag literal:%q: the values need Go type %s, the field is %s", lit, spec.goType, sf.Type)
		}
	}
	f.Spec = spec
	for _, op := range constraintTags {
		v, ok := sf.Tag.Lookup(string(op))
		if !ok {
			continue
		}
		c := Constraint{Op: op}
		switch {
		case op == AllowInfNaN:
			b, err := strconv.ParseBool(v)
			if err != nil {
				return f, fmt.Errorf("tag %s:%q: %v", op, v, err)
			}
			c.Value = b
		case op == MinLength || op == MaxLength || !strings.ContainsAny(v, ".eE"):
			n, err := strconv.Atoi(v)
			if err != nil {
				return f, fmt.Errorf("tag %s:%q: not an integer", op, v)
			}
			c.Value = n
		default:
			x, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return f, fmt.Errorf("tag %s:%q: not a number", op, v)
			}
			c.Value = x
		}
		f.Constraints = append(f.Constraints, c)
	}
	if d, ok := sf.Tag.Lookup("default"); ok {
		p := reflect.New(sf.Type)
		if err := json.Unmarshal([]byte(d), p.Interface()); err != nil {
			return f, fmt.Errorf("tag default:%q: %v", d, err)
		}
		f.Default, f.HasDefault = p.Elem().Interface(), true
	}
	return f, nil
}

// snakeCase converts a Go name to snake_case: "URLAddress" gives
// "url_address", "UserID" gives "user_id", "Answer2" gives "answer2".
func snakeCase(s string) string {
	rs := []rune(s)
	var b strings.Builder
	for i, r := range rs {
		if unicode.IsUpper(r) {
			if i > 0 && (unicode.IsLower(rs[i-1]) || unicode.IsDigit(rs[i-1]) ||
				(unicode.IsUpper(rs[i-1]) && i+1 < len(rs) && unicode.IsLower(rs[i+1]))) {
				b.WriteByte('_')
			}
			b.WriteRune(unicode.ToLower(r))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// FromStructs builds a signature whose inputs are the fields of struct type
// In and whose outputs are the fields of struct type Out, in declaration
// order. Names come from json tags, else the snake_case of the Go name;
// descriptions, prefixes, defaults and constraints from the struct tags
// the package doc lists (json, desc, prefix, default, gt, ge, lt, le,
// multiple_of, min_length, max_length, allow_inf_nan, literal). Instructions come from [WithInstructions];
// [WithTypes] names custom types. Embedded and unexported fields and field
// types no adapter can carry are errors, never silently skipped.
//
// Enums are named string types implementing [EnumValuer].
func FromStructs[In, Out any](opts ...Option) (*Signature, error) {
	c := newConfig(opts)
	names := reverseNames(c.types)
	side := func(t reflect.Type, role string) ([]Field, error) {
		if t.Kind() != reflect.Struct {
			return nil, fmt.Errorf("signature: %s type %s is not a struct", role, t)
		}
		sfs, err := structFields(t, names, true)
		if err != nil {
			return nil, fmt.Errorf("signature: %s: %w", role, err)
		}
		fs := make([]Field, len(sfs))
		for i, sf := range sfs {
			fs[i] = sf.Field
		}
		return fs, nil
	}
	in, err := side(reflect.TypeFor[In](), "input")
	if err != nil {
		return nil, err
	}
	out, err := side(reflect.TypeFor[Out](), "output")
	if err != nil {
		return nil, err
	}
	return build(c.instructions, in, out, c.types)
}

// StructFieldName is the signature name of a top-level struct field, as
// FromStructs names it: its json tag, else the snake_case of its Go name.
func StructFieldName(sf reflect.StructField) string {
	if name, _, _ := strings.Cut(sf.Tag.Get("json"), ","); name != "" {
		return name
	}
	return snakeCase(sf.Name)
}
