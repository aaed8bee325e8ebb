// Package types holds DSPy's custom field types for Go: Image, Audio, File,
// Document, Code, Reasoning, History, Tool, ToolCalls and Citations. Each owns its
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
// What go-openai cannot express: its message parts carry text and images
// only. Audio, File and Document inputs become DSPy's input_audio, file
// and document parts through a client whose HTTP client is wrapped with
// adapter.HTTPDoer:
//
//	cfg := openai.DefaultConfig(key)
//	cfg.HTTPClient = adapter.HTTPDoer(cfg.HTTPClient)
//	client := openai.NewClientWithConfig(cfg)
//
// Through any other client the call fails before any request with
// ErrUnsupportedPart, naming the field: never a silently dropped input.
// The same wrapper lets a blocking call read the citations a provider
// returns (Citations); a stream reads them from its raw lines.
//
// Media given as bytes, files, data URIs or downloads are bounded
// (MaxImageBytes, MaxMediaBytes); downloads reach public addresses only
// (PublicAddress) unless DownloadOptions allow more. A value built as a
// struct literal is held to its constructors' rules before it becomes a
// part.
package types
