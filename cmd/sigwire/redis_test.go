package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sigwire/adapter/lmtest"
)

// TestEvalRedis runs "sigwire eval" twice against the Redis .ci/run
// starts (SIGWIRE_REDIS_ADDR), with -rpm and -tpm kept there too: the
// second run is answered by the shared cache, no request sent. Without
// SIGWIRE_REDIS_ADDR it skips, saying how to run it; CI sets it, so there
// it runs.
func TestEvalRedis(t *testing.T) {
	addr := os.Getenv("SIGWIRE_REDIS_ADDR")
	if addr == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("SIGWIRE_REDIS_ADDR is not set: in CI .ci/run starts redis-server and sets it")
		}
		t.Skip("no Redis: start one (redis-server --port 6390 --save '' --appendonly no --daemonize yes) and set SIGWIRE_REDIS_ADDR=127.0.0.1:6390; bash .ci/run does both")
	}
	srv := lmtest.NewServer()
	defer srv.Close()
	srv.Handle(func(lmtest.Request) lmtest.Reply { return reply("Paris") })
	dir := t.TempDir()
	devset := filepath.Join(dir, "devset.jsonl")
	var lines []string
	for i := range 5 {
		lines = append(lines, fmt.Sprintf(`{"context": "c", "question": "q%d", "response": "Paris"}`, i))
	}
	writeLines(t, devset, lines...)
	report := filepath.Join(dir, "report.json")
	prefix := fmt.Sprintf("sigwire-test-%d-%d:", os.Getpid(), time.Now().UnixNano())
	var reps [2]Report
	for i := range reps {
		var stdout, stderr bytes.Buffer
		c := run(context.Background(), programArgs("eval", srv, devset, "-redis", addr, "-redis-prefix", prefix,
			"-rpm", "6000", "-tpm", "10000000", "-report", report), &stdout, &stderr)
		require.Equal(t, 0, c, stderr.String())
		b, err := os.ReadFile(report)
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(b, &reps[i]))
	}
	assert.Equal(t, 5, reps[0].Requests)
	assert.Equal(t, 0, reps[1].Requests, "the second run is served by Redis")
	assert.Equal(t, 5, reps[1].CacheHits)
	assert.Equal(t, 1.0, reps[1].Score)
	assert.Len(t, srv.Requests(), 5)
}

// TestPace: -rpm without Redis spaces the requests evenly.
func TestPace(t *testing.T) {
	call := pace(1200)(func(context.Context, openai.ChatCompletionRequest) (openai.ChatCompletionResponse, error) {
		return openai.ChatCompletionResponse{}, nil
	})
	start := time.Now()
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			_, err := call(context.Background(), openai.ChatCompletionRequest{})
			assert.NoError(t, err)
		})
	}
	wg.Wait()
	assert.GreaterOrEqual(t, time.Since(start), 150*time.Millisecond, "4 requests at 1200 a minute: 50 ms apart")

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := call(ctx, openai.ChatCompletionRequest{})
	assert.ErrorIs(t, err, context.Canceled, "a cancelled call does not wait its turn")
}
