// Package value converts between field text and Go values of exactly a
// field's type. Parse is DSPy's parse_value made stricter where DSPy guesses
// and more lenient where models slip: it reads every value DSPy reads to the
// same result, recovers the decorations models add (bold, quotes, fences,
// Literal[...] wrappers, thousands separators, units, markdown bullets),
// and refuses what it cannot read unambiguously (a fractional int, a
// percentage, "yes and no", two enum members) and what states no value
// ("No answer", "7 or None", "[1, 2] and [3]": see stated.go). FromJSON applies the same
// rules to values that arrive already decoded (JSON, XML). Convert turns a
// Go value given for a field (an input) into the field's type where nothing
// is lost. Format is DSPy's format_field_value.
//
// Precedence for a field type: a type that parses itself (a ParseField
// method on the pointer) beats encoding.TextUnmarshaler (and, for decoded
// values, json.Unmarshaler), which beat the rules for the type's kind.
//
// The rules live by what they read: value.go dispatches on the type and
// reads structured text (JSON, Python literals, JSON in prose); number.go
// ints and floats (separators, units, number words); choice.go bools,
// enums and Literals; list.go markdown lists; stated.go what states no
// value; prose.go an answer inside a sentence; pylit.go Python literals;
// decoded.go values already decoded, and Format; convert.go inputs;
// parts.go content parts.
package value
