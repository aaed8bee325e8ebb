package wire

import (
	"errors"
	"fmt"
)

// MaxChoices bounds the choices of a reply and of one stream event:
// OpenAI's n is at most 128.
const MaxChoices = maxStreamIndex

// ErrReplyTooLarge matches the error for a reply past one of the limits
// the caller passes, or with more choices than MaxChoices; the root
// exports it as adapter.ErrReplyTooLarge. Its text names the limit and
// how to raise it.
var ErrReplyTooLarge = errors.New("reply too large")

// tooManyBytes is the error for a reply past max bytes.
func tooManyBytes(what string, max int64) error {
	return fmt.Errorf("%w: the %s passed %s (Limits.ReplyBytes; raise it with adapter.WithLimits)", ErrReplyTooLarge, what, byteSize(max))
}

// tooManyItems is the error for a choice with more than max annotations
// and citations.
func tooManyItems(choice, max int) error {
	return fmt.Errorf("%w: choice %d carries more than %d annotations and citations (Limits.WireItems; raise it with adapter.WithLimits)", ErrReplyTooLarge, choice, max)
}

// tooManyChoices is the error for a reply or stream event with more than
// MaxChoices choices.
func tooManyChoices(what string) error {
	return fmt.Errorf("%w: %s with more than %d choices (no request can ask for more)", ErrReplyTooLarge, what, MaxChoices)
}

// byteSize writes n bytes for a person: 64 MiB, 512 KiB, 1000 bytes.
func byteSize(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
