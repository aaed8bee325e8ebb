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
