package value

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// maxLiteralDepth bounds nesting in Python literals.
const maxLiteralDepth = 512

var errLiteral = errors.New("not a Python literal")

// pyLiteral parses a Python literal the way ast.literal_eval does for the
// subset models write: numbers (underscores, 0x/0o/0b, exponents), strings
// in single or double quotes with escapes, True/False/None, lists, tuples,
// sets and dicts. A top-level comma list without brackets is a tuple.
// Values come back as encoding/json with UseNumber would give them:
// json.Number, string, bool, nil, []any, map[string]any.
func pyLiteral(s string) (any, error) {
	p := &litParser{s: s}
	p.space()
	v, err := p.value(0)
	if err != nil {
		return nil, err
	}
	p.space()
	if p.i < len(p.s) && p.s[p.i] == ',' {
		items := []any{v}
		for p.i < len(p.s) && p.s[p.i] == ',' {
			p.i++
			p.space()
			if p.i == len(p.s) {
				break
			}
			w, err := p.value(0)
			if err != nil {
				return nil, err
			}
			items = append(items, w)
			p.space()
		}
		v = items
	}
	if p.i != len(p.s) {
		return nil, fmt.Errorf("%w: unexpected %q at offset %d", errLiteral, p.rest(), p.i)
	}
	return v, nil
}

type litParser struct {
	s string
	i int
}

func (p *litParser) rest() string {
	r := p.s[p.i:]
	if len(r) > 20 {
		r = r[:20] + "…"
	}
	return r
}

func (p *litParser) space() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *litParser) value(depth int) (any, error) {
	if depth > maxLiteralDepth {
		return nil, fmt.Errorf("%w: nested too deeply", errLiteral)
	}
	if p.i >= len(p.s) {
		return nil, fmt.Errorf("%w: unexpected end", errLiteral)
	}
	switch c := p.s[p.i]; {
	case c == '[':
		return p.seq(']', depth)
	case c == '(':
		return p.seq(')', depth)
	case c == '{':
		return p.dict(depth)
	case c == '\'' || c == '"':
		return p.str()
	case c == '-' || c == '+' || c == '.' || (c >= '0' && c <= '9'):
		return p.number()
	}
	for _, kw := range [...]struct {
		word string
		v    any
	}{{"True", true}, {"False", false}, {"None", nil}} {
		if strings.HasPrefix(p.s[p.i:], kw.word) && !identAt(p.s, p.i+len(kw.word)) {
			p.i += len(kw.word)
			return kw.v, nil
		}
	}
	return nil, fmt.Errorf("%w: unexpected %q", errLiteral, p.rest())
}

func identAt(s string, i int) bool {
	if i >= len(s) {
		return false
	}
	c := s[i]
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func (p *litParser) seq(end byte, depth int) (any, error) {
	p.i++
	items := []any{}
	for {
		p.space()
		if p.i < len(p.s) && p.s[p.i] == end {
			p.i++
			return items, nil
		}
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		items = append(items, v)
		p.space()
		if p.i < len(p.s) && p.s[p.i] == ',' {
			p.i++
			continue
		}
		if p.i < len(p.s) && p.s[p.i] == end {
			p.i++
			return items, nil
		}
		return nil, fmt.Errorf("%w: expected ',' or %q", errLiteral, end)
	}
}

func (p *litParser) dict(depth int) (any, error) {
	p.i++
	m := map[string]any{}
	var set []any
	for {
		p.space()
		if p.i < len(p.s) && p.s[p.i] == '}' {
			p.i++
			if set != nil {
				return set, nil
			}
			return m, nil
		}
		k, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		p.space()
		if p.i < len(p.s) && p.s[p.i] == ':' && set == nil {
			p.i++
			p.space()
			v, err := p.value(depth + 1)
			if err != nil {
				return nil, err
			}
			key, err := keyString(k)
			if err != nil {
				return nil, err
			}
			m[key] = v
		} else if len(m) == 0 {
			set = append(set, k) // a set literal: {1, 2}
		} else {
			return nil, fmt.Errorf("%w: expected ':'", errLiteral)
		}
		p.space()
		if p.i < len(p.s) && p.s[p.i] == ',' {
			p.i++
			continue
		}
		if p.i < len(p.s) && p.s[p.i] == '}' {
			continue
		}
		return nil, fmt.Errorf("%w: expected ',' or '}'", errLiteral)
	}
}

// keyString names a dict key as JSON would: strings as they are, numbers
// and bools in their JSON spelling.
func keyString(k any) (string, error) {
	switch x := k.(type) {
	case string:
		return x, nil
	case json.Number:
		return x.String(), nil
	case bool:
		return strconv.FormatBool(x), nil
	case nil:
		return "null", nil
	}
	return "", fmt.Errorf("%w: unhashable dict key", errLiteral)
}

func (p *litParser) str() (any, error) {
	q := p.s[p.i]
	triple := strings.HasPrefix(p.s[p.i:], strings.Repeat(string(q), 3))
	if triple {
		p.i += 3
	} else {
		p.i++
	}
	var b strings.Builder
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case c == q && (!triple || strings.HasPrefix(p.s[p.i:], strings.Repeat(string(q), 3))):
			if triple {
				p.i += 3
			} else {
				p.i++
			}
			return b.String(), nil
		case c == '\n' && !triple:
			return nil, fmt.Errorf("%w: line break in string", errLiteral)
		case c == '\\' && p.i+1 < len(p.s):
			if err := p.escape(&b); err != nil {
				return nil, err
			}
		default:
			b.WriteByte(c)
			p.i++
		}
	}
	return nil, fmt.Errorf("%w: unterminated string", errLiteral)
}

func (p *litParser) escape(b *strings.Builder) error {
	e := p.s[p.i+1]
	p.i += 2
	switch e {
	case 'n':
		b.WriteByte('\n')
	case 't':
		b.WriteByte('\t')
	case 'r':
		b.WriteByte('\r')
	case '0':
		b.WriteByte(0)
	case '\\', '\'', '"':
		b.WriteByte(e)
	case '\n':
	case 'x', 'u', 'U':
		n := map[byte]int{'x': 2, 'u': 4, 'U': 8}[e]
		if p.i+n > len(p.s) {
			return fmt.Errorf("%w: bad escape", errLiteral)
		}
		r, err := strconv.ParseUint(p.s[p.i:p.i+n], 16, 32)
		if err != nil || !utf8.ValidRune(rune(r)) {
			return fmt.Errorf("%w: bad escape", errLiteral)
		}
		b.WriteRune(rune(r))
		p.i += n
	default:
		b.WriteByte('\\')
		b.WriteByte(e)
	}
	return nil
}

func (p *litParser) number() (any, error) {
	start := p.i
	for p.i < len(p.s) {
		c := p.s[p.i]
		if c == '-' || c == '+' || c == '.' || c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' {
			if (c == '-' || c == '+') && p.i > start && p.s[p.i-1] != 'e' && p.s[p.i-1] != 'E' {
				break
			}
			p.i++
			continue
		}
		break
	}
	n, ok := pyNumber(p.s[start:p.i])
	if !ok {
		return nil, fmt.Errorf("%w: bad number %q", errLiteral, p.s[start:p.i])
	}
	return n, nil
}

// pyNumber reads a Python int or float literal (with sign): underscores
// between digits, 0x/0o/0b prefixes, exponents. It returns the number in
// JSON spelling.
func pyNumber(s string) (json.Number, bool) {
	if s == "" {
		return "", false
	}
	sign := ""
	body := s
	if body[0] == '-' || body[0] == '+' {
		if body[0] == '-' {
			sign = "-"
		}
		body = body[1:]
	}
	if body == "" {
		return "", false
	}
	if strings.Contains(body, "_") {
		if !validUnderscores(body) {
			return "", false
		}
		body = strings.ReplaceAll(body, "_", "")
	}
	if len(body) > 2 && body[0] == '0' {
		base := 0
		switch body[1] {
		case 'x', 'X':
			base = 16
		case 'o', 'O':
			base = 8
		case 'b', 'B':
			base = 2
		}
		if base != 0 {
			u, err := strconv.ParseUint(body[2:], base, 64)
			if err != nil {
				return "", false
			}
			return json.Number(sign + strconv.FormatUint(u, 10)), true
		}
	}
	isInt := true
	for i := 0; i < len(body); i++ {
		c := body[i]
		if c < '0' || c > '9' {
			isInt = false
			break
		}
	}
	if isInt {
		// Python rejects leading zeros on non-zero ints ("012").
		if len(body) > 1 && body[0] == '0' {
			if strings.Trim(body, "0") != "" {
				return "", false
			}
			body = "0"
		}
		return json.Number(sign + body), true
	}
	for i := 0; i < len(body); i++ {
		c := body[i]
		if !(c >= '0' && c <= '9' || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-') {
			return "", false
		}
	}
	if _, err := strconv.ParseFloat(body, 64); err != nil {
		var ne *strconv.NumError
		if !errors.As(err, &ne) || ne.Err != strconv.ErrRange {
			return "", false
		}
	}
	return json.Number(sign + body), true
}

// validUnderscores: single underscores between digits only, as Python.
func validUnderscores(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] != '_' {
			continue
		}
		if i == 0 || i == len(s)-1 || !isHexDigit(s[i-1]) || !isHexDigit(s[i+1]) {
			return false
		}
	}
	return true
}

func isHexDigit(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// pyKwargs reads keyword-argument syntax, which models write for tool
// arguments: `query="Marie Curie", k=3`. Values are Python literals.
func pyKwargs(s string) (map[string]any, error) {
	p := &litParser{s: s}
	m := map[string]any{}
	for {
		p.space()
		start := p.i
		for p.i < len(p.s) && (identAt(p.s, p.i) && (p.i > start || p.s[p.i] < '0' || p.s[p.i] > '9')) {
			p.i++
		}
		if p.i == start {
			return nil, fmt.Errorf("%w: expected a keyword", errLiteral)
		}
		key := p.s[start:p.i]
		p.space()
		if p.i >= len(p.s) || p.s[p.i] != '=' {
			return nil, fmt.Errorf("%w: expected '=' after %q", errLiteral, key)
		}
		p.i++
		p.space()
		v, err := p.value(0)
		if err != nil {
			return nil, err
		}
		if _, dup := m[key]; dup {
			return nil, fmt.Errorf("%w: keyword %q repeated", errLiteral, key)
		}
		m[key] = v
		p.space()
		if p.i == len(p.s) {
			return m, nil
		}
		if p.s[p.i] != ',' {
			return nil, fmt.Errorf("%w: expected ','", errLiteral)
		}
		p.i++
		p.space()
		if p.i == len(p.s) {
			return m, nil
		}
	}
}
