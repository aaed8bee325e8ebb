package reply

import (
	"strings"

	"github.com/sigwire/adapter/signature"
)

// thinkTags are the tags of the reasoning blocks models write before the
// answer (<think>…</think>); a tag that names an output field is that
// field instead.
var thinkTags = [...]string{"think", "thinking", "reasoning"}

// isThinkTag reports whether name is one of thinkTags, case-insensitively.
func isThinkTag(name string) bool {
	for _, t := range thinkTags {
		if strings.EqualFold(t, name) {
			return true
		}
	}
	return false
}

// stripReasoning drops what reasoning models write before the answer: a
// leading <think>…</think> (or <thinking>, <reasoning>) block and OpenAI
// harmony channels up to the final channel's message. A tag that names an
// output field is the field, not reasoning. A reply that is all reasoning
// (the block never closes) has no answer: "".
func stripReasoning(sig *signature.Signature, s string) string {
	t := skipSpace(s)
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
	if t == "" || t[0] != '<' {
		return s
	}
	for _, tag := range thinkTags {
		if len(t) > len(tag)+2 && strings.EqualFold(t[1:len(tag)+1], tag) && t[len(tag)+1] == '>' {
			if outputIndex(sig, tag) >= 0 {
				continue // a field named "reasoning": the element is the field
			}
			closing := "</" + tag + ">"
			if i := indexFold(t, closing); i >= 0 {
				return t[i+len(closing):]
			}
			return ""
		}
	}
	return s
}

// skipSpace drops leading blanks and line breaks (strings.TrimLeft with a
// cutset builds a table on every call).
func skipSpace(s string) string {
	for len(s) > 0 && (s[0] == ' ' || s[0] == '\t' || s[0] == '\r' || s[0] == '\n') {
		s = s[1:]
	}
	return s
}

// afterOrphanClose returns the text after the last closing think tag that
// has no opening one ("…reasoning\n</think>\nanswer"), or s.
func afterOrphanClose(sig *signature.Signature, s string) string {
	for _, tag := range thinkTags {
		if outputIndex(sig, tag) >= 0 {
			continue
		}
		closing := "</" + tag + ">"
		if i := lastIndexFold(s, closing); i >= 0 && indexFold(s[:i], "<"+tag+">") < 0 {
			return s[i+len(closing):]
		}
	}
	return s
}

// lastIndexFold is strings.LastIndex, ASCII case-insensitively, for a
// sub that starts with a byte that has no case ('<'), as indexFold.
func lastIndexFold(s, sub string) int {
	for j := len(s); ; {
		i := strings.LastIndexByte(s[:j], sub[0])
		if i < 0 {
			return -1
		}
		if len(s)-i >= len(sub) && strings.EqualFold(s[i:i+len(sub)], sub) {
			return i
		}
		j = i
	}
}

// thinkStream routes a leading reasoning block (<think>…</think>, also
// <thinking> and <reasoning>, unless an output has that name) to reasoning
// deltas and the rest of the reply to an inner Stream, so that every
// adapter streams reasoning as stripReasoning strips it. It is the one
// place a stream reads that block: the streams of this package come
// inside one, and the root's Stream puts any other adapter's in one.
type thinkStream struct {
	sig     *signature.Signature
	inner   Stream
	state   int    // 0 undecided, 1 inside the block, 2 past it or none
	held    string // text not yet decided
	closing string
}

// WithThink puts fs inside a stream that sends a leading reasoning block
// as reasoning deltas, as stripReasoning reads it, unless fs is one
// already.
func WithThink(sig *signature.Signature, fs Stream) Stream {
	if _, ok := fs.(*thinkStream); ok {
		return fs
	}
	return &thinkStream{sig: sig, inner: fs}
}

func (s *thinkStream) Write(dst []Delta, text string) []Delta {
	switch s.state {
	case 2:
		return s.inner.Write(dst, text)
	case 1:
		return s.inside(dst, text, false)
	}
	s.held += text
	t := strings.TrimLeft(s.held, " \t\r\n")
	for _, tag := range thinkTags {
		if outputIndex(s.sig, tag) >= 0 {
			continue
		}
		open := "<" + tag + ">"
		switch {
		case len(t) >= len(open) && strings.EqualFold(t[:len(open)], open):
			s.state, s.closing, s.held = 1, "</"+tag+">", ""
			return s.inside(dst, t[len(open):], false)
		case len(t) < len(open) && strings.HasPrefix(open, strings.ToLower(t)):
			return dst // could still become a think block
		}
	}
	s.state, text, s.held = 2, s.held, ""
	return s.inner.Write(dst, text)
}

// inside takes text of the reasoning block, holding back what could be
// the start of its closing tag.
func (s *thinkStream) inside(dst []Delta, text string, final bool) []Delta {
	s.held += text
	if i := indexFold(s.held, s.closing); i >= 0 {
		if i > 0 {
			dst = append(dst, Delta{Text: s.held[:i], Reasoning: true})
		}
		rest := s.held[i+len(s.closing):]
		s.state, s.held = 2, ""
		if rest == "" {
			return dst
		}
		return s.inner.Write(dst, rest)
	}
	end := len(s.held)
	if !final {
		end = max(0, len(s.held)-len(s.closing)+1)
	}
	if end > 0 {
		dst = append(dst, Delta{Text: s.held[:end], Reasoning: true})
		s.held = s.held[end:]
	}
	return dst
}

func (s *thinkStream) Close(dst []Delta) []Delta {
	switch s.state {
	case 0:
		t := s.held
		s.state, s.held = 2, ""
		if t != "" {
			dst = s.inner.Write(dst, t)
		}
	case 1:
		dst = s.inside(dst, "", true)
	}
	return s.inner.Close(dst)
}
