package adapter

import (
	"strings"
	"unicode"

	"github.com/sigwire/adapter/internal/reply"
	"github.com/sigwire/adapter/signature"
)

// NewFieldStream returns a FieldStream for Chat replies: it finds markers
// as the text arrives, with the same leniency as Parse, holding back only
// text that could still turn out to be part of a marker, and trailing
// whitespace (which Parse trims). A field's marker given again after its
// text was sent streams as text outside any field: Parse keeps the first
// value.
func (Chat) NewFieldStream(sig *signature.Signature) FieldStream {
	return &chatFieldStream{sig: sig, cur: reply.Other, hold: -1}
}

type chatFieldStream struct {
	sig     *signature.Signature
	buf     strings.Builder // the whole reply so far
	pos     int             // text before pos is decided
	base    int             // where the answer starts (after a think block): a line start
	cur     int             // the section being read: output index or reply.Other
	fresh   bool            // at the start of a section: leading blanks are dropped
	onLine  bool            // still on the marker's line: its trailing blanks are dropped
	hold    int             // full[hold:pos] is held trailing whitespace of the section; -1 none
	think   int             // 0 undecided, 1 inside a leading think block, 2 past it
	done    bool            // the completed marker was seen
	thinkTo string          // the closing tag of the think block
	sent    streamed        // outputs whose text was sent
}

// thinkTags are the leading reasoning blocks streamed as reasoning.
var thinkTags = [...]string{"think", "thinking", "reasoning"}

func (s *chatFieldStream) Write(dst []FieldDelta, text string) []FieldDelta {
	if s.buf.Cap() == 0 {
		s.buf.Grow(max(512, 2*len(text)))
	}
	s.buf.WriteString(text)
	return s.advance(dst, false)
}

func (s *chatFieldStream) Close(dst []FieldDelta) []FieldDelta {
	return s.advance(dst, true)
}

// maxMarkerTail bounds the text held back as a possible marker start.
const maxMarkerTail = 96

func (s *chatFieldStream) advance(dst []FieldDelta, final bool) []FieldDelta {
	if s.done {
		return dst
	}
	full := s.buf.String()
	if s.think == 0 {
		t := strings.TrimLeft(full, " \t\r\n")
		s.think = 2
		for _, tag := range reply.ThinkTags {
			if reply.OutputIndex(s.sig, tag) >= 0 {
				continue
			}
			open := "<" + tag + ">"
			switch {
			case len(t) >= len(open) && strings.EqualFold(t[:len(open)], open):
				s.think, s.thinkTo = 1, "</"+tag+">"
				s.pos = len(full) - len(t) + len(open)
			case !final && len(t) < len(open) && strings.HasPrefix(open, strings.ToLower(t)):
				s.think = 0 // could still become a think block
				return dst
			}
			if s.think == 1 {
				break
			}
		}
	}
	if s.think == 1 {
		if i := strings.Index(full[s.pos:], s.thinkTo); i >= 0 {
			if i > 0 {
				dst = append(dst, FieldDelta{Text: full[s.pos : s.pos+i], Reasoning: true})
			}
			s.pos += i + len(s.thinkTo)
			s.base = s.pos
			s.think = 2
		} else {
			end := len(full)
			if !final {
				end = max(s.pos, len(full)-len(s.thinkTo)+1)
			}
			if end > s.pos {
				dst = append(dst, FieldDelta{Text: full[s.pos:end], Reasoning: true})
				s.pos = end
			}
			return dst
		}
	}
	for {
		m, ok := reply.FindMarker(s.sig, full[s.base:], s.pos-s.base)
		m.Start, m.End = m.Start+s.base, m.End+s.base
		// A marker at the very end may still grow ("]]" then ":" or "**").
		if ok && !final && len(full)-m.End < 2 {
			return s.emit(dst, full, m.Start, false)
		}
		if !ok {
			end := len(full)
			if !final {
				end = holdStart(full, s.pos)
			}
			return s.emit(dst, full, end, final)
		}
		dst = s.emit(dst, full, m.Start, true)
		s.hold = -1
		s.pos = m.End
		if m.Field == reply.Completed {
			s.done = true
			return dst
		}
		s.cur, s.fresh, s.onLine = m.Field, true, true
		if s.sent.again(m.Field) {
			// A field given again: Parse keeps the first value (or reports
			// two different ones), so the repeat is outside any field.
			s.cur = reply.Other
		}
	}
}

// holdStart returns where the undecided tail of full begins: the earliest
// character after pos, within the last maxMarkerTail bytes and on the last
// line, that could start a marker.
func holdStart(full string, pos int) int {
	lo := max(pos, len(full)-maxMarkerTail)
	for i := len(full) - 1; i >= lo; i-- {
		if c := full[i]; c == '\n' || c == '\r' {
			lo = i + 1
			break
		}
	}
	for i := lo; i < len(full); i++ {
		switch full[i] {
		case '[', '#', '*', '_', '>':
			return i
		}
	}
	return len(full)
}

// emit sends full[s.pos:end] to the current section, dropping leading
// blanks of a fresh section and the blanks ending the marker's own line,
// and holding trailing whitespace until more text comes (or, when last,
// dropping it). Held whitespace stays in full and is sent as part of the
// next delta's substring, so the common path does not allocate.
func (s *chatFieldStream) emit(dst []FieldDelta, full string, end int, last bool) []FieldDelta {
	if end <= s.pos {
		return dst
	}
	origStart, start := s.pos, s.pos
	s.pos = end
	text := full[start:end]
	joined := false // text is no longer a substring of full
	if s.onLine {
		if nl := strings.IndexByte(text, '\n'); nl >= 0 {
			s.onLine = false
			if head := text[:nl]; !s.fresh || strings.TrimSpace(head) != "" {
				switch trimmed := strings.TrimRightFunc(head, unicode.IsSpace); {
				case trimmed == "":
					s.hold = -1 // the line's held blanks go too
					start += nl
					text = text[nl:]
				case len(trimmed) < len(head):
					text = trimmed + text[nl:]
					joined = true
				}
			}
		}
	}
	if s.fresh {
		t := strings.TrimLeftFunc(text, unicode.IsSpace)
		if t == "" {
			return dst
		}
		start += len(text) - len(t)
		text = t
		s.fresh = false
	}
	body := strings.TrimRightFunc(text, unicode.IsSpace)
	if body == "" {
		if !last && s.hold < 0 {
			s.hold = start
		}
		return dst
	}
	field := ""
	if s.cur >= 0 {
		field = s.sig.Output(s.cur).Name
		s.sent.mark(s.cur)
	}
	out := body
	switch {
	case s.hold >= 0 && joined:
		out = full[s.hold:origStart] + body
	case s.hold >= 0:
		out = full[s.hold : start+len(body)]
	}
	dst = append(dst, FieldDelta{Field: field, Text: out})
	s.hold = -1
	if !last && len(body) < len(text) {
		s.hold = end - (len(text) - len(body))
	}
	return dst
}
