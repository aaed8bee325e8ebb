package reply

import (
	"cmp"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/sigwire/adapter/internal/value"
	"github.com/sigwire/adapter/signature"
)

// maxXMLDepth bounds the nesting of elements read.
const maxXMLDepth = 64

// collectXML files the elements directly inside text[from:to] under the
// outputs they name; when none names an output it looks inside wrapper
// elements (two levels at most). It reports whether any output element was
// found.
func collectXML(sig *signature.Signature, text string, from, to int, found [][]xmlElem, depth int) (bool, error) {
	isField := func(name string) bool { return outputIndex(sig, name) >= 0 }
	var buf [8]xmlElem // the elements of a reply's level, most often
	els, err := appendXML(buf[:0], text, from, to, isField)
	if err != nil {
		return false, err
	}
	hits := 0
	for k := range els {
		els[k].field = int32(outputIndex(sig, els[k].key()))
		if els[k].field >= 0 {
			hits++
		}
	}
	if hits > 0 {
		fileXML(found, els, hits)
		return true, nil
	}
	if depth >= 2 {
		return false, nil
	}
	hit := false
	for _, el := range els {
		if el.selfClosing || isInput(sig, el.key()) {
			continue
		}
		inner, err := collectXML(sig, text, el.start, el.end, found, depth+1)
		if err != nil {
			return false, err
		}
		hit = hit || inner
	}
	return hit, nil
}

// fileXML appends the hits output elements of els (field >= 0) to found,
// in order, output by output: one allocation holds them all, each output's
// elements a part of it (capped, so that a later append copies).
func fileXML(found [][]xmlElem, els []xmlElem, hits int) {
	all := make([]xmlElem, 0, hits)
	for _, el := range els {
		if el.field >= 0 {
			all = append(all, el)
		}
	}
	byField := func(a, b xmlElem) int { return cmp.Compare(a.field, b.field) }
	if !slices.IsSortedFunc(all, byField) {
		slices.SortStableFunc(all, byField)
	}
	for len(all) > 0 {
		i, n := all[0].field, 1
		for n < len(all) && all[n].field == i {
			n++
		}
		if found[i] == nil {
			found[i] = all[:n:n]
		} else {
			found[i] = append(found[i], all[:n]...)
		}
		all = all[n:]
	}
}

// xmlFieldTree turns a field's elements into decoded data for
// value.FromJSON: text leaves, []any for lists, map[string]any for structs
// and dicts, nil for an empty optional element.
//
// A field given in several elements is, for a list, one item per element
// (<tags>a</tags><tags>b</tags>, as DSPy reads it), unless each element
// holds the whole list (its items as elements, or a JSON list, for items
// that are not containers); otherwise, and for the whole lists, the
// elements repeat one value: they must give the same value for the field's
// type (written alike or not: <n>7</n> and <n> 7 </n>), or the field is
// ErrAmbiguous. Never the markup of the items as values.
func xmlFieldTree(text string, els []xmlElem, spec *signature.TypeSpec) (any, error) {
	return elementsTree(text, els, spec, 0)
}

// elementsTree is xmlFieldTree for the elements of one name at a depth: a
// field's (0) or a struct's or dict's member's, by the same rule.
func elementsTree(text string, els []xmlElem, spec *signature.TypeSpec, depth int) (any, error) {
	if len(els) > 1 {
		ls := listSpec(spec)
		whole := 0
		if ls != nil {
			for _, el := range els {
				if wholeList(text, el, ls) {
					whole++
				}
			}
		}
		switch {
		case ls != nil && whole == 0:
			items := make([]any, 0, len(els))
			for _, el := range els {
				v, err := xmlTree(text, el, ls.Elem(), depth)
				if err != nil {
					return nil, err
				}
				items = append(items, v)
			}
			return items, nil
		case ls != nil && whole < len(els):
			return nil, wrapf(errAmbiguous, "the field appears as a whole list and as items")
		}
		first, err := xmlTree(text, els[0], spec, depth)
		if err != nil {
			return nil, err
		}
		for _, el := range els[1:] {
			v, err := xmlTree(text, el, spec, depth)
			if err != nil {
				return nil, err
			}
			if !sameValue(first, v, spec) {
				return nil, wrapf(errAmbiguous, "the field appears twice with different values")
			}
		}
		return first, nil
	}
	return xmlTree(text, els[0], spec, depth)
}

// wholeList reports whether el, one of several elements of a list field
// of type ls, holds the whole list rather than one item: its item type is
// not a container (a list, dict or struct, whose items are elements with
// children of their own) and el holds elements or a JSON list; or its
// items are structs or dicts and el holds only <item> elements (the XML
// adapter's list).
func wholeList(text string, el xmlElem, ls *signature.TypeSpec) bool {
	item := ls.Elem()
	if item.Kind() == signature.KindOptional {
		item = item.Elem()
	}
	trimmed := strings.TrimSpace(text[el.start:el.end])
	var buf [8]xmlElem
	children, err := appendXML(buf[:0], text, el.start, el.end, nil)
	if err != nil {
		return false
	}
	switch item.Kind() {
	case signature.KindList:
		return false
	case signature.KindStruct, signature.KindDict:
		for _, c := range children {
			if c.name != "item" {
				return false
			}
		}
		return len(children) > 0
	}
	return len(children) > 0 || strings.HasPrefix(trimmed, "[")
}

// sameValue reports whether two trees of a field give the same value of
// its type (compared as trees when either does not convert).
func sameValue(a, b any, spec *signature.TypeSpec) bool {
	va, errA := value.FromJSON(a, spec)
	vb, errB := value.FromJSON(b, spec)
	if errA == nil && errB == nil {
		return reflect.DeepEqual(va, vb)
	}
	return reflect.DeepEqual(a, b)
}

func listSpec(spec *signature.TypeSpec) *signature.TypeSpec {
	if spec.Kind() == signature.KindOptional {
		spec = spec.Elem()
	}
	if spec.Kind() == signature.KindList {
		return spec
	}
	return nil
}

// xmlTree reads one element by the field type.
func xmlTree(text string, el xmlElem, spec *signature.TypeSpec, depth int) (any, error) {
	if depth > maxXMLDepth {
		return nil, wrapf(value.ErrInvalid, "elements nested deeper than "+strconv.Itoa(maxXMLDepth)+" levels")
	}
	content := text[el.start:el.end]
	trimmed := strings.TrimSpace(content)
	if el.selfClosing && spec.Nullable() {
		return nil, nil // <note />, as the XML adapter writes None
	}
	if spec.Kind() == signature.KindOptional {
		if trimmed == "" && !hasEmptyValue(spec.Elem()) {
			return nil, nil // <n></n> for an Optional[int]
		}
		spec = spec.Elem()
	}
	switch spec.Kind() {
	case signature.KindList, signature.KindStruct, signature.KindDict:
		if strings.HasPrefix(trimmed, "[") || strings.HasPrefix(trimmed, "{") {
			return xmlText(trimmed), nil // JSON inside the element
		}
		var buf [8]xmlElem
		children, err := appendXML(buf[:0], text, el.start, el.end, nil)
		if err != nil {
			return nil, err
		}
		for _, c := range children {
			if !c.closed {
				return nil, wrapf(errTruncated, "element <"+c.name+"> is not closed")
			}
		}
		if len(children) == 0 && trimmed != "" {
			// Text, not elements: read by the text rules (a fenced list
			// after a line of reasoning, bullets, one item, keyword
			// arguments, None for an optional).
			return xmlText(trimmed), nil
		}
		if spec.Kind() == signature.KindList {
			items := make([]any, 0, len(children))
			if len(children) == 0 {
				return items, nil
			}
			for _, c := range children {
				v, err := xmlTree(text, c, spec.Elem(), depth+1)
				if err != nil {
					return nil, err
				}
				items = append(items, v)
			}
			return items, nil
		}
		m := make(map[string]any, len(children))
		var repeated map[string][]xmlElem // members given more than once
		for _, c := range children {
			key := c.key()
			if _, again := m[key]; again {
				if repeated == nil {
					repeated = map[string][]xmlElem{}
				}
				repeated[key] = nil
				continue
			}
			sub := memberSpec(spec, key)
			if sub == nil {
				continue // pydantic ignores unknown keys
			}
			v, err := xmlTree(text, c, sub, depth+1)
			if err != nil {
				return nil, err
			}
			m[key] = v
		}
		if repeated != nil {
			// Repeated members: a list's items, or one value repeated
			// (see xmlFieldTree): <tags><a>3</a><a>4</a></tags> is
			// {"a": [3, 4]}.
			for _, c := range children {
				if group, ok := repeated[c.key()]; ok {
					repeated[c.key()] = append(group, c)
				}
			}
			for key, group := range repeated {
				v, err := elementsTree(text, group, memberSpec(spec, key), depth+1)
				if err != nil {
					return nil, err
				}
				m[key] = v
			}
		}
		return m, nil
	}
	if depth == 0 {
		// A field's own text loses its surrounding white space however
		// written, as DSPy's strip() and the field stream read it; only
		// the text of nested elements keeps white space written as
		// character references (the XML adapter writes it so).
		return strings.TrimSpace(xmlText(trimmed)), nil
	}
	return xmlText(trimmed), nil
}

// hasEmptyValue reports a type with an empty value an element without
// content stands for: "" for a str, [] for a list, {} for a dict. For
// these an optional is None only as a self-closing element (<note />),
// as the XML adapter writes None; <note></note> is "".
func hasEmptyValue(spec *signature.TypeSpec) bool {
	switch spec.Kind() {
	case signature.KindString, signature.KindList, signature.KindDict:
		return true
	}
	return false
}

// memberSpec is the type of a dict's values or of a struct's member key
// (nil for a key the struct does not have).
func memberSpec(spec *signature.TypeSpec, key string) *signature.TypeSpec {
	if spec.Kind() == signature.KindDict {
		return spec.Elem()
	}
	return structFieldSpec(spec, key)
}

func structFieldSpec(spec *signature.TypeSpec, name string) *signature.TypeSpec {
	fields, err := spec.Fields()
	if err != nil {
		return nil
	}
	var folded *signature.TypeSpec
	for _, sf := range fields {
		if sf.Field.Name == name {
			return sf.Field.Spec
		}
		if strings.EqualFold(sf.Field.Name, name) {
			folded = sf.Field.Spec
		}
	}
	return folded
}

// xmlText is an element's text, given its content without the
// surrounding white space (trimmed): CDATA sections literally, entities
// decoded elsewhere, child markup kept as written, without its
// surrounding white space. White space written as a character reference
// (&#32;x) is the value's own and stays (see xmlTree for a field's own
// text).
func xmlText(trimmed string) string {
	s := trimmed
	if !hasMarkup(s) {
		return s
	}
	t := decodeText(s)
	if strings.HasPrefix(s, "<![CDATA[") {
		t = strings.TrimLeftFunc(t, unicode.IsSpace)
	}
	if strings.HasSuffix(s, "]]>") {
		t = strings.TrimRightFunc(t, unicode.IsSpace)
	}
	return t
}

// hasMarkup reports an '&' or '<' in s: text that may hold an entity,
// CDATA or markup (strings.ContainsAny, in two vectorised searches).
func hasMarkup(s string) bool {
	return strings.IndexByte(s, '<') >= 0 || strings.IndexByte(s, '&') >= 0
}

// decodeText decodes an element's text: CDATA sections literally,
// entities decoded elsewhere, child markup kept as written.
func decodeText(s string) string {
	var b strings.Builder
	for {
		i := strings.Index(s, "<![CDATA[")
		if i < 0 {
			b.WriteString(decodeEntities(s))
			break
		}
		b.WriteString(decodeEntities(s[:i]))
		s = s[i+len("<![CDATA["):]
		end := strings.Index(s, "]]>")
		if end < 0 {
			b.WriteString(s)
			break
		}
		b.WriteString(s[:end])
		s = s[end+3:]
	}
	return b.String()
}

// xmlEntity decodes the entity at the start of s (&amp; &#38; &#x26; …),
// returning its text and length, or n == 0 when s does not start with one.
func xmlEntity(s string) (string, int) {
	end := strings.IndexByte(s[:min(len(s), 11)], ';') // entities are short: never scan further
	if end < 2 {
		return "", 0
	}
	name := s[1:end]
	switch name {
	case "amp":
		return "&", end + 1
	case "lt":
		return "<", end + 1
	case "gt":
		return ">", end + 1
	case "quot":
		return `"`, end + 1
	case "apos":
		return "'", end + 1
	}
	if name[0] == '#' {
		var n uint64
		var err error
		if len(name) > 1 && (name[1] == 'x' || name[1] == 'X') {
			n, err = strconv.ParseUint(name[2:], 16, 32)
		} else {
			n, err = strconv.ParseUint(name[1:], 10, 32)
		}
		if err == nil && n > 0 && n <= unicode.MaxRune {
			return string(rune(n)), end + 1
		}
	}
	return "", 0
}

// xmlElem is one element found by scanXML: its content is
// text[start:end].
type xmlElem struct {
	name        string
	entryKey    string // the key attribute of an <entry> element
	start, end  int
	next        int   // where scanning continues after the element
	field       int32 // set by collectXML: the output it names, or < 0
	hasKey      bool  // the element has a key attribute ("" is a key)
	selfClosing bool
	closed      bool
}

// key is the name a field or struct member is looked up by: an <entry>'s
// key attribute, else the tag name.
func (e xmlElem) key() string {
	if e.hasKey && e.name == "entry" {
		return e.entryKey
	}
	return e.name
}

// scanXML lists the elements directly inside text[from:to]. Text that is
// not markup, including a '<' that starts no tag, is skipped; comments,
// processing instructions and CDATA are stepped over. An element without
// its closing tag runs to the end (closed false).
//
// For the elements of output fields (isField), the reply's own structure
// decides: an element ends at the last closing tag before the next field
// element (a value may contain its own closing tag), and an element
// without a closing tag ends where the next field element starts (a
// forgotten closing tag); only the last one can run to the end unclosed.
func scanXML(text string, from, to int, isField func(string) bool) ([]xmlElem, error) {
	return appendXML(nil, text, from, to, isField)
}

// appendXML is scanXML appending to out.
func appendXML(out []xmlElem, text string, from, to int, isField func(string) bool) ([]xmlElem, error) {
	// Per tag name (lower case), once an element of that name was found
	// without its closing tag: the last closing tag of the name in
	// text[:to], so that the next ones do not search to the end again (a
	// reply of many unclosed tags would cost quadratic time).
	var lastClose map[string]int
	for i := from; i < to; {
		j := strings.IndexByte(text[i:to], '<')
		if j < 0 {
			break
		}
		i += j
		if skip := skipMarkup(text, i, to); skip > i {
			i = skip
			continue
		}
		el, ok := openTag(text, i, to)
		if !ok {
			i++
			continue
		}
		if !el.selfClosing {
			lc, known := to, false // to: not known, search
			if lastClose != nil {
				if v, ok := lastClose[strings.ToLower(el.name)]; ok {
					lc, known = v, true
				}
			}
			el.end, el.next, el.closed = closeTag(text, el.name, el.start, to, lc)
			if !el.closed && !known {
				if lastClose == nil {
					lastClose = map[string]int{}
				}
				lastClose[strings.ToLower(el.name)] = lastCloseFold(text[:to], el.name)
			}
			if isField != nil && isField(el.key()) {
				el = widenField(text, el, to, isField)
			}
		}
		if len(out) == maxXMLElements {
			return nil, errXMLTooMany
		}
		out = append(out, el)
		i = el.next
	}
	return out, nil
}

// maxXMLElements bounds the elements read at one level: no real reply has
// as many, and a reply made of nothing else ("<a><a><a>…") would otherwise
// cost memory many times its size.
const maxXMLElements = 1 << 16

var errXMLTooMany = fmt.Errorf("more than %d XML elements at one level", maxXMLElements)

// widenField applies scanXML's rules for a field element.
func widenField(text string, el xmlElem, to int, isField func(string) bool) xmlElem {
	from := el.next
	if !el.closed {
		from = el.start
	}
	boundary := nextFieldOpen(text, from, to, isField)
	if !el.closed {
		if boundary < to {
			el.end, el.next, el.closed = boundary, boundary, true
		}
		return el
	}
	// A later closing tag of the same name before the next field element.
	for i := el.next; i < boundary; {
		j := indexCloseFold(text[i:boundary], el.name)
		if j < 0 {
			break
		}
		k := i + j + len("</") + len(el.name)
		e := strings.IndexByte(text[k:boundary], '>')
		if e < 0 {
			break
		}
		if strings.TrimSpace(text[k:k+e]) == "" {
			el.end, el.next = i+j, k+e+1
		}
		i = k + e + 1
	}
	return el
}

// nextFieldOpen returns the start of the next opening tag of a field
// element in text[from:to], or to.
func nextFieldOpen(text string, from, to int, isField func(string) bool) int {
	for i := from; i < to; {
		j := strings.IndexByte(text[i:to], '<')
		if j < 0 {
			return to
		}
		i += j
		if el, ok := openTag(text, i, to); ok && isField(el.key()) {
			return i
		}
		i++
	}
	return to
}

// lastCloseFold returns the index of the last "</name" in text (case-
// insensitively), or -1.
func lastCloseFold(text, name string) int {
	for j := len(text); ; {
		i := strings.LastIndex(text[:j], "</")
		if i < 0 {
			return -1
		}
		if len(text)-i-2 >= len(name) && strings.EqualFold(text[i+2:i+2+len(name)], name) {
			return i
		}
		j = i
	}
}

// indexCloseFold is indexFold(s, "</"+name), without building the tag.
func indexCloseFold(s, name string) int {
	last := len(s) - len("</") - len(name) // the last index the tag fits at
	for i := 0; i <= last; {
		j := strings.IndexByte(s[i:last+1], '<')
		if j < 0 {
			return -1
		}
		i += j
		if s[i+1] == '/' && strings.EqualFold(s[i+2:i+2+len(name)], name) {
			return i
		}
		i++
	}
	return -1
}

// indexFold is strings.Index, ASCII case-insensitively.
func indexFold(s, sub string) int {
	if sub == "" {
		return 0
	}
	// Every use starts sub with '<', which has no case: find it fast.
	first := sub[0]
	for i := 0; i+len(sub) <= len(s); {
		j := strings.IndexByte(s[i:len(s)-len(sub)+1], first)
		if j < 0 {
			return -1
		}
		i += j
		if strings.EqualFold(s[i:i+len(sub)], sub) {
			return i
		}
		i++
	}
	return -1
}

// skipMarkup returns the index after a comment, processing instruction,
// CDATA section, doctype or stray closing tag at i, or i.
func skipMarkup(text string, i, to int) int {
	if i+1 >= to || text[i+1] != '!' && text[i+1] != '?' && text[i+1] != '/' {
		return i // a start tag or text: no markup to skip
	}
	s := text[i:to]
	for _, m := range [...]struct{ open, close string }{{"<!--", "-->"}, {"<![CDATA[", "]]>"}, {"<?", "?>"}, {"<!", ">"}, {"</", ">"}} {
		if strings.HasPrefix(s, m.open) {
			if e := strings.Index(s[len(m.open):], m.close); e >= 0 {
				return i + len(m.open) + e + len(m.close)
			}
			return to
		}
	}
	return i
}

// openTag reads a start tag at text[i] ("<name attr='v'>" or "<name/>").
func openTag(text string, i, to int) (xmlElem, bool) {
	j := i + 1
	for j < to && IsNameByte(text[j], j == i+1) {
		j++
	}
	if j == i+1 {
		return xmlElem{}, false
	}
	el := xmlElem{name: text[i+1 : j]}
	var quote byte
	for k := j; k < to; k++ {
		c := text[k]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '<':
			return xmlElem{}, false // not a tag after all ("a <b and c")
		case c == '>':
			attrs := text[j:k]
			if len(attrs) > 0 && attrs[0] != ' ' && attrs[0] != '\t' && attrs[0] != '\n' && attrs[0] != '/' {
				return xmlElem{}, false
			}
			el.selfClosing = strings.HasSuffix(attrs, "/")
			if strings.IndexByte(attrs, '=') >= 0 { // no attribute without one
				el.entryKey, el.hasKey = attrValue(attrs, "key")
			}
			el.start, el.end, el.next = k+1, k+1, k+1
			if el.selfClosing {
				el.closed = true
			}
			return el, true
		}
	}
	return xmlElem{}, false
}

func IsNameByte(c byte, first bool) bool {
	switch {
	case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80:
		return true
	case !first && (c >= '0' && c <= '9' || c == '-' || c == '.' || c == ':'):
		return true
	}
	return false
}

// attrValue returns the value of attribute name in a start tag's
// attribute text, entities decoded and nothing trimmed (a key's blanks are
// its own), and whether the tag has it.
func attrValue(attrs, name string) (string, bool) {
	for s := attrs; ; {
		i := strings.Index(s, name)
		if i < 0 {
			return "", false
		}
		rest := strings.TrimLeft(s[i+len(name):], " \t\n")
		if (i == 0 || strings.IndexByte(" \t\n", s[i-1]) >= 0) && strings.HasPrefix(rest, "=") {
			rest = strings.TrimLeft(rest[1:], " \t\n")
			if len(rest) > 1 && (rest[0] == '"' || rest[0] == '\'') {
				if e := strings.IndexByte(rest[1:], rest[0]); e >= 0 {
					return decodeEntities(rest[1 : 1+e]), true
				}
			}
			return "", false
		}
		s = s[i+len(name):]
	}
}

// closeTag finds the end tag of name for content starting at start,
// counting nested elements of the same name (case-insensitively). It
// returns the content end, where scanning continues, and whether the end
// tag was found; without one the element runs to the end.
func closeTag(text, name string, start, to int, lastClose int) (end, next int, closed bool) {
	if lastClose < start {
		return to, to, false // no closing tag after start: no need to count nesting
	}
	depth := 0
	for i := start; i < to; {
		j := strings.IndexByte(text[i:to], '<')
		if j < 0 {
			break
		}
		i += j
		s := text[i:to]
		switch {
		case strings.HasPrefix(s, "<![CDATA["), strings.HasPrefix(s, "<!--"):
			i = skipMarkup(text, i, to)
			continue
		case strings.HasPrefix(s, "</"):
			k := i + 2
			for k < to && IsNameByte(text[k], k == i+2) {
				k++
			}
			if strings.EqualFold(text[i+2:k], name) {
				e := strings.IndexByte(text[k:to], '>')
				if e < 0 {
					return i, to, false
				}
				if depth == 0 {
					return i, k + e + 1, true
				}
				depth--
			}
			i = k
			continue
		}
		if el, ok := openTag(text, i, to); ok && strings.EqualFold(el.name, name) && !el.selfClosing {
			if depth++; depth > maxXMLDepth {
				return to, to, false // nested deeper than any answer: give up
			}
			i = el.start
			continue
		}
		i++
	}
	return to, to, false
}

// decodeEntities decodes XML entities; an '&' that starts none stays.
func decodeEntities(s string) string {
	if !strings.Contains(s, "&") {
		return s
	}
	var b strings.Builder
	for len(s) > 0 {
		i := strings.IndexByte(s, '&')
		if i < 0 {
			b.WriteString(s)
			break
		}
		b.WriteString(s[:i])
		if r, n := xmlEntity(s[i:]); n > 0 {
			b.WriteString(r)
			s = s[i+n:]
			continue
		}
		b.WriteByte('&')
		s = s[i+1:]
	}
	return b.String()
}
