// Package pyjson renders Go values the way Python renders the equivalent
// values in DSPy's prompts: json.dumps with its default separators and
// ensure_ascii=False, str() and repr() of scalars, lists and dicts, and
// repr(float). Prompt parity with DSPy depends on these details.
//
// Go maps have no order; they are written with sorted keys (as
// encoding/json writes them). Structs are written as objects with the
// fields in declaration order, named by their json tags.
package pyjson
