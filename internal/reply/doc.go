// Package reply holds the grammar of a model's reply, for a whole reply
// and for one arriving in deltas.
//
// Read reads a whole reply once: it strips reasoning, works out the
// reply's shape (Chat field markers, a JSON object, XML elements,
// "Answer:" labels, or bare text), and returns the raw content of each
// output field. Every adapter parses through it, so every adapter gets
// every recovery; converting the content to Go values is internal/value's
// job, and wrapping errors into *ParseError is the root package's. The
// reader never calls itself back through another shape: Read decides the
// shape first, then extracts, in one pass over the shapes in the adapter's
// order of preference. CutField names the output a reply cut off at its
// end was giving.
//
// The streams (NewMarkerStream, NewJSONStream, NewXMLStream, each beside
// its grammar, and WithThink for a leading <think> block) turn the deltas
// of a reply into each field's text as it is written, as Deltas; a stream
// holds back what could still turn out to be a marker, a closing quote or
// a closing tag, and a delta it has to take back is sent as a
// replacement. For a marker section, a plain XML element and a string
// member of one JSON object, what a stream shows of the field is what Read
// gives for the whole reply (FuzzStreams checks each stream against Read).
package reply
