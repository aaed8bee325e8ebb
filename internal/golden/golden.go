package golden

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"unicode"

	"github.com/sigwire/adapter/signature"
)

// Case is one golden or corpus case. Fields not used by a kind are empty.
type Case struct {
	ID         string          `json:"id"`
	Source     string          `json:"source"`
	Origin     string          `json:"origin"`
	Kind       string          `json:"kind"`
	Adapter    string          `json:"adapter"`
	Signature  *Sig            `json:"signature"`
	Demos      []Object        `json:"demos"`
	Inputs     Object          `json:"inputs"`
	Completion string          `json:"completion"`
	Expected   json.RawMessage `json:"expected"`
	Note       string          `json:"note"`
	Class      string          `json:"class"`
	Annotation string          `json:"annotation"`
	Value      json.RawMessage `json:"value"`

	LM               json.RawMessage `json:"lm"`
	LMKwargs         json.RawMessage `json:"lm_kwargs"`
	ExpectedLMKwargs json.RawMessage `json:"expected_lm_kwargs"`
	AdapterOptions   json.RawMessage `json:"adapter_options"`

	ExtractionCompletion       string          `json:"extraction_completion"`
	ExpectedExtractionMessages json.RawMessage `json:"expected_extraction_messages"`
	DSPyBehaviour              string          `json:"dspy_behaviour"`
}

// Object is a JSON object whose member order is kept.
type Object struct {
	Keys   []string
	Values map[string]json.RawMessage
}

// UnmarshalJSON keeps the key order.
func (o *Object) UnmarshalJSON(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	t, err := dec.Token()
	if err != nil {
		return err
	}
	if t == nil {
		return nil
	}
	if d, ok := t.(json.Delim); !ok || d != '{' {
		return fmt.Errorf("golden: want an object, got %v", t)
	}
	o.Values = map[string]json.RawMessage{}
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return err
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return err
		}
		k := kt.(string)
		o.Keys = append(o.Keys, k)
		o.Values[k] = v
	}
	return nil
}

// Sig is a signature in the golden format.
type Sig struct {
	Instructions string      `json:"instructions"`
	Inputs       []FieldSpec `json:"inputs"`
	Outputs      []FieldSpec `json:"outputs"`
}

// FieldSpec is one field in the golden format.
type FieldSpec struct {
	Name           string          `json:"name"`
	Type           string          `json:"type"`
	Desc           string          `json:"desc"`
	Default        json.RawMessage `json:"default"`
	DefaultFactory string          `json:"default_factory"`
	Constraints    Object          `json:"constraints"`
}

// Load reads a JSON array of cases.
func Load(path string) ([]Case, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var cs []Case
	if err := json.Unmarshal(b, &cs); err != nil {
		return nil, fmt.Errorf("golden: %s: %w", path, err)
	}
	return cs, nil
}

// Expectation is what a corpus case expects.
type Expectation struct {
	Values        map[string]json.RawMessage
	Unrecoverable bool
	Reason        string
	Partial       map[string]json.RawMessage
}

// Expect decodes a corpus case's expected member.
func (c *Case) Expect() (Expectation, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(c.Expected, &m); err != nil {
		return Expectation{}, err
	}
	var e Expectation
	if u, ok := m["unrecoverable"]; ok && string(u) == "true" {
		e.Unrecoverable = true
		_ = json.Unmarshal(m["reason"], &e.Reason)
		if p, ok := m["partial"]; ok {
			_ = json.Unmarshal(p, &e.Partial)
		}
		return e, nil
	}
	e.Values = m
	return e, nil
}

// Builder turns golden types into Go types. Custom maps DSPy custom type
// names (Image, Tool, "Code['python']", ...) to Go types; a case that uses
// an unmapped name fails to build with ErrUnknownType.
type Builder struct {
	Custom map[string]reflect.Type
}

// ErrUnknownType is returned for a custom type name the Builder lacks.
var ErrUnknownType = fmt.Errorf("golden: unknown custom type")

// Signature builds the Go signature of a golden case.
func (b *Builder) Signature(s *Sig) (*signature.Signature, error) {
	if s == nil {
		return nil, fmt.Errorf("golden: case has no signature")
	}
	reg := map[string]reflect.Type{}
	var spec strings.Builder
	for i, group := range [][]FieldSpec{s.Inputs, s.Outputs} {
		if i == 1 {
			spec.WriteString(" -> ")
		}
		for j, fs := range group {
			src, err := b.translate(fs.Type, reg)
			if err != nil {
				return nil, fmt.Errorf("field %s: %w", fs.Name, err)
			}
			if j > 0 {
				spec.WriteString(", ")
			}
			spec.WriteString(fs.Name + ": " + src)
		}
	}
	sig, err := signature.Parse(spec.String(), signature.WithTypes(reg), signature.WithInstructions(s.Instructions))
	if err != nil {
		return nil, fmt.Errorf("golden: parse %q: %w", spec.String(), err)
	}
	for _, fs := range append(append([]FieldSpec(nil), s.Inputs...), s.Outputs...) {
		f, _, _ := sig.Field(fs.Name)
		if err := meta(&f, fs); err != nil {
			return nil, fmt.Errorf("field %s: %w", fs.Name, err)
		}
		sig, err = sig.Update(fs.Name, func(p *signature.Field) { *p = f })
		if err != nil {
			return nil, err
		}
	}
	return sig, nil
}

// Spec builds the type of a golden annotation (parse_value cases).
func (b *Builder) Spec(typ string) (*signature.TypeSpec, error) {
	reg := map[string]reflect.Type{}
	src, err := b.translate(typ, reg)
	if err != nil {
		return nil, err
	}
	sig, err := signature.Parse("x: "+src+" -> y", signature.WithTypes(reg))
	if err != nil {
		return nil, err
	}
	return sig.Input(0).Spec, nil
}

// meta copies a golden field's description, constraints and default onto f.
func meta(f *signature.Field, fs FieldSpec) error {
	f.Desc = fs.Desc
	for _, k := range fs.Constraints.Keys {
		v, err := number(fs.Constraints.Values[k])
		if err != nil {
			return err
		}
		f.Constraints = append(f.Constraints, signature.Constraint{Op: signature.Op(k), Value: v})
	}
	switch {
	case fs.DefaultFactory == "list":
		f.Default, f.HasDefault = reflect.MakeSlice(f.Type, 0, 0).Interface(), true
	case fs.DefaultFactory != "":
		return fmt.Errorf("golden: unknown default_factory %q", fs.DefaultFactory)
	case len(fs.Default) > 0:
		p := reflect.New(f.Type)
		if err := json.Unmarshal(fs.Default, p.Interface()); err != nil {
			return fmt.Errorf("default %s: %w", fs.Default, err)
		}
		f.Default, f.HasDefault = p.Elem().Interface(), true
	}
	return nil
}

func number(raw json.RawMessage) (any, error) {
	s := string(raw)
	if s == "true" || s == "false" {
		return s == "true", nil
	}
	if i, err := strconv.Atoi(s); err == nil {
		return i, nil
	}
	return strconv.ParseFloat(s, 64)
}

// translate rewrites a golden type into signature syntax, registering Go
// types for models, enums and custom names in reg.
func (b *Builder) translate(typ string, reg map[string]reflect.Type) (string, error) {
	t := &typeLexer{s: typ}
	out, err := b.typeExpr(t, reg)
	if err != nil {
		return "", err
	}
	if t.skip(); t.i != len(t.s) {
		return "", fmt.Errorf("golden: trailing text in type %q at %d", typ, t.i)
	}
	return out, nil
}

type typeLexer struct {
	s string
	i int
}

func (t *typeLexer) skip() {
	for t.i < len(t.s) && unicode.IsSpace(rune(t.s[t.i])) {
		t.i++
	}
}

func (t *typeLexer) ident() string {
	t.skip()
	j := t.i
	for j < len(t.s) && (t.s[j] == '_' || t.s[j] == '.' || unicode.IsLetter(rune(t.s[j])) || unicode.IsDigit(rune(t.s[j]))) {
		j++
	}
	id := t.s[t.i:j]
	t.i = j
	return id
}

func (t *typeLexer) peek() byte {
	t.skip()
	if t.i < len(t.s) {
		return t.s[t.i]
	}
	return 0
}

func (b *Builder) typeExpr(t *typeLexer, reg map[string]reflect.Type) (string, error) {
	start := t.i
	name := t.ident()
	switch name {
	case "object":
		return b.object(t, reg)
	case "Enum":
		return b.enum(t, reg)
	case "Literal":
		// Copy the bracketed literal list verbatim (quotes respected).
		t.skip()
		j, depth, quote := t.i, 0, byte(0)
		for ; j < len(t.s); j++ {
			c := t.s[j]
			switch {
			case quote != 0:
				if c == '\\' {
					j++
				} else if c == quote {
					quote = 0
				}
			case c == '\'' || c == '"':
				quote = c
			case c == '[':
				depth++
			case c == ']':
				depth--
			}
			if depth == 0 {
				break
			}
		}
		out := "Literal" + t.s[t.i:j+1]
		t.i = j + 1
		return out, nil
	case "":
		return "", fmt.Errorf("golden: expected a type at %d in %q", t.i, t.s)
	}
	if t.peek() != '[' {
		if b.isCustom(name) {
			return name, b.register(name, reg)
		}
		return name, nil
	}
	if b.isCustom(name) {
		// A parametric custom type such as Code['python'].
		j := strings.IndexByte(t.s[t.i:], ']')
		if j < 0 {
			return "", fmt.Errorf("golden: unclosed %q", t.s[start:])
		}
		full := name + t.s[t.i:t.i+j+1]
		t.i += j + 1
		return full, b.register(full, reg)
	}
	t.i++ // [
	var args []string
	for {
		a, err := b.typeExpr(t, reg)
		if err != nil {
			return "", err
		}
		args = append(args, a)
		switch t.peek() {
		case ',':
			t.i++
			continue
		case ']':
			t.i++
			return name + "[" + strings.Join(args, ", ") + "]", nil
		default:
			return "", fmt.Errorf("golden: expected , or ] at %d in %q", t.i, t.s)
		}
	}
}

func (b *Builder) isCustom(name string) bool {
	switch name {
	case "str", "int", "float", "bool", "Any", "NoneType", "None", "list", "dict", "Optional", "Union", "Literal":
		return false
	}
	return true
}

func (b *Builder) register(name string, reg map[string]reflect.Type) error {
	typ, ok := b.Custom[name]
	if !ok {
		return fmt.Errorf("%w %q", ErrUnknownType, name)
	}
	reg[name] = typ
	return nil
}

var anonCount struct {
	sync.Mutex
	n int
}

// object parses "Name{field:T, ...}" (after the word object) into a struct type.
func (b *Builder) object(t *typeLexer, reg map[string]reflect.Type) (string, error) {
	name := t.ident()
	if name == "" {
		anonCount.Lock()
		anonCount.n++
		name = fmt.Sprintf("Object%d", anonCount.n)
		anonCount.Unlock()
	}
	if t.peek() != '{' {
		return "", fmt.Errorf("golden: expected { after object %s", name)
	}
	t.i++
	var fields []reflect.StructField
	for t.peek() != '}' {
		fname := t.ident()
		if t.peek() != ':' {
			return "", fmt.Errorf("golden: expected : after %s.%s", name, fname)
		}
		t.i++
		src, err := b.typeExpr(t, reg)
		if err != nil {
			return "", err
		}
		ftype, err := goTypeOf(src, reg)
		if err != nil {
			return "", fmt.Errorf("golden: %s.%s: %w", name, fname, err)
		}
		tag := fmt.Sprintf(`json:%q`, fname)
		if inner, ok := strings.CutPrefix(src, "Literal["); ok {
			tag += fmt.Sprintf(` literal:%q`, strings.TrimSuffix(inner, "]"))
		}
		if t.peek() == '#' {
			t.i++
			t.skip()
			desc, n, err := quoted(t.s[t.i:])
			if err != nil {
				return "", err
			}
			t.i += n
			tag += fmt.Sprintf(` desc:%q`, desc)
		}
		if t.peek() == '=' {
			t.i++
			t.skip()
			dec := json.NewDecoder(strings.NewReader(t.s[t.i:]))
			var raw json.RawMessage
			if err := dec.Decode(&raw); err != nil {
				return "", fmt.Errorf("golden: default of %s.%s: %w", name, fname, err)
			}
			t.i += int(dec.InputOffset())
			tag += fmt.Sprintf(` default:%q`, string(raw))
		}
		fields = append(fields, reflect.StructField{Name: goName(fname, len(fields)), Type: ftype, Tag: reflect.StructTag(tag)})
		if t.peek() == ',' {
			t.i++
		}
	}
	t.i++ // }
	st := reflect.StructOf(fields)
	reg[name] = st
	return name, nil
}

func quoted(s string) (string, int, error) {
	dec := json.NewDecoder(strings.NewReader(s))
	var v string
	if err := dec.Decode(&v); err != nil {
		return "", 0, fmt.Errorf("golden: description: %w", err)
	}
	return v, int(dec.InputOffset()), nil
}

// goName makes an exported Go field name for a JSON name.
func goName(json string, i int) string {
	var b strings.Builder
	b.WriteString("F")
	for _, r := range json {
		if r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) {
			b.WriteRune(r)
		}
	}
	return b.String() + "_" + strconv.Itoa(i)
}

// goTypeOf resolves a signature type string to its Go type.
func goTypeOf(src string, reg map[string]reflect.Type) (reflect.Type, error) {
	sig, err := signature.Parse("x: "+src+" -> y", signature.WithTypes(reg))
	if err != nil {
		return nil, err
	}
	return sig.Input(0).Type, nil
}

// enum parses "Name(A=a,B=b)" (after the word Enum) into a pooled enum type.
func (b *Builder) enum(t *typeLexer, reg map[string]reflect.Type) (string, error) {
	name := t.ident()
	if t.peek() != '(' {
		return "", fmt.Errorf("golden: expected ( after Enum %s", name)
	}
	t.i++
	end := strings.IndexByte(t.s[t.i:], ')')
	if end < 0 {
		return "", fmt.Errorf("golden: unclosed Enum %s", name)
	}
	var members [][2]string
	for _, m := range strings.Split(t.s[t.i:t.i+end], ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(m), "=")
		if !ok {
			return "", fmt.Errorf("golden: enum member %q", m)
		}
		members = append(members, [2]string{k, v})
	}
	t.i += end + 1
	typ, err := enumType(name, members)
	if err != nil {
		return "", err
	}
	reg[name] = typ
	return name, nil
}

// LoadGlob reads every file matching pattern (for example
// "testdata/dspy_golden*.json", so a fuller case file dropped beside the
// public one is picked up) and returns the cases, the first of each id.
func LoadGlob(pattern string) ([]Case, error) {
	files, err := filepath.Glob(pattern)
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("golden: no files match %s", pattern)
	}
	seen := map[string]bool{}
	var all []Case
	for _, f := range files {
		cs, err := Load(f)
		if err != nil {
			return nil, err
		}
		for _, c := range cs {
			if !seen[c.ID] {
				seen[c.ID] = true
				all = append(all, c)
			}
		}
	}
	return all, nil
}
