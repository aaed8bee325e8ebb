package jsonx

import (
	"errors"
	"fmt"
	"strings"
)

// ErrCut reports JSON text that ends while a value is being written: a
// cut string or container, or a number at the very end, which the cut may
// have shortened ({"amount": 10 may have been 100).
var ErrCut = errors.New("the text ends inside a value, which may have been cut")

// Exact returns s when it is one strict JSON value, else its repair when
// the repair keeps every value as written and nothing may have been cut
// (ErrCut): the reading for text a program acts on, such as tool
// arguments. A key given twice with different values is a
// *DuplicateKeyError, before or after the repair.
func Exact(s string) (string, error) {
	_, err := Decode(s)
	var dup *DuplicateKeyError
	switch {
	case err == nil:
		return s, nil
	case errors.As(err, &dup):
		return "", err
	}
	fixed, info, rerr := Repair(s)
	switch {
	case rerr != nil:
		return "", fmt.Errorf("not JSON (%v), and %w", err, rerr)
	case info.Truncated, info.EndsInNumber:
		return "", ErrCut
	}
	v, err := Decode(fixed)
	if err != nil {
		return "", err
	}
	if nulls(v) > strings.Count(s, "null")+strings.Count(s, "None")+strings.Count(s, "undefined") {
		// jsonrepair makes a stray word at an open end a key with no
		// value ({"a": 1 ( reads as {"a": 1, "(": null}): a member the
		// text does not hold.
		return "", fmt.Errorf("%w: the repair adds a null the text does not hold", ErrInvalid)
	}
	return fixed, nil
}

// nulls counts the nulls in a decoded value.
func nulls(v any) int {
	switch v := v.(type) {
	case nil:
		return 1
	case map[string]any:
		n := 0
		for _, e := range v {
			n += nulls(e)
		}
		return n
	case []any:
		n := 0
		for _, e := range v {
			n += nulls(e)
		}
		return n
	}
	return 0
}
