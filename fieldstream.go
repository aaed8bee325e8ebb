package adapter

import (
	"github.com/sigwire/adapter/internal/reply"
	"github.com/sigwire/adapter/signature"
)

// The built-in adapters' field streams live in internal/reply beside the
// one-shot grammars they must agree with; these methods hand them out.

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

// NewFieldStream returns a FieldStream for XML replies: the text inside an
// output field's element streams to that field, entities and CDATA
// decoded and the value trimmed as Parse trims it; a leading <think> block
// streams as reasoning, as for every adapter; everything else belongs to
// no field.
//
// The stream holds back only what Parse reads by what follows it: a
// possible closing tag, entity, CDATA section or output element at the
// end of the text; a str value that may turn out to be wrapped in quotes
// (Parse drops them); a field's closing tag, until the next output
// element (or the end) confirms it, since a later closing tag of the same
// field before that element makes the first one part of the value
// (<code>print('</code>')</code>); and, inside a field, another output's
// opening tag, until the field's closing tag shows it is part of the value
// or the end of the reply shows the field's closing tag was forgotten.
func (XML) NewFieldStream(sig *signature.Signature) FieldStream {
	return reply.NewXMLStream(sig)
}

// NewFieldStream returns a FieldStream for JSON replies: the members of the
// reply's top-level object are routed to the output fields they name (as
// Parse names them: exact, then case-insensitive). A string value streams
// as it grows, its escapes decoded; any other value (a number, a bool,
// null, an array, an object) is reported once complete, as its JSON text.
// Text around the object (prose, a code fence) belongs to no field. A
// leading <think> block streams as reasoning, as for every adapter.
//
// A string's closing quote is held until the next significant byte
// confirms it ends the value (',', ':', '}', ']' or the end of the reply,
// as Parse reads an unescaped quote): in {"answer": "He said "hi" twice"}
// the inner quotes stream as part of the value. A key given again in the
// same object is not streamed again (Parse keeps one value, or reports
// two different ones); a later object (a correction after a draft)
// streams too, each field's first delta in it replacing what the field
// received from an earlier one (FieldDelta.Replace).
func (JSON) NewFieldStream(sig *signature.Signature) FieldStream {
	return reply.NewJSONStream(sig)
}

// NewFieldStream streams as the JSON adapter does.
func (BAML) NewFieldStream(sig *signature.Signature) FieldStream {
	return JSON{}.NewFieldStream(sig)
}
