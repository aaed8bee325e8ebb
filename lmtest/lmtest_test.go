package lmtest_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sigwire/adapter/lmtest"
)

func ask(stream bool) openai.ChatCompletionRequest {
	return openai.ChatCompletionRequest{Model: "m", Messages: []openai.ChatCompletionMessage{{Role: "user", Content: "hi"}}, Stream: stream}
}

func TestText(t *testing.T) {
	srv := lmtest.NewServer(lmtest.Text("hello").WithReasoning("hmm"))
	defer srv.Close()
	resp, err := srv.Client().CreateChatCompletion(context.Background(), ask(false))
	require.NoError(t, err)
	require.Len(t, resp.Choices, 1)
	assert.Equal(t, "hello", resp.Choices[0].Message.Content)
	assert.Equal(t, "hmm", resp.Choices[0].Message.ReasoningContent)
	assert.Equal(t, openai.FinishReasonStop, resp.Choices[0].FinishReason)
	assert.Positive(t, resp.Usage.PromptTokens)
	assert.Positive(t, resp.Usage.CompletionTokens)
	reqs := srv.Requests()
	require.Len(t, reqs, 1)
	assert.Equal(t, "/v1/chat/completions", reqs[0].Path)
	assert.Equal(t, "hi", reqs[0].Chat.Messages[0].Content)
	assert.Equal(t, "Bearer test-key", reqs[0].Header.Get("Authorization"))
}

func TestChoicesAndFinish(t *testing.T) {
	srv := lmtest.NewServer(lmtest.Choices("a", "b"), lmtest.Text("c").WithFinish("length"))
	defer srv.Close()
	resp, err := srv.Client().CreateChatCompletion(context.Background(), ask(false))
	require.NoError(t, err)
	require.Len(t, resp.Choices, 2)
	assert.Equal(t, "b", resp.Choices[1].Message.Content)
	resp, err = srv.Client().CreateChatCompletion(context.Background(), ask(false))
	require.NoError(t, err)
	assert.Equal(t, openai.FinishReasonLength, resp.Choices[0].FinishReason)
}

func TestErrors(t *testing.T) {
	srv := lmtest.NewServer(lmtest.Error(http.StatusTooManyRequests, `{"error":{"message":"slow down","type":"rate_limit"}}`), lmtest.ContextLengthExceeded())
	defer srv.Close()
	_, err := srv.Client().CreateChatCompletion(context.Background(), ask(false))
	var apiErr *openai.APIError
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, http.StatusTooManyRequests, apiErr.HTTPStatusCode)
	_, err = srv.Client().CreateChatCompletion(context.Background(), ask(false))
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, "context_length_exceeded", apiErr.Code)
	_, err = srv.Client().CreateChatCompletion(context.Background(), ask(false))
	require.ErrorAs(t, err, &apiErr, "an empty queue is a 410, which is not retried")
	assert.Equal(t, http.StatusGone, apiErr.HTTPStatusCode)
	assert.Len(t, srv.Requests(), 3)
}

func TestHandleAndPush(t *testing.T) {
	srv := lmtest.NewServer()
	defer srv.Close()
	srv.Handle(func(r lmtest.Request) lmtest.Reply { return lmtest.Text("echo " + r.Chat.Messages[0].Content) })
	srv.Push(lmtest.Text("queued"))
	for _, want := range []string{"queued", "echo hi"} {
		resp, err := srv.Client().CreateChatCompletion(context.Background(), ask(false))
		require.NoError(t, err)
		assert.Equal(t, want, resp.Choices[0].Message.Content)
	}
}

func drain(t *testing.T, s *openai.ChatCompletionStream) (content, reasoning string, finish openai.FinishReason, usage *openai.Usage, tools []openai.ToolCall, err error) {
	t.Helper()
	for {
		r, rerr := s.Recv()
		if rerr != nil {
			if !errors.Is(rerr, io.EOF) {
				err = rerr
			}
			return
		}
		if r.Usage != nil {
			usage = r.Usage
		}
		for _, c := range r.Choices {
			content += c.Delta.Content
			reasoning += c.Delta.ReasoningContent
			if c.FinishReason != "" {
				finish = c.FinishReason
			}
			tools = append(tools, c.Delta.ToolCalls...)
		}
	}
}

func TestStream(t *testing.T) {
	text := "Grüße aus Köln — ünïcödé ✓ text"
	calls := []openai.ToolCall{{ID: "c1", Type: "function", Function: openai.FunctionCall{Name: "search", Arguments: `{"q": "straße"}`}}}
	srv := lmtest.NewServer(lmtest.Text(text).ChunkSize(3).WithReasoning("first think").WithToolCalls(calls...))
	defer srv.Close()
	req := ask(true)
	req.StreamOptions = &openai.StreamOptions{IncludeUsage: true}
	s, err := srv.Client().CreateChatCompletionStream(context.Background(), req)
	require.NoError(t, err)
	defer s.Close()
	content, reasoning, finish, usage, tools, err := drain(t, s)
	require.NoError(t, err)
	assert.Equal(t, text, content)
	assert.Equal(t, "first think", reasoning)
	assert.Equal(t, openai.FinishReasonStop, finish)
	require.NotNil(t, usage)
	assert.Positive(t, usage.TotalTokens)
	require.Len(t, tools, 2, "arguments arrive in two deltas")
	require.NotNil(t, tools[0].Index)
	assert.Equal(t, 0, *tools[0].Index)
	assert.Equal(t, `{"q": "straße"}`, tools[0].Function.Arguments+tools[1].Function.Arguments)
}

func TestStreamCut(t *testing.T) {
	srv := lmtest.NewServer(lmtest.Text(strings.Repeat("x", 40)).ChunkSize(8).Cut())
	defer srv.Close()
	s, err := srv.Client().CreateChatCompletionStream(context.Background(), ask(true))
	require.NoError(t, err)
	defer s.Close()
	content, _, finish, _, _, _ := drain(t, s)
	assert.Equal(t, strings.Repeat("x", 40), content)
	assert.Empty(t, finish, "a cut stream has no finish reason")
}

func TestDelayCancelled(t *testing.T) {
	srv := lmtest.NewServer(lmtest.Text("late").Delay(time.Minute))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := srv.Client().CreateChatCompletion(ctx, ask(false))
	require.ErrorIs(t, err, context.DeadlineExceeded)
}

func TestNotFoundKeepsQueue(t *testing.T) {
	srv := lmtest.NewServer(lmtest.Text("kept"))
	defer srv.Close()
	resp, err := http.Get(srv.URL() + "/models")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	got, err := srv.Client().CreateChatCompletion(context.Background(), ask(false))
	require.NoError(t, err, "a 404 does not use up a scripted reply")
	assert.Equal(t, "kept", got.Choices[0].Message.Content)
	reqs := srv.Requests()
	require.Len(t, reqs, 2)
	assert.Equal(t, "/v1/models", reqs[0].Path)
}

func TestRefusal(t *testing.T) {
	srv := lmtest.NewServer(lmtest.Text("x").WithRefusal("no can do"), lmtest.Text("x").WithRefusal("no can do"))
	defer srv.Close()
	resp, err := srv.Client().CreateChatCompletion(context.Background(), ask(false))
	require.NoError(t, err)
	assert.Equal(t, "no can do", resp.Choices[0].Message.Refusal)
	assert.Empty(t, resp.Choices[0].Message.Content)

	s, err := srv.Client().CreateChatCompletionStream(context.Background(), ask(true))
	require.NoError(t, err)
	defer s.Close()
	var refusal, content string
	for {
		r, err := s.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		for _, c := range r.Choices {
			refusal += c.Delta.Refusal
			content += c.Delta.Content
		}
	}
	assert.Equal(t, "no can do", refusal)
	assert.Empty(t, content)
}

func TestStreamChunksKeepRunes(t *testing.T) {
	text := "日本語のテキスト ✓ ok"
	srv := lmtest.NewServer(lmtest.Text(text).ChunkSize(1))
	defer srv.Close()
	s, err := srv.Client().CreateChatCompletionStream(context.Background(), ask(true))
	require.NoError(t, err)
	defer s.Close()
	var got strings.Builder
	for {
		r, err := s.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		for _, c := range r.Choices {
			assert.True(t, utf8.ValidString(c.Delta.Content), "chunk %q splits a rune", c.Delta.Content)
			got.WriteString(c.Delta.Content)
		}
	}
	assert.Equal(t, text, got.String())
}

func TestStreamChunkDelayCancelled(t *testing.T) {
	srv := lmtest.NewServer(lmtest.Text(strings.Repeat("y", 64)).ChunkSize(4).ChunkDelay(time.Minute))
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	s, err := srv.Client().CreateChatCompletionStream(ctx, ask(true))
	require.NoError(t, err)
	defer s.Close()
	_, err = s.Recv() // role chunk
	require.NoError(t, err)
	start := time.Now()
	time.AfterFunc(50*time.Millisecond, cancel)
	for err == nil {
		_, err = s.Recv()
	}
	assert.Less(t, time.Since(start), 10*time.Second)
}

func TestConcurrent(t *testing.T) {
	srv := lmtest.NewServer()
	defer srv.Close()
	srv.Handle(func(r lmtest.Request) lmtest.Reply { return lmtest.Text(r.Chat.Messages[0].Content) })
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if i%2 == 0 {
				srv.Push(lmtest.Text("pushed"))
			}
			_, err := srv.Client().CreateChatCompletion(context.Background(), ask(false))
			assert.NoError(t, err)
			_ = srv.Requests()
		}()
	}
	wg.Wait()
	assert.Len(t, srv.Requests(), 20)
}
