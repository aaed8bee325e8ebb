package value

import (
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"github.com/sigwire/adapter/internal/jsonx"
	"github.com/sigwire/adapter/internal/pyjson"
	"github.com/sigwire/adapter/signature"
)

// Sentinels for errors.Is; every error wraps exactly one of them.
var (
	// ErrInvalid: the text is not a value of the field's type.
	ErrInvalid = errors.New("invalid value")
	// ErrAmbiguous: the text reads as more than one value.
	ErrAmbiguous = errors.New("ambiguous value")
	// ErrNoMatch: the text is none of an enum's or Literal's values.
	ErrNoMatch = errors.New("not one of the allowed values")
	// ErrTruncated: the text ends inside a value.
	ErrTruncated = errors.New("reply truncated")
)

// maxDepth bounds the nesting Parse and FromJSON follow.
const maxDepth = 512

var (
	stringType          = reflect.TypeFor[string]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
	jsonUnmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	fieldParserType     = reflect.TypeFor[fieldParser]()
	errNotSelfParsing   = errors.New("no parser")
	labelRE             = regexp.MustCompile(`^(?:\*\*|__)?[A-Za-z][A-Za-z _]{0,30}(?:\*\*|__)?\s*:(?:\*\*|__)?\s*`)
	noneWords           = map[string]bool{"none": true, "null": true, "nil": true, "n/a": true, "unknown": true, "not available": true, "not applicable": true, "not specified": true, "not given": true}
	errNull             = fmt.Errorf("%w: null for a field that cannot be None", ErrInvalid)
)

// fieldParser is the root package's FieldParser, matched structurally.
type fieldParser interface {
	ParseField(raw string) error
}

// Parse reads raw, a field's text, as a value of spec's Go type. A nil spec
// means str. Its JSON repair is bounded as one reply's (see ParseIn).
func Parse(raw string, spec *signature.TypeSpec) (any, error) {
	return ParseIn(raw, spec, new(jsonx.Budget))
}

// ParseIn is Parse paying JSON repair from b, the budget of the reply the
// text comes from: the fields of one reply share one budget, so a reply
// cannot make each of its fields pay a repair's worst case. A spent budget
// is an ErrInvalid error.
func ParseIn(raw string, spec *signature.TypeSpec, b *jsonx.Budget) (any, error) {
	if spec == nil || spec.Kind() == signature.KindString && spec.GoType() == stringType {
		return raw, nil // str: the text as it is, without reflection
	}
	v, err := parseText(raw, spec, 0, b)
	if err != nil {
		return nil, err
	}
	return v.Interface(), nil
}

// FromJSON converts a decoded JSON value (json.Number for numbers, string,
// bool, nil, []any, map[string]any) to spec's Go type. Strings go through
// Parse's text rules; a non-string for a str field becomes Python's str()
// of it, as DSPy does; null for a field that cannot be None is an error.
func FromJSON(v any, spec *signature.TypeSpec) (any, error) {
	return FromJSONIn(v, spec, new(jsonx.Budget))
}

// FromJSONIn is FromJSON paying JSON repair (of strings that hold JSON)
// from b, as ParseIn does.
func FromJSONIn(v any, spec *signature.TypeSpec, b *jsonx.Budget) (any, error) {
	if spec == nil {
		spec = strSpec
	}
	out, err := fromDecoded(v, spec, true, 0, b)
	if err != nil {
		return nil, err
	}
	return out.Interface(), nil
}

var strSpec = func() *signature.TypeSpec {
	s, err := signature.SpecOf(reflect.TypeFor[string]())
	if err != nil {
		panic(err)
	}
	return s
}()

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...)
}

// WithArticle returns a type name with its indefinite article, for error
// messages: "a float", "an int", "an Optional[str]".
func WithArticle(name string) string {
	if name != "" && strings.ContainsRune("aeiouAEIOU", rune(name[0])) {
		return "an " + name
	}
	return "a " + name
}

// clip shortens text quoted in error messages.
func clip(s string) string {
	if len(s) > 80 {
		return strconv.Quote(s[:77] + "...")
	}
	return strconv.Quote(s)
}

func parseText(raw string, spec *signature.TypeSpec, depth int, b *jsonx.Budget) (reflect.Value, error) {
	if depth > maxDepth {
		return reflect.Value{}, invalid("nested too deeply")
	}
	t := spec.GoType()
	if v, err := selfParse(raw, t); err != errNotSelfParsing {
		return v, err
	}
	switch spec.Kind() {
	case signature.KindString:
		return reflect.ValueOf(raw).Convert(t), nil
	case signature.KindInt, signature.KindFloat, signature.KindBool, signature.KindEnum, signature.KindLiteral:
		return readScalar(raw, spec, true)
	case signature.KindNone:
		if isNone(raw) {
			return reflect.Zero(t), nil
		}
		return reflect.Value{}, invalid("%s is not None", clip(raw))
	case signature.KindOptional:
		elem := spec.Elem()
		switch {
		case elem.Kind() == signature.KindString:
			// DSPy: a union with str keeps the text verbatim ("None" too).
			return wrap(reflect.ValueOf(raw).Convert(elem.GoType()), t), nil
		case elem.Kind() == signature.KindUnion && unionHasStr(elem):
			// Union[int, str, None]: pydantic's smart mode prefers the
			// exact type, so the text "5" stays the string "5".
			return wrap(reflect.ValueOf(raw), t), nil
		}
		if strings.TrimSpace(raw) == "" {
			return reflect.Zero(t), nil
		}
		if v, err := selfParse(raw, elem.GoType()); err != errNotSelfParsing {
			if err != nil && isNone(raw) {
				return reflect.Zero(t), nil
			}
			if err != nil {
				return reflect.Value{}, err
			}
			return wrap(v, t), nil
		}
		if scalarKind(elem.Kind()) {
			// The value itself first (a member named "unknown" is that
			// member), then "None, because …", then a value explained.
			if v, err := readScalar(raw, elem, false); err == nil {
				return wrap(v, t), nil
			}
			none, err := noneAnswer(raw, finderFor(elem))
			switch {
			case err != nil:
				return reflect.Value{}, err
			case none:
				return reflect.Zero(t), nil
			}
			v, err := readScalar(raw, elem, true)
			if err != nil {
				return reflect.Value{}, err
			}
			return wrap(v, t), nil
		}
		v, err := parseText(raw, elem, depth+1, b)
		if err != nil {
			if errors.Is(err, ErrAmbiguous) {
				return reflect.Value{}, err // a value and something else: not None
			}
			if none, nerr := noneAnswer(raw, nil); none && nerr == nil {
				return reflect.Zero(t), nil // None, N/A, Unknown …
			}
			return reflect.Value{}, err
		}
		return wrap(v, t), nil
	case signature.KindUnion, signature.KindAny:
		cand, ok, at, err := decodeText(raw, b)
		if err != nil {
			return reflect.Value{}, err
		}
		if !ok {
			cand, at = raw, proseAt{}
		}
		return fromProseSpan(raw, cand, at, spec, depth, b)
	case signature.KindList, signature.KindDict, signature.KindStruct:
		cand, ok, at, err := decodeText(raw, b)
		if err != nil {
			return reflect.Value{}, err
		}
		if ok {
			if _, isStr := cand.(string); !isStr {
				return fromProseSpan(raw, cand, at, spec, depth, b)
			}
		}
		switch spec.Kind() {
		case signature.KindList:
			if items, ok := bullets(raw); ok {
				return listFromText(items, spec, depth, b)
			}
			if item, ok := singleItem(raw, spec.Elem()); ok {
				return listFromText([]string{item}, spec, depth, b)
			}
		default:
			if m, err := pyKwargs(strings.TrimSpace(raw)); err == nil {
				return fromDecoded(m, spec, false, depth+1, b)
			}
		}
		return reflect.Value{}, invalid("%s is not %s", clip(raw), WithArticle(spec.String()))
	case signature.KindCustom:
		return customFromText(raw, t)
	}
	return reflect.Value{}, invalid("cannot read a %s", spec)
}

// fromProseSpan converts a decoded value read from at (see decodeText) and
// applies checkProse to it.
func fromProseSpan(raw string, cand any, at proseAt, spec *signature.TypeSpec, depth int, b *jsonx.Budget) (reflect.Value, error) {
	out, err := fromDecoded(cand, spec, false, depth+1, b)
	if err != nil {
		return out, err
	}
	if err := checkProse(raw, at, spec, out, depth, b); err != nil {
		return reflect.Value{}, err
	}
	return out, nil
}

// unionHasStr reports a union with a plain str member.
func unionHasStr(spec *signature.TypeSpec) bool {
	for _, o := range spec.Options() {
		if o.Kind() == signature.KindString && o.GoType() == stringType {
			return true
		}
	}
	return false
}

func scalarKind(k signature.Kind) bool {
	switch k {
	case signature.KindInt, signature.KindFloat, signature.KindBool, signature.KindEnum, signature.KindLiteral:
		return true
	}
	return false
}

// readScalar reads a number, bool, enum or Literal: the text as a value
// (decorated, labelled, hedged), and with prose set, a value the text
// explains (see fromProse).
func readScalar(raw string, spec *signature.TypeSpec, prose bool) (reflect.Value, error) {
	t := spec.GoType()
	find := finderFor(spec)
	switch spec.Kind() {
	case signature.KindInt:
		n, err := scalar(raw, prose, parseInt, find, true)
		if err != nil {
			return reflect.Value{}, err
		}
		return intValue(n, t, raw)
	case signature.KindFloat:
		f, err := scalar(raw, prose, parseFloat, find, true)
		if err != nil {
			return reflect.Value{}, err
		}
		return reflect.ValueOf(f).Convert(t), nil
	case signature.KindBool:
		b, err := scalar(raw, prose, parseBool, find, false)
		if err != nil {
			return reflect.Value{}, err
		}
		return reflect.ValueOf(b).Convert(t), nil
	case signature.KindEnum:
		s, err := scalar(raw, prose, func(r string) (string, error) { return matchEnum(r, spec.EnumValues()) }, find, false)
		if err != nil {
			return reflect.Value{}, err
		}
		return reflect.ValueOf(s).Convert(t), nil
	}
	lit, err := scalar(raw, prose, func(r string) (any, error) { return matchLiteral(r, spec.Literals()) }, find, false)
	if err != nil {
		return reflect.Value{}, err
	}
	return literalValue(lit, t)
}

// scalar reads raw with read (also without a leading label), then, with
// prose set, as a value explained in a sentence.
func scalar[T comparable](raw string, prose bool, read func(string) (T, error), find candidateFinder, numeric bool) (T, error) {
	v, err := orUnlabelled(raw, read)
	if err == nil || errors.Is(err, ErrAmbiguous) || !prose {
		return v, err
	}
	if noneHead(raw) {
		// "Unknown, maybe 7": no value, and a guess at one.
		if _, nerr := noneAnswer(raw, find); nerr != nil {
			return v, nerr
		}
		return v, invalid("%s says there is no value", clip(raw))
	}
	if pv, perr, ok := fromProse(raw, read, find, numeric); ok {
		return pv, perr
	}
	return v, err
}

// finderFor returns how values of a scalar type are found in prose.
func finderFor(spec *signature.TypeSpec) candidateFinder {
	switch spec.Kind() {
	case signature.KindInt, signature.KindFloat:
		return numberCandidates
	case signature.KindBool:
		return boolCandidates
	case signature.KindEnum:
		return choiceCandidates(spec.EnumValues())
	case signature.KindLiteral:
		var names []string
		for _, l := range spec.Literals() {
			names = append(names, pyjson.Str(l))
		}
		return choiceCandidates(names)
	}
	return nil
}

// selfParse applies a type's own parser: ParseField, then UnmarshalText.
// It returns errNotSelfParsing when the type has neither.
func selfParse(raw string, t reflect.Type) (reflect.Value, error) {
	if t.Kind() == reflect.Interface || t.Kind() == reflect.Pointer {
		return reflect.Value{}, errNotSelfParsing
	}
	pt := reflect.PointerTo(t)
	switch {
	case pt.Implements(fieldParserType):
		p := reflect.New(t)
		if err := p.Interface().(fieldParser).ParseField(raw); err != nil {
			return reflect.Value{}, fmt.Errorf("%w: %w", ErrInvalid, err)
		}
		return p.Elem(), nil
	case pt.Implements(textUnmarshalerType):
		p := reflect.New(t)
		if err := p.Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(strings.TrimSpace(raw))); err != nil {
			return reflect.Value{}, fmt.Errorf("%w: %w", ErrInvalid, err)
		}
		return p.Elem(), nil
	}
	return reflect.Value{}, errNotSelfParsing
}

func customFromText(raw string, t reflect.Type) (reflect.Value, error) {
	if isBytes(t) {
		return bytesFromText(raw, t)
	}
	if t.Kind() != reflect.Pointer && reflect.PointerTo(t).Implements(jsonUnmarshalerType) {
		s := strings.TrimSpace(raw)
		p := reflect.New(t)
		u := p.Interface().(json.Unmarshaler)
		if json.Valid([]byte(s)) {
			if err := u.UnmarshalJSON([]byte(s)); err == nil {
				return p.Elem(), nil
			}
		}
		if err := u.UnmarshalJSON([]byte(pyjson.Quote(s))); err != nil {
			return reflect.Value{}, fmt.Errorf("%w: %w", ErrInvalid, err)
		}
		return p.Elem(), nil
	}
	return reflect.Value{}, invalid("type %s cannot parse text: give it a ParseField or UnmarshalText method", t)
}

// isBytes reports a byte slice ([]byte or a named one) without a parser
// of its own: encoding/json writes it as base64, and so do the adapters.
func isBytes(t reflect.Type) bool {
	return t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8 &&
		!reflect.PointerTo(t).Implements(jsonUnmarshalerType) && !reflect.PointerTo(t).Implements(textUnmarshalerType)
}

// bytesFromText reads a byte slice as encoding/json does, the way the
// adapters write one: standard base64 with padding, bare or as a JSON
// string (line breaks in it are ignored), a JSON array of byte values, or
// null for a nil slice.
// Text that is not base64 is an error, never its UTF-8 bytes: which of the
// two a text means, it does not say.
func bytesFromText(raw string, t reflect.Type) (reflect.Value, error) {
	s := strings.TrimSpace(raw)
	if !(s == "null" || strings.HasPrefix(s, `"`) || strings.HasPrefix(s, "[")) || !json.Valid([]byte(s)) {
		s = pyjson.Quote(s) // bare base64
	}
	p := reflect.New(t)
	if err := json.Unmarshal([]byte(s), p.Interface()); err != nil {
		return reflect.Value{}, invalid("%s is not base64, as a bytes value is written: %v", clip(raw), err)
	}
	return p.Elem(), nil
}

// wrap returns v as type t: a pointer to v when t is *T, v itself when t
// is v's type or an interface.
func wrap(v reflect.Value, t reflect.Type) reflect.Value {
	if v.Type() == t {
		return v
	}
	if t.Kind() == reflect.Pointer && v.Type() == t.Elem() {
		p := reflect.New(t.Elem())
		p.Elem().Set(v)
		return p
	}
	out := reflect.New(t).Elem()
	if v.Type().AssignableTo(t) {
		out.Set(v)
	} else {
		out.Set(v.Convert(t))
	}
	return out
}

// cleanScalar strips what models wrap single values in: surrounding space,
// a code fence, bold/italic/backtick markers, matching quotes.
func cleanScalar(raw string) string {
	s := strings.TrimSpace(raw)
	if body, ok := fenceBody(s); ok {
		s = strings.TrimSpace(body)
	}
	for range 4 {
		prev := s
		for _, w := range [...]string{"**", "__", "`", "*", "_", `"`, "'"} {
			if len(s) >= 2*len(w)+1 && strings.HasPrefix(s, w) && strings.HasSuffix(s, w) {
				s = strings.TrimSpace(s[len(w) : len(s)-len(w)])
			}
		}
		if s == prev {
			break
		}
	}
	return s
}

// fenceBody returns the content of a text that is one ``` fence.
func fenceBody(s string) (string, bool) {
	if !strings.HasPrefix(s, "```") {
		return "", false
	}
	nl := strings.IndexByte(s, '\n')
	if nl < 0 {
		return "", false
	}
	body := strings.TrimRight(s[nl+1:], " \t\r\n")
	body, closed := strings.CutSuffix(body, "```")
	if !closed {
		return "", false
	}
	return body, true
}

func isNone(s string) bool {
	return noneWords[strings.ToLower(cleanScalar(s))]
}

// decodeText reads raw as structured data: strict JSON, a fenced block,
// a Python literal, or the JSON embedded in prose (repaired if need be).
// ok is false when raw holds no such value; a value cut off mid-way is
// ErrTruncated. For a value found in prose, at says where (see
// checkProse).
func decodeText(raw string, b *jsonx.Budget) (v any, ok bool, at proseAt, err error) {
	t := strings.TrimSpace(raw)
	if t == "" {
		return nil, false, at, nil
	}
	v, ok, err = decodeJSON(t)
	if ok || err != nil {
		return v, ok, at, err
	}
	if body, isFence := fenceBody(t); isFence {
		t = strings.TrimSpace(body)
		if v, ok, err = decodeJSON(t); ok || err != nil {
			return v, ok, at, err
		}
	}
	if v, err := pyLiteral(t); err == nil {
		return v, true, at, nil
	}
	if fixed, ok := jsonx.CloseOne(t); ok {
		// One closing bracket forgotten where all else is complete.
		if v, ok, err := decodeJSON(fixed); ok || err != nil {
			return v, ok, at, err
		}
		if v, err := pyLiteral(fixed); err == nil {
			return v, true, at, nil
		}
	}
	span, start, found := jsonx.Extract(t)
	if !found {
		return nil, false, at, nil
	}
	at = proseAt{text: t, start: start, end: start + len(span)}
	if v, ok, err = decodeJSON(span); ok || err != nil {
		return v, ok, at, err
	}
	if v, err := pyLiteral(span); err == nil {
		return v, true, at, nil
	}
	fixed, info, err := b.Repair(span)
	switch {
	case info.Truncated:
		return nil, false, at, fmt.Errorf("%w: the value ends before it is complete", ErrTruncated)
	case errors.Is(err, jsonx.ErrBudget):
		return nil, false, at, invalid("%s needs JSON repair: %v", clip(raw), err)
	case err != nil:
		return nil, false, at, nil
	}
	v, ok, err = decodeJSON(fixed)
	return v, ok, at, err
}

// proseAt is where in a text decodeText found the value it read: text
// and the value's span, or a zero text when the value is the whole text.
type proseAt struct {
	text       string
	start, end int
}

// maxProseSpans bounds the other bracketed values checkProse compares.
const maxProseSpans = 8

// checkProse applies the rules for a value found in prose (see stated.go)
// to the container value v read from at: a negation or bound before it
// ("not [1, 2]") and an alternative with None ("[1, 2] or None") are
// errors; another bracketed value in the text that reads as a different
// value of the type ("[1, 2] and [3]", "{...}. Actually, {...}") makes the
// text ambiguous.
func checkProse(raw string, at proseAt, spec *signature.TypeSpec, v reflect.Value, depth int, b *jsonx.Budget) error {
	if at.text == "" {
		return nil
	}
	if noneHead(at.text[:at.start]) || noneHead(at.text) && at.start > 0 {
		return fmt.Errorf("%w: %s says both that there is no value and %s", ErrAmbiguous, clip(raw), clip(at.text[at.start:at.end]))
	}
	if err := qualifier(at.text, at.start); err != nil {
		return fmt.Errorf("%w: %s", err, clip(raw))
	}
	if err := alternative(at.text, at.start, at.end, false); err != nil {
		return fmt.Errorf("%w: %s", err, clip(raw))
	}
	for _, sp := range jsonx.Spans(at.text, maxProseSpans) {
		if sp.Open || sp.Start == at.start {
			continue
		}
		s := at.text[sp.Start:sp.End]
		other, ok, err := decodeJSON(s)
		if !ok || err != nil {
			if other, err = pyLiteral(s); err != nil {
				continue
			}
		}
		ov, err := fromDecoded(other, spec, false, depth+1, b)
		if err != nil {
			continue // not a value of the type
		}
		if !reflect.DeepEqual(ov.Interface(), v.Interface()) {
			return fmt.Errorf("%w: %s holds two different values, %s and %s", ErrAmbiguous, clip(raw), clip(at.text[at.start:at.end]), clip(s))
		}
		// The same value named again is read by the same rules: negated,
		// bounded or joined to None there, the text states no value
		// ("[1, 2]. Well, [1, 2] or unknown.").
		if err := qualifier(at.text, sp.Start); err != nil {
			return fmt.Errorf("%w: %s", err, clip(raw))
		}
		if err := alternative(at.text, sp.Start, sp.End, false); err != nil {
			return fmt.Errorf("%w: %s", err, clip(raw))
		}
	}
	return nil
}

// decodeJSON decodes strict JSON, and the NaN and Infinity Python's
// json.dumps writes for floats (DSPy renders them so); an object that
// repeats a key with another value is ErrAmbiguous.
func decodeJSON(t string) (v any, ok bool, err error) {
	v, err = jsonx.DecodePython(t)
	var dk *jsonx.DuplicateKeyError
	switch {
	case err == nil:
		return v, true, nil
	case errors.As(err, &dk):
		return nil, false, fmt.Errorf("%w: %v", ErrAmbiguous, err)
	}
	return nil, false, nil
}
