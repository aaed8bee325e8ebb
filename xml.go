package adapter

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode"

	openai "github.com/sashabaranov/go-openai"

	"github.com/sigwire/adapter/internal/reply"
	"github.com/sigwire/adapter/internal/value"
	"github.com/sigwire/adapter/signature"
)

// XML is DSPy's XMLAdapter: every field in a <name>…</name> element;
// list, dict and struct outputs as nested elements (<item>, child tags,
// <entry key="…">). Its prompts are byte-identical to DSPy 3.3.1's,
// except where DSPy's would let an input forge a field, or write a value
// that cannot be read back as itself (DSPy cannot read these back
// either); those it writes so that Parse reads them back exactly:
//
//   - an input holding a tag that names a field (its own closing tag
//     "</question>", "<answer>", in any case) or an <entry> tag has that
//     tag's '<' written "&lt;": an input cannot close its element or
//     forge an output (DSPy shows inputs as they are);
//   - an output's & and < are escaped whatever its type (DSPy escapes
//     str outputs only);
//   - a demo's None for a type whose text "None" reads as a value
//     (Optional[str]) is <name /> (a History turn shows None, as DSPy's);
//     an empty list of an optional type is <name></name>;
//   - a string inside a list, dict or struct keeps the white space around
//     it, written as character references (&#32;x).
//
// A field's own text is read without its surrounding white space, as
// DSPy reads it. A blank element is "" for an Optional[str] (as Chat
// reads a blank section), [] or {} for an optional list or dict, None for
// other optional types; <name /> is None for every nullable type. A dict
// key is read exactly as its key attribute holds it.
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
	// Options are the settings XML shares with the other adapters: a JSON
	// fallback unless NoFallback, native tool calling off unless
	// NativeTools turns it on, as Chat's.
	Options Options
}

// Name returns "xml".
func (XML) Name() string { return "xml" }

// NativeTools reports whether XML asks for native function calling (off
// unless Options.NativeTools turns it on) and its parallel_tool_calls.
func (x XML) NativeTools() (bool, Switch) { return x.Options.nativeTools(false) }

// WithNativeTools returns x with native function calling on.
func (x XML) WithNativeTools() Adapter { x.Options.NativeTools = On; return x }

// Fallback returns the JSON adapter, as Chat's does; nil with NoFallback.
func (x XML) Fallback() Adapter { return x.Options.fallback() }

// Format renders the system message, the demos as user/assistant pairs
// (incomplete ones first) and the user message with the XML reminder.
func (x XML) Format(sig *signature.Signature, demos []Values, inputs Values) ([]openai.ChatCompletionMessage, error) {
	native, _ := x.NativeTools()
	return xmlLayout.format(x.Options.Prompt, sig, demos, inputs, native)
}

// outputRequirements returns the output requirements Format ends the
// request with, which a re-ask repeats (see outputRequirer).
func (x XML) outputRequirements(sig *signature.Signature) (string, error) {
	return xmlLayout.requirements(x.Options.Prompt, sig)
}

// xmlLayout is how the XML adapter writes a conversation.
var xmlLayout = layout{
	system: xmlSystem, structure: xmlStructure, reminder: xmlReminder,
	user: xmlUser, assistant: xmlAssistant,
}

// xmlSystem renders the XML adapter's system message.
func xmlSystem(sig *signature.Signature) (string, error) { return systemText(sig, xmlStructure) }

// xmlStructure writes DSPy's XMLAdapter.format_field_structure: every field
// in its element, nested outputs as their element skeletons.
func xmlStructure(b *strings.Builder, sig *signature.Signature) error {
	b.WriteString("All interactions will be structured in the following way, with the appropriate values filled in.\n\n")
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
			return err
		}
		if note != "" {
			b.WriteString("        # note: the value you produce ")
			b.WriteString(note)
		}
		b.WriteString("\n</" + f.Name + ">")
	}
	return nil
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

// xmlFields renders DSPy's format_field_with_value for the fields of role
// r: one element per field present in vals (every output, a missing one
// as missing), blank-line separated.
func xmlFields(b *strings.Builder, sig *signature.Signature, r signature.Role, vals Values, missing string) error {
	outputs := r == signature.Output
	first := true
	for i := range numFields(sig, r) {
		name := fieldName(sig, r, i)
		v, ok := vals[name]
		if !ok && !outputs {
			continue
		}
		if !first {
			b.WriteString("\n\n")
		}
		first = false
		if !ok {
			writeElement(b, name, escapeXMLText(missing))
			continue
		}
		s, isStr := v.(string) // a string is its own text (value.Format's fast path)
		if !isStr {
			f := fieldAt(sig, r, i)
			if outputs && missing != "" && isNil(v) && writesNoneAsEmpty(f.Spec) {
				// A demo's None where the text "None" would read as a
				// string (Optional[str]): the empty element, which reads as
				// None. A History turn (missing "") shows None, as DSPy's.
				xmlTag{name, true}.empty(b)
				continue
			}
			if outputs && nestedXML(f.Spec) && isComposite(v) {
				if err := writeValueXML(b, reflect.ValueOf(v), name, f.Spec, 0); err != nil {
					return &InputError{Field: name, Err: err}
				}
				continue
			}
			var err error
			if s, err = formatValue(v, f); err != nil {
				return err
			}
		}
		if outputs {
			s = escapeXMLValue(s)
		} else {
			s = neutraliseTags(sig, s)
		}
		writeElement(b, name, s)
	}
	return nil
}

// writeElement writes a field's element: "<name>\ntext\n</name>".
func writeElement(b *strings.Builder, name, text string) {
	b.WriteByte('<')
	b.WriteString(name)
	b.WriteString(">\n")
	b.WriteString(text)
	b.WriteString("\n</")
	b.WriteString(name)
	b.WriteByte('>')
}

// escapeXMLValue escapes an output's text, as DSPy escapes a str's:
// whatever its type, a value holding & or < reads back as itself (DSPy
// escapes str values only, and cannot read the others back). A Formatter's
// marker is left as it is.
func escapeXMLValue(s string) string {
	if strings.Contains(s, value.PartsKey) {
		return s
	}
	return escapeXMLText(s)
}

// neutraliseTags makes an input's text unable to close its element or to
// open another field's: the '<' of a tag naming a field of the signature
// (<answer>, </question>, in any case) or of an <entry> (whose key can
// name one) is written &lt;. Other text, other markup included, is shown
// as it is, as DSPy shows it. (DSPy escapes nothing in inputs.)
func neutraliseTags(sig *signature.Signature, s string) string {
	if !strings.Contains(s, "<") {
		return s
	}
	var b strings.Builder
	last := 0
	for i := 0; i < len(s); i++ {
		if s[i] != '<' || !fieldTagAt(sig, s, i) {
			continue
		}
		if last == 0 {
			b.Grow(len(s) + 8)
		}
		b.WriteString(s[last:i])
		b.WriteString("&lt;")
		last = i + 1
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// fieldTagAt reports a start or end tag at s[i] that names a field of
// sig, in any case, or is an <entry> (whose key attribute can name one):
// the XML reader would take it for a field's element. A tag cut off by
// the end of the value counts: the prompt goes on after it.
func fieldTagAt(sig *signature.Signature, s string, i int) bool {
	j := i + 1
	if j < len(s) && s[j] == '/' {
		j++
	}
	k := j
	for k < len(s) && reply.IsNameByte(s[k], k == j) {
		k++
	}
	if k == j {
		return false
	}
	name := s[j:k]
	if strings.EqualFold(name, "entry") {
		return true
	}
	for f := range sig.NumInputs() {
		if strings.EqualFold(sig.InputName(f), name) {
			return true
		}
	}
	for f := range sig.NumOutputs() {
		if strings.EqualFold(sig.OutputName(f), name) {
			return true
		}
	}
	return false
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
	if strings.IndexByte(s, '&') < 0 && strings.IndexByte(s, '<') < 0 {
		return s // two vectorised searches cost less than strings.ContainsAny's
	}
	return xmlTextEscaper.Replace(s)
}

var xmlTextEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;")

// escapeXMLLeaf escapes the text of a nested element: & and <, and the
// white space around it as character references (&#32;x), which the
// reader keeps where it trims what is written plainly. DSPy writes the
// white space plainly and strips it when reading.
func escapeXMLLeaf(s string) string {
	s = escapeXMLText(s)
	inner := strings.TrimSpace(s)
	if len(inner) == len(s) {
		return s
	}
	lead := s[:strings.Index(s, inner)]
	if inner == "" {
		lead = s
	}
	trail := s[len(lead)+len(inner):]
	var b strings.Builder
	for _, r := range lead {
		fmt.Fprintf(&b, "&#%d;", r)
	}
	b.WriteString(inner)
	for _, r := range trail {
		fmt.Fprintf(&b, "&#%d;", r)
	}
	return b.String()
}

// maxXMLDepth bounds the nesting written and read.
const maxXMLDepth = 64

// writeValueXML is DSPy's _value_to_xml: lists as <item> children (empty:
// <tag />), maps and structs as child elements (keys that are not names as
// <entry key="…">), None as <tag />, scalars as escaped text. spec is v's
// type (nil when unknown, inside an Any): an empty list of an optional
// type is <tag></tag>, as <tag /> reads as None.
func writeValueXML(b *strings.Builder, v reflect.Value, tag string, spec *signature.TypeSpec, depth int) error {
	if depth > maxXMLDepth {
		return fmt.Errorf("value nested deeper than %d levels", maxXMLDepth)
	}
	t := xmlTag{tag, validXMLName(tag)}
	nullable := spec != nil && spec.Nullable()
	if spec != nil && spec.Kind() == signature.KindOptional {
		spec = spec.Elem()
	}
	for v.IsValid() && (v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface) {
		if v.IsNil() {
			t.empty(b)
			return nil
		}
		v = v.Elem()
	}
	if !v.IsValid() {
		t.empty(b)
		return nil
	}
	sub := func(kind signature.Kind) *signature.TypeSpec {
		if spec != nil && spec.Kind() == kind {
			return spec.Elem()
		}
		return nil
	}
	switch {
	case (v.Kind() == reflect.Slice || v.Kind() == reflect.Array) && v.Type().Elem().Kind() != reflect.Uint8:
		if v.Kind() == reflect.Slice && v.IsNil() {
			t.empty(b)
			return nil
		}
		if v.Len() == 0 {
			if nullable {
				t.open(b)
				t.close(b)
			} else {
				t.empty(b)
			}
			return nil
		}
		t.open(b)
		for i := range v.Len() {
			if err := writeValueXML(b, v.Index(i), "item", sub(signature.KindList), depth+1); err != nil {
				return err
			}
		}
		t.close(b)
		return nil
	case v.Kind() == reflect.Map && !implementsAnyMarshaler(v.Type()):
		if v.IsNil() {
			t.empty(b)
			return nil
		}
		entries, vals := sortedEntries(v)
		t.open(b)
		for _, e := range entries {
			if err := writeValueXML(b, vals.Index(e.i), e.name, sub(signature.KindDict), depth+1); err != nil {
				return err
			}
		}
		t.close(b)
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
		t.open(b)
		for _, sf := range fields {
			if err := writeValueXML(b, v.FieldByIndex(sf.Index), sf.Field.Name, sf.Field.Spec, depth+1); err != nil {
				return err
			}
		}
		t.close(b)
		return nil
	}
	s, err := leafText(v)
	if err != nil {
		return err
	}
	t.open(b)
	b.WriteString(escapeXMLLeaf(s))
	t.close(b)
	return nil
}

// leafText is value.Format's text of a scalar; a string's or an int's
// read without copying it out of v.
func leafText(v reflect.Value) (string, error) {
	switch v.Type() {
	case stringType:
		return v.String(), nil
	case intType:
		return strconv.FormatInt(v.Int(), 10), nil
	}
	return value.Format(v.Interface(), nil)
}

var intType = reflect.TypeFor[int]()

// xmlTag writes the tags of an element of a nested value: <name>, or
// <entry key="…"> for a key that is not a name (isName false).
type xmlTag struct {
	name   string
	isName bool
}

// start writes the start tag up to its end, which is end.
func (t xmlTag) start(b *strings.Builder, end string) {
	if t.isName {
		b.WriteByte('<')
		b.WriteString(t.name)
	} else {
		b.WriteString("<entry key=")
		b.WriteString(quoteAttr(t.name))
	}
	b.WriteString(end)
}

func (t xmlTag) open(b *strings.Builder)  { t.start(b, ">") }
func (t xmlTag) empty(b *strings.Builder) { t.start(b, " />") }

func (t xmlTag) close(b *strings.Builder) {
	if !t.isName {
		b.WriteString("</entry>")
		return
	}
	b.WriteString("</")
	b.WriteString(t.name)
	b.WriteByte('>')
}

// mapEntry is an entry of a map being written: its key as text, and its
// index among the values copied out.
type mapEntry struct {
	name string
	i    int
}

// sortedEntries returns the entries of the map v in the order of their
// keys as text (fmt.Sprint), and its values, copied out into one slice
// rather than one by one.
func sortedEntries(v reflect.Value) ([]mapEntry, reflect.Value) {
	n := v.Len()
	k := reflect.New(v.Type().Key()).Elem() // each key in turn, its text kept
	vals := reflect.MakeSlice(reflect.SliceOf(v.Type().Elem()), n, n)
	entries := make([]mapEntry, 0, n)
	var it reflect.MapIter
	it.Reset(v)
	for i := 0; i < n && it.Next(); i++ {
		k.SetIterKey(&it)
		vals.Index(i).SetIterValue(&it)
		entries = append(entries, mapEntry{keyText(k), i})
	}
	slices.SortFunc(entries, func(x, y mapEntry) int { return strings.Compare(x.name, y.name) })
	return entries, vals
}

// keyText is fmt.Sprint of a map key: a string without methods is its own
// text.
func keyText(k reflect.Value) string {
	if k.Kind() == reflect.String && k.NumMethod() == 0 {
		return k.String()
	}
	return fmt.Sprint(k.Interface())
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
	s = attrEscaper.Replace(s)
	switch {
	case !strings.Contains(s, `"`):
		return `"` + s + `"`
	case !strings.Contains(s, "'"):
		return "'" + s + "'"
	}
	return `"` + strings.ReplaceAll(s, `"`, "&quot;") + `"`
}

var attrEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", "\n", "&#10;", "\r", "&#13;", "\t", "&#9;")

// xmlUser renders the user message: the prefix, the inputs present, and on
// the main request the XML reminder; blank-line joined and stripped.
func xmlUser(a *arena, sig *signature.Signature, vals Values, prefix, reminder string) (string, error) {
	b := &a.b
	start := b.Len()
	b.WriteString(prefix)
	b.WriteString("\n\n")
	if err := xmlFields(b, sig, signature.Input, vals, ""); err != nil {
		return "", err
	}
	if reminder != "" {
		b.WriteString("\n\n")
		b.WriteString(reminder)
	}
	return a.since(start), nil
}

// xmlReminder is DSPy's XMLAdapter.user_message_output_requirements for a
// signature, with the nested structures it asks for.
func xmlReminder(sig *signature.Signature) (string, error) {
	var b strings.Builder
	b.WriteString("Respond with the corresponding output fields wrapped in XML tags ")
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
	return b.String(), nil
}

// xmlAssistant renders every output in its element, a missing one as the
// missing text.
func xmlAssistant(a *arena, sig *signature.Signature, vals Values, missing string) (string, error) {
	start := a.b.Len()
	if err := xmlFields(&a.b, sig, signature.Output, vals, missing); err != nil {
		return "", err
	}
	return a.since(start), nil
}

// Parse reads the output fields from an XML reply. See [XML] for what it
// recovers. Values go through the same rules as [ParseValue]: leaf text is
// read by the field's type, lists from <item> children (or JSON inside the
// element), structs and dicts from child elements (or JSON).
func (XML) Parse(sig *signature.Signature, completion string) (Values, error) {
	return parseReply(sig, completion, "xml", XML{}.replyShape())
}

// replyShape: an XML reply is read in elements first.
func (XML) replyShape() reply.Shape { return reply.XML }

// NewFieldStream returns a FieldStream for XML replies: the text inside an
// output field's element streams to that field, entities and CDATA
// decoded and the value trimmed as Parse trims it; a leading <think> block
// streams as reasoning, as for every adapter; everything else belongs to
// no field.
//
// The stream holds back only what Parse reads by what follows it: a
// possible closing tag, entity, CDATA section or output element at the
// end of the text; a str value that may turn out to be wrapped in quotes
// (Parse drops them); a field's closing tag, until the next output
// element (or the end) confirms it, since a later closing tag of the same
// field before that element makes the first one part of the value
// (<code>print('</code>')</code>); and, inside a field, another output's
// opening tag, until the field's closing tag shows it is part of the value
// or the end of the reply shows the field's closing tag was forgotten.
func (XML) NewFieldStream(sig *signature.Signature) FieldStream {
	return reply.NewXMLStream(sig)
}
