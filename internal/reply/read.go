package reply

import (
	"encoding/json"
	"errors"
	"strings"

	"github.com/sigwire/adapter/internal/jsonx"
	"github.com/sigwire/adapter/internal/value"
	"github.com/sigwire/adapter/signature"
)

// Shape is a reply format: the one an adapter asks for decides which
// shape the reader tries first.
type Shape uint8

// Reply shapes.
const (
	Markers  Shape = iota // Chat: [[ ## name ## ]] sections
	JSON                  // a JSON object
	XML                   // <name> elements
	labelled              // "Answer: …" labels, which no adapter asks for
)

// Source says where a field's content was found.
type Source uint8

// Sources of a field's content.
const (
	Missing Source = iota // not in the reply
	Marker                // a field marker's section: Text
	Label                 // an "Answer: …" label's section: Text
	Bare                  // the whole reply, for a single str output: Text
	Element               // an XML element: Value is its tree (a string leaf, []any, map[string]any, or nil)
	Member                // a JSON member: Value is the decoded value, Text the key
	String                // a JSON string member: Text is the string (read as text, its quotes its own)
)

// Field is the raw content of one output field.
type Field struct {
	Source Source
	Text   string
	Value  any
	Err    error // the content is there but cannot be read (an element cut off)
}

// Read reads the output fields of a reply into fields (one per output, in
// order; the caller's slice, reset here). It strips reasoning (a leading
// <think> block, harmony channels), unwraps a code fence around the whole
// reply, then reads the first shape that holds the answer, in the order
// the adapter prefers:
//
//   - Markers: field markers, then a reply that is JSON, then XML
//     elements, then JSON in prose, then "Answer: …" labels;
//   - JSON: a reply that is JSON, then markers, XML elements, JSON in
//     prose, labels;
//   - XML: elements, then markers, a reply that is JSON, JSON in prose,
//     labels.
//
// A reply with none of these is, for a signature whose only output is a
// str, that output's text. A field missing from the reply is left
// Missing; defaults and missing-field errors are the caller's. Errors are
// *Error values wrapping ErrAmbiguous, ErrTruncated or an invalid-value
// error. JSON repair is paid from b, the reply's budget, which the caller
// goes on to share with the fields' values (nil: each repair bounded only
// by its span).
func Read(sig *signature.Signature, completion string, prefer Shape, fields []Field, b *jsonx.Budget) error {
	for i := range fields {
		fields[i] = Field{}
	}
	text := unfence(stripReasoning(sig, completion))
	jsonFirst := looksJSON(text)
	// Each reader reports found when the reply has its shape: its fields
	// are then the answer, whatever is missing.
	var order [4]Shape
	switch {
	case prefer == JSON && jsonFirst:
		order = [4]Shape{JSON, Markers, XML, labelled}
	case prefer == JSON:
		order = [4]Shape{Markers, XML, JSON, labelled}
	case prefer == XML:
		order = [4]Shape{XML, Markers, JSON, labelled}
	case jsonFirst:
		order = [4]Shape{Markers, JSON, XML, labelled}
	default:
		order = [4]Shape{Markers, XML, JSON, labelled}
	}
	for _, sh := range order {
		var found bool
		var err error
		switch sh {
		case Markers:
			found, err = readMarkers(sig, text, fields)
		case XML:
			found, err = readXML(sig, text, fields)
		case JSON:
			found, err = readJSONShape(sig, text, fields, b)
		case labelled:
			found, err = labels(sig, text, fields)
		}
		if err != nil {
			return replyErr(-1, err)
		}
		if found {
			return mixedStyles(sig, text, sh, fields)
		}
	}
	readBare(sig, text, fields)
	return nil
}

// inElement reports whether text position i is inside one of els.
func inElement(els []xmlElem, i int) bool {
	for _, el := range els {
		if el.start <= i && i < el.end {
			return true
		}
	}
	return false
}

// mixedStyles is the error for a reply read in one shape that gives an
// output the shape left missing in another: a field marker (as the marker
// reader takes it: at a line start, or bracketed on both sides), an XML
// element, a label at a line start (outputLabel), or a member of a JSON
// object before the first marker of a reply in markers or outside the
// elements of a reply in XML. Such a reply
// mixes styles the reader does not combine; the output is ErrAmbiguous,
// never None or missing while the reply states it. (A label among
// markers is read: see markerScan.sections.)
func mixedStyles(sig *signature.Signature, text string, shape Shape, fields []Field) error {
	missing := false
	for i := range fields {
		missing = missing || fields[i].Source == Missing
	}
	if !missing {
		return nil
	}
	if i, how := statedElsewhere(sig, text, shape, fields); i >= 0 {
		return &Error{Field: i, Err: wrapf(errAmbiguous, "the reply gives the field as "+how+", in another style than its other fields")}
	}
	return nil
}

// statedElsewhere finds an output fields leaves missing that text gives
// in a style other than shape's, before the reply's end (a line-start
// completed marker), and says how; -1 when there is none. One pass per
// style, whatever the number of outputs. See mixedStyles.
func statedElsewhere(sig *signature.Signature, text string, shape Shape, fields []Field) (int, string) {
	missing := func(name string) int {
		if i := outputIndex(sig, name); i >= 0 && fields[i].Source == Missing {
			return i
		}
		return -1
	}
	firstMarker := -1
	for pos := 0; ; {
		m, ok := FindMarker(sig, text, pos)
		if !ok {
			break
		}
		if m.Field == completedField && m.LineStart {
			text = text[:m.Start]
			break
		}
		if m.Field >= 0 && firstMarker < 0 {
			firstMarker = m.Start
		}
		if m.Field >= 0 && fields[m.Field].Source == Missing && (m.LineStart || m.Strong) && shape != Markers {
			return m.Field, "a field marker"
		}
		pos = m.End
	}
	var els []xmlElem
	if strings.IndexByte(text, '<') >= 0 {
		els, _ = scanXML(text, 0, len(text), nil)
	}
	if shape != XML {
		for _, el := range els {
			if i := missing(el.key()); i >= 0 && el.closed {
				return i, "an XML element"
			}
		}
	}
	if shape == XML || shape == JSON {
		for start := 0; start < len(text); {
			end := len(text)
			if nl := strings.IndexByte(text[start:], '\n'); nl >= 0 {
				end = start + nl
			}
			if m, ok := outputLabel(sig, text, start, end); ok && fields[m.Field].Source == Missing {
				return m.Field, "a label"
			}
			start = end + 1
		}
	}
	// JSON objects outside the shape's own structure: before the first
	// marker of a reply in markers (inside a section, an object is the
	// field's text), outside the elements of a reply in XML.
	region := ""
	switch shape {
	case Markers:
		region = text[:max(firstMarker, 0)]
	case XML:
		region = text
	}
	if strings.IndexByte(region, '{') < 0 {
		return -1, ""
	}
	for _, sp := range jsonx.Spans(region, maxCandidates) {
		if inElement(els, sp.Start) {
			continue
		}
		v, err := jsonx.DecodePython(region[sp.Start:sp.End])
		if obj, ok := v.(map[string]any); ok && err == nil {
			first := -1 // the first output, whatever the map's order
			for k := range unwrap(sig, obj) {
				if i := missing(k); i >= 0 && (first < 0 || i < first) {
					first = i
				}
			}
			if first >= 0 {
				return first, "a JSON member"
			}
		}
	}
	return -1, ""
}

func readMarkers(sig *signature.Signature, text string, fields []Field) (bool, error) {
	if strings.IndexByte(text, '#') < 0 {
		return false, nil
	}
	var ms markerScan
	ms.init(sig, text)
	if ms.n == 0 && !ms.overflow {
		return false, nil
	}
	found, unknown, err := ms.sections(fields)
	if err != nil {
		return found, err
	}
	if unknown {
		if missing := onlyMissing(sig, fields); missing >= 0 {
			if t, ok := ms.renamedSection(missing); ok {
				fields[missing] = Field{Source: Marker, Text: t}
				found = true
			}
		}
	}
	return found, nil
}

func readXML(sig *signature.Signature, text string, fields []Field) (bool, error) {
	if strings.IndexByte(text, '<') < 0 {
		return false, nil
	}
	n := sig.NumOutputs()
	var buf [8][]xmlElem
	found := buf[:0]
	if n > len(buf) {
		found = make([][]xmlElem, n)
	}
	found = found[:n]
	hit, err := collectXML(sig, text, 0, len(text), found, 0)
	if err != nil {
		return hit, err
	}
	if !hit {
		// Only a renamed element, for a signature with one output.
		if sig.NumOutputs() == 1 && !sig.Output(0).HasDefault {
			renamedElement(sig, text, 0, fields)
		}
		return fields[0].Source != Missing, nil
	}
	for i := range n {
		els := found[i]
		if len(els) == 0 {
			continue
		}
		f := sig.Output(i)
		if !els[len(els)-1].closed {
			fields[i] = Field{Source: Element, Err: wrapf(errTruncated, "<"+f.Name+"> is not closed")}
			continue
		}
		tree, err := xmlFieldTree(text, els, f.Spec)
		fields[i] = Field{Source: Element, Value: tree, Err: err}
	}
	if missing := onlyMissing(sig, fields); missing >= 0 {
		renamedElement(sig, text, missing, fields)
	}
	return true, nil
}

// renamedElement reads the one missing output from a top-level element
// whose tag is a rename of it.
func renamedElement(sig *signature.Signature, text string, missing int, fields []Field) {
	els, err := scanXML(text, 0, len(text), nil)
	if err != nil {
		return
	}
	var names []string
	for _, el := range els {
		if outputIndex(sig, el.key()) == otherField && !isInput(sig, el.key()) && !isThinkTag(el.key()) {
			names = append(names, el.key())
		}
	}
	name, ok := renameTarget(sig, missing, names)
	if !ok {
		return
	}
	var mine []xmlElem
	for _, el := range els {
		if el.key() == name {
			mine = append(mine, el)
		}
	}
	if len(mine) == 0 || !mine[len(mine)-1].closed {
		return
	}
	if tree, err := xmlFieldTree(text, mine, sig.Output(missing).Spec); err == nil {
		fields[missing] = Field{Source: Element, Value: tree}
	}
}

func readJSONShape(sig *signature.Signature, text string, fields []Field, b *jsonx.Budget) (bool, error) {
	if found, err := readScalar(sig, text, fields); found || err != nil {
		return found, err
	}
	if !strings.ContainsAny(text, "{[") {
		return false, nil
	}
	if readFlat(sig, text, fields) {
		return true, nil
	}
	found, err := readJSON(sig, text, b)
	switch {
	case errors.Is(err, errNotJSON):
		return false, nil
	case err != nil:
		return true, err
	case found.obj == nil:
		return false, nil
	}
	return true, members(sig, unwrap(sig, found.obj), fields)
}

// readScalar reads a reply that is exactly one JSON scalar (a number, a
// string, true, false or null; a code fence around it is already gone) —
// not an object, and so, as in DSPy, not an answer unless the one output's
// type takes the value (issue 30). For a signature with one output the
// scalar is that output's member: it converts by the rule an object's
// member would (`42` for an int is 42, `null` is None for an Optional and
// an error naming the field otherwise), and an error there is the field's.
// A str output keeps its text as written ("42", "true", a quoted string:
// the bare-text rule, readBare), except null, which is no text; an
// Optional[str] likewise keeps a number's or a bool's text. With more
// outputs a scalar is an error. Text that is not one JSON scalar ("Paris",
// "42 apples") is not read here.
func readScalar(sig *signature.Signature, text string, fields []Field) (bool, error) {
	t := strings.TrimSpace(text)
	if t == "" {
		return false, nil
	}
	if c := t[0]; c != '"' && c != '-' && (c < '0' || c > '9') && c != 't' && c != 'f' && c != 'n' {
		return false, nil
	}
	v, err := jsonx.Decode(t)
	if err != nil {
		return false, nil
	}
	var kind string
	switch v.(type) {
	case nil:
		kind = "null"
	case bool:
		kind = "bool"
	case json.Number:
		kind = "number"
	case string:
		switch undouble(v).(type) {
		case map[string]any, []any:
			return false, nil // a double-encoded object or array: readJSON's
		}
		kind = "string"
	default:
		return false, nil // an object or an array: readJSON's
	}
	if sig.NumOutputs() != 1 {
		return true, wrapf(value.ErrInvalid, "the reply is a JSON "+kind+", not an object holding the output fields")
	}
	spec := sig.Output(0).Spec
	text0 := spec != nil && spec.Kind() == signature.KindString
	optText := spec != nil && spec.Kind() == signature.KindOptional && spec.Elem().Kind() == signature.KindString
	switch {
	case v == nil:
		fields[0] = Field{Source: Member, Value: nil}
	case text0:
		return false, nil // the text as written (readBare)
	case optText && kind != "string":
		fields[0] = Field{Source: String, Text: t}
	default:
		fields[0] = Field{Source: Member, Value: v}
	}
	return true, nil
}

// readFlat reads the common JSON reply without building a map: one flat
// object whose keys are the outputs' names, each once. It reports false
// (fields untouched) for anything else.
func readFlat(sig *signature.Signature, text string, fields []Field) bool {
	t := strings.TrimSpace(text)
	n := 0
	ok := jsonx.FlatMembers(t, func(key, val string, str bool) bool {
		i := exactOutput(sig, key)
		if i < 0 || fields[i].Source != Missing {
			return false
		}
		n++
		switch {
		case str:
			fields[i] = Field{Source: String, Text: val}
		case val == "true":
			fields[i] = Field{Source: Member, Text: key, Value: true}
		case val == "false":
			fields[i] = Field{Source: Member, Text: key, Value: false}
		case val == "null":
			fields[i] = Field{Source: Member, Text: key}
		default:
			fields[i] = Field{Source: Member, Text: key, Value: json.Number(val)}
		}
		return true
	})
	if !ok || n != len(fields) {
		for i := range fields {
			fields[i] = Field{}
		}
		return false
	}
	return true
}

func exactOutput(sig *signature.Signature, name string) int {
	for i := range sig.NumOutputs() {
		if sig.OutputName(i) == name {
			return i
		}
	}
	return -1
}

// readBare files the whole reply under a signature's only output when
// that is a str: a reply with no structure (not even a marker of another
// name) is the answer itself.
func readBare(sig *signature.Signature, text string, fields []Field) {
	if sig.NumOutputs() != 1 {
		return
	}
	spec := sig.Output(0).Spec
	if spec == nil || spec.Kind() != signature.KindString {
		return
	}
	// A completed marker ends the answer (completedEnd); any other marker
	// before it is structure this text does not have.
	if m, ok := FindMarker(sig, text, 0); ok {
		if m.Field != completedField {
			return
		}
		text = text[:m.Start]
	}
	t := strings.TrimSpace(afterOrphanClose(sig, text))
	if t != "" {
		fields[0] = Field{Source: Bare, Text: t}
	}
}

// looksJSON reports a reply that starts as JSON: '{', '[', a quoted
// object, or a code fence whose body starts so.
func looksJSON(text string) bool {
	t := skipSpace(text)
	if strings.HasPrefix(t, "```") {
		if nl := strings.IndexByte(t, '\n'); nl >= 0 {
			t = skipSpace(t[nl+1:])
		}
	}
	if strings.HasPrefix(t, `"`) {
		t = skipSpace(t[1:])
	}
	return t != "" && (t[0] == '{' || t[0] == '[')
}

// unfence returns the body of a code fence that holds the reply's
// answer, or text: the fence opens on the reply's first line (or after
// one line of prose introducing it) and closes on a line "```" that no nested fence
// ("```python" … "```") claims; text after it is chatter. A fence that
// never closes runs to the end.
func unfence(text string) string {
	body, ok := fenceBody(text)
	if !ok {
		return text
	}
	return body
}

// fenceBody finds the code fence around a reply's answer (see unfence).
func fenceBody(text string) (string, bool) {
	if t := skipSpace(text); t != "" && strings.IndexByte("[{<", t[0]) >= 0 {
		return "", false // structure on the first line (a marker, JSON, XML): the loop's verdict, at once
	}
	open, prose := -1, 0
	for i := 0; i < len(text); {
		line, next := lineAt(text, i)
		t := strings.TrimSpace(line)
		if strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
			open = next
			break
		}
		if strings.Contains(line, "##") || strings.Contains(line, "<") || strings.ContainsAny(t, "{[") {
			return "", false // structure before any fence: the fence is not around it
		}
		if t != "" {
			if prose++; prose > 1 {
				return "", false // more than a line introducing the answer
			}
		}
		i = next
	}
	if open < 0 {
		return "", false
	}
	opener := strings.TrimSpace(text[:open])
	fence := opener[:3]
	n := 3
	for n < len(opener) && opener[n] == fence[0] {
		n++
	}
	fence = opener[:n]
	depth := 0
	for i := open; i < len(text); {
		line, next := lineAt(text, i)
		t := strings.TrimSpace(line)
		if strings.HasPrefix(t, fence[:3]) {
			switch {
			case strings.TrimLeft(t, fence[:1]) != "":
				depth++ // "```python": a nested block opens
			case depth > 0:
				depth--
			case len(t) >= len(fence):
				return text[open:i], true
			}
		}
		i = next
	}
	return text[open:], true
}

// openFence reports whether text (the start of a reply, before its first
// marker) opens a code fence that is still open at its end, as fenceBody
// reads it, and returns the fence's opening run.
func openFence(text string) (string, bool) {
	body, ok := fenceBody(text)
	if !ok || !strings.HasSuffix(text, body) {
		return "", false
	}
	opener := strings.TrimSpace(text[:len(text)-len(body)])
	n := 3
	for n < len(opener) && opener[n] == opener[0] {
		n++
	}
	return opener[:n], true
}

// lineAt returns the line starting at i (without its break) and where the
// next one starts.
func lineAt(text string, i int) (string, int) {
	rest := text[i:]
	j := strings.IndexByte(rest, '\n')
	if j < 0 {
		j = len(rest)
	}
	if r := strings.IndexByte(rest[:j], '\r'); r >= 0 {
		next := i + r + 1
		if next < len(text) && text[next] == '\n' {
			next++
		}
		return rest[:r], next
	}
	if j == len(rest) {
		return rest, len(text)
	}
	return rest[:j], i + j + 1
}
