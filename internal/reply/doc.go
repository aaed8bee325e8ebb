// Package reply reads a model's reply once: it strips reasoning, works out
// the reply's shape (Chat field markers, a JSON object, XML elements,
// "Answer:" labels, or bare text), and returns the raw content of each
// output field. Every adapter parses through it, so every adapter gets
// every recovery; converting the content to Go values is internal/value's
// job, and wrapping errors into *ParseError is the root package's.
//
// The reader never calls itself back through another shape: Read decides
// the shape first, then extracts, in one pass over the shapes in the
// adapter's order of preference.
package reply
