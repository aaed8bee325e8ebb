package signature

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// SyntaxError reports a malformed signature string: what is wrong and where.
type SyntaxError struct {
	Spec   string // the whole signature string
	Offset int    // byte offset of the offending text
	Text   string // the offending text ("" at the end of input)
	Msg    string
}

// Error quotes the offending text and its offset in the spec.
func (e *SyntaxError) Error() string {
	if e.Text == "" {
		return fmt.Sprintf("signature: %s at offset %d in %q", e.Msg, e.Offset, e.Spec)
	}
	return fmt.Sprintf("signature: %s: %q at offset %d in %q", e.Msg, e.Text, e.Offset, e.Spec)
}

// Parse builds a signature from DSPy's string syntax,
//
//	"question, context: list[str] -> reasoning, answer: int"
//
// exactly one "->" between comma-separated inputs and outputs, each a name
// with an optional type (str when absent). Types are written in Python
// (str int float bool Any bytes datetime list[T] set[T] tuple[A, B] dict[K, V]
// Optional[T] Union[A, B] T | None Literal['a', 'b'], with typing.List and
// friends accepted) or in Go (string int64 float64 []string map[string]int
// *int any), and may mix. Other names resolve through [WithTypes]. Without
// [WithInstructions] the instructions are DSPy's default text.
func Parse(spec string, opts ...Option) (*Signature, error) {
	c := newConfig(opts)
	p := &parser{spec: spec, types: c.types, names: reverseNames(c.types)}
	inputs, outputs, err := p.parse()
	if err != nil {
		return nil, err
	}
	s, err := build(c.instructions, inputs, outputs, c.types)
	if err != nil {
		return nil, err
	}
	if c.hasInstructions {
		s.instructions = c.instructions
	}
	return s, nil
}

// parseLiteralTag reads the members of a `literal` struct tag, written as
// inside Python's Literal[...]: "'US', 'CA'", "1, 2", "'a', None".
func parseLiteralTag(src string) (*TypeSpec, error) {
	p := &parser{spec: "Literal[" + src + "]"}
	if err := p.lex(); err != nil {
		return nil, err
	}
	t, err := p.typeExpr()
	if err != nil {
		return nil, err
	}
	if end := p.peek(); end.kind != 0 {
		return nil, p.errAt(end, "unexpected text after the literal values")
	}
	if t.kind != KindLiteral {
		return nil, fmt.Errorf("not a list of literal values")
	}
	return t, nil
}

type token struct {
	kind byte // 'i' identifier (dots allowed), 's' string, 'n' number, 'a' arrow, punctuation itself, 0 at end
	text string
	val  string // decoded string literal
	pos  int
}

type parser struct {
	spec  string
	toks  []token
	i     int
	types map[string]reflect.Type
	names map[reflect.Type]string
	depth int
}

func (p *parser) errAt(t token, format string, args ...any) error {
	return &SyntaxError{Spec: p.spec, Offset: t.pos, Text: t.text, Msg: fmt.Sprintf(format, args...)}
}

func (p *parser) lex() error {
	s := p.spec
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case unicode.IsSpace(r):
			i += size
		case r == '-' && strings.HasPrefix(s[i:], "->"):
			p.toks = append(p.toks, token{kind: 'a', text: "->", pos: i})
			i += 2
		case r == '_' || unicode.IsLetter(r):
			j := i + size
			for j < len(s) {
				r2, sz := utf8.DecodeRuneInString(s[j:])
				if r2 == '_' || r2 == '.' || unicode.IsLetter(r2) || unicode.IsDigit(r2) {
					j += sz
					continue
				}
				break
			}
			p.toks = append(p.toks, token{kind: 'i', text: s[i:j], pos: i})
			i = j
		case r >= '0' && r <= '9' || (r == '-' || r == '+' || r == '.') && i+1 < len(s) && (s[i+1] >= '0' && s[i+1] <= '9' || s[i+1] == '.'):
			j := i + 1
			for j < len(s) && (isNumByte(s[j]) || (s[j] == '-' || s[j] == '+') && (s[j-1] == 'e' || s[j-1] == 'E')) {
				j++
			}
			p.toks = append(p.toks, token{kind: 'n', text: s[i:j], pos: i})
			i = j
		case r == '\'' || r == '"':
			val, n, err := unquotePython(s[i:])
			if err != nil {
				return &SyntaxError{Spec: s, Offset: i, Text: s[i:min(len(s), i+20)], Msg: err.Error()}
			}
			p.toks = append(p.toks, token{kind: 's', text: s[i : i+n], val: val, pos: i})
			i += n
		case strings.ContainsRune(",:[]|*(){}=", r):
			p.toks = append(p.toks, token{kind: byte(r), text: string(r), pos: i})
			i++
		default:
			return &SyntaxError{Spec: s, Offset: i, Text: string(r), Msg: "unexpected character"}
		}
	}
	p.toks = append(p.toks, token{kind: 0, pos: len(s)})
	return nil
}

func isNumByte(c byte) bool {
	return c >= '0' && c <= '9' || c == '.' || c == '_' || c == 'e' || c == 'E' || c == 'x' || c == 'X' ||
		c == 'o' || c == 'O' || c == 'b' || c == 'B' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// unquotePython decodes a Python string literal at the start of s and
// returns its value and length.
func unquotePython(s string) (string, int, error) {
	q := s[0]
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		c := s[i]
		switch {
		case c == q:
			return b.String(), i + 1, nil
		case c == '\n':
			return "", 0, fmt.Errorf("unterminated string")
		case c == '\\' && i+1 < len(s):
			i++
			switch e := s[i]; e {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'r':
				b.WriteByte('\r')
			case '\\', '\'', '"':
				b.WriteByte(e)
			case 'x', 'u', 'U':
				n := map[byte]int{'x': 2, 'u': 4, 'U': 8}[e]
				if i+n >= len(s) {
					return "", 0, fmt.Errorf("bad escape")
				}
				v, err := strconv.ParseUint(s[i+1:i+1+n], 16, 32)
				if err != nil || !utf8.ValidRune(rune(v)) {
					return "", 0, fmt.Errorf("bad escape")
				}
				b.WriteRune(rune(v))
				i += n
			default:
				b.WriteByte('\\')
				b.WriteByte(e)
			}
		default:
			b.WriteByte(c)
		}
	}
	return "", 0, fmt.Errorf("unterminated string")
}

func (p *parser) peek() token { return p.toks[p.i] }

func (p *parser) next() token {
	t := p.toks[p.i]
	if t.kind != 0 {
		p.i++
	}
	return t
}

func (p *parser) expect(kind byte, what string) (token, error) {
	t := p.next()
	if t.kind != kind {
		return t, p.errAt(t, "expected %s", what)
	}
	return t, nil
}

func (p *parser) parse() (inputs, outputs []Field, err error) {
	if strings.TrimSpace(p.spec) == "" {
		return nil, nil, &SyntaxError{Spec: p.spec, Msg: "empty signature, want \"inputs -> outputs\""}
	}
	if err := p.lex(); err != nil {
		return nil, nil, err
	}
	var arrows []token
	for _, t := range p.toks {
		if t.kind == 'a' {
			arrows = append(arrows, t)
		}
	}
	switch len(arrows) {
	case 0:
		return nil, nil, &SyntaxError{Spec: p.spec, Offset: len(p.spec), Msg: `missing "->" between inputs and outputs`}
	case 1:
	default:
		return nil, nil, p.errAt(arrows[1], `more than one "->"`)
	}
	if inputs, err = p.side('a'); err != nil {
		return nil, nil, err
	}
	p.next() // the arrow
	if outputs, err = p.side(0); err != nil {
		return nil, nil, err
	}
	return inputs, outputs, nil
}

// side parses comma-separated fields up to the token kind end.
func (p *parser) side(end byte) ([]Field, error) {
	var fields []Field
	for p.peek().kind != end {
		t := p.next()
		if t.kind != 'i' || strings.Contains(t.text, ".") || !validName(t.text) {
			return nil, p.errAt(t, "expected a field name")
		}
		f := Field{Name: t.text}
		if p.peek().kind == ':' {
			p.next()
			spec, err := p.typeExpr()
			if err != nil {
				return nil, err
			}
			f.Spec = spec
		}
		fields = append(fields, f)
		switch n := p.peek(); n.kind {
		case ',':
			p.next()
			if p.peek().kind == end {
				return nil, p.errAt(p.peek(), "expected a field name after \",\"")
			}
		case end:
		case '=':
			return nil, p.errAt(n, "default values are not supported in signature strings")
		default:
			return nil, p.errAt(n, "expected \",\" or %s", map[byte]string{'a': `"->"`, 0: "end of signature"}[end])
		}
	}
	return fields, nil
}

// typeExpr parses a type, including "A | B" unions.
func (p *parser) typeExpr() (*TypeSpec, error) {
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > maxTypeDepth {
		return nil, p.errAt(p.peek(), "type nested too deeply")
	}
	first, err := p.unary()
	if err != nil {
		return nil, err
	}
	if p.peek().kind != '|' {
		return first, nil
	}
	members := []*TypeSpec{first}
	for p.peek().kind == '|' {
		p.next()
		t, err := p.unary()
		if err != nil {
			return nil, err
		}
		members = append(members, t)
	}
	return unionOf(members, true), nil
}

func (p *parser) unary() (*TypeSpec, error) {
	t := p.peek()
	switch t.kind {
	case '*':
		p.next()
		elem, err := p.typeExpr()
		if err != nil {
			return nil, err
		}
		return optionalOf(elem, false), nil
	case '[':
		p.next()
		if _, err := p.expect(']', `"]" (Go slice syntax "[]T")`); err != nil {
			return nil, err
		}
		elem, err := p.unary()
		if err != nil {
			return nil, err
		}
		return listOf(elem, ""), nil
	case 'i':
		return p.named()
	}
	return nil, p.errAt(t, "expected a type")
}

// builtin returns the spec of a built-in type name, or nil.
func builtin(name string) *TypeSpec {
	var t reflect.Type
	switch strings.TrimPrefix(name, "typing.") {
	case "str", "string":
		t = reflect.TypeFor[string]()
	case "int":
		t = reflect.TypeFor[int]()
	case "int8":
		t = reflect.TypeFor[int8]()
	case "int16":
		t = reflect.TypeFor[int16]()
	case "int32", "rune":
		t = reflect.TypeFor[int32]()
	case "int64":
		t = reflect.TypeFor[int64]()
	case "uint":
		t = reflect.TypeFor[uint]()
	case "uint8", "byte":
		t = reflect.TypeFor[uint8]()
	case "uint16":
		t = reflect.TypeFor[uint16]()
	case "uint32":
		t = reflect.TypeFor[uint32]()
	case "uint64":
		t = reflect.TypeFor[uint64]()
	case "float", "float64":
		t = reflect.TypeFor[float64]()
	case "float32":
		t = reflect.TypeFor[float32]()
	case "bool":
		t = reflect.TypeFor[bool]()
	case "Any", "any":
		t = anyType
	case "bytes":
		t = bytesType
	case "datetime", "datetime.datetime":
		t = reflect.TypeFor[time.Time]()
	case "None", "NoneType":
		return noneSpec
	default:
		return nil
	}
	s, _ := specOf(t, nil, 0)
	return s
}

func (p *parser) named() (*TypeSpec, error) {
	t := p.next()
	name := t.text
	if name == "interface" {
		if _, err := p.expect('{', `"{" (interface{})`); err != nil {
			return nil, err
		}
		if _, err := p.expect('}', `"}" (interface{})`); err != nil {
			return nil, err
		}
		return builtin("any"), nil
	}
	if name == "map" && p.peek().kind == '[' {
		p.next()
		key, err := p.typeExpr()
		if err != nil {
			return nil, err
		}
		if _, err := p.expect(']', `"]"`); err != nil {
			return nil, err
		}
		elem, err := p.unary()
		if err != nil {
			return nil, err
		}
		return dictOf(key, elem, t, p)
	}
	base := strings.TrimPrefix(name, "typing.")
	if p.peek().kind != '[' {
		switch base {
		case "list", "List", "set", "Set", "tuple", "Tuple", "Sequence", "frozenset":
			l := listOf(builtin("Any"), "list")
			l.name = strings.ToLower(base)
			return l, nil
		case "dict", "Dict", "Mapping":
			d, _ := dictOf(builtin("str"), builtin("Any"), t, p)
			d.name = "dict"
			return d, nil
		}
		if s := builtin(name); s != nil {
			return s, nil
		}
		return p.custom(t)
	}
	open := p.next()
	switch base {
	case "Literal":
		return p.literal(open)
	case "list", "List", "Sequence", "set", "Set", "frozenset":
		args, err := p.typeArgs(open, 1, 1)
		if err != nil {
			return nil, err
		}
		origin := "list"
		if base == "set" || base == "Set" || base == "frozenset" {
			origin = "set"
		}
		return listOf(args[0], origin), nil
	case "tuple", "Tuple":
		args, err := p.typeArgs(open, 1, -1)
		if err != nil {
			return nil, err
		}
		return &TypeSpec{kind: KindList, goType: reflect.TypeFor[[]any](), elem: builtin("Any"), options: args, origin: "tuple"}, nil
	case "dict", "Dict", "Mapping":
		args, err := p.typeArgs(open, 2, 2)
		if err != nil {
			return nil, err
		}
		return dictOf(args[0], args[1], t, p)
	case "Optional":
		args, err := p.typeArgs(open, 1, 1)
		if err != nil {
			return nil, err
		}
		return unionOf([]*TypeSpec{args[0], builtin("None")}, false), nil
	case "Union", "UnionType":
		args, err := p.typeArgs(open, 1, -1)
		if err != nil {
			return nil, err
		}
		return unionOf(args, base == "UnionType"), nil
	}
	return p.parametric(t, open)
}

// parametric resolves a registered parametric custom type such as
// Code['python']: the whole bracketed text, with its spacing normalized
// to the registry's, is looked up in the WithTypes map.
func (p *parser) parametric(t, open token) (*TypeSpec, error) {
	depth := 1
	end := open
	for depth > 0 {
		tok := p.next()
		switch tok.kind {
		case 0:
			return nil, p.errAt(open, "unclosed \"[\"")
		case '[':
			depth++
		case ']':
			depth--
		}
		end = tok
	}
	full := t.text + p.spec[open.pos:end.pos+1]
	for _, name := range []string{full, strings.ReplaceAll(full, " ", "")} {
		if _, ok := p.types[name]; ok {
			return p.custom(token{kind: 'i', text: name, pos: t.pos})
		}
	}
	return nil, p.errAt(t, "unknown generic type %s (register parametric custom types by their full name with signature.WithTypes)", full)
}

// typeArgs parses "T, U]" after an opening bracket, checking the count.
func (p *parser) typeArgs(open token, minN, maxN int) ([]*TypeSpec, error) {
	var args []*TypeSpec
	for {
		a, err := p.typeExpr()
		if err != nil {
			return nil, err
		}
		args = append(args, a)
		if p.peek().kind == ',' {
			p.next()
			if p.peek().kind == ']' {
				break
			}
			continue
		}
		break
	}
	if _, err := p.expect(']', `"]"`); err != nil {
		return nil, err
	}
	if len(args) < minN || maxN >= 0 && len(args) > maxN {
		return nil, p.errAt(open, "wrong number of type arguments (%d)", len(args))
	}
	return args, nil
}

func (p *parser) literal(open token) (*TypeSpec, error) {
	var vals []any
	for {
		t := p.next()
		switch {
		case t.kind == 's':
			vals = append(vals, t.val)
		case t.kind == 'n':
			v, err := parseNumber(t.text)
			if err != nil {
				return nil, p.errAt(t, "invalid number in Literal")
			}
			vals = append(vals, v)
		case t.kind == 'i' && (t.text == "True" || t.text == "False"):
			vals = append(vals, t.text == "True")
		case t.kind == 'i' && t.text == "None":
			vals = append(vals, nil)
		default:
			return nil, p.errAt(t, "expected a literal value (string, number, True, False or None)")
		}
		n := p.next()
		if n.kind == ',' {
			if p.peek().kind == ']' {
				p.next()
				break
			}
			continue
		}
		if n.kind != ']' {
			return nil, p.errAt(n, `expected "," or "]" in Literal`)
		}
		break
	}
	spec, err := Literal(vals...)
	if err != nil {
		return nil, p.errAt(open, "%v", err)
	}
	return spec, nil
}

func parseNumber(s string) (any, error) {
	clean := strings.ReplaceAll(s, "_", "")
	if i, err := strconv.ParseInt(clean, 0, 64); err == nil {
		return int(i), nil
	}
	return strconv.ParseFloat(clean, 64)
}

func (p *parser) custom(t token) (*TypeSpec, error) {
	name := t.text
	typ, ok := p.types[name]
	if !ok {
		if i := strings.LastIndexByte(name, '.'); i >= 0 {
			typ, ok = p.types[name[i+1:]]
		}
	}
	if !ok || typ == nil {
		return nil, p.errAt(t, "unknown type (register custom types with signature.WithTypes)")
	}
	s, err := specOf(typ, p.names, 0)
	if err != nil {
		return nil, p.errAt(t, "%v", err)
	}
	return s, nil
}

func listOf(elem *TypeSpec, origin string) *TypeSpec {
	if origin == "list" {
		origin = ""
	}
	return &TypeSpec{kind: KindList, goType: reflect.SliceOf(elem.goType), elem: elem, origin: origin}
}

func dictOf(key, elem *TypeSpec, at token, p *parser) (*TypeSpec, error) {
	switch key.kind {
	case KindString, KindInt, KindEnum:
	default:
		return nil, p.errAt(at, "dict keys must be str, int or an enum, not %s", key)
	}
	return &TypeSpec{kind: KindDict, goType: reflect.MapOf(key.goType, elem.goType), key: key, elem: elem}, nil
}

// unionOf builds Union[members...], flattening nested unions and turning a
// union with None into an optional.
func unionOf(members []*TypeSpec, pep604 bool) *TypeSpec {
	var flat []*TypeSpec
	for _, m := range members {
		switch m.kind {
		case KindUnion:
			flat = append(flat, m.options...)
		case KindOptional:
			flat = append(flat, m.options...)
		default:
			flat = append(flat, m)
		}
	}
	// Python drops duplicate members.
	var uniq []*TypeSpec
	for _, m := range flat {
		dup := false
		for _, u := range uniq {
			if u.equal(m) {
				dup = true
				break
			}
		}
		if !dup {
			uniq = append(uniq, m)
		}
	}
	var nonNone []*TypeSpec
	for _, m := range uniq {
		if m.kind != KindNone {
			nonNone = append(nonNone, m)
		}
	}
	switch {
	case len(uniq) == 1:
		return uniq[0]
	case len(nonNone) == len(uniq):
		return &TypeSpec{kind: KindUnion, goType: anyType, options: uniq, pep604: pep604}
	}
	var elem *TypeSpec
	if len(nonNone) == 1 {
		elem = nonNone[0]
	} else {
		elem = &TypeSpec{kind: KindUnion, goType: anyType, options: nonNone, pep604: pep604}
	}
	o := optionalOf(elem, pep604)
	o.options = uniq
	return o
}
