package wire

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// Doer is the HTTP wrapper behind the root's HTTPDoer. On a request the
// pipeline marked it puts on the wire what go-openai's types cannot
// express: raw content parts ([MarkRawParts]), a temperature of 0
// ([MarkZeroTemperature]) and prompt cache marks ([MarkPromptCache]). On the reply it records a 429 or 503's
// Retry-After in the request's [RetrySlot], and counts a successful
// reply's body against the request's [Body] (keeping it for a blocking
// call). It keeps nothing after the call, and passes a request without
// marks through as it is.
type Doer struct{ Next openai.HTTPDoer }

// Do sends req through d.Next.
func (d Doer) Do(req *http.Request) (*http.Response, error) {
	if req.Context().Value(rawPartsKey{}) != nil {
		r, err := rewriteBody(req, replaceRawParts)
		if err != nil {
			return nil, err
		}
		req = r
	}
	if req.Context().Value(zeroTemperatureKey{}) != nil {
		r, err := rewriteBody(req, cleanZeroTemperature)
		if err != nil {
			return nil, err
		}
		req = r
	}
	if pc, ok := req.Context().Value(promptCacheKey{}).(*PromptCache); ok {
		r, err := rewriteBody(req, func(body []byte) ([]byte, error) { return markPromptCache(body, pc) })
		if err != nil {
			return nil, err
		}
		req = r
	}
	resp, err := d.Next.Do(req)
	if resp == nil {
		return resp, err
	}
	ctx := req.Context()
	if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable {
		if slot, ok := ctx.Value(RetryKey{}).(*RetrySlot); ok {
			if d := parseRetryAfter(resp.Header.Get("Retry-After"), time.Now()); d > 0 {
				slot.After.Store(int64(d))
			}
		}
	}
	if resp.StatusCode < 300 {
		resp.Body = wrapBody(ctx, resp.Body)
	}
	return resp, err
}

// Wraps reports whether c's HTTP client is the wrapper, read from
// go-openai's configuration, which it does not export.
func Wraps(c *openai.Client) bool {
	if c == nil {
		return false
	}
	doer := reflect.ValueOf(c).Elem().FieldByName("config").FieldByName("HTTPClient")
	return doer.IsValid() && !doer.IsNil() && doer.Elem().Type() == reflect.TypeFor[Doer]()
}

// RetryKey is the context key of a request's *RetrySlot.
type RetryKey struct{}

// RetrySlot is what a retry loop shares with the requests it sends: which
// retry a request is (for the pipeline's trace), and the wait the server
// asked for in the Retry-After of its reply to the latest one, as
// time.Duration nanoseconds (0: none).
type RetrySlot struct{ Retry, After atomic.Int64 }

// WithRetrySlot returns ctx carrying a new RetrySlot, and the slot: the
// context value and the slot in one allocation, as each request that
// retries makes one.
func WithRetrySlot(ctx context.Context) (context.Context, *RetrySlot) {
	c := &holding[RetryKey, RetrySlot]{Context: ctx}
	return c, &c.v
}

// maxRetryAfter saturates Retry-After values: a larger number of seconds
// would overflow a time.Duration.
const maxRetryAfter = time.Duration(math.MaxInt64)

// parseRetryAfter reads delay-seconds or an HTTP date.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if n, err := strconv.ParseUint(v, 10, 64); err == nil {
		if n > uint64(maxRetryAfter/time.Second) {
			return maxRetryAfter
		}
		return time.Duration(n) * time.Second
	} else if errors.Is(err, strconv.ErrRange) {
		return maxRetryAfter
	}
	if t, err := http.ParseTime(v); err == nil {
		return t.Sub(now)
	}
	return 0
}

// rewriteBody returns req with its body rewritten by f: the wrapper's one
// way to change what goes on the wire.
func rewriteBody(req *http.Request, f func([]byte) ([]byte, error)) (*http.Request, error) {
	if req.Body == nil {
		return req, nil
	}
	body, err := io.ReadAll(req.Body)
	req.Body.Close()
	if err != nil {
		return nil, err
	}
	out, err := f(body)
	if err != nil {
		return nil, err
	}
	r := req.Clone(req.Context())
	r.Body = io.NopCloser(bytes.NewReader(out))
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(out)), nil }
	r.ContentLength = int64(len(out))
	r.Header.Set("Content-Length", strconv.Itoa(len(out)))
	return r, nil
}

// zeroTemperatureKey marks, on a request's context, a request whose
// temperature is the root's ZeroTemperature, for the wrapper to send as 0.
type zeroTemperatureKey struct{}

// MarkZeroTemperature returns ctx marking its request's temperature, the
// root's ZeroTemperature (the smallest float32 above 0), for the wrapper
// to send as 0.
func MarkZeroTemperature(ctx context.Context) context.Context {
	return context.WithValue(ctx, zeroTemperatureKey{}, true)
}

// zeroTemperatureJSON is ZeroTemperature as go-openai writes it, as a
// member after the first (after "model" and "messages"), and as 0.
var (
	zeroTemperatureJSON = []byte(`,"temperature":` + strconv.FormatFloat(float64(float32(math.SmallestNonzeroFloat32)), 'g', -1, 32))
	cleanTemperatureOut = []byte(`,"temperature":0`)
)

// cleanZeroTemperature writes a request body's temperature member
// ZeroTemperature as 0. go-openai writes the request compactly with the
// model and the messages first; inside a JSON string a quote is always
// escaped, so the first `,"temperature":1e-45` followed by ',' or '}' is
// the request's own member, and a message quoting it is never touched.
func cleanZeroTemperature(body []byte) ([]byte, error) {
	i := bytes.Index(body, zeroTemperatureJSON)
	end := i + len(zeroTemperatureJSON)
	if i < 0 || end >= len(body) || body[end] != ',' && body[end] != '}' {
		return body, nil
	}
	out := make([]byte, 0, len(body))
	return append(append(append(out, body[:i]...), cleanTemperatureOut...), body[end:]...), nil
}
