package reply

import (
	"strings"
	"unicode/utf8"

	"github.com/sigwire/adapter/internal/jsonx"
	"github.com/sigwire/adapter/signature"
)

// NewJSONStream returns the Stream of a JSON reply (the JSON and BAML
// adapters'), inside WithThink: the members of the reply's top-level
// object are routed to the output fields they name (as Read names them:
// exact, then case-insensitive). A string value streams as it grows, its
// escapes decoded as jsonx.Unquote decodes them; any other value (a
// number, a bool, null, an array, an object) is reported once complete,
// as its JSON text. Text around the object (prose, a code fence) belongs
// to no field.
//
// A string's closing quote is held until the next significant byte
// confirms it ends the value (',', ':', '}', ']' or the end of the reply,
// as Read reads an unescaped quote): in {"answer": "He said "hi" twice"}
// the inner quotes stream as part of the value. A key given again in the
// same object is not streamed again (Read keeps one value, or reports two
// different ones); a later object (a correction after a draft) streams
// too, each field's first delta in it replacing what the field received
// from an earlier one (Delta.Replace).
func NewJSONStream(sig *signature.Signature) Stream {
	return WithThink(sig, &jsonFieldStream{sig: sig, field: otherField})
}

// jsonState is where the scanner is in the top-level object.
type jsonState uint8

const (
	jsBefore jsonState = iota // before the object's '{'
	jsKey                     // expecting a key (or '}')
	jsInKey                   // inside a key string
	jsColon                   // after a key, expecting ':'
	jsValue                   // expecting a value
	jsString                  // inside a string value
	jsRaw                     // inside another value
	jsComma                   // after a value, expecting ',' or '}'
)

type jsonFieldStream struct {
	sig     *signature.Signature
	state   jsonState
	field   int             // output index of the current member, or otherField
	key     strings.Builder // the key being read
	keyEsc  bool            // a backslash ended the last write inside a key
	esc     []byte          // an escape sequence split across writes
	closing bool            // a string's closing quote, held until confirmed
	blanks  []byte          // blanks after the held quote
	raw     strings.Builder // a non-string value being read
	depth   int             // nesting inside a raw value
	lex     jsonx.Lexer     // the strings inside a raw value, read as Parse reads them
	obj     int             // objects begun (1 during the first)
	objOf   []int           // per output, the object its member was last read in (0: none)
	objBuf  [8]int
	replace bool     // the current member replaces an earlier object's: its first delta says so
	holds   streamed // outputs whose text sent so far is not empty
}

func (s *jsonFieldStream) name() string {
	if s.field < 0 {
		return ""
	}
	return s.sig.Output(s.field).Name
}

func (s *jsonFieldStream) Write(dst []Delta, text string) []Delta {
	i := 0
	for i < len(text) {
		switch s.state {
		case jsBefore:
			j := strings.IndexByte(text[i:], '{')
			if j < 0 {
				return dst
			}
			i += j + 1
			s.state, s.field = jsKey, otherField
			s.obj++
		case jsKey:
			c := text[i]
			i++
			switch c {
			case '"':
				s.key.Reset()
				s.state = jsInKey
			case '}':
				s.state = jsBefore
			}
		case jsInKey:
			if s.keyEsc {
				s.key.WriteByte(text[i])
				s.keyEsc = false
				i++
				continue
			}
			j := strings.IndexAny(text[i:], `"\`)
			if j < 0 {
				s.key.WriteString(text[i:])
				return dst
			}
			s.key.WriteString(text[i : i+j])
			if text[i+j] == '\\' && i+j+1 < len(text) {
				s.key.WriteByte(text[i+j+1])
				i += j + 2
				continue
			}
			if text[i+j] == '\\' {
				s.keyEsc = true
				return dst
			}
			i += j + 1
			s.member(outputIndex(s.sig, s.key.String()))
			s.state = jsColon
		case jsColon:
			if text[i] == ':' {
				s.state = jsValue
			}
			i++
		case jsValue:
			c := text[i]
			switch {
			case c == ' ' || c == '\t' || c == '\n' || c == '\r':
				i++
			case c == '"':
				i++
				s.state = jsString
			default:
				s.raw.Reset()
				s.depth, s.lex = 0, jsonx.Lexer{}
				s.state = jsRaw
			}
		case jsString:
			var end bool
			i, end, dst = s.stringChunk(dst, text, i)
			if end {
				dst = s.endString(dst)
				s.state = jsComma
			}
		case jsRaw:
			var end bool
			i, end = s.rawChunk(text, i)
			if end {
				dst = s.endRaw(dst)
				s.state = jsComma
			}
		case jsComma:
			c := text[i]
			i++
			switch c {
			case ',':
				s.state, s.field = jsKey, otherField
			case '}':
				s.state, s.field = jsBefore, otherField
			}
		}
	}
	return dst
}

// member starts the member of output i (otherField: none) in the
// current object. A key given again in the same object is not streamed
// again; one given in an earlier object is, replacing it.
func (s *jsonFieldStream) member(i int) {
	s.field, s.replace = i, false
	if i < 0 {
		return
	}
	if s.objOf == nil {
		if n := s.sig.NumOutputs(); n <= len(s.objBuf) {
			s.objOf = s.objBuf[:n]
		} else {
			s.objOf = make([]int, n)
		}
	}
	switch prev := s.objOf[i]; {
	case prev == s.obj:
		s.field = otherField
	default:
		s.replace = prev > 0
		s.objOf[i] = s.obj
	}
}

// send appends text of the current member, the first replacing what an
// earlier object gave the field.
func (s *jsonFieldStream) send(dst []Delta, text string) []Delta {
	if s.field < 0 || text == "" && !s.replace {
		return dst
	}
	if text == "" && !s.holds.again(s.field) {
		s.replace = false // nothing to replace
		return dst
	}
	dst = append(dst, Delta{Field: s.name(), Text: text, Replace: s.replace})
	s.replace = false
	if text == "" {
		s.holds.unmark(s.field)
	} else {
		s.holds.mark(s.field)
	}
	return dst
}

// endString ends a string value: an empty one that replaces an earlier
// object's value says so.
func (s *jsonFieldStream) endString(dst []Delta) []Delta {
	if s.replace {
		dst = s.send(dst, "")
	}
	return dst
}

// endRaw reports a complete non-string value.
func (s *jsonFieldStream) endRaw(dst []Delta) []Delta {
	return s.send(dst, strings.TrimSpace(s.raw.String()))
}

// stringChunk decodes a string value from text[i:], appending its text to
// dst, and reports where it stopped and whether the string ended. Escapes
// and UTF-8 sequences split across writes wait for the next write;
// invalid UTF-8 becomes U+FFFD per byte and a lone surrogate escape U+FFFD,
// as encoding/json decodes them. A quote ends the string only when the
// next significant byte is one of ",:}]" (left for jsComma), as Parse
// reads an unescaped quote; otherwise the quote and the blanks after it
// are text of the value.
func (s *jsonFieldStream) stringChunk(dst []Delta, text string, i int) (int, bool, []Delta) {
	var out strings.Builder
	flush := func() {
		if out.Len() > 0 {
			dst = s.send(dst, out.String())
		}
		out.Reset()
	}
	buf := text[i:]
	if len(s.esc) > 0 {
		buf = string(s.esc) + buf
		i -= len(s.esc)
		s.esc = s.esc[:0]
	}
	base := i
	j := 0
	for j < len(buf) {
		c := buf[j]
		if s.closing {
			switch {
			case c == ' ' || c == '\t' || c == '\n' || c == '\r':
				s.blanks = append(s.blanks, c)
				j++
				continue
			case strings.IndexByte(",:}]", c) >= 0:
				s.closing, s.blanks = false, s.blanks[:0]
				flush()
				return base + j, true, dst
			}
			// An inner quote: it and the blanks after it are text.
			out.WriteByte('"')
			out.Write(s.blanks)
			s.closing, s.blanks = false, s.blanks[:0]
		}
		switch {
		case c == '"':
			s.closing = true
			j++
		case c == '\\':
			n, r, ok := jsonx.Escape(buf[j:], false)
			if !ok {
				s.esc = append(s.esc[:0], buf[j:]...)
				flush()
				return base + len(buf), false, dst
			}
			out.WriteString(r)
			j += n
		case c < utf8.RuneSelf:
			out.WriteByte(c)
			j++
		default:
			if !utf8.FullRuneInString(buf[j:]) {
				s.esc = append(s.esc[:0], buf[j:]...)
				flush()
				return base + len(buf), false, dst
			}
			r, size := utf8.DecodeRuneInString(buf[j:])
			if r == utf8.RuneError && size == 1 {
				out.WriteRune(utf8.RuneError)
			} else {
				out.WriteString(buf[j : j+size])
			}
			j += size
		}
	}
	flush()
	return base + len(buf), false, dst
}

// rawChunk reads a non-string value from text[i:] into s.raw and reports
// where it stopped and whether the value ended (at a ',' or '}' outside
// any nesting, which is left for jsComma; strings inside it, single-quoted
// ones too, are read by the Lexer Parse reads them with).
func (s *jsonFieldStream) rawChunk(text string, i int) (int, bool) {
	start := i
	for ; i < len(text); i++ {
		c := text[i]
		if s.lex.Skip(c) {
			continue
		}
		switch c {
		case '{', '[':
			s.depth++
		case '}', ']':
			if s.depth == 0 {
				s.raw.WriteString(text[start:i])
				return i, true
			}
			s.depth--
		case ',':
			if s.depth == 0 {
				s.raw.WriteString(text[start:i])
				return i, true
			}
		}
		s.lex.Saw(c)
	}
	s.raw.WriteString(text[start:i])
	return i, false
}

// Close reports a value still being read when the reply ended; a held
// closing quote ended its string.
func (s *jsonFieldStream) Close(dst []Delta) []Delta {
	switch {
	case s.state == jsRaw:
		dst = s.endRaw(dst)
	case s.state == jsString && s.closing:
		dst = s.endString(dst)
	}
	s.state, s.field, s.closing = jsBefore, otherField, false
	return dst
}
