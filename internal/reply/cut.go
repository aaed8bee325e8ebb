package reply

import (
	"strings"

	"github.com/sigwire/adapter/internal/jsonx"
	"github.com/sigwire/adapter/signature"
)

// CutField returns the output a reply cut off at its end was giving when
// it stopped, read in the shapes Read reads, in the adapter's order: the
// output of the last counting field marker or label of a reply in
// markers, the last output key of a reply in JSON, the output element
// left open by a reply in XML, the only output of bare text. It returns
// -1 when the text ends outside any output: in a reasoning block, after
// the completed marker, after an output element was closed, after a
// marker of an input.
func CutField(sig *signature.Signature, completion string, prefer Shape) int {
	if sig == nil || sig.NumOutputs() == 0 {
		return -1
	}
	text := stripReasoning(sig, completion)
	if strings.TrimSpace(text) == "" {
		return -1 // all reasoning so far
	}
	text = unfence(text)
	var order [3]Shape
	switch {
	case prefer == JSON && looksJSON(text):
		order = [3]Shape{JSON, Markers, XML}
	case prefer == XML:
		order = [3]Shape{XML, Markers, JSON}
	case looksJSON(text):
		order = [3]Shape{Markers, JSON, XML}
	default:
		order = [3]Shape{Markers, XML, JSON}
	}
	for _, sh := range order {
		var field int
		var found bool
		switch sh {
		case Markers:
			field, found = cutMarkers(sig, text)
		case XML:
			field, found = cutXML(sig, text)
		case JSON:
			field, found = cutJSON(sig, text)
		}
		if found {
			return field
		}
	}
	if m, ok := lastLabel(sig, text); ok {
		return m
	}
	if sig.NumOutputs() == 1 && sig.Output(0).Spec.Kind() == signature.KindString {
		return 0 // bare text is the one output
	}
	return -1
}

// cutMarkers is CutField for a reply in markers: the section the text
// ends in, as markerScan.sections files them.
func cutMarkers(sig *signature.Signature, text string) (int, bool) {
	if strings.IndexByte(text, '#') < 0 {
		return -1, false
	}
	var ms markerScan
	ms.init(sig, text)
	if ms.nMarked == 0 {
		return -1, false
	}
	if ms.end < len(text) {
		return -1, true // the completed marker: every field was given
	}
	cur, at := otherField, -1
	it := markIter{ms: &ms}
	for m := it.next(); m != nil; m = it.next() {
		if ms.counts(m) {
			if m.Field == completedField {
				return -1, true
			}
			cur, at = m.Field, m.Start
		}
	}
	if ms.nMarked < sig.NumOutputs() {
		labels := labelIter{ms: &ms, on: true}
		for l, ok := labels.next(); ok; l, ok = labels.next() {
			if l.Start > at {
				cur, at = l.Field, l.Start
			}
		}
	}
	return cur, true
}

// cutXML is CutField for a reply in XML: the output element the text ends
// inside.
func cutXML(sig *signature.Signature, text string) (int, bool) {
	if strings.IndexByte(text, '<') < 0 {
		return -1, false
	}
	els, err := scanXML(text, 0, len(text), func(name string) bool { return outputIndex(sig, name) >= 0 })
	if err != nil {
		return -1, false
	}
	field, found := -1, false
	for _, el := range els {
		if i := outputIndex(sig, el.key()); i >= 0 {
			found = true
			field = -1
			if !el.closed {
				field = i
			}
		}
	}
	return field, found
}

// cutJSON is CutField for a reply in JSON: the last key naming an output
// (the member the text ends in or after).
func cutJSON(sig *signature.Signature, text string) (int, bool) {
	if strings.IndexByte(text, '{') < 0 {
		return -1, false
	}
	var l jsonx.Lexer
	field := -1
	for i := 0; i < len(text); i++ {
		c := text[i]
		if (c == '"' || c == '\'') && l.ValueMayStart() {
			j := closeQuote(text, i)
			if j >= len(text) {
				break // cut inside a key or a string value
			}
			if k := skipSpace(text[j+1:]); k != "" && k[0] == ':' {
				if f := outputIndex(sig, text[i+1:j]); f >= 0 {
					field = f
				}
			}
			i = j
			l.Saw('s')
			continue
		}
		if !l.Skip(c) {
			l.Saw(c)
		}
	}
	return field, field >= 0
}

// lastLabel is the output of the last "Answer: …" label in text.
func lastLabel(sig *signature.Signature, text string) (int, bool) {
	field, found := -1, false
	for pos := 0; ; {
		m, ok := findLabel(sig, text, pos)
		if !ok {
			return field, found
		}
		if m.Field >= 0 {
			field, found = m.Field, true
		} else if found {
			field = -1
		}
		pos = m.End
	}
}

// closeQuote returns the index of the quote closing the string the quote
// at s[i] opens (a backslash escapes the byte after it), or len(s).
func closeQuote(s string, i int) int {
	j := i + 1
	for j < len(s) && s[j] != s[i] {
		if s[j] == '\\' {
			j++
		}
		j++
	}
	return min(j, len(s))
}
