package predict_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

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
	p, err := predict.New[Sum, Total](predict.WithCallOptions(
		adapter.Observe(predict.Logger(slog.New(slog.NewJSONHandler(&logs, nil)))),
		adapter.Observe(rec.Trace())))
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
