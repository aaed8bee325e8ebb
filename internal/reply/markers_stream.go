package reply

import (
	"strings"
	"unicode"

	"github.com/sigwire/adapter/signature"
)

// NewMarkerStream returns the Stream of a reply in field markers (the Chat
// adapter's), inside WithThink. It finds markers as the text arrives,
// with the same leniency as Read, holding back only text that could still
// turn out to be part of a marker, trailing whitespace (which
// sectionText trims), a str value that may turn out to be wrapped in
// quotes (Unquote drops them), and a last line that may close a code
// fence around the whole reply. A field's marker given again after its
// text was sent streams as text outside any field: Read keeps the first
// value.
//
// A marker in the middle of a line counts unless the reply also marks
// that field (or, for completed, another output) at the start of a line
// later on. The stream cannot know that yet, so from such a marker on it
// holds everything back and, on Close, sends each str output's value as
// parse (the adapter's Parse) reads it from the whole reply.
func NewMarkerStream(sig *signature.Signature, parse func(*signature.Signature, string) (map[string]any, error)) Stream {
	return WithThink(sig, &chatFieldStream{sig: sig, parse: parse, cur: otherField, hold: -1, bound: markerBound(sig)})
}

type chatFieldStream struct {
	sig      *signature.Signature
	parse    func(*signature.Signature, string) (map[string]any, error) // the adapter's Parse: see settle
	bound    int                                                        // the longest marker (markerBound)
	buf      strings.Builder                                            // the whole reply so far
	pos      int                                                        // text before pos is decided
	cur      int                                                        // the section being read: output index or otherField
	fresh    bool                                                       // at the start of a section: leading blanks are dropped
	onLine   bool                                                       // still on the marker's line: its trailing blanks are dropped
	hold     int                                                        // full[hold:pos] is held trailing whitespace of the section; -1 none
	done     bool                                                       // the completed marker was seen
	sent     streamed                                                   // outputs whose text was sent
	line     streamed                                                   // outputs marked at the start of a line so far
	deferred bool                                                       // a mid-line marker may count: decide on Close
	lineChk  int                                                        // lines of full before it are checked for labels (labelAhead)
	lineSeen int                                                        // full[lineChk:lineSeen] holds no line break
	fence    int                                                        // 0 undecided, 1 the answer is inside a code fence, 2 it is not
	fenceTag string                                                     // the fence's opening run ("```", "````", "~~~")
	depth    int                                                        // code blocks open inside the fence
	quoted   bool                                                       // holding a str value that starts with a quote
	qbuf     strings.Builder                                            // the held quoted value
	sentBuf  [8]int
	sentLen  []int // bytes sent per output
}

func (s *chatFieldStream) Write(dst []Delta, text string) []Delta {
	if s.buf.Cap() == 0 {
		s.buf.Grow(max(512, 2*len(text)))
	}
	s.buf.WriteString(text)
	return s.advance(dst, false)
}

func (s *chatFieldStream) Close(dst []Delta) []Delta {
	dst = s.advance(dst, true)
	if s.deferred {
		return s.settle(dst)
	}
	s.endField(&dst)
	return dst
}

func (s *chatFieldStream) advance(dst []Delta, final bool) []Delta {
	if s.done || s.deferred {
		return dst
	}
	full := s.buf.String()
	for {
		m, ok := FindMarker(s.sig, full, s.pos)
		upto := len(full)
		if ok {
			upto = m.Start
		}
		if at, ok := s.labelAhead(full, upto, final); ok {
			// A label of an output no marker has named so far: it ends the
			// section unless a marker of that output follows (sections):
			// undecided.
			s.deferred = true
			return s.emit(dst, full, at, false)
		}
		// A marker at the very end may still grow ("]]" then ":" or "**", or
		// blanks and then a decoration).
		if ok && !final && (len(full)-m.End < 2 || mayGrow(full[m.End:])) {
			return s.emit(dst, full, m.Start, false)
		}
		if !ok {
			end := len(full)
			if !final {
				end = holdStart(full, s.pos, s.bound)
			}
			return s.emit(dst, full, end, final)
		}
		if s.fence == 0 {
			s.openingFence(full[:m.Start])
		}
		if !m.LineStart {
			switch {
			case m.Field >= 0 && !s.line.again(m.Field), m.Field == completedField:
				// It counts unless a line-start marker follows: undecided.
				s.deferred = true
				return s.emit(dst, full, m.Start, false)
			}
			// A mid-line marker that cannot count is text of the section.
			dst = s.emit(dst, full, m.End, false)
			continue
		}
		dst = s.emit(dst, full, m.Start, true)
		s.endField(&dst)
		s.hold = -1
		s.pos = m.End
		if m.Field == completedField {
			s.done = true
			return dst
		}
		if m.Field >= 0 {
			s.line.mark(m.Field)
		}
		s.cur, s.fresh, s.onLine = m.Field, true, true
		if s.sent.again(m.Field) {
			// A field given again: Parse keeps the first value (or reports
			// two different ones), so the repeat is outside any field.
			s.cur = otherField
		}
	}
}

// labelAhead reports the start of the first line starting before upto,
// from s.lineChk on, that is a label of an output no line-start marker has
// named so far (outputLabel: how the reader takes such a label, in
// sections); lines not yet complete wait, unless final. It checks more
// than sections counts (a marker of the output may still follow; code
// blocks are not followed), so a stream that defers on it settles to
// Parse's reading.
func (s *chatFieldStream) labelAhead(full string, upto int, final bool) (int, bool) {
	for s.lineChk < upto {
		start, end := s.lineChk, len(full)
		from := max(start, s.lineSeen)
		if nl := strings.IndexByte(full[from:], '\n'); nl >= 0 {
			end = from + nl
		} else if !final {
			s.lineSeen = len(full) // a long line is searched once
			return 0, false
		}
		if m, ok := outputLabel(s.sig, full, start, end); ok && !s.line.again(m.Field) {
			return start, true
		}
		s.lineChk = end + 1
	}
	return 0, false
}

// openingFence records whether the answer is inside a code fence: the
// text before the first marker opens one (as Parse's reply reader sees
// it) that is still open.
func (s *chatFieldStream) openingFence(pre string) {
	s.fence = 2
	if tag, ok := openFence(pre); ok {
		s.fence, s.fenceTag = 1, tag
	}
}

// holdStart returns where the undecided tail of full begins: the earliest
// character after pos, within the last bound bytes and on the last
// line, that could start a marker.
func holdStart(full string, pos, bound int) int {
	lo := max(pos, len(full)-bound)
	for i := len(full) - 1; i >= lo; i-- {
		if c := full[i]; c == '\n' || c == '\r' {
			lo = i + 1
			break
		}
	}
	atLine := lo == 0 || full[lo-1] == '\n' || full[lo-1] == '\r'
	for i := lo; i < len(full); i++ {
		switch full[i] {
		case '[', '#', '*', '_', '>', '`', '-', '+':
			if atLine && i > lo && lineDecoration(full[lo:i]) {
				return lo // "2. [[ ## …": the number is the marker's decoration
			}
			return i
		}
	}
	if atLine && lineDecoration(full[lo:]) {
		return lo // "2. " may still become a numbered marker
	}
	return len(full)
}

// emit sends full[s.pos:end] to the current section, dropping leading
// blanks of a fresh section and the blanks ending the marker's own line,
// and holding trailing whitespace until more text comes (or, when last,
// dropping it). Held whitespace stays in full and is sent as part of the
// next delta's substring, so the common path does not allocate.
func (s *chatFieldStream) emit(dst []Delta, full string, end int, last bool) []Delta {
	if s.fence == 1 && s.cur >= 0 {
		var closed bool
		if end, closed = s.fenceLines(full, end, last); closed {
			last = true
		}
	}
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
		if !last && len(t) < len("“") && strings.HasPrefix("“", t) {
			s.pos = end - len(t) // an opening curly quote still arriving
			return dst
		}
		start += len(text) - len(t)
		text = t
		s.fresh = false
		if s.cur >= 0 && s.sig.Output(s.cur).Spec.Kind() == signature.KindString && (t[0] == '"' || strings.HasPrefix(t, "“")) {
			s.quoted = true
			s.qbuf.Reset()
		}
	}
	body := strings.TrimRightFunc(text, unicode.IsSpace)
	if body == "" {
		if !last && s.hold < 0 {
			s.hold = start
		}
		return dst
	}
	out := body
	switch {
	case s.hold >= 0 && joined:
		out = full[s.hold:origStart] + body
	case s.hold >= 0:
		out = full[s.hold : start+len(body)]
	}
	s.hold = -1
	if !last && len(body) < len(text) {
		s.hold = end - (len(text) - len(body))
	}
	return s.send(dst, out)
}

// fenceLines follows the code fence the answer is in, line by line over
// full[s.pos:end]: "```lang" opens a nested block, "```" closes it, or,
// with none open, closes the fence — the end of the answer (Parse ignores
// what follows). It returns where the text to send ends: before the
// closing line (closed set), or before a last line that may still become
// one.
func (s *chatFieldStream) fenceLines(full string, end int, last bool) (int, bool) {
	i := s.pos
	if i > 0 && full[i-1] != '\n' && full[i-1] != '\r' {
		nl := strings.IndexAny(full[i:end], "\r\n")
		if nl < 0 {
			return end, false
		}
		i += nl + 1
	}
	tag := s.fenceTag[:3]
	for i < end {
		nl := strings.IndexAny(full[i:end], "\r\n")
		line := full[i:end]
		if nl >= 0 {
			line = full[i : i+nl]
		}
		t := strings.TrimLeft(line, " \t")
		switch {
		case nl < 0 && !last && (t == "" || strings.HasPrefix(tag, t) || strings.HasPrefix(t, tag)):
			return i, false // the line may still become a fence line
		case strings.HasPrefix(t, tag):
			rest := strings.TrimSpace(strings.TrimLeft(t, tag[:1]))
			switch {
			case rest != "":
				s.depth++
			case s.depth > 0:
				s.depth--
			case len(strings.TrimSpace(t)) >= len(s.fenceTag):
				s.done = true
				return i, true
			}
		}
		if nl < 0 {
			break
		}
		i += nl + 1
	}
	return end, false
}

// send delivers text of the current section, or holds it while a quoted
// str value may still lose its quotes.
func (s *chatFieldStream) send(dst []Delta, text string) []Delta {
	if s.cur < 0 {
		return append(dst, Delta{Text: text})
	}
	if s.quoted {
		s.qbuf.WriteString(text)
		q := s.qbuf.String()
		if mayBeQuoted(q) {
			return dst // still possibly "…": Parse would drop the quotes
		}
		s.quoted = false
		text = q
	}
	s.sent.mark(s.cur)
	s.addSent(s.cur, len(text))
	return append(dst, Delta{Field: s.sig.Output(s.cur).Name, Text: text})
}

// endField flushes a held quoted value when its section ends: without its
// quotes when Parse drops them.
func (s *chatFieldStream) endField(dst *[]Delta) {
	if !s.quoted || s.cur < 0 {
		s.quoted = false
		return
	}
	s.quoted = false
	q := s.qbuf.String()
	if q == "" {
		return
	}
	f := s.sig.Output(s.cur)
	q = Unquote(q, f)
	s.sent.mark(s.cur)
	s.addSent(s.cur, len(q))
	*dst = append(*dst, Delta{Field: f.Name, Text: q})
}

func (s *chatFieldStream) addSent(i, n int) {
	if s.sentLen == nil {
		if s.sig.NumOutputs() <= len(s.sentBuf) {
			s.sentLen = s.sentBuf[:s.sig.NumOutputs()]
		} else {
			s.sentLen = make([]int, s.sig.NumOutputs())
		}
	}
	s.sentLen[i] += n
}

// settle ends a deferred stream: it reads the whole reply as Parse does
// and sends each str field's value, replacing what was sent of it (Stream
// turns a replacement that only extends the text into its suffix).
func (s *chatFieldStream) settle(dst []Delta) []Delta {
	vals, err := s.parse(s.sig, s.buf.String())
	if err != nil {
		return dst
	}
	for i := range s.sig.NumOutputs() {
		f := s.sig.Output(i)
		v, ok := vals[f.Name].(string)
		if !ok || f.Spec.Kind() != signature.KindString {
			continue
		}
		n := 0
		if s.sentLen != nil {
			n = s.sentLen[i]
		}
		if n > 0 || v != "" {
			dst = append(dst, Delta{Field: f.Name, Text: v, Replace: n > 0})
		}
	}
	return dst
}
