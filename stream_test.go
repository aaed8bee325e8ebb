package adapter_test

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/lmtest"
)

// collect runs a stream and groups its deltas by field.
func collect(t *testing.T, seq func(func(adapter.Chunk, error) bool)) (fields map[string]string, reasoning string, last adapter.Chunk, err error) {
	t.Helper()
	fields = map[string]string{}
	for ch, e := range seq {
		if e != nil {
			return fields, reasoning, ch, e
		}
		fields[ch.Field] += ch.Delta
		reasoning += ch.Reasoning
		last = ch
	}
	return fields, reasoning, last, nil
}

func TestStreamChatFields(t *testing.T) {
	reply := "<think>Paris is the capital.</think>\n**[[ ## reasoning ## ]]**\nIt is [well] known. # not a marker\n\n[[ ## answer ## ]]:\nParis\n\n[[ ## completed ## ]]\nignored"
	sig := mustParse(t, "question -> reasoning, answer")
	for _, size := range []int{1, 2, 3, 5, 7, 16, 64} {
		srv := lmtest.NewServer(lmtest.Text(reply).ChunkSize(size))
		fields, reasoning, last, err := collect(t, adapter.Stream(context.Background(), srv.Client(), sig, nil, adapter.Values{"question": "q"}))
		srv.Close()
		require.NoError(t, err, "chunk size %d", size)
		assert.Equal(t, "It is [well] known. # not a marker", fields["reasoning"], "chunk size %d", size)
		assert.Equal(t, "Paris", fields["answer"], "chunk size %d", size)
		assert.Equal(t, "Paris is the capital.", reasoning, "chunk size %d", size)
		require.True(t, last.Done)
		assert.Equal(t, adapter.Values{"reasoning": "It is [well] known. # not a marker", "answer": "Paris"}, last.Result.Outputs[0])
		assert.Equal(t, "chat", last.Adapter)
	}
}

func TestStreamResultEqualsCall(t *testing.T) {
	reply := "[[ ## answer ## ]]\n42\n\n[[ ## completed ## ]]"
	sig := mustParse(t, "question -> answer: int")
	srv := lmtest.NewServer(lmtest.Text(reply).ChunkSize(4), lmtest.Text(reply))
	defer srv.Close()
	_, _, last, err := collect(t, adapter.Stream(context.Background(), srv.Client(), sig, nil, adapter.Values{"question": "q"}))
	require.NoError(t, err)
	res, err := adapter.Call(context.Background(), srv.Client(), sig, nil, adapter.Values{"question": "q"})
	require.NoError(t, err)
	assert.Equal(t, res.Outputs, last.Result.Outputs)
	assert.Equal(t, res.Calls, last.Result.Calls)
	assert.True(t, srv.Requests()[0].Chat.Stream)
}

func TestStreamCutIsTruncation(t *testing.T) {
	sig := mustParse(t, "question -> answer")
	srv := lmtest.NewServer(lmtest.Text("[[ ## answer ## ]]\nThe three largest cities are Sydney, Melbourne and").ChunkSize(8).Cut())
	defer srv.Close()
	fields, _, _, err := collect(t, adapter.Stream(context.Background(), srv.Client(), sig, nil, adapter.Values{"question": "q"}))
	var pe *adapter.ParseError
	require.ErrorAs(t, err, &pe)
	assert.ErrorIs(t, err, adapter.ErrTruncated)
	assert.Equal(t, "The three largest cities are Sydney, Melbourne and", fields["answer"])
}

func TestStreamBreakReleases(t *testing.T) {
	sig := mustParse(t, "question -> answer")
	srv := lmtest.NewServer(lmtest.Text(strings.Repeat("[[ ## answer ## ]]\nword ", 1) + strings.Repeat("word ", 200)).ChunkSize(5).ChunkDelay(5 * time.Millisecond))
	defer srv.Close()
	before := runtime.NumGoroutine()
	n := 0
	for ch, err := range adapter.Stream(context.Background(), srv.Client(), sig, nil, adapter.Values{"question": "q"}) {
		require.NoError(t, err)
		if ch.Field == "answer" {
			n++
		}
		if n == 3 {
			break
		}
	}
	assert.Equal(t, 3, n)
	assert.Eventually(t, func() bool { return runtime.NumGoroutine() <= before+1 }, 2*time.Second, 10*time.Millisecond, "goroutines leaked")
}

func TestStreamFieldsNoAdapterLeak(t *testing.T) {
	// A call option template is not mutated by Stream.
	tmpl := openai.ChatCompletionRequest{Model: "m"}
	srv := lmtest.NewServer(lmtest.Text("[[ ## answer ## ]]\nx"))
	defer srv.Close()
	_, _, _, err := collect(t, adapter.Stream(context.Background(), srv.Client(), mustParse(t, "q -> answer"), nil, adapter.Values{"q": "x"}, adapter.WithRequest(tmpl)))
	require.NoError(t, err)
	assert.False(t, tmpl.Stream)
	assert.Nil(t, tmpl.StreamOptions)
}

// TestStreamReasoningField reads the "reasoning" delta that vLLM and
// OpenRouter send and go-openai's types drop.
func TestStreamReasoningField(t *testing.T) {
	srv := lmtest.NewServer(lmtest.Text("[[ ## answer ## ]]\n4").WithReasoningField("two and two").ChunkSize(4))
	defer srv.Close()
	_, reasoning, last, err := collect(t, adapter.Stream(context.Background(), srv.Client(), mustParse(t, "q -> answer"), nil, adapter.Values{"q": "2+2"}))
	require.NoError(t, err)
	assert.Equal(t, "two and two", reasoning)
	assert.Equal(t, "4", last.Result.Outputs[0]["answer"])
}

// TestStreamFallback: after a parse failure the JSON fallback streams as a
// second call, its chunks named "json".
func TestStreamFallback(t *testing.T) {
	srv := lmtest.NewServer(lmtest.Text("The answer is forty-two.").ChunkSize(5), lmtest.Text(`{"answer": 42}`).ChunkSize(3))
	defer srv.Close()
	var adapters []string
	var last adapter.Chunk
	for ch, err := range adapter.Stream(context.Background(), srv.Client(), mustParse(t, "question -> answer: int"), nil, adapter.Values{"question": "q"},
		adapter.WithRequest(openai.ChatCompletionRequest{Model: "some-model"})) {
		require.NoError(t, err)
		if ch.Field == "answer" {
			assert.Equal(t, "json", ch.Adapter)
		}
		if len(adapters) == 0 || adapters[len(adapters)-1] != ch.Adapter {
			adapters = append(adapters, ch.Adapter)
		}
		last = ch
	}
	assert.Equal(t, []string{"json"}, adapters[len(adapters)-1:])
	require.True(t, last.Done)
	assert.Equal(t, 2, last.Result.Calls)
	assert.Equal(t, "json", last.Result.Adapter)
	assert.Equal(t, 42, last.Result.Outputs[0]["answer"])
}

// TestStreamToolCalls: tool-call deltas are merged by index into whole
// calls.
func TestStreamToolCalls(t *testing.T) {
	call := openai.ToolCall{ID: "c1", Type: "function", Function: openai.FunctionCall{Name: "search", Arguments: `{"query": "go streams"}`}}
	srv := lmtest.NewServer(lmtest.Text("[[ ## answer ## ]]\nsearching").WithToolCalls(call))
	defer srv.Close()
	var calls []openai.ToolCall
	for ch, err := range adapter.Stream(context.Background(), srv.Client(), mustParse(t, "q -> answer"), nil, adapter.Values{"q": "x"}) {
		require.NoError(t, err)
		if ch.ToolCalls != nil {
			calls = ch.ToolCalls
		}
	}
	require.Len(t, calls, 1)
	assert.Equal(t, "c1", calls[0].ID)
	assert.Equal(t, "search", calls[0].Function.Name)
	assert.Equal(t, `{"query": "go streams"}`, calls[0].Function.Arguments)
}

func TestStreamRefusal(t *testing.T) {
	srv := lmtest.NewServer(lmtest.Text("").WithRefusal("I can't help with that."))
	defer srv.Close()
	_, _, _, err := collect(t, adapter.Stream(context.Background(), srv.Client(), mustParse(t, "q -> a"), nil, adapter.Values{"q": "x"}))
	var re *adapter.RefusalError
	require.ErrorAs(t, err, &re)
	assert.Equal(t, "I can't help with that.", re.Refusal)
	assert.Len(t, srv.Requests(), 1, "no fallback")
}
