package reply

// Delta is a piece of a field's text as a reply streams ("" Field: outside
// any field). Reasoning marks text of a reasoning block. Replace says that
// Text starts Field's value anew: what the field received before is
// discarded (a later part of the reply, such as a second, corrected JSON
// object, gives it again). The root package exports it as FieldDelta.
type Delta struct {
	Field     string
	Text      string
	Reasoning bool
	Replace   bool
}

// Stream splits a streamed reply into deltas: Write consumes the next
// piece of text and appends to dst the deltas it can already decide;
// Close appends what is left. It has the root package's FieldStream's
// methods, so each is the other.
type Stream interface {
	Write(dst []Delta, text string) []Delta
	Close(dst []Delta) []Delta
}

// streamed is a set of output indexes (the outputs a stream has sent,
// say). The first 64 outputs cost no allocation.
type streamed struct {
	low  uint64
	high map[int]bool
}

// again reports whether output i is in the set.
func (s *streamed) again(i int) bool {
	switch {
	case i < 0:
		return false
	case i < 64:
		return s.low&(1<<i) != 0
	}
	return s.high[i]
}

// unmark takes output i out of the set.
func (s *streamed) unmark(i int) {
	switch {
	case i < 0:
	case i < 64:
		s.low &^= 1 << i
	default:
		delete(s.high, i)
	}
}

// mark puts output i in the set.
func (s *streamed) mark(i int) {
	switch {
	case i < 0:
	case i < 64:
		s.low |= 1 << i
	default:
		if s.high == nil {
			s.high = map[int]bool{}
		}
		s.high[i] = true
	}
}
