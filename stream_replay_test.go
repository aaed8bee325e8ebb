package adapter_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"reflect"
	"testing"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/internal/golden"
	"github.com/sigwire/adapter/lmtest"
)

// TestStreamReplaysCases replays every Chat, JSON and XML parse case of
// the golden and corpus files as a stream, over the real client, in 1-, 3-,
// 7- and 64-byte chunks and one random chunk size: the final result is the
// non-streaming parse's, or the same kind of error.
func TestStreamReplaysCases(t *testing.T) {
	var cases []golden.Case
	cases = append(cases, goldenCases(t, "testdata/dspy_golden*.json")...)
	cases = append(cases, goldenCases(t, "testdata/malformed*.json")...)
	rng := rand.New(rand.NewPCG(1, 2))
	n := 0
	for _, c := range cases {
		a, ok := goldenAdapters[c.Adapter].(adapter.Parser)
		if !ok || c.Completion == "" || (c.Kind != "parse" && c.Kind != "parse_error" && c.Kind != "") {
			continue
		}
		sig, err := (&golden.Builder{Custom: typesNames()}).Signature(c.Signature)
		if err != nil {
			continue
		}
		want, wantErr := a.Parse(sig, c.Completion)
		in := adapter.Values{}
		for i := range sig.NumInputs() {
			in[sig.Input(i).Name] = reflect.Zero(sig.Input(i).Type).Interface()
		}
		n++
		for _, size := range []int{1, 3, 7, 64, 1 + rng.IntN(40)} {
			srv := lmtest.NewServer(lmtest.Text(c.Completion).ChunkSize(size))
			var last adapter.Chunk
			var err error
			for ch, e := range adapter.Stream(context.Background(), srv.Client(), sig, nil, in,
				adapter.UseAdapter(a.(adapter.Adapter)), adapter.NoFallback(), adapter.WithRequest(openai.ChatCompletionRequest{Model: "m"})) {
				last, err = ch, e
			}
			srv.Close()
			if wantErr != nil {
				var pe *adapter.ParseError
				assert.True(t, errors.As(err, &pe), "%s size %d: want a parse error, got %v", c.ID, size, err)
				continue
			}
			if !assert.NoError(t, err, "%s size %d", c.ID, size) {
				continue
			}
			require.True(t, last.Done)
			assert.Equal(t, want, last.Result.Outputs[0], "%s size %d", c.ID, size)
		}
	}
	assert.Greater(t, n, 60)
}
