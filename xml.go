package adapter

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode"

	openai "github.com/sashabaranov/go-openai"

	"github.com/sigwire/adapter/internal/value"
	"github.com/sigwire/adapter/signature"
)

// XML is DSPy's XMLAdapter: every field in a <name>…</name> element;
// list, dict and struct outputs as nested elements (<item>, child tags,
// <entry key="…">). Its prompts are byte-identical to DSPy 3.3.1's.
//
// Its parser reads what models write rather than strict XML: unescaped &
// and < in text, CDATA, tags in another case, prose and code fences around
// the elements, a <think> block before them, a wrapper element around them,
// a missing closing tag on the last field, JSON inside an element. A field
// repeated with different values is ErrAmbiguous (a list field takes the
// repeats as items); a nested value cut off inside an element is
// ErrTruncated.
//
// The zero value is ready to use and safe for concurrent use.
type XML struct {
	// NoFallback turns off the one retry with the JSON adapter after a
	// parse failure the XML parser cannot recover.
	NoFallback bool
	// NativeTools asks for native function calling, as Chat's does.
	NativeTools bool
}

func (x XML) nativeTools() bool { return x.NativeTools }

// Name returns "xml".
func (XML) Name() string { return "xml" }

// Fallback returns the JSON adapter, or nil while NoFallback is set.
func (x XML) Fallback() Adapter {
	if x.NoFallback {
		return nil
	}
	return jsonFallback
}

// Format renders the system message, the demos as user/assistant pairs
// (incomplete ones first) and the user message with the XML reminder.
func (x XML) Format(sig *signature.Signature, demos []Values, inputs Values) ([]openai.ChatCompletionMessage, error) {
	if sig == nil {
		return nil, errNilSignature
	}
	msgs := make([]openai.ChatCompletionMessage, 0, 2+2*len(demos))
	sys, err := xmlSystem(sig)
	if err != nil {
		return nil, err
	}
	msgs = append(msgs, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleSystem, Content: sys})
	return formatTurns(msgs, sig, demos, inputs, xmlUser, xmlAssistant, x.NativeTools)
}

func xmlSystem(sig *signature.Signature) (string, error) {
	var b strings.Builder
	b.Grow(320 + fieldsSize(sig) + 2*len(sig.Instructions()))
	b.WriteString("Your input fields are:\n")
	writeFieldDescriptions(&b, sig, false)
	b.WriteString("\nYour output fields are:\n")
	writeFieldDescriptions(&b, sig, true)
	b.WriteString("\nAll interactions will be structured in the following way, with the appropriate values filled in.\n\n")
	for i := range sig.NumInputs() {
		if i > 0 {
			b.WriteString("\n\n")
		}
		name := sig.Input(i).Name
		b.WriteString("<" + name + ">\n{" + name + "}\n</" + name + ">")
	}
	b.WriteString("\n\n")
	for i := range sig.NumOutputs() {
		if i > 0 {
			b.WriteString("\n\n")
		}
		f := sig.Output(i)
		if nestedXML(f.Spec) {
			b.WriteString(xmlSchema(f.Name, f.Spec, nil))
			continue
		}
		b.WriteString("<" + f.Name + ">\n{" + f.Name + "}")
		note, err := typeNote(f)
		if err != nil {
			return "", err
		}
		if note != "" {
			b.WriteString("        # note: the value you produce ")
			b.WriteString(note)
		}
		b.WriteString("\n</" + f.Name + ">")
	}
	b.WriteByte('\n')
	writeObjective(&b, sig.Instructions())
	return b.String(), nil
}

// nestedXML reports an output written as nested elements: a list, dict or
// struct, possibly optional (DSPy's _uses_nested_xml).
func nestedXML(spec *signature.TypeSpec) bool {
	if spec.Kind() == signature.KindOptional {
		spec = spec.Elem()
	}
	if implementsAnyMarshaler(spec.GoType()) {
		return false // a type with its own serialization (ToolCalls, Image)
	}
	switch spec.Kind() {
	case signature.KindList, signature.KindDict, signature.KindStruct:
		return true
	}
	return false
}

// xmlSchema renders DSPy's _xml_schema: the element skeleton of a nested
// type with "..." leaves; a struct already on the path renders as a leaf.
func xmlSchema(tag string, spec *signature.TypeSpec, seen []reflect.Type) string {
	for spec.Kind() == signature.KindOptional {
		spec = spec.Elem()
	}
	if spec.Kind() == signature.KindUnion {
		for _, o := range spec.Options() {
			if o.Kind() != signature.KindNone {
				spec = o
				break
			}
		}
	}
	switch spec.Kind() {
	case signature.KindList:
		return "<" + tag + ">" + xmlSchema("item", spec.Elem(), seen) + "</" + tag + ">"
	case signature.KindStruct:
		if slices.Contains(seen, spec.GoType()) {
			break
		}
		fields, err := spec.Fields()
		if err != nil || len(fields) == 0 {
			break
		}
		var b strings.Builder
		b.WriteString("<" + tag + ">")
		for _, sf := range fields {
			b.WriteString(xmlSchema(sf.Field.Name, sf.Field.Spec, append(seen, spec.GoType())))
		}
		b.WriteString("</" + tag + ">")
		return b.String()
	}
	return "<" + tag + ">...</" + tag + ">"
}

// xmlFields renders DSPy's format_field_with_value for the inputs (or
// outputs): one element per field present in vals (every output, a
// missing one as missing), blank-line separated.
func xmlFields(b *strings.Builder, sig *signature.Signature, outputs bool, vals Values, missing string) error {
	n := sig.NumInputs()
	if outputs {
		n = sig.NumOutputs()
	}
	first := true
	for i := range n {
		f := field(sig, outputs, i)
		v, ok := vals[f.Name]
		if !ok && !outputs {
			continue
		}
		if !first {
			b.WriteString("\n\n")
		}
		first = false
		if !ok {
			b.WriteString("<" + f.Name + ">\n" + escapeXMLText(missing) + "\n</" + f.Name + ">")
			continue
		}
		if outputs && nestedXML(f.Spec) && isComposite(v) {
			if err := writeValueXML(b, reflect.ValueOf(v), f.Name, 0); err != nil {
				return &InputError{Field: f.Name, Err: err}
			}
			continue
		}
		s, err := formatValue(v, f)
		if err != nil {
			return err
		}
		if outputs && f.Spec.IsStr() {
			s = escapeXMLText(s)
		}
		b.WriteString("<" + f.Name + ">\n" + s + "\n</" + f.Name + ">")
	}
	return nil
}

// isComposite reports a value that serializes as a JSON object or array.
func isComposite(v any) bool {
	rv := reflect.ValueOf(v)
	for rv.IsValid() && (rv.Kind() == reflect.Pointer || rv.Kind() == reflect.Interface) {
		if rv.IsNil() {
			return false
		}
		rv = rv.Elem()
	}
	if !rv.IsValid() {
		return false
	}
	switch rv.Kind() {
	case reflect.Slice, reflect.Array:
		return rv.Type().Elem().Kind() != reflect.Uint8
	case reflect.Map, reflect.Struct:
		return !implementsAnyMarshaler(rv.Type())
	}
	return false
}

func implementsAnyMarshaler(t reflect.Type) bool {
	return t.Implements(reflect.TypeFor[interface{ MarshalJSON() ([]byte, error) }]()) ||
		t.Implements(reflect.TypeFor[interface{ MarshalText() ([]byte, error) }]())
}

// escapeXMLText escapes & and <, the two characters DSPy escapes in text.
func escapeXMLText(s string) string {
	if !strings.ContainsAny(s, "&<") {
		return s
	}
	return strings.NewReplacer("&", "&amp;", "<", "&lt;").Replace(s)
}

// maxXMLDepth bounds the nesting written and read.
const maxXMLDepth = 64

// writeValueXML is DSPy's _value_to_xml: lists as <item> children (empty:
// <tag />), maps and structs as child elements (keys that are not names as
// <entry key="…">), None as <tag />, scalars as escaped text.
func writeValueXML(b *strings.Builder, v reflect.Value, tag string, depth int) error {
	if depth > maxXMLDepth {
		return fmt.Errorf("value nested deeper than %d levels", maxXMLDepth)
	}
	open, closing, empty := "<"+tag+">", "</"+tag+">", "<"+tag+" />"
	if !validXMLName(tag) {
		open, closing, empty = "<entry key="+quoteAttr(tag)+">", "</entry>", "<entry key="+quoteAttr(tag)+" />"
	}
	for v.IsValid() && (v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface) {
		if v.IsNil() {
			b.WriteString(empty)
			return nil
		}
		v = v.Elem()
	}
	if !v.IsValid() {
		b.WriteString(empty)
		return nil
	}
	switch {
	case (v.Kind() == reflect.Slice || v.Kind() == reflect.Array) && v.Type().Elem().Kind() != reflect.Uint8:
		if v.Kind() == reflect.Slice && v.IsNil() {
			b.WriteString(empty)
			return nil
		}
		if v.Len() == 0 {
			b.WriteString(empty)
			return nil
		}
		b.WriteString(open)
		for i := range v.Len() {
			if err := writeValueXML(b, v.Index(i), "item", depth+1); err != nil {
				return err
			}
		}
		b.WriteString(closing)
		return nil
	case v.Kind() == reflect.Map && !implementsAnyMarshaler(v.Type()):
		if v.IsNil() {
			b.WriteString(empty)
			return nil
		}
		keys := v.MapKeys()
		names := make([]string, len(keys))
		order := make([]int, len(keys))
		for i, k := range keys {
			names[i], order[i] = fmt.Sprint(k.Interface()), i
		}
		slices.SortFunc(order, func(x, y int) int { return strings.Compare(names[x], names[y]) })
		b.WriteString(open)
		for _, i := range order {
			if err := writeValueXML(b, v.MapIndex(keys[i]), names[i], depth+1); err != nil {
				return err
			}
		}
		b.WriteString(closing)
		return nil
	case v.Kind() == reflect.Struct && !implementsAnyMarshaler(v.Type()):
		spec, err := signature.SpecOf(v.Type())
		if err != nil {
			return err
		}
		fields, err := spec.Fields()
		if err != nil {
			return err
		}
		b.WriteString(open)
		for _, sf := range fields {
			if err := writeValueXML(b, v.FieldByIndex(sf.Index), sf.Field.Name, depth+1); err != nil {
				return err
			}
		}
		b.WriteString(closing)
		return nil
	}
	s, err := value.Format(v.Interface(), nil)
	if err != nil {
		return err
	}
	b.WriteString(open + escapeXMLText(s) + closing)
	return nil
}

// validXMLName is DSPy's test for a key usable as a tag: an identifier
// once '-' and '.' (after the first character) count as '_'.
func validXMLName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		switch {
		case r == '_' || unicode.IsLetter(r):
		case i > 0 && (unicode.IsDigit(r) || r == '-' || r == '.'):
		default:
			return false
		}
	}
	return true
}

// quoteAttr is xml.sax.saxutils.quoteattr.
func quoteAttr(s string) string {
	s = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", "\n", "&#10;", "\r", "&#13;", "\t", "&#9;").Replace(s)
	switch {
	case !strings.Contains(s, `"`):
		return `"` + s + `"`
	case !strings.Contains(s, "'"):
		return "'" + s + "'"
	}
	return `"` + strings.ReplaceAll(s, `"`, "&quot;") + `"`
}

// xmlUser renders the user message: the prefix, the inputs present, and on
// the main request the XML reminder; blank-line joined and stripped.
func xmlUser(sig *signature.Signature, vals Values, prefix string, main bool) (string, error) {
	var b strings.Builder
	b.WriteString(prefix)
	b.WriteString("\n\n")
	if err := xmlFields(&b, sig, false, vals, ""); err != nil {
		return "", err
	}
	if main {
		b.WriteString("\n\nRespond with the corresponding output fields wrapped in XML tags ")
		var schemas []string
		for i := range sig.NumOutputs() {
			f := sig.Output(i)
			if i > 0 {
				b.WriteString(", then ")
			}
			b.WriteString("`<" + f.Name + ">`")
			if nestedXML(f.Spec) {
				schemas = append(schemas, xmlSchema(f.Name, f.Spec, nil))
			}
		}
		b.WriteByte('.')
		if len(schemas) > 0 {
			b.WriteString(" Use this nested XML structure: ")
			b.WriteString(strings.Join(schemas, " "))
		}
	}
	return strings.TrimSpace(b.String()), nil
}

// xmlAssistant renders every output in its element, a missing one as the
// missing text.
func xmlAssistant(sig *signature.Signature, vals Values, missing string) (string, error) {
	var b strings.Builder
	if err := xmlFields(&b, sig, true, vals, missing); err != nil {
		return "", err
	}
	return strings.TrimSpace(b.String()), nil
}

// Parse reads the output fields from an XML reply. See [XML] for what it
// recovers. Values go through the same rules as [ParseValue]: leaf text is
// read by the field's type, lists from <item> children (or JSON inside the
// element), structs and dicts from child elements (or JSON).
func (XML) Parse(sig *signature.Signature, completion string) (Values, error) {
	return parseXMLFields(sig, completion, "xml")
}

func parseXMLFields(sig *signature.Signature, completion, adapter string) (Values, error) {
	text := stripReasoning(sig, completion)
	n := sig.NumOutputs()
	found := make([][]xmlElem, n)
	hit, err := collectXML(sig, text, 0, len(text), found, 0)
	if err != nil {
		return nil, &ParseError{Adapter: adapter, Completion: completion, Err: err}
	}
	if !hit {
		// No elements: the answer in Chat markers or as JSON.
		switch {
		case hasOutputMarker(sig, text):
			return parseSections(sig, completion, adapter)
		case strings.ContainsAny(text, "{["):
			if vals, err := parseJSONFields(sig, completion, adapter); err == nil || !errors.Is(err, errNotObject) {
				return vals, err
			}
		}
	}
	vals := make(Values, n)
	for i := range n {
		els := found[i]
		if len(els) == 0 {
			continue
		}
		f := sig.Output(i)
		if !els[len(els)-1].closed {
			return nil, &ParseError{Adapter: adapter, Field: f.Name, Completion: completion, Partial: vals,
				Err: wrapf(ErrTruncated, "<"+f.Name+"> is not closed")}
		}
		tree, err := xmlFieldTree(text, els, f.Spec)
		if err != nil {
			return nil, &ParseError{Adapter: adapter, Field: f.Name, Completion: completion, Partial: vals, Err: err}
		}
		if str, ok := tree.(string); ok {
			tree = unquoteText(str, f)
		}
		v, err := value.FromJSON(tree, f.Spec)
		if err != nil {
			return nil, &ParseError{Adapter: adapter, Field: f.Name, Completion: completion, Partial: vals, Err: err}
		}
		vals[f.Name] = v
	}
	return finishOutputs(sig, vals, completion, adapter)
}

// collectXML files the elements directly inside text[from:to] under the
// outputs they name; when none names an output it looks inside wrapper
// elements (two levels at most). It reports whether any output element was
// found.
func collectXML(sig *signature.Signature, text string, from, to int, found [][]xmlElem, depth int) (bool, error) {
	isField := func(name string) bool { return resolveMarkerName(sig, name) >= 0 }
	els, err := scanXML(text, from, to, isField)
	if err != nil {
		return false, err
	}
	hit := false
	for _, el := range els {
		if i := resolveMarkerName(sig, el.key()); i >= 0 {
			found[i] = append(found[i], el)
			hit = true
		}
	}
	if hit || depth >= 2 {
		return hit, nil
	}
	for _, el := range els {
		if el.selfClosing || knownInput(sig, el.key()) {
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

// xmlFieldTree turns a field's elements into decoded data for
// value.FromJSON: text leaves, []any for lists, map[string]any for structs
// and dicts, nil for an empty optional element.
func xmlFieldTree(text string, els []xmlElem, spec *signature.TypeSpec) (any, error) {
	if len(els) > 1 {
		if listSpec(spec) != nil {
			items := make([]any, 0, len(els))
			for _, el := range els {
				v, err := xmlTree(text, el, listSpec(spec).Elem(), 0)
				if err != nil {
					return nil, err
				}
				items = append(items, v)
			}
			return items, nil
		}
		first := strings.TrimSpace(text[els[0].start:els[0].end])
		for _, el := range els[1:] {
			if strings.TrimSpace(text[el.start:el.end]) != first {
				return nil, wrapf(ErrAmbiguous, "the field appears twice with different values")
			}
		}
	}
	return xmlTree(text, els[0], spec, 0)
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
	if spec.Kind() == signature.KindOptional {
		if trimmed == "" {
			return nil, nil
		}
		spec = spec.Elem()
	}
	switch spec.Kind() {
	case signature.KindList, signature.KindStruct, signature.KindDict:
		if strings.HasPrefix(trimmed, "[") || strings.HasPrefix(trimmed, "{") {
			return xmlText(content), nil // JSON inside the element
		}
		children, err := scanXML(text, el.start, el.end, nil)
		if err != nil {
			return nil, err
		}
		for _, c := range children {
			if !c.closed {
				return nil, wrapf(ErrTruncated, "element <"+c.name+"> is not closed")
			}
		}
		if spec.Kind() == signature.KindList {
			items := make([]any, 0, len(children))
			if len(children) == 0 {
				if trimmed != "" {
					items = append(items, xmlText(content))
				}
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
		for _, c := range children {
			var sub *signature.TypeSpec
			if spec.Kind() == signature.KindDict {
				sub = spec.Elem()
			} else {
				sub = structFieldSpec(spec, c.key())
				if sub == nil {
					continue // pydantic ignores unknown keys
				}
			}
			v, err := xmlTree(text, c, sub, depth+1)
			if err != nil {
				return nil, err
			}
			m[c.key()] = v
		}
		return m, nil
	}
	return xmlText(content), nil
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

// xmlText is an element's text: CDATA sections literally, entities
// decoded elsewhere, child markup kept as written, trimmed.
func xmlText(content string) string {
	s := strings.TrimSpace(content)
	if !strings.ContainsAny(s, "&<") {
		return s
	}
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
	return strings.TrimSpace(b.String())
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
	next        int // where scanning continues after the element
	selfClosing bool
	closed      bool
}

// key is the name a field or struct member is looked up by: an <entry>'s
// key attribute, else the tag name.
func (e xmlElem) key() string {
	if e.name == "entry" && e.entryKey != "" {
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
	var out []xmlElem
	lastClose := map[string]int{} // per tag name: its last closing tag in text[:to]
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
			key := strings.ToLower(el.name)
			lc, ok := lastClose[key]
			if !ok {
				lc = lastCloseFold(text[:to], el.name)
				lastClose[key] = lc
			}
			el.end, el.next, el.closed = closeTag(text, el.name, el.start, to, lc)
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
	closing := "</" + el.name
	for i := el.next; i < boundary; {
		j := indexFold(text[i:boundary], closing)
		if j < 0 {
			break
		}
		k := i + j + len(closing)
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
	for j < to && isNameByte(text[j], j == i+1) {
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
			el.selfClosing = strings.HasSuffix(attrs, "/")
			el.entryKey = attrValue(attrs, "key")
			el.start, el.end, el.next = k+1, k+1, k+1
			if el.selfClosing {
				el.closed = true
			}
			if len(attrs) > 0 && attrs[0] != ' ' && attrs[0] != '\t' && attrs[0] != '\n' && attrs[0] != '/' {
				return xmlElem{}, false
			}
			return el, true
		}
	}
	return xmlElem{}, false
}

func isNameByte(c byte, first bool) bool {
	switch {
	case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80:
		return true
	case !first && (c >= '0' && c <= '9' || c == '-' || c == '.' || c == ':'):
		return true
	}
	return false
}

// attrValue returns the value of attribute name in a start tag's
// attribute text, entities decoded.
func attrValue(attrs, name string) string {
	for s := attrs; ; {
		i := strings.Index(s, name)
		if i < 0 {
			return ""
		}
		rest := strings.TrimLeft(s[i+len(name):], " \t\n")
		if (i == 0 || strings.IndexByte(" \t\n", s[i-1]) >= 0) && strings.HasPrefix(rest, "=") {
			rest = strings.TrimLeft(rest[1:], " \t\n")
			if len(rest) > 1 && (rest[0] == '"' || rest[0] == '\'') {
				if e := strings.IndexByte(rest[1:], rest[0]); e >= 0 {
					return xmlText(rest[1 : 1+e])
				}
			}
			return ""
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
			for k < to && isNameByte(text[k], k == i+2) {
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

// ShapeRequest removes the native tool-calling options, as Chat's does.
func (x XML) ShapeRequest(_ *signature.Signature, req *openai.ChatCompletionRequest, _ Capabilities, level int) (string, bool, error) {
	if !x.NativeTools {
		stripTools(req)
	}
	return "", level == 0, nil
}

// hasOutputElement reports whether text holds an element of an output
// field (directly or inside wrapper elements).
func hasOutputElement(sig *signature.Signature, text string) bool {
	if !strings.Contains(text, "<") {
		return false
	}
	// Too many elements counts as found: the XML reader then reports it.
	hit, err := collectXML(sig, text, 0, len(text), make([][]xmlElem, sig.NumOutputs()), 0)
	return hit || err != nil
}
