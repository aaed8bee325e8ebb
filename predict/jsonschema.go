package predict

import (
	"fmt"
	"math"
	"strings"

	"github.com/sigwire/adapter/internal/pyjson"
)

// validateSchema checks a decoded JSON value (pyjson.Decode's: ints as
// int, other numbers float64) against the JSON Schema pydantic writes for
// a type (its subset: type, properties, required, additionalProperties,
// items, prefixItems, enum, const, anyOf, $ref to $defs, the numeric and
// length bounds), as DSPy's tools validate their arguments with the
// jsonschema package before converting them. The error is jsonschema's
// message for the first failure found.
func validateSchema(v any, schema any) error {
	root, _ := schema.(pyjson.Object)
	return (&schemaCheck{root: root}).check(v, schema, 0)
}

type schemaCheck struct{ root pyjson.Object }

// maxSchemaDepth bounds the nesting checked (and $ref cycles).
const maxSchemaDepth = 64

func (c *schemaCheck) check(v any, schema any, depth int) error {
	if depth > maxSchemaDepth {
		return fmt.Errorf("%s is nested too deeply", pyjson.Repr(v))
	}
	s, ok := schema.(pyjson.Object)
	if !ok {
		if b, isBool := schema.(bool); isBool && !b {
			return fmt.Errorf("False schema does not allow %s", pyjson.Repr(v))
		}
		return nil
	}
	if ref, ok := get[string](s, "$ref"); ok {
		name := ref[strings.LastIndex(ref, "/")+1:]
		defs, _ := get[pyjson.Object](c.root, "$defs")
		def, ok := defs.Get(name)
		if !ok {
			return fmt.Errorf("unresolvable reference %s", ref)
		}
		if err := c.check(v, def, depth+1); err != nil {
			return err
		}
	}
	if any, ok := get[[]any](s, "anyOf"); ok {
		matched := false
		for _, sub := range any {
			if c.check(v, sub, depth+1) == nil {
				matched = true
				break
			}
		}
		if !matched {
			return fmt.Errorf("%s is not valid under any of the given schemas", pyjson.Repr(v))
		}
	}
	if t, ok := s.Get("type"); ok && !typeMatches(v, t) {
		return fmt.Errorf("%s is not of type %s", pyjson.Repr(v), typeNames(t))
	}
	if enum, ok := get[[]any](s, "enum"); ok && !containsJSON(enum, v) {
		return fmt.Errorf("%s is not one of %s", pyjson.Repr(v), pyjson.Repr(enum))
	}
	if cv, ok := s.Get("const"); ok && !equalJSON(cv, v) {
		return fmt.Errorf("%s was expected", pyjson.Repr(cv))
	}
	if err := checkBounds(v, s); err != nil {
		return err
	}
	switch x := v.(type) {
	case pyjson.Object:
		return c.object(x, s, depth)
	case []any:
		if items, ok := s.Get("items"); ok {
			start := 0
			if prefix, ok := get[[]any](s, "prefixItems"); ok {
				start = len(prefix)
			}
			for i := start; i < len(x); i++ {
				if err := c.check(x[i], items, depth+1); err != nil {
					return err
				}
			}
		}
		if prefix, ok := get[[]any](s, "prefixItems"); ok {
			for i := 0; i < len(prefix) && i < len(x); i++ {
				if err := c.check(x[i], prefix[i], depth+1); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func (c *schemaCheck) object(o pyjson.Object, s pyjson.Object, depth int) error {
	props, _ := get[pyjson.Object](s, "properties")
	if req, ok := get[[]any](s, "required"); ok {
		for _, r := range req {
			if name, ok := r.(string); ok {
				if _, has := o.Get(name); !has {
					return fmt.Errorf("%s is a required property", pyjson.Repr(name))
				}
			}
		}
	}
	var extra []string
	for _, m := range o.Members() {
		if p, ok := props.Get(m.Key); ok {
			if err := c.check(m.Value, p, depth+1); err != nil {
				return err
			}
			continue
		}
		if ap, ok := s.Get("additionalProperties"); ok {
			if b, isBool := ap.(bool); isBool {
				if !b {
					extra = append(extra, pyjson.Repr(m.Key))
				}
				continue
			}
			if err := c.check(m.Value, ap, depth+1); err != nil {
				return err
			}
		}
	}
	if len(extra) > 0 {
		verb := "was"
		if len(extra) > 1 {
			verb = "were"
		}
		return fmt.Errorf("Additional properties are not allowed (%s %s unexpected)", strings.Join(extra, ", "), verb)
	}
	return nil
}

// checkBounds applies the numeric and length keywords.
func checkBounds(v any, s pyjson.Object) error {
	if n, ok := number(v); ok {
		for _, k := range []string{"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"} {
			b, ok := s.Get(k)
			if !ok {
				continue
			}
			lim, ok := number(b)
			if !ok {
				continue
			}
			bad := false
			what := ""
			switch k {
			case "minimum":
				bad, what = n < lim, "is less than the minimum of"
			case "maximum":
				bad, what = n > lim, "is greater than the maximum of"
			case "exclusiveMinimum":
				bad, what = n <= lim, "is less than or equal to the minimum of"
			case "exclusiveMaximum":
				bad, what = n >= lim, "is greater than or equal to the maximum of"
			case "multipleOf":
				q := n / lim
				bad, what = lim == 0 || q != math.Trunc(q), "is not a multiple of"
			}
			if bad {
				return fmt.Errorf("%s %s %s", pyjson.Repr(v), what, pyjson.Repr(b))
			}
		}
	}
	var size int
	var sizeKeys [2]string
	switch x := v.(type) {
	case string:
		size, sizeKeys = len([]rune(x)), [2]string{"minLength", "maxLength"}
	case []any:
		size, sizeKeys = len(x), [2]string{"minItems", "maxItems"}
	default:
		return nil
	}
	if b, ok := s.Get(sizeKeys[0]); ok {
		if lim, ok := number(b); ok && float64(size) < lim {
			return fmt.Errorf("%s is too short", pyjson.Repr(v))
		}
	}
	if b, ok := s.Get(sizeKeys[1]); ok {
		if lim, ok := number(b); ok && float64(size) > lim {
			return fmt.Errorf("%s is too long", pyjson.Repr(v))
		}
	}
	return nil
}

// typeMatches is jsonschema's type check: "integer" takes an integral
// number (1.0 too), "number" any number, never a bool.
func typeMatches(v any, t any) bool {
	switch tt := t.(type) {
	case string:
		switch tt {
		case "string":
			_, ok := v.(string)
			return ok
		case "integer":
			switch n := v.(type) {
			case int:
				return true
			case float64:
				return n == math.Trunc(n) && !math.IsInf(n, 0)
			}
			return false
		case "number":
			_, ok := number(v)
			return ok
		case "boolean":
			_, ok := v.(bool)
			return ok
		case "null":
			return v == nil
		case "array":
			_, ok := v.([]any)
			return ok
		case "object":
			_, ok := v.(pyjson.Object)
			return ok
		}
		return true
	case []any:
		for _, e := range tt {
			if typeMatches(v, e) {
				return true
			}
		}
		return false
	}
	return true
}

func typeNames(t any) string {
	if l, ok := t.([]any); ok {
		return pyjson.Repr(l)
	}
	return pyjson.Repr(t)
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case int:
		return float64(n), true
	case float64:
		return n, true
	}
	return 0, false
}

func get[T any](o pyjson.Object, key string) (T, bool) {
	v, ok := o.Get(key)
	t, isT := v.(T)
	return t, ok && isT
}

func containsJSON(l []any, v any) bool {
	for _, e := range l {
		if equalJSON(e, v) {
			return true
		}
	}
	return false
}

// equalJSON compares decoded JSON values, numbers by value (1 == 1.0), a
// bool never equal to a number.
func equalJSON(a, b any) bool {
	if x, ok := number(a); ok {
		y, ok := number(b)
		return ok && x == y
	}
	switch x := a.(type) {
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !equalJSON(x[i], y[i]) {
				return false
			}
		}
		return true
	case pyjson.Object:
		y, ok := b.(pyjson.Object)
		if !ok || x.Len() != y.Len() {
			return false
		}
		for _, m := range x.Members() {
			w, ok := y.Get(m.Key)
			if !ok || !equalJSON(m.Value, w) {
				return false
			}
		}
		return true
	}
	return a == b
}
