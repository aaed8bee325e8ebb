package adapter_test

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/lmtest"
)

// TestNoGoroutineLeft: after calls that succeed, fail, are cancelled
// mid-request, and streams that are broken off, and once the server is
// closed, the goroutine count returns to where it was.
func TestNoGoroutineLeft(t *testing.T) {
	before := runtime.NumGoroutine()
	func() {
		srv := lmtest.NewServer(
			lmtest.Text("[[ ## a ## ]]\nok"),
			lmtest.Text("[[ ## a ## ]]\nlate").Delay(time.Minute),
			lmtest.Text("[[ ## a ## ]]\n"+"word "+"word word word word word word word").ChunkSize(3).ChunkDelay(5*time.Millisecond),
			lmtest.Text("[[ ## a ## ]]\nstreamed"),
		)
		defer srv.Close()
		sig := mustParse(t, "q -> a")
		in := adapter.Values{"q": "x"}
		_, err := adapter.Call(context.Background(), srv.Client(), sig, nil, in)
		assert.NoError(t, err)

		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		_, err = adapter.Call(ctx, srv.Client(), sig, nil, in)
		cancel()
		assert.ErrorIs(t, err, context.DeadlineExceeded)

		for range adapter.Stream(context.Background(), srv.Client(), sig, nil, in) {
			break // broken off at the first chunk
		}
		for _, err := range adapter.Stream(context.Background(), srv.Client(), sig, nil, in) {
			assert.NoError(t, err)
		}
	}()
	assert.Eventually(t, func() bool { return runtime.NumGoroutine() <= before+1 }, 5*time.Second, 20*time.Millisecond,
		"goroutines: %d before, %d after", before, runtime.NumGoroutine())
}
