package adapter_test

import (
	"bytes"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/lmtest"
)

// TestZeroTemperatureOnTheWire: through a client wrapped with HTTPDoer,
// ZeroTemperature reaches the wire as a clean 0, for Call and Stream, even
// when a message quotes the JSON it would otherwise be; other
// temperatures, and the same request through a plain client, are sent as
// go-openai writes them.
func TestZeroTemperatureOnTheWire(t *testing.T) {
	sig := mustParse(t, "q -> a")
	quoted := `,"temperature":1e-45,` // in a message, escaped: never rewritten
	in := adapter.Values{"q": quoted}
	srv := lmtest.NewServer()
	defer srv.Close()
	srv.Handle(func(lmtest.Request) lmtest.Reply { return lmtest.Text("[[ ## a ## ]]\nok") })
	cfg := srv.Config()
	cfg.HTTPClient = adapter.HTTPDoer(cfg.HTTPClient)
	wrapped := openai.NewClientWithConfig(cfg)

	zero := adapter.WithRequest(openai.ChatCompletionRequest{Model: "m", Temperature: adapter.ZeroTemperature, TopP: adapter.ZeroTemperature})
	_, err := adapter.Call(t.Context(), wrapped, sig, nil, in, zero)
	require.NoError(t, err)
	_, _, err = drain(adapter.Stream(t.Context(), wrapped, sig, nil, in, zero))
	require.NoError(t, err)
	for _, r := range srv.Requests() {
		assert.Contains(t, string(r.Body), `"temperature":0,`, "a clean 0")
		assert.False(t, bytes.Contains(r.Body, []byte(`"temperature":1e-45`)), "%s", r.Body)
		assert.Contains(t, string(r.Body), `"top_p":1e-45`, "only the temperature is rewritten")
		assert.Contains(t, r.Chat.Messages[len(r.Chat.Messages)-1].Content, quoted, "the message is untouched")
		assert.Zero(t, r.Chat.Temperature)
	}
	n := len(srv.Requests())

	warm := adapter.WithRequest(openai.ChatCompletionRequest{Model: "m", Temperature: 0.7})
	_, err = adapter.Call(t.Context(), wrapped, sig, nil, in, warm)
	require.NoError(t, err)
	assert.Contains(t, string(srv.Requests()[n].Body), `"temperature":0.7,`)

	_, err = adapter.Call(t.Context(), srv.Client(), sig, nil, in, zero)
	require.NoError(t, err)
	body := string(srv.Requests()[n+1].Body)
	assert.True(t, strings.Contains(body, `"temperature":1e-45,`), "without the wrapper go-openai's smallest temperature is sent: %s", body)
}
