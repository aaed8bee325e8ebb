package reply

import (
	"errors"
	"fmt"

	"github.com/sigwire/adapter/internal/value"
)

// The sentinels a reply error wraps (the root package exports the same
// values).
var (
	errAmbiguous = value.ErrAmbiguous
	errTruncated = value.ErrTruncated
)

// Error is a failure to read the reply; the root package wraps it into a
// *ParseError.
type Error struct {
	Field int // the output at fault, or -1
	Err   error
}

func (e *Error) Error() string { return e.Err.Error() }

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

func wrapf(err error, msg string) error { return fmt.Errorf("%s: %w", msg, err) }

// replyErr wraps err as an *Error about no one field, unless it is one.
func replyErr(field int, err error) error {
	if err == nil {
		return nil
	}
	var re *Error
	if errors.As(err, &re) {
		return err
	}
	return &Error{Field: field, Err: err}
}
