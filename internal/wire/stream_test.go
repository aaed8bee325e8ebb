package wire

import (
	"io"
	"net/http"
	"testing"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sigwire/adapter/lmtest"
)

// TestGoOpenAIStreamInternals pins what the library reads of go-openai's
// stream beyond its API (sawDone, collectedLines): whether it read
// "data: [DONE]", and the lines it collected that were not data. An
// upgrade of go-openai that moves them fails here, not in production
// (where a stream would then read as cut, and an error event as
// unreadable).
func TestGoOpenAIStreamInternals(t *testing.T) {
	h := http.Header{"Content-Type": {"text/event-stream"}}
	ev := "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"x\"}}]}\n\n"
	open := func(body string) *openai.ChatCompletionStream {
		srv := lmtest.NewServer(lmtest.Raw(200, h, []byte(body)))
		t.Cleanup(srv.Close)
		s, err := srv.Client().CreateChatCompletionStream(t.Context(), openai.ChatCompletionRequest{Model: "m"})
		require.NoError(t, err)
		t.Cleanup(func() { s.Close() })
		return s
	}
	readAll := func(s *openai.ChatCompletionStream) (n int, err error) {
		for {
			raw, err := s.RecvRaw()
			if err != nil || raw == nil {
				return n, err
			}
			n++
		}
	}
	done := open(ev + "data: [DONE]\n\n")
	n, err := readAll(done)
	require.ErrorIs(t, err, io.EOF)
	assert.Equal(t, 1, n)
	assert.True(t, sawDone(done))

	cut := open(ev)
	_, err = readAll(cut)
	require.ErrorIs(t, err, io.EOF)
	assert.False(t, sawDone(cut))
	assert.False(t, sawDone(nil))

	failed := open(": keep-alive\n\n" + ev + "event: error\ndata: {\"error\":{\"message\":\"boom\",\"code\":\"x\"}}\n\n")
	_, err = readAll(failed)
	require.NoError(t, err, "go-openai reads an error event it cannot decode as (nil, nil)")
	assert.Contains(t, string(collectedLines(failed)), `{"error":{"message":"boom"`)
	err = streamErrorEvent(failed)
	var api *openai.APIError
	require.ErrorAs(t, err, &api)
	assert.Equal(t, "boom", api.Message)
	assert.Nil(t, collectedLines(nil))
}
