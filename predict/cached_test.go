package predict_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/lmtest"
	"github.com/sigwire/adapter/predict"
)

// TestTypedStreamCachedLM: a typed module streams from a cached LM without
// a type assertion, and a hit is replayed (newcomer review 3, item 3);
// predict.Logger and the Recorder report the hit with no tokens (item 2).
func TestTypedStreamCachedLM(t *testing.T) {
	srv := lmtest.NewServer(lmtest.Text("[[ ## total ## ]]\n3").WithUsage(300, 25))
	defer srv.Close()
	lm := adapter.WithMiddleware(srv.Client(), adapter.Cached(adapter.NewLRU(10)))
	var logs bytes.Buffer
	rec := predict.NewRecorder(5)
	p, err := predict.New[Sum, Total](adapter.UseTrace(predict.Logger(slog.New(slog.NewJSONHandler(&logs, nil)))), adapter.UseTrace(rec.Trace()))
	require.NoError(t, err)
	for i := range 2 {
		var deltas string
		var out Total
		for ch, err := range p.Stream(t.Context(), lm, Sum{1, 2}) {
			require.NoError(t, err)
			deltas += ch.Delta
			if ch.Done {
				out = ch.Out
				assert.Equal(t, i, ch.Result.CacheHits)
			}
		}
		assert.Equal(t, "3", deltas)
		assert.Equal(t, Total{3}, out)
	}
	assert.Len(t, srv.Requests(), 1)

	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	require.Len(t, lines, 2)
	for i, line := range lines {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &m))
		assert.Equal(t, i == 1, m["cached"], line)
		if i == 1 {
			assert.Zero(t, m["prompt_tokens"], line)
			assert.Zero(t, m["completion_tokens"], line)
		} else {
			assert.EqualValues(t, 300, m["prompt_tokens"], line)
		}
	}
	recs := rec.Last(2)
	require.Len(t, recs, 2)
	assert.False(t, recs[0].Cached)
	assert.True(t, recs[1].Cached)
	assert.Zero(t, recs[1].Usage)
	var b bytes.Buffer
	require.NoError(t, rec.Inspect(&b, 1))
	assert.Contains(t, b.String(), "from the cache")
}

// TestCoalescedLoggedAndRecorded: predict.Logger and the Recorder say
// when a call shared an identical call's reply, with no tokens.
func TestCoalescedLoggedAndRecorded(t *testing.T) {
	var logs bytes.Buffer
	rec := predict.NewRecorder(5)
	for _, tr := range []*adapter.Trace{predict.Logger(slog.New(slog.NewJSONHandler(&logs, nil))), rec.Trace()} {
		tr.LMCallDone(adapter.LMCallDoneInfo{CallID: 1, Adapter: "chat", Attempt: 1, Coalesced: true})
	}
	var m map[string]any
	require.NoError(t, json.Unmarshal(logs.Bytes(), &m))
	assert.Equal(t, true, m["coalesced"])
	assert.Equal(t, false, m["cached"])
	assert.Zero(t, m["prompt_tokens"])
	recs := rec.Last(1)
	require.Len(t, recs, 1)
	assert.True(t, recs[0].Coalesced)
	var b bytes.Buffer
	require.NoError(t, rec.Inspect(&b, 1))
	assert.Contains(t, b.String(), "shared an identical call's reply, no tokens")
}
