package value

import (
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

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
	numberDecorRE       = regexp.MustCompile(`^([+-]?)[$€£¥]?\s*((?:[0-9]{1,3}(?:,[0-9]{3})+|[0-9]+)(?:\.[0-9]+)?|\.[0-9]+)(?:\s*([A-Za-z]{2,}|[A-Za-z]{2,}/[A-Za-z]+)\.?)?$`)
	scaleWords          = map[string]bool{"hundred": true, "thousand": true, "million": true, "billion": true, "trillion": true, "mn": true, "bn": true, "mm": true, "dozen": true, "lakh": true, "crore": true}
	strongBools         = map[string]bool{"yes": true, "true": true, "no": false, "false": false}
	boolWords           = map[string]bool{"true": true, "t": true, "yes": true, "y": true, "on": true, "1": true, "false": false, "f": false, "no": false, "n": false, "off": false, "0": false}
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

// parseInt reads an int without rounding: Python literals (4_2, 0x10),
// integral floats (42.0), and, when that fails, a number with thousands
// separators, a currency sign or a unit word (2,161,000; $5; 42 km).
func parseInt(raw string) (whole, error) {
	s := cleanScalar(raw)
	n, ok := readNumber(s)
	if !ok {
		return whole{}, numberError(raw, s, "int")
	}
	return intFromNumber(n, raw)
}

// whole is an integer read exactly: a sign and a magnitude, wide enough
// for every int64 and every uint64 (a uint64 field takes values above
// math.MaxInt64). Zero is never negative, so equal integers compare
// equal.
type whole struct {
	neg bool
	mag uint64
}

// intFromNumber reads a JSON-spelled number as an integer exactly (never
// through a float64, which rounds integers beyond 2^53), in time linear in
// its length: a number with more significant digits than a uint64 holds
// is out of range before any arithmetic, so a reply of a million digits
// costs a scan, not big-number arithmetic (security review round 3, N6).
func intFromNumber(n json.Number, raw string) (whole, error) {
	if i, err := strconv.ParseInt(string(n), 10, 64); err == nil {
		if i < 0 {
			return whole{neg: true, mag: uint64(-(i + 1)) + 1}, nil
		}
		return whole{mag: uint64(i)}, nil
	}
	neg, digits, exp, ok := decimalParts(string(n))
	switch {
	case !ok:
		return whole{}, invalid("%s is not an int", clip(raw))
	case digits == "":
		return whole{}, nil
	case exp < 0:
		return whole{}, invalid("%s is not a whole number", clip(raw))
	case len(digits)+exp > maxUint64Digits:
		return whole{}, invalid("%s is out of range for an int", clip(raw))
	}
	u, err := strconv.ParseUint(digits+strings.Repeat("0", exp), 10, 64)
	if err != nil {
		return whole{}, invalid("%s is out of range for an int", clip(raw))
	}
	return whole{neg: neg, mag: u}, nil
}

// maxUint64Digits is the number of decimal digits of the largest uint64.
const maxUint64Digits = 20

// maxExponent bounds the decimal exponent read: far beyond any int64 or
// float64.
const maxExponent = 400

// decimalParts splits a decimal number ("-12.50e3") into its sign, its
// significant digits without leading or trailing zeros ("125") and the
// power of ten they are multiplied by (2): the value is
// ±digits×10^exp, exactly. Zero has no digits. ok is false for a text that
// is not such a number, or an exponent beyond maxExponent.
func decimalParts(s string) (neg bool, digits string, exp int, ok bool) {
	if s != "" && (s[0] == '-' || s[0] == '+') {
		neg, s = s[0] == '-', s[1:]
	}
	mant := s
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		e, err := strconv.Atoi(strings.TrimPrefix(s[i+1:], "+"))
		if err != nil || e > maxExponent || e < -maxExponent || strings.HasPrefix(s[i+1:], "+-") {
			return false, "", 0, false
		}
		mant, exp = s[:i], e
	}
	whole, frac, _ := strings.Cut(mant, ".")
	if whole == "" && frac == "" || !allDigits(whole) || !allDigits(frac) {
		return false, "", 0, false
	}
	whole = strings.TrimLeft(whole, "0")
	trimmed := strings.TrimRight(frac, "0")
	exp -= len(trimmed)
	if trimmed == "" {
		trimmed = whole
		whole = ""
		n := len(trimmed)
		trimmed = strings.TrimRight(trimmed, "0")
		exp += n - len(trimmed)
	}
	digits = strings.TrimLeft(whole+trimmed, "0")
	if digits == "" {
		return neg, "", 0, true
	}
	return neg, digits, exp, true
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// intValue returns n as the int type t, or an error naming t when n is
// out of its range (a negative number for an unsigned type, a number
// above math.MaxInt64 for a signed one).
func intValue(n whole, t reflect.Type, raw string) (reflect.Value, error) {
	v := reflect.New(t).Elem()
	outOfRange := func() error { return invalid("%s is out of range for %s", clip(raw), t) } // made only when it is one
	switch {
	case v.CanInt():
		if n.neg && n.mag > 1<<63 || !n.neg && n.mag > math.MaxInt64 {
			return reflect.Value{}, outOfRange()
		}
		i := int64(n.mag)
		if n.neg {
			i = -i // also right for -2^63, whose magnitude int64 wraps to itself
		}
		if v.OverflowInt(i) {
			return reflect.Value{}, outOfRange()
		}
		v.SetInt(i)
	case v.CanUint():
		if n.neg && n.mag != 0 || v.OverflowUint(n.mag) {
			return reflect.Value{}, outOfRange()
		}
		v.SetUint(n.mag)
	default:
		return reflect.Value{}, invalid("cannot read an int into %s", t)
	}
	return v, nil
}

func parseFloat(raw string) (float64, error) {
	s := cleanScalar(raw)
	switch strings.ToLower(strings.TrimLeft(s, "+-")) {
	case "inf", "infinity", "nan":
		f, _ := strconv.ParseFloat(s, 64)
		return f, nil
	}
	n, ok := readNumber(s)
	if !ok {
		if f, ok := fraction(s); ok {
			return f, nil
		}
		return 0, numberError(raw, s, "float")
	}
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil {
		return 0, invalid("%s is out of range for a float", clip(raw))
	}
	return f, nil
}

func numberError(raw, s, kind string) error {
	if strings.HasSuffix(s, "%") {
		return invalid("%s is a percentage: write the %s itself, the scale is ambiguous", clip(raw), kind)
	}
	return invalid("%s is not %s", clip(raw), WithArticle(kind))
}

// readNumber reads a number: a Python literal, a decorated number, a
// number word ("Eight"), each also hedged ("Approximately 1450", "1450 or
// so", "probably 1450") or followed by a remark in parentheses that holds
// no other number ("1450 (the census is old)").
func readNumber(s string) (json.Number, bool) {
	for range 4 {
		if n, ok := pyNumber(s); ok {
			return n, true
		}
		if n, ok := decoratedNumber(s); ok {
			return n, true
		}
		if n, ok := numberWord(s); ok {
			return n, true
		}
		t := s
		if m := hedgeRE.FindStringIndex(t); m != nil {
			t = t[m[1]:]
		}
		if m := trailingHedgeRE.FindStringIndex(t); m != nil {
			t = t[:m[0]]
		}
		if i := strings.LastIndexByte(t, '('); i > 0 && strings.HasSuffix(strings.TrimRight(t, ". "), ")") && !alternativeRE.MatchString(t[i:]) {
			t = t[:i]
		}
		t = cleanScalar(strings.TrimRight(strings.TrimSpace(t), ".,;"))
		if t == s || t == "" {
			return "", false
		}
		s = t
	}
	return "", false
}

var (
	hedgeRE         = regexp.MustCompile(`(?i)^(?:approximately|approx\.?|about|around|roughly|circa|ca\.|c\.|~|≈|an estimated|estimated|est\.|probably|likely|most likely|possibly|perhaps|maybe|presumably|i think|i believe|i estimate|i'd estimate|an approximate|some|exactly|precisely|a total of|in total|total of)\s*`)
	alternativeRE   = regexp.MustCompile(`(?i)^\(\s*[-+~$]?[0-9]|\b(?:or|maybe|perhaps|possibly|either|alternatively|otherwise|might|could|up to|unless|if not)\b|\b(?:though|although|but|while|whereas|others?|some)\b[^)]*[0-9]|[0-9][^)]*\b(?:possible|likely|also|too)\b`)
	trailingHedgeRE = regexp.MustCompile(`(?i)\s*(?:or so|or thereabouts|-?ish|approximately|approx\.?|roughly|\(approx\.?\)|\(approximately\)|\(estimated?\)|\(est\.\)|in total|total|exactly)\.?$`)
	fractionRE      = regexp.MustCompile(`^([+-]?[0-9]{1,15})\s*/\s*([0-9]{1,15})$`)
	smallWords      = map[string]int{"zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10,
		"eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19}
	tensWords = map[string]int{"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90}
)

// numberWord reads an English number word from zero to ninety-nine
// ("Eight", "forty-two", "Twenty one"). Larger numbers in words are not
// read: models write those in digits.
func numberWord(s string) (json.Number, bool) {
	if len(s) > 20 {
		return "", false
	}
	w := strings.Fields(strings.ToLower(strings.ReplaceAll(strings.TrimRight(s, ".!"), "-", " ")))
	neg := len(w) > 1 && (w[0] == "minus" || w[0] == "negative")
	if neg {
		w = w[1:]
	}
	n := 0
	switch {
	case len(w) == 1:
		v, ok := smallWords[w[0]]
		if !ok {
			if v, ok = tensWords[w[0]]; !ok {
				return "", false
			}
		}
		n = v
	case len(w) == 2:
		t, ok1 := tensWords[w[0]]
		u, ok2 := smallWords[w[1]]
		if !ok1 || !ok2 || u == 0 || u > 9 {
			return "", false
		}
		n = t + u
	default:
		return "", false
	}
	if neg {
		n = -n
	}
	return json.Number(strconv.Itoa(n)), true
}

// fraction reads "1/36" as a float (never as an int: that would round).
func fraction(s string) (float64, bool) {
	m := fractionRE.FindStringSubmatch(s)
	if m == nil {
		return 0, false
	}
	a, err1 := strconv.ParseFloat(m[1], 64)
	b, err2 := strconv.ParseFloat(m[2], 64)
	if err1 != nil || err2 != nil || b == 0 {
		return 0, false
	}
	return a / b, true
}

// decoratedNumber reads a number with thousands separators, a currency
// sign or a unit word. Scale words (million, k) are refused: they change
// the value.
func decoratedNumber(s string) (json.Number, bool) {
	m := numberDecorRE.FindStringSubmatch(s)
	if m == nil {
		return "", false
	}
	if scaleWords[strings.ToLower(m[3])] || trailingBounds[strings.ToLower(m[3])] {
		return "", false // "42 million", "42 max": not a unit
	}
	num := strings.ReplaceAll(m[2], ",", "")
	if strings.HasPrefix(num, ".") {
		num = "0" + num
	}
	return json.Number(m[1] + num), true
}

// parseBool reads pydantic's bool words (true/false, yes/no, on/off, t/f,
// y/n, 1/0) in any case and decoration, or an answer that starts with
// yes/no/true/false; a later opposite word makes it ambiguous.
func parseBool(raw string) (bool, error) {
	s := strings.ToLower(strings.TrimRight(cleanScalar(raw), ".!"))
	s = cleanScalar(s)
	if b, ok := boolWords[s]; ok {
		return b, nil
	}
	words := strings.FieldsFunc(s, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	if len(words) == 0 {
		return false, invalid("%s is not a bool", clip(raw))
	}
	b, ok := strongBools[words[0]]
	if !ok {
		return false, invalid("%s is not a bool", clip(raw))
	}
	start := strings.Index(s, words[0])
	end := start + len(words[0])
	if determines(s, end) {
		return false, fmt.Errorf("%w: %s", errNounPhrase, clip(raw))
	}
	if err := alternative(s, start, end, false); err != nil {
		return false, fmt.Errorf("%w: %s", err, clip(raw))
	}
	if takesBack(s[end:]) {
		return false, fmt.Errorf("%w: %s", errRefusal, clip(raw))
	}
	for _, w := range words[1:] {
		if o, ok := strongBools[w]; ok && o != b {
			return false, fmt.Errorf("%w: %s says both yes and no", ErrAmbiguous, clip(raw))
		}
	}
	// The answer word named again is read by the same rule: joined to
	// None there, the text states no value ("yes, yes or None").
	for i := end; i < len(s); {
		w, j := wordAt(s, i)
		if w == "" {
			_, size := utf8.DecodeRuneInString(s[i:])
			i += size
			continue
		}
		if _, ok := strongBools[w]; ok && !determines(s, j) {
			if err := alternative(s, i, j, false); err != nil {
				return false, fmt.Errorf("%w: %s", err, clip(raw))
			}
		}
		i = j
	}
	return b, nil
}

// cleanChoice strips decorations around an enum or Literal answer: those
// of cleanScalar, a Literal[...] or str[...] wrapper, a trailing period.
func cleanChoice(raw string) string {
	s := cleanScalar(raw)
	for _, p := range [...]string{"Literal[", "str["} {
		if strings.HasPrefix(s, p) && strings.HasSuffix(s, "]") {
			s = cleanScalar(s[len(p) : len(s)-1])
		}
	}
	if t := strings.TrimRight(s, "."); t != s && t != "" {
		s = cleanScalar(t)
	}
	return s
}

// normChoice folds case and word separators, so "In Progress",
// "IN_PROGRESS", "InProgress" and "in-progress" compare equal.
func normChoice(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '_', '-', ' ':
			continue
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}

// matchEnum finds the enum value raw names: exactly, after stripping
// decorations, or uniquely up to case and separators (which also matches
// the Go-style and upper-case names of the value).
func matchEnum(raw string, values []string) (string, error) {
	for _, v := range values {
		if v == raw {
			return v, nil
		}
	}
	s := cleanChoice(raw)
	for _, v := range values {
		if v == s {
			return v, nil
		}
	}
	n := normChoice(s)
	var found []string
	for _, v := range values {
		if normChoice(v) == n {
			found = append(found, v)
		}
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		if i, err := explainedChoice(s, values); err != nil {
			return "", err
		} else if i >= 0 {
			return values[i], nil
		}
		return "", fmt.Errorf("%w: %s is not one of %s", ErrNoMatch, clip(raw), pyjson.Repr(values))
	}
	return "", fmt.Errorf("%w: %s matches %s", ErrAmbiguous, clip(raw), pyjson.Repr(found))
}

// orUnlabelled reads raw with read, and when that fails for a reason
// other than ambiguity, once more without a leading label ("Answer:
// **True**", "**Category:** billing"). A None answer is no label
// ("Unknown: probably 7" guesses a value it disowns).
func orUnlabelled[T any](raw string, read func(string) (T, error)) (T, error) {
	v, err := read(raw)
	if err == nil || errors.Is(err, ErrAmbiguous) {
		return v, err
	}
	if m := labelRE.FindStringIndex(cleanScalar(raw)); m != nil && !noneHead(cleanScalar(raw)[:m[1]]) {
		if rest := cleanScalar(raw)[m[1]:]; rest != "" {
			if v2, err2 := read(rest); err2 == nil || errors.Is(err2, ErrAmbiguous) {
				return v2, err2
			}
		}
	}
	return v, err
}

// explainedChoice reads an answer that starts with one choice and goes on
// to explain it ("technical - the user cannot log in", "High priority"):
// the index of the choice its head names, or -1. The explanation naming
// another choice makes it ErrAmbiguous.
func explainedChoice(s string, choices []string) (int, error) {
	head := s
	for i, r := range s {
		sep := false
		switch r {
		case ':', ',', ';', '(', '\n', '—', '–':
			sep = true
		case '-', '.':
			sep = i+1 == len(s) || s[i+1] == ' '
		}
		if sep {
			head = s[:i]
			break
		}
	}
	pick := func(h string) int {
		n := normChoice(cleanScalar(h))
		found := -1
		for i, c := range choices {
			if normChoice(c) == n && n != "" {
				if found >= 0 {
					return -1
				}
				found = i
			}
		}
		return found
	}
	at, start, end := pick(head), 0, len(head)
	if at < 0 {
		if f := strings.Fields(s); len(f) > 1 {
			start = strings.Index(s, f[0])
			at, end = pick(f[0]), start+len(f[0])
		}
	}
	rest := s[end:]
	if at < 0 || strings.TrimSpace(rest) == "" {
		return -1, nil
	}
	if _, yesNo := strongBools[normChoice(choices[at])]; yesNo && determines(s, end) {
		return -1, fmt.Errorf("%w: %s", errNounPhrase, clip(s))
	}
	if err := alternative(s, start, end, false); err != nil {
		return -1, fmt.Errorf("%w: %s", err, clip(s))
	}
	if _, yesNo := strongBools[normChoice(choices[at])]; yesNo && takesBack(rest) {
		return -1, fmt.Errorf("%w: %s", errRefusal, clip(s))
	}
	// Every other mention of a choice in the explanation is read as the
	// prose rule reads it: qualified anywhere (joined to None, negated,
	// taken back), the text states no value ("no, no or unknown").
	for _, c := range choiceCandidates(choices)(s) {
		if c.blocked != nil {
			return -1, fmt.Errorf("%w: %s", c.blocked, clip(s))
		}
	}
	lower := strings.ToLower(rest)
	for i, c := range choices {
		if i != at && c != "" && (containsWord(lower, strings.ToLower(c)) || containsWord(lower, strings.ToLower(strings.ReplaceAll(c, "_", " ")))) {
			return at, fmt.Errorf("%w: %s names both %s and %s", ErrAmbiguous, clip(s), pyjson.Repr(choices[at]), pyjson.Repr(c))
		}
	}
	return at, nil
}

// containsWord reports whether w occurs in s between non-letters.
func containsWord(s, w string) bool {
	for off := 0; off < len(s); {
		i := strings.Index(s[off:], w)
		if i < 0 {
			return false
		}
		i += off
		before, after := i == 0 || !isLetterByte(s[i-1]), i+len(w) == len(s) || !isLetterByte(s[i+len(w)])
		if before && after {
			return true
		}
		off = i + 1
	}
	return false
}

func isLetterByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c >= 0x80
}

// matchLiteral finds the Literal member raw names: a str member exactly or
// after stripping decorations; an int, float, bool or None member by its
// value ("1" is the member 1); a str member uniquely up to case.
func matchLiteral(raw string, lits []any) (any, error) {
	for _, l := range lits {
		if s, ok := l.(string); ok && s == raw {
			return l, nil
		}
	}
	s := cleanChoice(raw)
	for _, l := range lits {
		switch x := l.(type) {
		case string:
			if x == s {
				return l, nil
			}
		case nil:
			if isNone(s) {
				return nil, nil
			}
		case bool:
			if b, ok := boolWords[strings.ToLower(s)]; ok && b == x && strings.ToLower(s) != "1" && strings.ToLower(s) != "0" {
				return l, nil
			}
		case int:
			if n, ok := pyNumber(s); ok {
				if i, err := strconv.ParseInt(string(n), 10, 64); err == nil && int(i) == x {
					return l, nil
				}
			}
		case float64:
			if n, ok := pyNumber(s); ok {
				if f, err := strconv.ParseFloat(string(n), 64); err == nil && f == x {
					return l, nil
				}
			}
		}
	}
	n := normChoice(s)
	var found []any
	for _, l := range lits {
		if x, ok := l.(string); ok && normChoice(x) == n {
			found = append(found, l)
		}
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		var strs []string
		var members []any
		for _, l := range lits {
			if x, ok := l.(string); ok {
				strs, members = append(strs, x), append(members, l)
			}
		}
		if i, err := explainedChoice(s, strs); err != nil {
			return nil, err
		} else if i >= 0 {
			return members[i], nil
		}
		return nil, fmt.Errorf("%w: %s is not one of %s", ErrNoMatch, clip(raw), pyjson.Repr(lits))
	}
	return nil, fmt.Errorf("%w: %s matches %s", ErrAmbiguous, clip(raw), pyjson.Repr(found))
}

// literalValue returns a Literal member as the field's Go type.
func literalValue(lit any, t reflect.Type) (reflect.Value, error) {
	if lit == nil {
		return reflect.Zero(t), nil
	}
	v := reflect.ValueOf(lit)
	switch {
	case t.Kind() == reflect.Interface:
		out := reflect.New(t).Elem()
		out.Set(v)
		return out, nil
	case t.Kind() == reflect.Pointer:
		return wrap(v.Convert(t.Elem()), t), nil
	}
	return v.Convert(t), nil
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

// bullets reads a markdown list ("- a", "* a", "1. a", "1) a"), one item
// per line; every non-blank line must be an item.
func bullets(raw string) ([]string, bool) {
	var items []string
	for line := range strings.Lines(raw) {
		l := strings.TrimSpace(line)
		if l == "" {
			continue
		}
		item, ok := bulletItem(l)
		if !ok {
			return nil, false
		}
		items = append(items, item)
	}
	return items, len(items) > 0
}

func bulletItem(l string) (string, bool) {
	for _, p := range [...]string{"- ", "* ", "+ ", "• "} {
		if strings.HasPrefix(l, p) {
			return strings.TrimSpace(l[len(p):]), true
		}
	}
	i := 0
	for i < len(l) && l[i] >= '0' && l[i] <= '9' {
		i++
	}
	if i > 0 && i+1 < len(l) && (l[i] == '.' || l[i] == ')') && l[i+1] == ' ' {
		return strings.TrimSpace(l[i+2:]), true
	}
	return "", false
}

// singleItem reads a lone scalar given for a list ("sql" for list[str]) as
// the list's one item. A line with a comma or semicolon is refused for
// text items: one item or several, the text does not say; so is a text
// that states no item (see noItem).
func singleItem(raw string, elem *signature.TypeSpec) (string, bool) {
	s := strings.TrimSpace(raw)
	if s == "" || strings.ContainsAny(s, "\n[]{}") {
		return "", false
	}
	switch elem.Kind() {
	case signature.KindString, signature.KindEnum, signature.KindLiteral:
		if strings.ContainsAny(s, ",;") || noItem(s) {
			return "", false
		}
	case signature.KindInt, signature.KindFloat, signature.KindBool:
	default:
		return "", false
	}
	return s, true
}

func listFromText(items []string, spec *signature.TypeSpec, depth int, b *jsonx.Budget) (reflect.Value, error) {
	t := spec.GoType()
	out := reflect.MakeSlice(t, 0, len(items))
	lists := itemsAreLists(spec.Elem())
	for i, it := range items {
		if lists {
			if err := loneItem(it, spec.Elem()); err != nil {
				return reflect.Value{}, fmt.Errorf("item %d: %w", i+1, err)
			}
		}
		v, err := parseText(it, spec.Elem(), depth+1, b)
		if err != nil {
			return reflect.Value{}, fmt.Errorf("item %d: %w", i+1, err)
		}
		out = reflect.Append(out, v)
	}
	return out, nil
}

// itemsAreLists reports a list item type that is a list (or an optional
// one), whose items loneItem checks.
func itemsAreLists(elem *signature.TypeSpec) bool {
	if elem.Kind() == signature.KindOptional {
		elem = elem.Elem()
	}
	return elem.Kind() == signature.KindList
}

// loneItem refuses a scalar given as an item of a list whose items are
// lists (see itemsAreLists). A lone scalar is a list's one item only where
// it is a value of its own (a field's, a dict member's, a struct
// member's): as an item of a list it says the list is flat, and [1, 2]
// read as list[list[int]] would be the invented [[1], [2]] — the value an
// inner fragment of a corrupted [[1, 2], [3, x]] also made. v is a decoded
// item or a bullet's text.
func loneItem(v any, elem *signature.TypeSpec) error {
	list := elem
	if list.Kind() == signature.KindOptional {
		list = list.Elem()
	}
	switch x := v.(type) {
	case json.Number, bool:
	case string:
		if _, ok := singleItem(x, list.Elem()); !ok || list != elem && isNone(x) {
			return nil
		}
	default:
		return nil
	}
	return invalid("%s is not %s: a list's item must be a list here", clip(pyjson.Repr(v)), WithArticle(list.String()))
}
