package wire

import (
	"bytes"
	"context"
	"io"
)

// bodyKey carries a *Body to the HTTP wrapper, which counts the bytes of
// the reply body against the call's limit and, for a blocking call, keeps
// them for the pipeline.
type bodyKey struct{}

// Body is what the HTTP wrapper reads of a reply body for one request:
// its size, held to a bound, and for a blocking reply its bytes.
type Body struct {
	max     int64 // the bytes the body may have
	n       int64 // the bytes read so far
	capture bool  // keep the body (a blocking call's)
	buf     bytes.Buffer
}

// KeepBody returns ctx marked for the HTTP wrapper to count a blocking
// reply's body against max bytes and keep it in the returned Body.
func KeepBody(ctx context.Context, max int64) (context.Context, *Body) {
	c := &holding[bodyKey, Body]{Context: ctx, v: Body{max: max, capture: true}}
	return c, &c.v
}

// CountBody returns ctx marked for the HTTP wrapper to count a stream's
// body against max bytes.
func CountBody(ctx context.Context, max int64) context.Context {
	return &holding[bodyKey, Body]{Context: ctx, v: Body{max: max}}
}

// holding is a context carrying a *V under the key type K: the context
// value and the V in one allocation, as each request makes one (a Body,
// a RetrySlot).
type holding[K any, V any] struct {
	context.Context
	v V
}

// Value returns the held *V for a key of type K, and the parent's values
// otherwise.
func (c *holding[K, V]) Value(key any) any {
	if _, ok := key.(K); ok {
		return &c.v
	}
	return c.Context.Value(key)
}

// Take returns the bytes kept (none without the wrapper), which the Body
// then lets go of.
func (b *Body) Take() []byte {
	data := b.buf.Bytes()
	b.buf = bytes.Buffer{}
	return data
}

// teeBody counts what go-openai reads of a reply body and copies it into
// the Body; past the Body's limit, reading fails with ErrReplyTooLarge.
type teeBody struct {
	io.ReadCloser
	slot *Body
	what string // "reply body", "stream"
}

func (t *teeBody) Read(p []byte) (int, error) {
	n, err := t.ReadCloser.Read(p)
	s := t.slot
	if s.n += int64(n); s.n > s.max {
		s.buf = bytes.Buffer{}
		return 0, tooManyBytes(t.what, s.max)
	}
	if s.capture {
		s.buf.Write(p[:n])
	}
	return n, err
}

// wrapBody is what the HTTP wrapper does to the body of a successful
// reply inside the pipeline: it counts it against the call's limit (and
// keeps it, for a blocking call).
func wrapBody(ctx context.Context, body io.ReadCloser) io.ReadCloser {
	slot, ok := ctx.Value(bodyKey{}).(*Body)
	if !ok || body == nil {
		return body
	}
	what := "stream"
	if slot.capture {
		what = "reply body"
	}
	return &teeBody{ReadCloser: body, slot: slot, what: what}
}
