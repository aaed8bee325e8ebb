package adapter

import (
	"errors"
	"reflect"
	"strings"
	"unicode"

	"github.com/sigwire/adapter/signature"
)

// Marker kinds besides an output field index.
const (
	markOther     = -1 // an input field or an unknown name: ends a section, is ignored
	markCompleted = -2 // [[ ## completed ## ]]: ends the reply
)

// marker is one field marker found in a reply.
type marker struct {
	start, end int // the marker's extent; the section's text starts at end
	field      int // output index, markOther or markCompleted
}

// findMarker finds the next marker at or after pos. It looks for "##" and
// accepts the forms models write:
//
//	[[ ## answer ## ]]   [[## answer ##]]   **[[ ## answer ## ]]**
//	### [[ ## answer ## ]]   [[ ## Answer ## ]]:   ## answer ##
//
// A marker with brackets on both sides may appear anywhere, with any name
// (an unknown name ends the previous section, as in DSPy). One without
// full brackets must start its line and name a known field. A marker found
// never starts before pos: its decoration cannot reach back into text
// already read (the previous marker's own "**" or "]]").
func findMarker(sig *signature.Signature, s string, pos int) (marker, bool) {
	lo := pos
	for pos < len(s) {
		j := strings.Index(s[pos:], "##")
		if j < 0 {
			return marker{}, false
		}
		i := pos + j
		if m, ok := markerAt(sig, s, i, lo); ok {
			return m, true
		}
		pos = i + 1
	}
	return marker{}, false
}

func isWordByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func skipBlank(s string, k int) int {
	for k < len(s) && (s[k] == ' ' || s[k] == '\t') {
		k++
	}
	return k
}

func skipBlankBack(s string, k int) int {
	for k > 0 && (s[k-1] == ' ' || s[k-1] == '\t') {
		k--
	}
	return k
}

// markerAt parses a marker whose opening "##" is at i; its start is never
// before lo.
func markerAt(sig *signature.Signature, s string, i, lo int) (marker, bool) {
	k := skipBlank(s, i+2)
	n0 := k
	for k < len(s) && isWordByte(s[k]) {
		k++
	}
	name := s[n0:k]
	if name == "" {
		return marker{}, false
	}
	k = skipBlank(s, k)
	if !strings.HasPrefix(s[k:], "##") {
		return marker{}, false
	}
	for k += 2; k < len(s) && s[k] == '#'; k++ { // "###"
	}
	end := skipBlank(s, k)
	rb := 0
	for rb < 3 && end < len(s) && s[end] == ']' {
		end++
		rb++
	}
	// Decoration after the marker: ":", "**", "__", in any order.
	for end < len(s) {
		switch {
		case s[end] == ':':
			end++
		case strings.HasPrefix(s[end:], "**"), strings.HasPrefix(s[end:], "__"):
			end += 2
		default:
			goto back
		}
	}
back:
	start := i
	for start > 0 && s[start-1] == '#' { // "###"
		start--
	}
	start = skipBlankBack(s, start)
	lb := 0
	for lb < 3 && start > 0 && s[start-1] == '[' {
		start--
		lb++
	}
	// Decoration before: "**", heading hashes, quote marks, up to the line
	// start.
	lineStart := true
	b := start
	for b > 0 && s[b-1] != '\n' && s[b-1] != '\r' {
		switch s[b-1] {
		case ' ', '\t', '*', '#', '>', '_':
			b--
			continue
		}
		lineStart = false
		break
	}
	if lineStart {
		start = b
	} else if start >= 2 && (s[start-2:start] == "**" || s[start-2:start] == "__") {
		start -= 2
	}
	start = max(start, lo)
	field := resolveMarkerName(sig, name)
	if !(lb > 0 && rb > 0) && (!lineStart || field == markOther && !knownInput(sig, name)) {
		return marker{}, false
	}
	return marker{start: start, end: end, field: field}, true
}

// resolveMarkerName maps a marker name to an output index: the exact name
// first, then a unique case-insensitive match.
func resolveMarkerName(sig *signature.Signature, name string) int {
	n := sig.NumOutputs()
	for i := range n {
		if sig.OutputName(i) == name {
			return i
		}
	}
	if strings.EqualFold(name, "completed") {
		return markCompleted
	}
	found := markOther
	for i := range n {
		if strings.EqualFold(sig.OutputName(i), name) {
			if found != markOther {
				return markOther
			}
			found = i
		}
	}
	return found
}

func knownInput(sig *signature.Signature, name string) bool {
	for i := range sig.NumInputs() {
		if strings.EqualFold(sig.Input(i).Name, name) {
			return true
		}
	}
	return false
}

// stripReasoning drops what reasoning models write before the answer: a
// leading <think>…</think> (or <thinking>, <reasoning>) block and OpenAI
// harmony channels up to the final channel's message. A tag that names an
// output field is the field, not reasoning.
func stripReasoning(sig *signature.Signature, s string) string {
	t := strings.TrimLeft(s, " \t\r\n")
	if strings.HasPrefix(t, "<|") {
		const final = "<|channel|>final<|message|>"
		if i := strings.LastIndex(t, final); i >= 0 {
			t = t[i+len(final):]
			for _, suf := range []string{"<|return|>", "<|end|>"} {
				t = strings.TrimSuffix(strings.TrimRight(t, " \t\r\n"), suf)
			}
			return t
		}
	}
	for _, tag := range thinkTags {
		if resolveMarkerName(sig, tag) >= 0 {
			continue
		}
		if len(t) > len(tag)+2 && t[0] == '<' && strings.EqualFold(t[1:len(tag)+1], tag) && t[len(tag)+1] == '>' {
			closing := "</" + tag + ">"
			if i := strings.Index(t, closing); i >= 0 {
				return t[i+len(closing):]
			}
			return "" // all reasoning, no answer yet
		}
	}
	return s
}

// section is the text of one output field found in a reply.
type section struct {
	text  string
	found bool
}

// sectionText is a section's value: the text after its marker, trimmed.
// Text on the marker's own line is trimmed on its own as well, as DSPy
// strips the header line's remainder ("[[ ## a ## ]] x  \n y" is "x\n y").
func sectionText(seg string) string {
	nl := strings.IndexByte(seg, '\n')
	if nl > 0 {
		if head := strings.TrimSpace(seg[:nl]); head != "" && len(strings.TrimRightFunc(seg[:nl], unicode.IsSpace)) < nl {
			if rest := strings.TrimRightFunc(seg[nl:], unicode.IsSpace); rest != "" {
				return head + rest
			}
		}
	}
	return strings.TrimSpace(seg)
}

// parseSections is the Chat parser.
func parseSections(sig *signature.Signature, completion, adapter string) (Values, error) {
	return parseChat(sig, completion, adapter, true)
}

// parseChat is the Chat parser; with json set, a reply without output
// markers but with JSON is read as JSON (once: that parse does not come
// back here).
func parseChat(sig *signature.Signature, completion, adapter string, json bool) (Values, error) {
	text := stripReasoning(sig, completion)
	n := sig.NumOutputs()
	var buf [8]section
	secs := buf[:0]
	if n <= len(buf) {
		secs = buf[:n]
	} else {
		secs = make([]section, n)
	}
	anyOutput, err := scanSections(sig, text, completion, adapter, secs, findMarker)
	if err != nil {
		return nil, err
	}
	if json && !anyOutput && strings.ContainsAny(text, "{[") {
		// The answer given as JSON instead of markers.
		vals, err := parseJSON(sig, completion, adapter, false)
		if err == nil || !errors.Is(err, errNotObject) {
			return vals, err
		}
	}
	if json && !anyOutput && hasOutputElement(sig, text) {
		// XML elements instead of markers (the XML parser does not come
		// back here: it found elements).
		return parseXMLFields(sig, completion, adapter)
	}
	if !anyOutput {
		// No markers at all: "Answer: Paris" labels, when they name fields.
		if _, err := scanSections(sig, text, completion, adapter, secs, findLabel); err != nil {
			return nil, err
		}
	}
	vals := make(Values, n)
	for i := range n {
		f := sig.Output(i)
		if !secs[i].found {
			continue
		}
		v, err := parseValue(unquoteText(secs[i].text, f), f)
		if err != nil {
			return nil, &ParseError{Adapter: adapter, Field: f.Name, Completion: completion, Partial: vals, Err: err}
		}
		vals[f.Name] = v
	}
	return finishOutputs(sig, vals, completion, adapter)
}

// scanSections files the text after each marker that find finds under its
// output field, up to the next marker or [[ ## completed ## ]]. It reports
// whether any output marker was found; a field given twice with different
// values is ErrAmbiguous.
func scanSections(sig *signature.Signature, text, completion, adapter string, secs []section, find func(*signature.Signature, string, int) (marker, bool)) (bool, error) {
	anyOutput := false
	cur, curStart := markOther, 0
	closeSection := func(end int) error {
		if cur < 0 {
			return nil
		}
		v := sectionText(text[curStart:end])
		sec := &secs[cur]
		switch {
		case !sec.found || sec.text == "":
			sec.text, sec.found = v, true
		case v != "" && v != sec.text:
			return &ParseError{Adapter: adapter, Field: sig.Output(cur).Name, Completion: completion,
				Err: wrapf(ErrAmbiguous, "the field appears twice with different values")}
		}
		return nil
	}
	for pos := 0; ; {
		m, ok := find(sig, text, pos)
		if !ok {
			return anyOutput, closeSection(len(text))
		}
		if err := closeSection(m.start); err != nil {
			return anyOutput, err
		}
		if m.field == markCompleted {
			return anyOutput, nil
		}
		cur, curStart, pos = m.field, m.end, m.end
		anyOutput = anyOutput || m.field >= 0
	}
}

// findLabel finds the next "Answer: …" label (also "**Answer:**",
// "Final answer:") that starts a line and names a field, for replies
// written without markers. Input names end a section, as with markers.
func findLabel(sig *signature.Signature, s string, pos int) (marker, bool) {
	for pos < len(s) {
		end := len(s)
		if nl := strings.IndexByte(s[pos:], '\n'); nl >= 0 {
			end = pos + nl
		}
		if m, ok := labelAt(sig, s, pos, end); ok {
			return m, true
		}
		pos = end + 1
	}
	return marker{}, false
}

// labelAt parses a label at the start of the line s[start:end].
func labelAt(sig *signature.Signature, s string, start, end int) (marker, bool) {
	const maxLabel = 40
	decor := func(k int) int {
		for k < end && strings.IndexByte(" \t*_#>", s[k]) >= 0 {
			k++
		}
		return k
	}
	k := decor(start)
	n0 := k
	for k < end && k-n0 < maxLabel && (isWordByte(s[k]) || s[k] == ' ') {
		k++
	}
	name := strings.Trim(s[n0:k], " _")
	k = decor(k)
	if name == "" || k >= end || s[k] != ':' {
		return marker{}, false
	}
	k++
	for k+1 < end && (s[k:k+2] == "**" || s[k:k+2] == "__") {
		k += 2
	}
	name = strings.ReplaceAll(name, " ", "_")
	field := resolveMarkerName(sig, name)
	if field == markCompleted || field == markOther && !knownInput(sig, name) {
		return marker{}, false
	}
	return marker{start: start, end: k, field: field}, true
}

// finishOutputs applies defaults to missing outputs (the default value, or
// nil for a nullable type) and reports the first missing required one.
func finishOutputs(sig *signature.Signature, vals Values, completion, adapter string) (Values, error) {
	for i := range sig.NumOutputs() {
		if _, ok := vals[sig.OutputName(i)]; ok {
			continue
		}
		f := sig.Output(i)
		switch {
		case f.HasDefault:
			vals[f.Name] = f.Default
		case f.Spec.Nullable():
			vals[f.Name] = reflect.Zero(f.Type).Interface()
		default:
			for j := i + 1; j < sig.NumOutputs(); j++ {
				g := sig.Output(j)
				if _, ok := vals[g.Name]; !ok && g.HasDefault {
					vals[g.Name] = g.Default
				}
			}
			return nil, &ParseError{Adapter: adapter, Field: f.Name, Completion: completion, Partial: vals, Err: ErrMissingField}
		}
	}
	return vals, nil
}

// hasOutputMarker reports whether text holds a marker of an output field.
func hasOutputMarker(sig *signature.Signature, text string) bool {
	for pos := 0; ; {
		m, ok := findMarker(sig, text, pos)
		if !ok {
			return false
		}
		if m.field >= 0 {
			return true
		}
		pos = m.end
	}
}
