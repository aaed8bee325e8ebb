package jsonx

import (
	"errors"
	"fmt"
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
	if _, err := Decode(fixed); err != nil {
		return "", err
	}
	return fixed, nil
}
