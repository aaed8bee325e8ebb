package adapter_test

import (
	"context"
	"io"
	"net/http"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/lmtest"
)

// httpRecorder is an HTTP transport that records, for every request the
// library makes, the deadline its context carried, and whether the
// response body was closed.
type httpRecorder struct {
	mu        sync.Mutex
	deadlines []time.Time // zero: the request had no deadline
	bodies    []*trackedBody
}

type trackedBody struct {
	io.ReadCloser
	closed atomic.Bool
}

func (b *trackedBody) Close() error {
	b.closed.Store(true)
	return b.ReadCloser.Close()
}

func (r *httpRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	d, _ := req.Context().Deadline()
	r.mu.Lock()
	r.deadlines = append(r.deadlines, d)
	r.mu.Unlock()
	resp, err := http.DefaultTransport.RoundTrip(req)
	if resp != nil && resp.Body != nil {
		b := &trackedBody{ReadCloser: resp.Body}
		resp.Body = b
		r.mu.Lock()
		r.bodies = append(r.bodies, b)
		r.mu.Unlock()
	}
	return resp, err
}

// client is a go-openai client for srv whose requests r records.
func (r *httpRecorder) client(srv *lmtest.Server) *openai.Client {
	cfg := srv.Config()
	cfg.HTTPClient = &http.Client{Transport: r}
	return openai.NewClientWithConfig(cfg)
}

// check asserts that there were n requests, that every one carried a
// deadline no later than want, and that every response body was closed.
func (r *httpRecorder) check(t *testing.T, n int, want time.Time) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	require.Len(t, r.deadlines, n, "LM requests")
	for i, d := range r.deadlines {
		if assert.False(t, d.IsZero(), "request %d carries no deadline", i) {
			assert.False(t, d.After(want), "request %d: deadline %v is later than %v", i, d, want)
		}
	}
	for i, b := range r.bodies {
		assert.True(t, b.closed.Load(), "response body %d left open", i)
	}
}

// TestHTTPHygiene: every LM request the library makes — a plain call,
// retries, the Chat → JSON fallback, TwoStep's extraction, a batch, a
// stream read to the end or broken off, a cancelled stream — carries the
// caller's deadline (from the context or from Timeout), and every
// response body is closed by the time the call returns or the stream's
// loop ends; and once the servers are closed no goroutine is left.
func TestHTTPHygiene(t *testing.T) {
	before := runtime.NumGoroutine()
	defer func() {
		assert.Eventually(t, func() bool { return runtime.NumGoroutine() <= before+1 }, 5*time.Second, 20*time.Millisecond,
			"goroutines: %d before, %d after", before, runtime.NumGoroutine())
	}()
	sig := mustParse(t, "q -> a")
	in := adapter.Values{"q": "x"}
	fast := adapter.WithRetry(adapter.RetryPolicy{BaseDelay: time.Millisecond, MaxDelay: time.Millisecond})

	withDeadline := func(t *testing.T) (context.Context, time.Time) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		t.Cleanup(cancel)
		d, _ := ctx.Deadline()
		return ctx, d
	}

	t.Run("call", func(t *testing.T) {
		srv := lmtest.NewServer(lmtest.Text("[[ ## a ## ]]\nok"))
		defer srv.Close()
		var rec httpRecorder
		ctx, d := withDeadline(t)
		_, err := adapter.Call(ctx, rec.client(srv), sig, nil, in)
		require.NoError(t, err)
		rec.check(t, 1, d)
	})
	t.Run("timeout option", func(t *testing.T) {
		srv := lmtest.NewServer(lmtest.Text("[[ ## a ## ]]\nok"))
		defer srv.Close()
		var rec httpRecorder
		start := time.Now()
		_, err := adapter.Call(context.Background(), rec.client(srv), sig, nil, in, adapter.WithTimeout(time.Minute))
		require.NoError(t, err)
		rec.check(t, 1, time.Now().Add(time.Minute))
		assert.True(t, rec.deadlines[0].After(start), "the deadline comes from Timeout")
	})
	t.Run("retries", func(t *testing.T) {
		srv := lmtest.NewServer(
			lmtest.Error(http.StatusInternalServerError, `{"error":{"message":"boom","type":"server_error"}}`),
			lmtest.Error(http.StatusTooManyRequests, `{"error":{"message":"slow down","type":"requests"}}`),
			lmtest.Text("[[ ## a ## ]]\nok"),
		)
		defer srv.Close()
		var rec httpRecorder
		ctx, d := withDeadline(t)
		res, err := adapter.Call(ctx, rec.client(srv), sig, nil, in, fast)
		require.NoError(t, err)
		assert.Equal(t, 2, res.Retries)
		rec.check(t, 3, d)
	})
	t.Run("fallback", func(t *testing.T) {
		srv := lmtest.NewServer(lmtest.Text("[[ ## b ## ]]\nno field a"), lmtest.Text(`{"a": "ok"}`))
		defer srv.Close()
		var rec httpRecorder
		ctx, d := withDeadline(t)
		res, err := adapter.Call(ctx, rec.client(srv), sig, nil, in)
		require.NoError(t, err)
		assert.Equal(t, "ok", res.Outputs[0]["a"])
		rec.check(t, 2, d)
	})
	t.Run("twostep", func(t *testing.T) {
		main := lmtest.NewServer(lmtest.Text("The answer is ok."))
		defer main.Close()
		ext := lmtest.NewServer(lmtest.Text("[[ ## a ## ]]\nok"))
		defer ext.Close()
		var recMain, recExt httpRecorder
		ctx, d := withDeadline(t)
		_, err := adapter.Call(ctx, recMain.client(main), sig, nil, in,
			adapter.UseAdapter(adapter.TwoStep{Extractor: recExt.client(ext)}))
		require.NoError(t, err)
		recMain.check(t, 1, d)
		recExt.check(t, 1, d)
	})
	t.Run("batch", func(t *testing.T) {
		srv := lmtest.NewServer(lmtest.Text("[[ ## a ## ]]\n1"), lmtest.Text("[[ ## a ## ]]\n2"), lmtest.Text("[[ ## a ## ]]\n3"))
		defer srv.Close()
		var rec httpRecorder
		ctx, d := withDeadline(t)
		for _, r := range adapter.Batch(ctx, rec.client(srv), sig, nil, []adapter.Values{in, in, in}, 2) {
			require.NoError(t, r.Err)
		}
		rec.check(t, 3, d)
	})
	t.Run("stream", func(t *testing.T) {
		srv := lmtest.NewServer(lmtest.Text("[[ ## a ## ]]\nstreamed in pieces").ChunkSize(4))
		defer srv.Close()
		var rec httpRecorder
		ctx, d := withDeadline(t)
		for _, err := range adapter.Stream(ctx, rec.client(srv), sig, nil, in) {
			require.NoError(t, err)
		}
		rec.check(t, 1, d)
	})
	t.Run("stream broken off", func(t *testing.T) {
		srv := lmtest.NewServer(lmtest.Text("[[ ## a ## ]]\nstreamed in pieces").ChunkSize(4).ChunkDelay(time.Millisecond))
		defer srv.Close()
		var rec httpRecorder
		ctx, d := withDeadline(t)
		for range adapter.Stream(ctx, rec.client(srv), sig, nil, in) {
			break
		}
		rec.check(t, 1, d)
	})
	t.Run("stream cancelled", func(t *testing.T) {
		srv := lmtest.NewServer(lmtest.Text("[[ ## a ## ]]\n" + "word word word word word word").ChunkSize(3).ChunkDelay(20 * time.Millisecond))
		defer srv.Close()
		var rec httpRecorder
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		d, _ := ctx.Deadline()
		var last error
		for _, err := range adapter.Stream(ctx, rec.client(srv), sig, nil, in) {
			last = err
		}
		assert.ErrorIs(t, last, context.DeadlineExceeded)
		rec.check(t, 1, d)
	})
	t.Run("stream timeout option", func(t *testing.T) {
		srv := lmtest.NewServer(lmtest.Text("[[ ## a ## ]]\nok"))
		defer srv.Close()
		var rec httpRecorder
		for _, err := range adapter.Stream(context.Background(), rec.client(srv), sig, nil, in, adapter.WithTimeout(time.Minute)) {
			require.NoError(t, err)
		}
		rec.check(t, 1, time.Now().Add(time.Minute))
	})
}
