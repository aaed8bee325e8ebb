package mcptools

import "github.com/sigwire/adapter/internal/redact"

// redactedError is err, its text prefixed, with what may be a secret in
// the URLs of its text redacted (internal/redact.Text, the rule by which
// the types package redacts the URLs in its errors). Unwrap gives err
// itself, so errors.Is and errors.As reach the error as it was (and the
// URL of a *url.Error inside it unredacted, for a caller who asks for
// it).
type redactedError struct {
	prefix string
	err    error
}

// Error is the prefix and err's text, its URLs redacted.
func (e *redactedError) Error() string { return e.prefix + redact.Text(e.err.Error()) }

// Unwrap returns the error as it was.
func (e *redactedError) Unwrap() error { return e.err }
