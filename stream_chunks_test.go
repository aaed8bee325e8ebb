package adapter_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	adapter "github.com/sigwire/adapter"
)

// sseServer serves, to every request, the chunks in body (one JSON object
// per line) as a server-sent event stream, then [DONE]: a server that
// says whatever a test or the fuzzer wants, malformed included.
type sseServer struct {
	*httptest.Server
	body atomic.Value // string
}

func newSSEServer(t testing.TB) *sseServer {
	s := &sseServer{}
	s.body.Store("")
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for line := range strings.SplitSeq(s.body.Load().(string), "\n") {
			fmt.Fprintf(w, "data: %s\n\n", line)
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *sseServer) client() *openai.Client {
	cfg := openai.DefaultConfig("test-key")
	cfg.BaseURL = s.URL + "/v1"
	return openai.NewClientWithConfig(cfg)
}

// TestStreamMalformedChunks: a server's chunk with a negative or huge
// choice or tool-call index is an *LMError naming the index, never a panic
// or an allocation the size of the index.
func TestStreamMalformedChunks(t *testing.T) {
	srv := newSSEServer(t)
	sig := mustParse(t, "q -> a")
	for name, body := range map[string]string{
		"negative choice":      `{"choices":[{"index":-1,"delta":{"content":"x"}}]}`,
		"negative finish":      `{"choices":[{"index":-1,"delta":{},"finish_reason":"stop"}]}`,
		"huge choice":          `{"choices":[{"index":100000000,"delta":{"content":"x"}}]}`,
		"negative tool call":   `{"choices":[{"index":0,"delta":{"tool_calls":[{"index":-1,"function":{"name":"f"}}]}}]}`,
		"huge tool call":       `{"choices":[{"index":0,"delta":{"tool_calls":[{"index":99999999,"function":{"name":"f"}}]}}]}`,
		"after a good content": `{"choices":[{"index":0,"delta":{"content":"[[ ## a ## ]]\nok"}}]}` + "\n" + `{"choices":[{"index":-7,"delta":{"content":"x"}}]}`,
	} {
		srv.body.Store(body)
		var last error
		for _, err := range adapter.Stream(context.Background(), srv.client(), sig, nil, adapter.Values{"q": "x"}) {
			last = err
		}
		var le *adapter.LMError
		require.ErrorAs(t, last, &le, name)
		assert.Contains(t, last.Error(), "index", name)
	}
	srv.body.Store(`{"choices":[{"index":0,"delta":{"content":"[[ ## a ## ]]\nok"},"finish_reason":"stop"}]}`)
	for ch, err := range adapter.Stream(context.Background(), srv.client(), sig, nil, adapter.Values{"q": "x"}) {
		require.NoError(t, err)
		if ch.Done {
			assert.Equal(t, "ok", ch.Result.Outputs[0]["a"])
		}
	}
}

// FuzzStreamChunks: whatever chunks a server sends, Stream never panics;
// it ends in one Done chunk whose outputs have the fields' Go types, or in
// an *LMError, *ParseError or *RefusalError.
func FuzzStreamChunks(f *testing.F) {
	for _, s := range []string{
		`{"choices":[{"index":0,"delta":{"content":"[[ ## answer ## ]]\n4"},"finish_reason":"stop"}]}`,
		`{"choices":[{"index":0,"delta":{"content":"[[ ## ans"}}]}` + "\n" + `{"choices":[{"index":0,"delta":{"content":"wer ## ]]\n42"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}`,
		`{"choices":[{"index":1,"delta":{"content":"[[ ## answer ## ]]\n1"},"finish_reason":"stop"},{"index":0,"delta":{"content":"[[ ## answer ## ]]\n0"},"finish_reason":"stop"}]}`,
		`{"choices":[{"index":0,"delta":{"reasoning_content":"hmm"}}]}` + "\n" + `{"choices":[{"index":0,"delta":{"content":"[[ ## answer ## ]]\n5"},"finish_reason":"length"}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"f","arguments":"{\"x\""}}]}}]}` + "\n" + `{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":": 1}"}}]},"finish_reason":"tool_calls"}]}`,
		`{"choices":[{"index":0,"delta":{"refusal":"no"},"finish_reason":"stop"}]}`,
		`{"choices":[]}`,
		`not json`,
		`{"choices":[{"index":-1,"delta":{"content":"x"}}]}`,
	} {
		f.Add(s)
	}
	srv := newSSEServer(f)
	sig := mustParse(f, "question -> answer: int")
	f.Fuzz(func(t *testing.T, body string) {
		if strings.Contains(body, "\r") {
			return // a bare CR ends an SSE line: the body is not the chunk list
		}
		srv.body.Store(body)
		done := 0
		for ch, err := range adapter.Stream(context.Background(), srv.client(), sig, nil, adapter.Values{"question": "q"}, adapter.NoFallback()) {
			if err != nil {
				var le *adapter.LMError
				var pe *adapter.ParseError
				var re *adapter.RefusalError
				if !errors.As(err, &le) && !errors.As(err, &pe) && !errors.As(err, &re) {
					t.Fatalf("untyped error %T: %v", err, err)
				}
				return
			}
			if ch.Done {
				done++
				for _, out := range ch.Result.Outputs {
					if _, ok := out["answer"].(int); !ok {
						t.Fatalf("answer is %T", out["answer"])
					}
				}
			}
		}
		if done != 1 {
			t.Fatalf("%d Done chunks and no error", done)
		}
	})
}
