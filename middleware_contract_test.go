package adapter_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/lmtest"
)

// brokenStream is a stream that delivers "hal" and then fails: the
// provider reports an error mid-stream.
func brokenStream() lmtest.Reply {
	body := "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"[[ ## a ## ]]\\nhal\"}}]}\n\n" +
		"data: {\"error\":{\"message\":\"overloaded\",\"type\":\"server_error\"}}\n\ndata: [DONE]\n\n"
	return lmtest.Raw(200, http.Header{"Content-Type": {"text/event-stream"}}, []byte(body))
}

// TestMiddlewareAfterDelivery: whatever a middleware does with a stream
// request whose text already reached the caller (call next again, return
// another reply, swallow the error), the stream ends in deltas that are
// the Done chunk's values or in an error matching ErrDelivered, never
// "hal"+"again" with Done "again" (aesthetics review 3, item 5).
func TestMiddlewareAfterDelivery(t *testing.T) {
	sig := mustParse(t, "q -> a")
	in := adapter.Values{"q": "x"}
	again := openai.ChatCompletionResponse{Choices: []openai.ChatCompletionChoice{{FinishReason: "stop",
		Message: openai.ChatCompletionMessage{Role: "assistant", Content: "[[ ## a ## ]]\nagain"}}}}
	cases := map[string]struct {
		replies []lmtest.Reply
		mw      adapter.Middleware
	}{
		"retries a delivered failure": {
			[]lmtest.Reply{brokenStream(), lmtest.Text("[[ ## a ## ]]\nagain")},
			func(next adapter.Invoker) adapter.Invoker {
				return func(ctx context.Context, req openai.ChatCompletionRequest) (openai.ChatCompletionResponse, error) {
					resp, err := next(ctx, req)
					if err != nil {
						resp, err = next(ctx, req)
					}
					return resp, err
				}
			},
		},
		"asks twice": {
			[]lmtest.Reply{lmtest.Text("[[ ## a ## ]]\nhal"), lmtest.Text("[[ ## a ## ]]\nagain")},
			func(next adapter.Invoker) adapter.Invoker {
				return func(ctx context.Context, req openai.ChatCompletionRequest) (openai.ChatCompletionResponse, error) {
					if _, err := next(ctx, req); err != nil {
						return openai.ChatCompletionResponse{}, err
					}
					return next(ctx, req)
				}
			},
		},
		"replaces a delivered failure": {
			[]lmtest.Reply{brokenStream()},
			func(next adapter.Invoker) adapter.Invoker {
				return func(ctx context.Context, req openai.ChatCompletionRequest) (openai.ChatCompletionResponse, error) {
					if _, err := next(ctx, req); err != nil {
						return again, nil
					}
					return again, nil
				}
			},
		},
		"rewrites a delivered reply": {
			[]lmtest.Reply{lmtest.Text("[[ ## a ## ]]\nhal")},
			func(next adapter.Invoker) adapter.Invoker {
				return func(ctx context.Context, req openai.ChatCompletionRequest) (openai.ChatCompletionResponse, error) {
					resp, err := next(ctx, req)
					if err == nil {
						resp.Choices[0].Message.Content = strings.ReplaceAll(resp.Choices[0].Message.Content, "hal", "again")
					}
					return resp, err
				}
			},
		},
	}
	for name, c := range cases {
		for _, where := range []string{"call", "lm"} {
			t.Run(name+"/"+where, func(t *testing.T) {
				srv := lmtest.NewServer(c.replies...)
				defer srv.Close()
				var lm adapter.StreamingLM = srv.Client()
				opts := []adapter.CallOption{adapter.NoFallback()}
				if where == "call" {
					opts = append(opts, adapter.UseMiddleware(c.mw))
				} else {
					lm = adapter.WithMiddleware(srv.Client(), c.mw)
				}
				fields, res, err := drain(adapter.Stream(t.Context(), lm, sig, nil, in, opts...))
				if err != nil {
					assert.ErrorIs(t, err, adapter.ErrDelivered)
					assert.Equal(t, "hal", fields["a"])
					return
				}
				assert.Equal(t, res.Outputs[0]["a"], fields["a"], "the deltas are the value")
			})
		}
	}
}

// TestMiddlewareHonoursDelivered: a middleware of the caller's own that
// retries streams reads ErrDelivered and does not retry a stream whose
// text reached the caller, and retries one that failed before.
func TestMiddlewareHonoursDelivered(t *testing.T) {
	sig := mustParse(t, "q -> a")
	retry := func(next adapter.Invoker) adapter.Invoker {
		return func(ctx context.Context, req openai.ChatCompletionRequest) (openai.ChatCompletionResponse, error) {
			resp, err := next(ctx, req)
			for range 2 {
				if err == nil || errors.Is(err, adapter.ErrDelivered) {
					break
				}
				resp, err = next(ctx, req)
			}
			return resp, err
		}
	}
	srv := lmtest.NewServer(brokenStream(), lmtest.Text("[[ ## a ## ]]\nagain"))
	defer srv.Close()
	fields, _, err := drain(adapter.Stream(t.Context(), srv.Client(), sig, nil, adapter.Values{"q": "x"}, adapter.NoRetry(), adapter.UseMiddleware(retry)))
	assert.ErrorIs(t, err, adapter.ErrDelivered)
	assert.Equal(t, "hal", fields["a"])
	assert.Len(t, srv.Requests(), 1)

	srv2 := lmtest.NewServer(lmtest.Error(http.StatusBadGateway, `{"error":{"message":"down"}}`), lmtest.Text("[[ ## a ## ]]\nagain"))
	defer srv2.Close()
	fields, res, err := drain(adapter.Stream(t.Context(), srv2.Client(), sig, nil, adapter.Values{"q": "x"}, adapter.NoRetry(), adapter.UseMiddleware(retry)))
	require.NoError(t, err)
	assert.Equal(t, "again", fields["a"])
	assert.Equal(t, "again", res.Outputs[0]["a"])
}

// TestCachedLMStreams: a cached LM is a StreamingLM (newcomer review 3,
// item 3); wrapping an LM that cannot stream gives a clear error that
// matches errors.ErrUnsupported, from Stream and from the wrapper itself.
func TestCachedLMStreams(t *testing.T) {
	sig := mustParse(t, "q -> a")
	srv := lmtest.NewServer(lmtest.Text("[[ ## a ## ]]\nParis").ChunkSize(3))
	defer srv.Close()
	lm := adapter.WithMiddleware(srv.Client(), adapter.Cached(adapter.NewLRU(10)))
	for i := range 2 {
		fields, res, err := drain(adapter.Stream(t.Context(), lm, sig, nil, adapter.Values{"q": "x"}))
		require.NoError(t, err)
		assert.Equal(t, "Paris", fields["a"])
		assert.Equal(t, i, res.CacheHits)
	}

	blocking := adapter.WithMiddleware(&identified{id: "x"})
	_, _, err := drain(adapter.Stream(t.Context(), blocking, sig, nil, adapter.Values{"q": "x"}))
	assert.ErrorIs(t, err, errors.ErrUnsupported)
	assert.ErrorContains(t, err, "cannot stream")
	_, err = blocking.CreateChatCompletionStream(t.Context(), openai.ChatCompletionRequest{})
	assert.ErrorIs(t, err, errors.ErrUnsupported)
}

// TestStreamFallbackFromCache: after the first adapter's reply streamed
// and failed to parse, the fallback's reply served by the cache is
// replayed as that request's deltas.
func TestStreamFallbackFromCache(t *testing.T) {
	sig := mustParse(t, "q -> a: int")
	in := adapter.Values{"q": "x"}
	srv := lmtest.NewServer(lmtest.Text(`{"a": 7}`), lmtest.Text("no markers here"))
	defer srv.Close()
	lm := adapter.WithMiddleware(srv.Client(), adapter.Cached(adapter.NewLRU(10)))
	_, err := adapter.Call(t.Context(), lm, sig, nil, in, adapter.UseAdapter(adapter.JSON{}))
	require.NoError(t, err)

	var chunks []adapter.Chunk
	for ch, err := range adapter.Stream(t.Context(), lm, sig, nil, in) {
		require.NoError(t, err)
		chunks = append(chunks, ch)
	}
	last := chunks[len(chunks)-1]
	require.True(t, last.Done)
	assert.Equal(t, 7, last.Result.Outputs[0]["a"])
	assert.Equal(t, 1, last.Result.CacheHits, "the fallback's request was a hit")
	var fallback string
	for _, ch := range chunks {
		if ch.Adapter == "json" && ch.Field == "a" {
			fallback += ch.Delta
		}
	}
	assert.Equal(t, "7", fallback)
	assert.Len(t, srv.Requests(), 2)
}

// TestDeclaredLMStreams: an LM with declared capabilities is a StreamingLM
// too, so Stream takes it without a type assertion; declaring them on an LM
// that cannot stream gives the same clear error as WithMiddleware.
func TestDeclaredLMStreams(t *testing.T) {
	sig := mustParse(t, "q -> a")
	srv := lmtest.NewServer(lmtest.Text("[[ ## a ## ]]\nParis").ChunkSize(3))
	defer srv.Close()
	lm := adapter.WithCapabilities(adapter.WithMiddleware(srv.Client(), adapter.Cached(adapter.NewLRU(10))), adapter.Capabilities{JSONMode: true})
	fields, _, err := drain(adapter.Stream(t.Context(), lm, sig, nil, adapter.Values{"q": "x"}))
	require.NoError(t, err)
	assert.Equal(t, "Paris", fields["a"])

	blocking := adapter.WithCapabilities(&identified{id: "x"}, adapter.Capabilities{})
	_, _, err = drain(adapter.Stream(t.Context(), blocking, sig, nil, adapter.Values{"q": "x"}))
	assert.ErrorIs(t, err, errors.ErrUnsupported)
	_, err = blocking.CreateChatCompletionStream(t.Context(), openai.ChatCompletionRequest{})
	assert.ErrorIs(t, err, errors.ErrUnsupported)
}
