package reply

import (
	"strings"
	"unicode"

	"github.com/sigwire/adapter/signature"
)

// NewXMLStream returns the Stream of a reply in XML elements (the XML
// adapter's), inside WithThink: the text inside an output field's element
// streams to that field, entities and CDATA decoded and the value trimmed
// as Read trims it; everything else belongs to no field.
//
// The stream holds back only what Read reads by what follows it: a
// possible closing tag, entity, CDATA section or output element at the
// end of the text; a str value that may turn out to be wrapped in quotes
// (Unquote drops them); a field's closing tag, until the next output
// element (or the end) confirms it, since a later closing tag of the same
// field before that element makes the first one part of the value
// (<code>print('</code>')</code>); and, inside a field, another output's
// opening tag, until the field's closing tag shows it is part of the value
// or the end of the reply shows the field's closing tag was forgotten.
func NewXMLStream(sig *signature.Signature) Stream {
	return WithThink(sig, &xmlFieldStream{sig: sig, field: otherField, cdAt: -1, opAt: -1})
}

type xmlMode uint8

const (
	xmOutside xmlMode = iota
	xmField           // inside an output field's element
	xmCDATA           // inside a CDATA section within a field
	xmInner           // in a field, from another output's opening tag on (at mark)
	xmClosed          // after a field's closing tag (at mark), not yet confirmed
)

// maxTag bounds the text from a '<' without a '>' that may still be a tag.
const maxTag = 256

type xmlFieldStream struct {
	sig   *signature.Signature
	buf   strings.Builder
	pos   int // text before pos is decided
	mode  xmlMode
	field int    // the output being read
	close string // its closing tag, "</name"
	// closeKey is close in lower case.
	closeKey string
	fresh    bool   // nothing of the field sent yet: leading blanks go
	hold     string // trailing blanks held until more text comes
	skip     bool   // the field's element is a repeat: nothing is sent
	sent     streamed
	// quoted: holding a str value that starts with a quote in qbuf.
	quoted bool
	qbuf   strings.Builder
	mark   int // xmInner: the other output's opening tag; xmClosed: the closing tag
	scan   int // where the search for what decides mark resumes
	// text before content is known to be the field's: a closing tag or an
	// output's opening tag there does not end it.
	content int
	// Searches done once: the next CDATA section at or after cdScanned
	// (cdAt, -1: none before the end of the text then in hand), and, per
	// closing tag (lower case), where the final text has none from on.
	cdAt, cdScanned int
	closeFree       map[string]int
	// The first output opening tag at or after opFrom: opAt (-1: none
	// before opScanned).
	opFrom, opAt, opScanned int
}

func (s *xmlFieldStream) Write(dst []Delta, text string) []Delta {
	if s.buf.Cap() == 0 {
		s.buf.Grow(max(512, 2*len(text)))
	}
	s.buf.WriteString(text)
	return s.advance(dst, false)
}

func (s *xmlFieldStream) Close(dst []Delta) []Delta {
	return s.advance(dst, true)
}

func (s *xmlFieldStream) advance(dst []Delta, final bool) []Delta {
	full := s.buf.String()
	for s.pos < len(full) || s.mode == xmClosed || s.mode == xmInner {
		switch s.mode {
		case xmOutside:
			k := strings.IndexByte(full[s.pos:], '<')
			if k < 0 {
				s.pos = len(full)
				return dst
			}
			k += s.pos
			el, ok := openTag(full, k, len(full))
			if !ok {
				if !final && !strings.ContainsAny(full[k+1:], "<>") && len(full)-k < maxTag {
					return dst // the tag may still be arriving
				}
				s.pos = k + 1
				continue
			}
			s.pos = el.start
			if el.selfClosing {
				continue
			}
			if i := outputIndex(s.sig, el.key()); i >= 0 {
				if len(s.close) < 2 || s.close[2:] != el.name {
					s.close = "</" + el.name
					s.closeKey = strings.ToLower(s.close)
				}
				s.mode, s.field, s.fresh, s.hold, s.content = xmField, i, true, "", 0
				// A repeated element is not streamed again, except a list's
				// (Parse reads those as its items).
				s.skip = s.sent.again(i) && listSpec(s.sig.Output(i).Spec) == nil
				s.sent.mark(i)
			}
		case xmField:
			// What ends the text in hand: the field's closing tag, another
			// output's opening tag or a CDATA section, whichever comes
			// first (each search stops at the next one's start).
			rest := full[s.pos:]
			from := max(s.pos, s.content)
			limit := len(full)
			if c := s.nextCDATA(full, s.pos); c >= 0 {
				limit = c
			}
			o := -1
			if from < limit {
				o = s.outputOpen(full, from, limit)
			}
			end := limit
			if o >= 0 {
				end = o
			}
			k := -1
			if from < end {
				// A tag follows the window: what ends at its end is decided.
				if k = findClose(full[from:end], s.close, final || end < len(full)); k >= 0 {
					k += from
				}
			}
			switch {
			case k >= 0:
				dst = s.emitText(dst, decodeEntities(full[s.pos:k]), false)
				s.pos = k
				s.mode, s.mark, s.scan = xmClosed, k, k+len(s.close)
			case o >= 0:
				dst = s.emitText(dst, decodeEntities(full[s.pos:o]), false)
				s.pos = o
				s.mode, s.mark, s.scan = xmInner, o, o
			case limit < len(full):
				dst = s.emitText(dst, decodeEntities(full[s.pos:limit]), false)
				s.pos = limit + len("<![CDATA[")
				s.mode = xmCDATA
			case final:
				dst = s.emitText(dst, decodeEntities(rest), true)
				s.pos = len(full)
			default:
				end := s.holdStart(rest)
				dst = s.emitText(dst, decodeEntities(rest[:end]), false)
				s.pos += end
				return dst
			}
		case xmCDATA:
			rest := full[s.pos:]
			k := strings.Index(rest, "]]>")
			switch {
			case k >= 0:
				dst = s.emitText(dst, rest[:k], false)
				s.pos += k + 3
				s.mode = xmField
			case final:
				dst = s.emitText(dst, rest, true)
				s.pos = len(full)
			default:
				end := max(0, len(rest)-2)
				dst = s.emitText(dst, rest[:end], false)
				s.pos += end
				return dst
			}
		case xmInner:
			// Another output's opening tag inside the field: the field's
			// value if its closing tag follows (Parse reads the element to
			// it), else where the field ends.
			k := -1
			if free, ok := s.closeFree[s.closeKey]; !final || !ok || s.scan < free {
				k = findClose(full[s.scan:], s.close, final)
			}
			switch {
			case k >= 0:
				s.content = s.scan + k
				s.mode = xmField
			case final:
				// None from here to the end: later fields need not look.
				if s.closeFree == nil {
					s.closeFree = map[string]int{}
				}
				if free, ok := s.closeFree[s.closeKey]; !ok || s.scan < free {
					s.closeFree[s.closeKey] = s.scan
				}
				dst = s.emitText(dst, "", true)
				s.mode, s.field = xmOutside, otherField
			default:
				s.scan = max(s.mark, len(full)-len(s.close))
				return dst
			}
		case xmClosed:
			var decided bool
			if dst, decided = s.closed(dst, full, final); !decided {
				return dst
			}
		}
	}
	return dst
}

// closed follows the text after a field's closing tag (at s.mark) to what
// decides it: another closing tag of the field (blanks only before its
// '>') before the next output element makes the text from s.mark on part
// of the value, as Parse reads it; that element, or the end of the reply,
// confirms the field's end. It reports false when the text in hand does
// not decide yet.
func (s *xmlFieldStream) closed(dst []Delta, full string, final bool) ([]Delta, bool) {
	for {
		j := strings.IndexByte(full[s.scan:], '<')
		if j < 0 {
			break
		}
		p := s.scan + j
		if closingTag(full, p, s.close) {
			s.content, s.pos, s.mode = p, s.mark, xmField // the value runs on
			return dst, true
		}
		if el, ok := openTag(full, p, len(full)); ok && outputIndex(s.sig, el.key()) >= 0 {
			dst = s.emitText(dst, "", true)
			s.pos, s.mode, s.field = p, xmOutside, otherField
			return dst, true
		}
		if !final && len(full)-p < maxTag && !strings.ContainsAny(full[p+1:], "<>") {
			s.scan = p
			return dst, false // a tag still arriving
		}
		s.scan = p + 1
	}
	if !final {
		s.scan = len(full)
		return dst, false
	}
	dst = s.emitText(dst, "", true)
	s.pos, s.mode, s.field = len(full), xmOutside, otherField
	return dst, true
}

// nextCDATA returns the index of the first CDATA section ("<![CDATA[") at
// or after i in full, or -1, reading each byte of the text once however
// often it is asked.
func (s *xmlFieldStream) nextCDATA(full string, i int) int {
	if s.cdAt >= i {
		return s.cdAt
	}
	from := max(i, s.cdScanned)
	if j := strings.Index(full[from:], "<![CDATA["); j >= 0 {
		s.cdAt = from + j
		return s.cdAt
	}
	s.cdAt, s.cdScanned = -1, max(from, len(full)-len("<![CDATA[")+1)
	return -1
}

// closingTag reports whether full[p:] starts with the closing tag close
// ("</name", any case) followed by blanks and '>'.
func closingTag(full string, p int, close string) bool {
	if len(full)-p < len(close) || !strings.EqualFold(full[p:p+len(close)], close) {
		return false
	}
	for i := p + len(close); i < len(full); i++ {
		switch full[i] {
		case '>':
			return true
		case ' ', '\t', '\n', '\r':
		default:
			return false
		}
	}
	return false
}

// outputOpen returns the index of the first opening tag of an output
// field in full[from:to] (as Parse finds where a field without its closing
// tag ends), or -1. The search is remembered: asked again from a later
// index, it does not read the same text twice.
func (s *xmlFieldStream) outputOpen(full string, from, to int) int {
	switch {
	case s.opAt >= from && s.opFrom <= from:
		// The first at or after opFrom, which is before from.
	case s.opAt < 0 && s.opFrom <= from && s.opScanned > from:
		s.opAt = s.firstOpen(full, s.opScanned) // none in [opFrom, opScanned)
	default:
		s.opFrom, s.opAt = from, s.firstOpen(full, from)
	}
	if s.opAt >= 0 && s.opAt < to {
		return s.opAt
	}
	return -1
}

// firstOpen returns the index of the first output opening tag at or
// after i, or -1, recording in opScanned how far the text in hand was read
// (a tag at the end may still be arriving).
func (s *xmlFieldStream) firstOpen(full string, i int) int {
	for i < len(full) {
		j := strings.IndexByte(full[i:], '<')
		if j < 0 {
			break
		}
		i += j
		if el, ok := openTag(full, i, len(full)); ok && outputIndex(s.sig, el.key()) >= 0 {
			return i
		}
		i++
	}
	s.opScanned = max(s.opScanned, len(full)-maxTag, 0)
	return -1
}

// findClose finds the closing tag close ("</name") in rest: followed by
// '>' or a blank, not by more of a longer name. An occurrence at the very
// end is undecided (-1) until the text is final.
func findClose(rest, close string, final bool) int {
	for from := 0; ; {
		k := indexFold(rest[from:], close)
		if k < 0 {
			return -1
		}
		k += from
		after := k + len(close)
		if after == len(rest) {
			if final {
				return k
			}
			return -1
		}
		if !IsNameByte(rest[after], false) {
			return k
		}
		from = k + 1
	}
}

// holdStart returns how much of a field's pending text can be sent: it
// holds back a '<' that may begin the closing tag, a CDATA section or an
// output's opening tag, and an '&' that may begin an entity.
func (s *xmlFieldStream) holdStart(rest string) int {
	end := len(rest)
	if i := strings.LastIndexByte(rest, '<'); i >= 0 && s.mayBeTag(rest[i:]) {
		end = i
	}
	if i := strings.LastIndexByte(rest[:end], '&'); i >= 0 && end-i <= 10 && !strings.Contains(rest[i:end], ";") {
		end = i
	}
	return end
}

// mayBeTag reports whether t, the text from a '<' to the end, may still
// become the field's closing tag, a CDATA section or an output's opening
// tag.
func (s *xmlFieldStream) mayBeTag(t string) bool {
	switch {
	case strings.IndexByte(t, '>') >= 0 || len(t) > maxTag:
		return false
	case len(t) < max(len(s.close)+2, len("<![CDATA[")):
		return true
	}
	n := 1
	for n < len(t) && IsNameByte(t[n], n == 1) {
		n++
	}
	if n < len(t) {
		return outputIndex(s.sig, t[1:n]) >= 0 // its attributes still arriving
	}
	for i := range s.sig.NumOutputs() {
		if name := s.sig.OutputName(i); len(name) >= n-1 && strings.EqualFold(name[:n-1], t[1:n]) {
			return true
		}
	}
	return false
}

// emitText sends decoded text of the current field: leading blanks of the
// field dropped, trailing blanks held until more text comes (dropped at
// the field's end), a str value that opens with a quote held while Parse
// may still drop its quotes.
func (s *xmlFieldStream) emitText(dst []Delta, text string, last bool) []Delta {
	if s.skip {
		return dst
	}
	if s.fresh {
		text = strings.TrimLeftFunc(text, unicode.IsSpace)
		if text == "" {
			return dst
		}
		s.fresh = false
		f := s.sig.Output(s.field)
		if f.Spec.Kind() == signature.KindString && (text[0] == '"' || strings.HasPrefix(text, "“") || len(text) < len("“") && strings.HasPrefix("“", text)) {
			s.quoted = true
			s.qbuf.Reset()
		}
	}
	if s.quoted {
		s.qbuf.WriteString(text)
		q := strings.TrimRightFunc(s.qbuf.String(), unicode.IsSpace)
		switch {
		case last:
			s.quoted = false
			if q = Unquote(q, s.sig.Output(s.field)); q == "" {
				return dst
			}
			return append(dst, Delta{Field: s.sig.Output(s.field).Name, Text: q})
		case len(q) < len("“") || mayBeQuoted(q):
			return dst // still possibly "…": Parse would drop the quotes
		}
		s.quoted = false
		text = s.qbuf.String()
	}
	body := strings.TrimRightFunc(text, unicode.IsSpace)
	if body == "" {
		if !last {
			s.hold += text
		}
		return dst
	}
	dst = append(dst, Delta{Field: s.sig.Output(s.field).Name, Text: s.hold + body})
	s.hold = ""
	if !last {
		s.hold = text[len(body):]
	}
	return dst
}
