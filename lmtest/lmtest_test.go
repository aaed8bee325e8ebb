package lmtest_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

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
	require.ErrorAs(t, err, &apiErr, "an empty queue is a 500")
	assert.Equal(t, http.StatusInternalServerError, apiErr.HTTPStatusCode)
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
