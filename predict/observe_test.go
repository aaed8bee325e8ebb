package predict_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/lmtest"
	"github.com/sigwire/adapter/predict"
	"github.com/sigwire/adapter/signature"
)

func TestLoggerAndRecorder(t *testing.T) {
	srv := lmtest.NewServer(lmtest.Text("no markers"), lmtest.Text(`{"total": 3}`))
	defer srv.Close()
	var logs bytes.Buffer
	rec := predict.NewRecorder(5)
	p, err := predict.New[Sum, Total](
		adapter.UseTrace(predict.Logger(slog.New(slog.NewJSONHandler(&logs, nil)))),
		adapter.UseTrace(rec.Trace()))
	require.NoError(t, err)
	out, res, err := p.Call(context.Background(), srv.Client(), Sum{1, 2})
	require.NoError(t, err)
	assert.Equal(t, Total{3}, out)
	assert.Equal(t, 2, res.Calls)

	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	require.Len(t, lines, 3, "two LM calls and one failed parse")
	assert.Contains(t, lines[0], `"msg":"lm call"`)
	assert.Contains(t, lines[0], `"adapter":"chat"`)
	assert.Contains(t, lines[1], `"msg":"parse failed"`)
	assert.Contains(t, lines[2], `"adapter":"json"`)
	assert.NotContains(t, logs.String(), "test-key", "the API key never reaches a hook")

	recs := rec.Last(10)
	require.Len(t, recs, 2)
	assert.Equal(t, "no markers", recs[0].Completion)
	assert.Error(t, recs[0].Err)
	assert.Equal(t, adapter.Values{"total": 3}, recs[1].Outputs)
	var b bytes.Buffer
	require.NoError(t, rec.Inspect(&b, 1))
	assert.Contains(t, b.String(), "System message:")
	assert.Contains(t, b.String(), "Response:\n\n{\"total\": 3}")
}

func TestFinetuneLine(t *testing.T) {
	sig, err := signature.Parse("question -> answer")
	require.NoError(t, err)
	line, err := predict.FinetuneLine(adapter.Chat{}, sig, nil, adapter.Values{"question": "2+2?"}, adapter.Values{"answer": "4"})
	require.NoError(t, err)
	assert.NotContains(t, string(line), "\n")
	var doc struct {
		Messages []struct{ Role, Content string } `json:"messages"`
	}
	require.NoError(t, json.Unmarshal(line, &doc))
	require.Len(t, doc.Messages, 3)
	assert.Equal(t, []string{"system", "user", "assistant"}, []string{doc.Messages[0].Role, doc.Messages[1].Role, doc.Messages[2].Role})
	assert.Equal(t, "[[ ## answer ## ]]\n4\n\n[[ ## completed ## ]]\n", doc.Messages[2].Content)
	_, err = predict.FinetuneLine(adapter.JSON{}, sig, nil, adapter.Values{"question": "q"}, adapter.Values{"answer": "a"})
	assert.ErrorContains(t, err, "json adapter does not support fine-tuning")
}

// TestRecorderConcurrentCalls: calls that run at once each get their own
// outputs in the record of their LM call (regression: outputs went to the
// newest record of the same adapter, another call's).
func TestRecorderConcurrentCalls(t *testing.T) {
	srv := lmtest.NewServer()
	defer srv.Close()
	srv.Handle(func(r lmtest.Request) lmtest.Reply {
		msgs := r.Chat.Messages
		q := strings.TrimPrefix(strings.SplitN(msgs[len(msgs)-1].Content, "\n\n", 2)[0], "[[ ## question ## ]]\n")
		return lmtest.Text("[[ ## answer ## ]]\n" + q + "\n\n[[ ## completed ## ]]")
	})
	const n = 64
	rec := predict.NewRecorder(n)
	ctx := adapter.WithTrace(context.Background(), rec.Trace())
	// A companion hook that takes a moment, as a logger writing a file does.
	ctx = adapter.WithTrace(ctx, &adapter.Trace{LMCallDone: func(adapter.LMCallDoneInfo) { time.Sleep(time.Millisecond) }})
	sig, err := signature.Parse("question -> answer")
	require.NoError(t, err)
	m := predict.NewModule(sig)
	client := srv.Client()
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := m.Call(ctx, client, adapter.Values{"question": fmt.Sprintf("tenant-%d", i)})
			assert.NoError(t, err)
		}()
	}
	wg.Wait()
	recs := rec.Last(n)
	require.Len(t, recs, n)
	ids := map[uint64]bool{}
	for _, r := range recs {
		q := r.Messages[len(r.Messages)-1].Content
		require.NotNil(t, r.Outputs, "record %d has its outputs", r.CallID)
		assert.Contains(t, q, "[[ ## question ## ]]\n"+r.Outputs["answer"].(string)+"\n", "the record of call %d holds its own outputs", r.CallID)
		assert.NotZero(t, r.CallID)
		ids[r.CallID] = true
	}
	assert.Len(t, ids, n, "every call has its own id")
}

func TestRecorderInspectEmptyRole(t *testing.T) {
	rec := predict.NewRecorder(1)
	rec.Trace().LMCallDone(adapter.LMCallDoneInfo{CallID: 1, Adapter: "custom", Request: openai.ChatCompletionRequest{
		Messages: []openai.ChatCompletionMessage{{Role: "", Content: "hello"}}}})
	var b bytes.Buffer
	require.NotPanics(t, func() { require.NoError(t, rec.Inspect(&b, 1)) }, "a message without a role (a custom adapter's) is shown, not a panic")
	assert.Contains(t, b.String(), "(no role) message:\n\nhello")
}

// TestLoggerCacheError: a cache that fails (a disk entry that is not one)
// is logged at Warn with the operation; the call still answers.
func TestLoggerCacheError(t *testing.T) {
	srv := lmtest.NewServer()
	defer srv.Close()
	srv.Handle(func(lmtest.Request) lmtest.Reply { return lmtest.Text(`{"total": 3}`) })
	dir := t.TempDir()
	cache, err := adapter.OpenDiskCache(dir)
	require.NoError(t, err)
	lm := adapter.WithMiddleware(srv.Client(), adapter.Cached(cache))
	var logs bytes.Buffer
	p, err := predict.New[Sum, Total](adapter.UseTrace(predict.Logger(slog.New(slog.NewJSONHandler(&logs, nil)))))
	require.NoError(t, err)
	_, _, err = p.Call(t.Context(), lm, Sum{1, 2})
	require.NoError(t, err)
	require.NoError(t, filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			err = os.WriteFile(path, []byte("not an entry"), 0o600)
		}
		return err
	}))
	logs.Reset()
	out, res, err := p.Call(t.Context(), lm, Sum{1, 2})
	require.NoError(t, err)
	assert.Equal(t, Total{3}, out)
	assert.Equal(t, 1, res.CacheErrors)
	assert.Contains(t, logs.String(), `"level":"WARN","msg":"cache failed"`)
	assert.Contains(t, logs.String(), `"op":"lookup"`)
}
