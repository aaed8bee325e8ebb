package adapter_test

import (
	"context"
	"errors"
	"net/http"
	"testing"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sigwire/adapter"
	"github.com/sigwire/adapter/lmtest"
)

// failsBeforeText is a streamed reply that fails before any of its text:
// the provider's error event is its first line.
func failsBeforeText() lmtest.Reply {
	body := "data: {\"error\":{\"message\":\"overloaded\",\"type\":\"server_error\"}}\n\ndata: [DONE]\n\n"
	return lmtest.Raw(200, http.Header{"Content-Type": {"text/event-stream"}}, []byte(body))
}

// TestStreamLaterAttemptFailsBeforeText: the text an earlier attempt of a
// Stream delivered (a reply to be re-asked, or one the fallback adapter
// takes over from) does not make a later request "delivered". A re-ask or
// fallback request that fails before its own text reaches the caller is
// an ordinary failed request: its error does not match ErrDelivered, and a
// middleware that retries undelivered requests retries it.
func TestStreamLaterAttemptFailsBeforeText(t *testing.T) {
	retry := func(next adapter.Invoker) adapter.Invoker {
		return func(ctx context.Context, req openai.ChatCompletionRequest) (openai.ChatCompletionResponse, error) {
			resp, err := next(ctx, req)
			if err != nil && !errors.Is(err, adapter.ErrDelivered) {
				resp, err = next(ctx, req)
			}
			return resp, err
		}
	}
	sig := mustParse(t, "question -> answer: int")
	in := adapter.Values{"question": "q"}
	for name, c := range map[string]struct {
		first, good lmtest.Reply
		opts        []adapter.CallOption
	}{
		"reask":    {lmtest.Text(reaskBad), lmtest.Text(reaskGood), []adapter.CallOption{adapter.NoFallback(), adapter.WithReask(1)}},
		"fallback": {lmtest.Text(reaskBad), lmtest.Text(`{"answer": 42}`), nil},
	} {
		t.Run(name, func(t *testing.T) {
			srv := lmtest.NewServer(c.first, failsBeforeText(), c.good)
			defer srv.Close()
			opts := append([]adapter.CallOption{reaskModel, adapter.NoRetry(), adapter.UseMiddleware(retry)}, c.opts...)
			_, res, err := drain(adapter.Stream(t.Context(), srv.Client(), sig, nil, in, opts...))
			require.NoError(t, err)
			assert.Equal(t, 42, res.Outputs[0]["answer"])
			assert.Len(t, srv.Requests(), 3)

			srv2 := lmtest.NewServer(c.first, failsBeforeText())
			defer srv2.Close()
			opts = append([]adapter.CallOption{reaskModel, adapter.NoRetry()}, c.opts...)
			_, _, err = drain(adapter.Stream(t.Context(), srv2.Client(), sig, nil, in, opts...))
			require.Error(t, err)
			assert.NotErrorIs(t, err, adapter.ErrDelivered, "the failed request delivered nothing")
		})
	}
}
