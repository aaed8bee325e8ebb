package serve

import (
	"context"
	"errors"
	"net/http"
	"time"

	openai "github.com/sashabaranov/go-openai"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/internal/redact"
)

// Error is the body of a failed request ({"error": Error}) and the data
// of a stream's error event. Its fields hold no secrets: messages pass
// through the library's redaction of keys and tokens.
type Error struct {
	// Status is the HTTP status (see StatusOf); not in the body.
	Status int `json:"-"`
	// Type names the class: bad_json, bad_body, body_too_large, input,
	// parse, refusal, truncated, budget, rate_limited, busy,
	// lm_error, timeout, canceled, unsupported, not_ready, internal.
	Type string `json:"type"`
	// Message says what happened.
	Message string `json:"message"`
	// Field names the input or output at fault, when one is.
	Field string `json:"field,omitempty"`
	// Completion is the model's reply that could not be read (parse,
	// refusal, truncated); Partial the outputs read from it.
	Completion string         `json:"completion,omitempty"`
	Partial    adapter.Values `json:"partial,omitempty"`
	// RetryAfter is how long to wait before trying again (rate_limited,
	// busy), also sent as the Retry-After header.
	RetryAfter time.Duration `json:"-"`
}

// The status table, one row per class, in the order StatusOf tries them.
//
//	class                      status  type
//	*adapter.InputError        400     input
//	adapter.ErrBudget          402     budget
//	*adapter.RefusalError      422     refusal
//	adapter.ErrTruncated       422     truncated
//	*adapter.ParseError        422     parse
//	adapter.ErrRateLimited     429     rate_limited (Retry-After)
//	context.DeadlineExceeded   504     timeout
//	context.Canceled           499     canceled (the client went away)
//	*adapter.LMError           502     lm_error
//	anything else              500     internal
func errorOf(err error) *Error {
	var (
		in  *adapter.InputError
		ref *adapter.RefusalError
		pe  *adapter.ParseError
		lm  *adapter.LMError
	)
	e := &Error{Message: redact.Text(err.Error())}
	switch {
	case errors.As(err, &in):
		e.Status, e.Type, e.Field = http.StatusBadRequest, "input", in.Field
	case errors.Is(err, adapter.ErrBudget):
		e.Status, e.Type = http.StatusPaymentRequired, "budget"
	case errors.As(err, &ref):
		e.Status, e.Type, e.Completion = http.StatusUnprocessableEntity, "refusal", ref.Completion
	case errors.As(err, &pe):
		e.Status, e.Type, e.Field, e.Completion, e.Partial = http.StatusUnprocessableEntity, "parse", pe.Field, pe.Completion, pe.Partial
		if errors.Is(err, adapter.ErrTruncated) {
			e.Type = "truncated"
		}
	case errors.Is(err, adapter.ErrRateLimited) || statusIs(err, http.StatusTooManyRequests):
		e.Status, e.Type, e.RetryAfter = http.StatusTooManyRequests, "rate_limited", time.Second
	case errors.Is(err, context.DeadlineExceeded):
		e.Status, e.Type = http.StatusGatewayTimeout, "timeout"
	case errors.Is(err, context.Canceled):
		e.Status, e.Type = 499, "canceled"
	case errors.As(err, &lm):
		e.Status, e.Type = http.StatusBadGateway, "lm_error"
	default:
		e.Status, e.Type = http.StatusInternalServerError, "internal"
	}
	return e
}

// StatusOf is the HTTP status the Handler answers err with (see the
// table at Error).
func StatusOf(err error) int { return errorOf(err).Status }

// statusIs reports a go-openai error of HTTP status code.
func statusIs(err error, code int) bool {
	var api *openai.APIError
	if errors.As(err, &api) {
		return api.HTTPStatusCode == code
	}
	var req *openai.RequestError
	return errors.As(err, &req) && req.HTTPStatusCode == code
}

func writeError(w http.ResponseWriter, e *Error) {
	writeJSON(w, e.Status, map[string]*Error{"error": e})
}
