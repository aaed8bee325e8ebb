package adapter

import (
	"strings"
	"unicode"

	"github.com/sigwire/adapter/internal/reply"
	"github.com/sigwire/adapter/signature"
)

// NewFieldStream returns a FieldStream for XML replies: the text inside an
// output field's element streams to that field, entities and CDATA
// decoded and the value trimmed as Parse trims it; a leading <think> block
// streams as reasoning, as for every adapter; everything else belongs to
// no field. Only a
// possible closing tag, entity or CDATA end at the end of the text is held
// back. (A value containing its own closing tag, which Parse recovers from
// the whole reply, ends its deltas at the first closing tag.)
func (XML) NewFieldStream(sig *signature.Signature) FieldStream {
	return withThink(sig, &xmlFieldStream{sig: sig, field: reply.Other})
}

type xmlMode uint8

const (
	xmOutside xmlMode = iota
	xmField           // inside an output field's element
	xmCDATA           // inside a CDATA section within a field
)

type xmlFieldStream struct {
	sig   *signature.Signature
	buf   strings.Builder
	pos   int // text before pos is decided
	mode  xmlMode
	field int    // the output being read
	close string // its closing tag, "</name"
	fresh bool   // nothing of the field sent yet: leading blanks go
	hold  string // trailing blanks held until more text comes
	skip  bool   // the field's element is a repeat: nothing is sent
	sent  streamed
}

func (s *xmlFieldStream) Write(dst []FieldDelta, text string) []FieldDelta {
	if s.buf.Cap() == 0 {
		s.buf.Grow(max(512, 2*len(text)))
	}
	s.buf.WriteString(text)
	return s.advance(dst, false)
}

func (s *xmlFieldStream) Close(dst []FieldDelta) []FieldDelta {
	return s.advance(dst, true)
}

func (s *xmlFieldStream) advance(dst []FieldDelta, final bool) []FieldDelta {
	full := s.buf.String()
	for s.pos < len(full) {
		switch s.mode {
		case xmOutside:
			k := strings.IndexByte(full[s.pos:], '<')
			if k < 0 {
				s.pos = len(full)
				return dst
			}
			k += s.pos
			el, ok := reply.OpenTag(full, k)
			if !ok {
				if !final && !strings.ContainsAny(full[k+1:], "<>") && len(full)-k < 256 {
					return dst // the tag may still be arriving
				}
				s.pos = k + 1
				continue
			}
			s.pos = el.Start
			if el.SelfClosing {
				continue
			}
			if i := reply.OutputIndex(s.sig, el.Key); i >= 0 {
				s.mode, s.field, s.close, s.fresh, s.hold = xmField, i, "</"+el.Name, true, ""
				// A repeated element is not streamed again, except a list's
				// (Parse reads those as its items).
				s.skip = s.sent.again(i) && !reply.IsList(s.sig.Output(i).Spec)
				s.sent.mark(i)
			}
		case xmField:
			rest := full[s.pos:]
			k := findClose(rest, s.close, final)
			c := strings.Index(rest, "<![CDATA[")
			switch {
			case c >= 0 && (k < 0 || c < k):
				dst = s.emitText(dst, reply.DecodeEntities(rest[:c]), false)
				s.pos += c + len("<![CDATA[")
				s.mode = xmCDATA
			case k >= 0:
				dst = s.emitText(dst, reply.DecodeEntities(rest[:k]), true)
				s.pos = skipPast(full, s.pos+k, '>')
				s.mode, s.field = xmOutside, reply.Other
			case final:
				dst = s.emitText(dst, reply.DecodeEntities(rest), true)
				s.pos = len(full)
			default:
				end := xmlHoldStart(rest, s.close)
				dst = s.emitText(dst, reply.DecodeEntities(rest[:end]), false)
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
		}
	}
	return dst
}

// findClose finds the closing tag close ("</name") in rest: followed by
// '>' or a blank, not by more of a longer name. An occurrence at the very
// end is undecided (-1) until the text is final.
func findClose(rest, close string, final bool) int {
	for from := 0; ; {
		k := reply.IndexFold(rest[from:], close)
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
		if !reply.IsNameByte(rest[after], false) {
			return k
		}
		from = k + 1
	}
}

// skipPast returns the index after the next c at or after i, or len(s).
func skipPast(s string, i int, c byte) int {
	if j := strings.IndexByte(s[i:], c); j >= 0 {
		return i + j + 1
	}
	return len(s)
}

// xmlHoldStart returns how much of a field's pending text can be sent: it
// holds back a '<' that may begin the closing tag and an '&' that may
// begin an entity.
func xmlHoldStart(rest, close string) int {
	end := len(rest)
	if i := strings.LastIndexByte(rest, '<'); i >= 0 && len(rest)-i < len(close)+2 {
		end = i
	}
	if i := strings.LastIndexByte(rest[:end], '&'); i >= 0 && end-i <= 10 && !strings.Contains(rest[i:end], ";") {
		end = i
	}
	return end
}

// emitText sends decoded text of the current field: leading blanks of the
// field dropped, trailing blanks held until more text comes (dropped at
// the field's end).
func (s *xmlFieldStream) emitText(dst []FieldDelta, text string, last bool) []FieldDelta {
	if s.skip {
		return dst
	}
	if s.fresh {
		text = strings.TrimLeftFunc(text, unicode.IsSpace)
		if text == "" {
			return dst
		}
		s.fresh = false
	}
	body := strings.TrimRightFunc(text, unicode.IsSpace)
	if body == "" {
		if !last {
			s.hold += text
		}
		return dst
	}
	dst = append(dst, FieldDelta{Field: s.sig.Output(s.field).Name, Text: s.hold + body})
	s.hold = ""
	if !last {
		s.hold = text[len(body):]
	}
	return dst
}
