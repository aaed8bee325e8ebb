// Package types holds DSPy's custom field types for Go: Image, Audio, File,
// Code, Reasoning, History, Tool and ToolCalls. Each owns its
// serialization: it formats itself into content parts (adapter.Formatter),
// expands into conversation turns (adapter.Conversation), parses itself
// from a field's text (ParseField), names and describes itself to the model
// (signature.TypeNamer, signature.TypeDescriber) — so every adapter handles
// them without knowing them. The adapter package never imports this one.
//
// [Names] returns DSPy's type names to these types, for signature.WithTypes:
//
//	sig, err := signature.Parse("image: Image, question -> answer", signature.WithTypes(types.Names()))
//
// What go-openai cannot send: its message parts carry text and images
// only, so an Audio or File input is an error at format time that names
// the field, never a silently dropped input.
package types
