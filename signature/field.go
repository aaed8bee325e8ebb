package signature

import (
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"unicode"

	"github.com/sigwire/adapter/internal/pyjson"
)

// Field is one input or output of a signature.
//
// Only Name is required. A nil Type means str (Go string) unless Spec says
// otherwise. Spec carries what a Go type alone cannot say (Literal['a', 'b'],
// Union[int, str], the spelling int | None); when both are set the Spec's Go
// type must equal Type, and a nil Type is filled from Spec. Fields returned
// by a [Signature] always have both set.
type Field struct {
	Name string
	Type reflect.Type
	Spec *TypeSpec
	// Desc is the description shown to the model. DSPy's placeholder
	// "${name}" means no description; it is stored as "".
	Desc string
	// Prefix is DSPy's field prefix ("Question:"). Adapters do not show it;
	// it is kept so saved DSPy programs round-trip. Empty means the prefix
	// DSPy infers, see [InferPrefix].
	Prefix string
	// Constraints are pydantic-style bounds, shown in prompts the way DSPy
	// shows them ("Constraints: greater than or equal to: 0").
	Constraints []Constraint
	// Default, when HasDefault is set, is the value an output takes when
	// the model leaves it out (DSPy's OutputField(default=...)).
	Default    any
	HasDefault bool
}

// Op names a constraint, with pydantic's keyword.
type Op string

// The constraints DSPy renders into field descriptions.
const (
	GT          Op = "gt"
	GE          Op = "ge"
	LT          Op = "lt"
	LE          Op = "le"
	MinLength   Op = "min_length"
	MaxLength   Op = "max_length"
	MultipleOf  Op = "multiple_of"
	AllowInfNaN Op = "allow_inf_nan"
)

var opText = map[Op]string{
	GT:          "greater than: ",
	GE:          "greater than or equal to: ",
	LT:          "less than: ",
	LE:          "less than or equal to: ",
	MinLength:   "minimum length: ",
	MaxLength:   "maximum length: ",
	MultipleOf:  "a multiple of the given number: ",
	AllowInfNaN: "allow 'inf', '-inf', 'nan' values: ",
}

// Constraint is one bound on a field's value. Value is a number (an int
// renders as 0, a float64 as 0.5 or 1.0, as Python would print the keyword
// argument) or, for AllowInfNaN, a bool.
type Constraint struct {
	Op    Op
	Value any
}

// String renders the constraint as DSPy does: "greater than or equal to: 0".
func (c Constraint) String() string {
	return opText[c.Op] + pyjson.Str(c.Value)
}

func (c Constraint) validate() error {
	if _, ok := opText[c.Op]; !ok {
		return fmt.Errorf("unknown constraint %q", c.Op)
	}
	switch v := c.Value.(type) {
	case int, float64:
		if c.Op == AllowInfNaN {
			return fmt.Errorf("constraint %s needs a bool, got %v", c.Op, v)
		}
		if (c.Op == MinLength || c.Op == MaxLength) && reflect.TypeOf(v).Kind() != reflect.Int {
			return fmt.Errorf("constraint %s needs an int, got %v", c.Op, v)
		}
	case bool:
		if c.Op != AllowInfNaN {
			return fmt.Errorf("constraint %s needs a number, got %v", c.Op, v)
		}
	default:
		return fmt.Errorf("constraint %s has a value of unsupported type %T", c.Op, c.Value)
	}
	return nil
}

// FieldError reports a problem with one field of a signature.
type FieldError struct {
	Field string // the field's name
	Err   error
}

// Error names the field and the problem.
func (e *FieldError) Error() string {
	return fmt.Sprintf("signature: field %q: %v", e.Field, e.Err)
}

// Unwrap returns the cause (ErrDuplicate, ErrUnsupported, ErrNotStrict, …).
func (e *FieldError) Unwrap() error { return e.Err }

// validName reports whether s is a Python identifier (DSPy parses field
// names as Python function arguments).
func validName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if r == '_' || unicode.IsLetter(r) || (i > 0 && unicode.IsDigit(r)) {
			continue
		}
		return false
	}
	return true
}

// resolve checks f and fills Type, Spec, Prefix and Desc normalisation.
func (f Field) resolve(names map[reflect.Type]string) (Field, error) {
	if !validName(f.Name) {
		return f, &FieldError{f.Name, ErrBadName}
	}
	switch {
	case f.Spec != nil && f.Type != nil && f.Spec.goType != f.Type:
		return f, &FieldError{f.Name, fmt.Errorf("Spec is %s (Go type %s) but Type is %s", f.Spec, f.Spec.goType, f.Type)}
	case f.Spec != nil:
		f.Type = f.Spec.goType
	default:
		s, err := specOf(f.Type, names, 0)
		if err != nil {
			return f, &FieldError{f.Name, fmt.Errorf("%w: %v", ErrUnsupported, err)}
		}
		f.Spec = s
		f.Type = s.goType
	}
	if f.Desc == "${"+f.Name+"}" {
		f.Desc = ""
	}
	if f.Prefix == "" {
		f.Prefix = InferPrefix(f.Name) + ":"
	}
	for _, c := range f.Constraints {
		if err := c.validate(); err != nil {
			return f, &FieldError{f.Name, err}
		}
	}
	f.Constraints = append([]Constraint(nil), f.Constraints...)
	if f.HasDefault && f.Default != nil {
		if dv := reflect.ValueOf(f.Default); !dv.Type().AssignableTo(f.Type) {
			if !dv.Type().ConvertibleTo(f.Type) || !isNumberKind(dv.Kind()) || !isNumberKind(f.Type.Kind()) {
				return f, &FieldError{f.Name, fmt.Errorf("default %v (%T) is not a %s", f.Default, f.Default, f.Type)}
			}
			f.Default = dv.Convert(f.Type).Interface()
		}
	}
	return f, nil
}

func isNumberKind(k reflect.Kind) bool {
	return (k >= reflect.Int && k <= reflect.Uint64) || k == reflect.Float32 || k == reflect.Float64
}

func (f Field) equal(g Field) bool {
	if f.Name != g.Name || f.Desc != g.Desc || f.Prefix != g.Prefix || f.HasDefault != g.HasDefault ||
		!f.Spec.equal(g.Spec) || len(f.Constraints) != len(g.Constraints) {
		return false
	}
	for i := range f.Constraints {
		if f.Constraints[i] != g.Constraints[i] {
			return false
		}
	}
	return !f.HasDefault || reflect.DeepEqual(f.Default, g.Default)
}

var (
	prefixCamel1 = regexp.MustCompile(`(.)([A-Z][a-z]+)`)
	prefixCamel2 = regexp.MustCompile(`([a-z0-9])([A-Z])`)
	prefixNum1   = regexp.MustCompile(`([a-zA-Z])(\d)`)
	prefixNum2   = regexp.MustCompile(`(\d)([a-zA-Z])`)
)

// InferPrefix returns the prefix DSPy derives from a field name (without the
// trailing colon): camelCase and snake_case words title-cased, digits
// separated, acronyms kept: "someAttributeName42IsCool" gives
// "Some Attribute Name 42 Is Cool", "URLAddress" gives "URL Address".
func InferPrefix(name string) string {
	s := prefixCamel1.ReplaceAllString(name, "${1}_${2}")
	s = prefixCamel2.ReplaceAllString(s, "${1}_${2}")
	s = prefixNum1.ReplaceAllString(s, "${1}_${2}")
	s = prefixNum2.ReplaceAllString(s, "${1}_${2}")
	words := strings.Split(s, "_")
	for i, w := range words {
		if !pyIsUpper(w) {
			words[i] = pyCapitalize(w)
		}
	}
	return strings.Join(words, " ")
}

// pyIsUpper is Python's str.isupper: at least one cased rune and no lower-case rune.
func pyIsUpper(s string) bool {
	cased := false
	for _, r := range s {
		if unicode.IsLower(r) {
			return false
		}
		if unicode.IsUpper(r) {
			cased = true
		}
	}
	return cased
}

// pyCapitalize is Python's str.capitalize: first rune upper-cased, the rest lower-cased.
func pyCapitalize(s string) string {
	if s == "" {
		return s
	}
	rs := []rune(strings.ToLower(s))
	rs[0] = unicode.ToUpper(rs[0])
	return string(rs)
}

// pyTitle is Python's str.title: a rune is upper-cased when it follows a
// non-letter, lower-cased otherwise.
func pyTitle(s string) string {
	var b strings.Builder
	prevLetter := false
	for _, r := range s {
		if unicode.IsLetter(r) {
			if prevLetter {
				b.WriteRune(unicode.ToLower(r))
			} else {
				b.WriteRune(unicode.ToTitle(r))
			}
			prevLetter = true
		} else {
			b.WriteRune(r)
			prevLetter = false
		}
	}
	return b.String()
}
