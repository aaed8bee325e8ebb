package adapter

import (
	"errors"
	"fmt"
	"reflect"

	"github.com/sigwire/adapter/internal/jsonx"
	"github.com/sigwire/adapter/internal/reply"
	"github.com/sigwire/adapter/internal/value"
	"github.com/sigwire/adapter/signature"
)

// FieldParser is implemented (on the pointer) by types that parse
// themselves from a field's text. It takes precedence over
// encoding.TextUnmarshaler, which takes precedence over the rules for the
// field's kind.
type FieldParser interface {
	ParseField(raw string) error
}

// ParseValue turns a field's raw text into a Go value of exactly the
// field's type. It is the one coercion routine every adapter uses: text for
// str fields is kept as is; numbers, bools, enums, Literals, lists, dicts
// and structs are read the ways models write them, but never guessed: a
// non-integral int, a percentage, an ambiguous bool or enum is an error
// naming the field and keeping the raw text.
//
// A value is read only where the text states one. "No" before a noun is
// a noun phrase, not false ("No answer", "No idea": an error; "No.", "No,
// it is not" and "No it isn't" are false). A value given with None or with
// another value as its alternative ("7 or None", "[1, 2] and [3]",
// `{"a": 1} or {"b": 2}`), or corrected by another, is ErrAmbiguous; a
// negated, bounded or ranged one ("not 7", "7 or more", "5-7") is an
// error; refusals and hedges ("I don't know.", "Maybe.") are no value,
// None for an Optional field where they say so. A value hedged but stated
// ("approximately 1450", "Probably yes.") is read. An int with more
// digits than an int64 holds is out of range before any arithmetic, so
// huge numbers cost a scan.
//
// The text of a scalar field (bool, int, float, Literal, enum, and
// Optional or unions of those) longer than [MaxScalarText] is an error
// before any rule reads it.
func ParseValue(raw string, f signature.Field) (any, error) {
	if err := scalarText(raw, f.Spec); err != nil {
		return nil, fmt.Errorf("adapter: field %q: %w", f.Name, err)
	}
	v, err := value.Parse(raw, f.Spec)
	if err != nil {
		return nil, fmt.Errorf("adapter: field %q: %w", f.Name, err)
	}
	return v, nil
}

// parseReply is the parser of every text adapter: the reply reader finds
// each output's content in the reply (in the shape the adapter prefers
// first, then any other), and each is converted to the field's Go type.
// The reply's JSON and its fields' values share one JSON repair budget
// (jsonx.Budget): all the repair one reply forces costs at most one repair
// of a span at the 16 KiB cap, so repair stays short enough that Call and
// Stream need not interrupt it (Parse takes no context); a reply that needs
// more is an error naming the field. The text of a scalar field is
// bounded by MaxScalarText, so the value rules' cost is bounded per field
// as well; the pipeline checks the call's context before and after Parse.
func parseReply(sig *signature.Signature, completion, adapter string, prefer reply.Shape) (Values, error) {
	if sig == nil {
		return nil, &ParseError{Adapter: adapter, Completion: completion, Err: errNilSignature}
	}
	n := sig.NumOutputs()
	var buf [8]reply.Field
	var fields []reply.Field
	if n <= len(buf) {
		fields = buf[:n]
	} else {
		fields = make([]reply.Field, n)
	}
	// One repair budget for the reply: its JSON and every field's value.
	budget := new(jsonx.Budget)
	if err := reply.Read(sig, completion, prefer, fields, budget); err != nil {
		pe := &ParseError{Adapter: adapter, Completion: completion, Err: err}
		var re *reply.Error
		if errors.As(err, &re) {
			pe.Err = re.Err
			if re.Field >= 0 {
				pe.Field = sig.OutputName(re.Field)
			}
		}
		if pe.Field == "" && errors.Is(err, ErrTruncated) {
			pe.Field = cutField(sig, completion, prefer)
		}
		return nil, pe
	}
	vals := make(Values, n)
	for i := range fields {
		if fields[i].Source == reply.Missing {
			continue
		}
		f := sig.Output(i)
		v, err := fieldValue(&fields[i], f, budget)
		if fields[i].Err != nil {
			err = fields[i].Err
		}
		if err != nil {
			return nil, &ParseError{Adapter: adapter, Field: f.Name, Completion: completion, Partial: vals, Err: err}
		}
		vals[f.Name] = v
	}
	return finishOutputs(sig, vals, completion, adapter)
}

// fieldValue converts a field's content from the reply to its Go value:
// a JSON member through the rules for decoded values (a string through
// ParseValue's), an XML element's tree likewise, text through ParseValue,
// paying JSON repair from the reply's budget b.
// Text protocols (not JSON strings) lose one pair of quotes around a str.
func fieldValue(fld *reply.Field, f signature.Field, b *jsonx.Budget) (any, error) {
	text, isText := fld.Text, true
	if fld.Source == reply.Member || fld.Source == reply.Element {
		text, isText = fld.Value.(string)
	}
	if isText {
		if err := scalarText(text, f.Spec); err != nil {
			return nil, err
		}
	}
	switch fld.Source {
	case reply.Member:
		return decodedValue(fld.Value, f, b)
	case reply.String:
		return value.ParseIn(fld.Text, f.Spec, b)
	case reply.Element:
		tree := fld.Value
		if s, ok := tree.(string); ok {
			if u := reply.Unquote(s, f); len(u) != len(s) {
				tree = u // boxed again only when the quotes came off
			}
		}
		return value.FromJSONIn(tree, f.Spec, b)
	}
	return value.ParseIn(reply.Unquote(fld.Text, f), f.Spec, b)
}

// MaxScalarText bounds, in bytes, the text of a scalar field: a bool,
// int, float, Literal or enum, or an Optional or union of those. Longer
// text is a *ParseError naming the field and keeping the reply, before
// any rule reads it: the rules that find a value in prose cost about a
// microsecond a byte, so without the bound a reply of [DefaultReplyBytes]
// could hold a minute of their work (8 MiB of words in an Optional[int]
// took 26 s), during which the call's context is not watched. A value a
// model writes, with its explanation, is a few hundred bytes; the longest
// in the recorded provider replies and the test corpora is far below the
// bound. Text of str, list, dict, struct and custom fields is not bounded
// here (their reading is linear, and JSON repair has its own per-reply
// budget).
const MaxScalarText = 64 << 10

// scalarText is the error for text too long for a scalar type (see
// [MaxScalarText]); nil for text within the bound or another type. Every
// adapter's values pass it: ParseValue and parseReply's fieldValue.
func scalarText(text string, spec *signature.TypeSpec) error {
	if len(text) <= MaxScalarText || !boundedScalar(spec) {
		return nil
	}
	return fmt.Errorf("%w: the text (%d bytes, starting %.40q) is too long for %s: at most %d bytes (MaxScalarText)",
		value.ErrInvalid, len(text), text, value.WithArticle(spec.String()), MaxScalarText)
}

// boundedScalar reports a type whose text MaxScalarText bounds.
func boundedScalar(spec *signature.TypeSpec) bool {
	if spec == nil {
		return false
	}
	switch spec.Kind() {
	case signature.KindInt, signature.KindFloat, signature.KindBool, signature.KindEnum, signature.KindLiteral:
		return true
	case signature.KindOptional, signature.KindUnion:
		for _, o := range spec.Options() {
			if o.Kind() != signature.KindNone && !boundedScalar(o) {
				return false
			}
		}
		return true
	}
	return false
}

// errNoOutputs is the cause when a reply holds none of the output fields,
// so a reply in plain prose is not taken for one that forgot a field
// (errors.Is still matches ErrMissingField).
var errNoOutputs = fmt.Errorf("%w: the reply holds none of the output fields (no markers, JSON object or XML elements)", ErrMissingField)

// finishOutputs applies defaults to missing outputs (the default value, or
// nil for a nullable type) and reports the first missing required one.
// vals holds output names only.
func finishOutputs(sig *signature.Signature, vals Values, completion, adapter string) (Values, error) {
	found := len(vals)
	if found == sig.NumOutputs() {
		return vals, nil // vals holds outputs only: every one is there
	}
	for i := range sig.NumOutputs() {
		if _, ok := vals[sig.OutputName(i)]; ok {
			continue
		}
		f := sig.Output(i)
		switch {
		case f.HasDefault:
			vals[f.Name] = f.Default
		case f.Spec.Nullable():
			vals[f.Name] = reflect.Zero(f.Type).Interface()
		default:
			for j := i + 1; j < sig.NumOutputs(); j++ {
				g := sig.Output(j)
				if _, ok := vals[g.Name]; !ok && g.HasDefault {
					vals[g.Name] = g.Default
				}
			}
			err := ErrMissingField
			if found == 0 {
				err = errNoOutputs
			}
			return nil, &ParseError{Adapter: adapter, Field: f.Name, Completion: completion, Partial: vals, Err: err}
		}
	}
	return vals, nil
}

// cutField names the output a reply cut off at its end was giving (see
// reply.CutField), read in the shape prefer; "" when it ended outside
// any.
func cutField(sig *signature.Signature, completion string, prefer reply.Shape) string {
	if i := reply.CutField(sig, completion, prefer); i >= 0 {
		return sig.OutputName(i)
	}
	return ""
}

// shapedReplies is implemented by the built-in adapters (each in its own
// file): the shape its replies are read in first. A type that embeds one
// of them has its shape too.
type shapedReplies interface {
	replyShape() reply.Shape
}

// truncatedField is cutField for a reply of adapter a that the token limit
// cut (or that has no finish reason): the output it was giving, read in
// a's shape (in field markers first for an adapter with no built-in shape:
// the reader reads every shape).
func truncatedField(a Adapter, sig *signature.Signature, completion string) string {
	prefer := reply.Markers
	if s, ok := a.(shapedReplies); ok {
		prefer = s.replyShape()
	}
	return cutField(sig, completion, prefer)
}
