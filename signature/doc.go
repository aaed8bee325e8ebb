// Package signature describes a language-model task the way DSPy does: a
// [Signature] is instructions plus ordered, typed input and output fields.
// Adapters (the parent package) turn a signature, demos and inputs into chat
// messages and the model's reply back into typed Go values.
//
// A signature is declared once, in one of three ways:
//
//	sig, err := signature.Parse("question, context: list[str] -> answer: int")
//	sig, err := signature.New("Answer briefly.", inputs, outputs)
//	sig, err := signature.FromStructs[QuestionIn, AnswerOut](signature.WithInstructions("Answer briefly."))
//
// Signatures are immutable: edits (WithInstructions, Prepend, Delete, Update,
// WithState, ...) return new signatures, so one value can be shared by any
// number of goroutines.
//
// # Types
//
// Every field has a Go type (the type of its values) and a [TypeSpec] (the
// type as DSPy shows it to the model). The mapping follows DSPy's Python
// types:
//
//	str                 string
//	int                 int (any Go integer type in structs)
//	float               float64
//	bool                bool
//	Any                 any
//	list[T], set[T]     []T
//	tuple[A, B]         []any
//	dict[K, V]          map[K]V (K is str, int or an enum)
//	Optional[T]         *T for scalars, enums and structs; the same type for
//	                    lists, dicts and Any (nil is None)
//	Union[A, B]         any
//	Literal['a', 'b']   string (int, float64 or bool when all members are of
//	                    that kind; any when they are mixed)
//	an Enum             a named string type implementing [EnumValuer]
//	a pydantic model    a Go struct; properties follow encoding/json names
//
// Names the model sees are Python's: a *int field is shown as
// Union[int, NoneType], a []string field as list[str], a struct by its Go
// type name. A type can choose its own name ([TypeNamer]) and its own prompt
// schema ([PromptSchemer]); [WithTypes] registers names for custom types so
// signature strings can use them ("image: Image -> answer: str"), and those
// names are then shown to the model.
//
// # Enums
//
// A Python Enum is a named string type listing its values:
//
//	type Sentiment string
//
//	func (Sentiment) EnumValues() []string { return []string{"positive", "negative", "neutral"} }
//
// The values are what the model is asked for. Literal['a', 'b'] needs no Go
// type: it is a [Literal] spec on a plain string (or int, bool) field.
//
// # Go structs
//
// [FromStructs] reads fields from an input struct and an output struct. The
// field name is the json tag, else the snake_case of the Go name; these
// struct tags carry the rest (for top-level fields and nested model types):
//
//	json:"name"          the field name (a field tagged json:"-" is skipped)
//	desc:"..."           the description shown to the model
//	prefix:"..."         DSPy's prefix (top-level signature fields only)
//	default:"<json>"     the default value, as JSON ("3", "\"x\"", "null")
//	gt, ge, lt, le, multiple_of:"<number>"   numeric constraints
//	min_length, max_length:"<int>"           length constraints
//	allow_inf_nan:"true"
//	literal:"'US', 'CA'"  the allowed values, as inside Python's Literal[...]
//	                      (the field's Go type must be the Literal's: string,
//	                      int, float64 or bool; a pointer to it when None is a
//	                      member). Named string types with EnumValues are the
//	                      other way to give a closed set.
//
// Embedded fields, unexported fields (unless tagged json:"-") and types no
// adapter can carry (channels, functions, complex numbers) are errors, never
// silently skipped.
//
// # DSPy compatibility
//
// Signature strings written for DSPy parse unchanged, default instructions
// are DSPy's text, field prefixes follow DSPy's infer_prefix, and [State]
// reads and writes the signature part of a program saved by DSPy's
// program.save. Where this package differs: field names may be Python
// keywords; "A | B" unions are named UnionType[A, B] exactly as DSPy 3.3.1
// (Python 3.11) shows them; saved state with a different number of fields is
// an error instead of being silently truncated.
package signature
