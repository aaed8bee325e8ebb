package adapter

import (
	"github.com/sigwire/adapter/internal/reply"
	"github.com/sigwire/adapter/signature"
)

// NewFieldStream returns a FieldStream for Chat replies: it finds markers
// as the text arrives, with the same leniency as Parse, holding back only
// text that could still turn out to be part of a marker, trailing
// whitespace (which Parse trims), a str value that may turn out to be
// wrapped in quotes (Parse drops them), and a last line that may close a
// code fence around the whole reply. A field's marker given again after
// its text was sent streams as text outside any field: Parse keeps the
// first value. A leading <think> block streams as reasoning, as for every
// adapter.
//
// A marker in the middle of a line is recovery only for Parse: it counts
// unless the reply also marks that field (or, for completed, another
// output) at the start of a line later on. The stream cannot know that
// yet, so from such a marker on it holds everything back and, on Close,
// sends what Parse reads from the whole reply.
func (Chat) NewFieldStream(sig *signature.Signature) FieldStream {
	return reply.NewMarkerStream(sig, chatValues)
}

// chatValues is Chat's Parse, by which a Chat field stream settles a reply
// it could not follow (see NewFieldStream).
func chatValues(sig *signature.Signature, text string) (map[string]any, error) {
	return Chat{}.Parse(sig, text)
}
