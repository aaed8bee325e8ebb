package adapter

import (
	"github.com/sigwire/adapter/internal/reply"
	"github.com/sigwire/adapter/signature"
)

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
