package adapter_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/signature"
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

// TestStreamRepeatedField: a field given twice streams once. When both
// values agree the joined deltas equal what Parse reads; when they differ
// the stream shows the first and Parse reports ErrAmbiguous (JSON: a key
// repeated with another value, at any depth, never silently the last).
func TestStreamRepeatedField(t *testing.T) {
	sig := mustParse(t, "question -> reasoning, answer")
	for _, c := range []struct {
		a          adapter.Adapter
		same, diff string
	}{
		{adapter.Chat{}, "[[ ## reasoning ## ]]\nr\n[[ ## answer ## ]]\n0\n[[ ## answer ## ]]\n0", "[[ ## reasoning ## ]]\nr\n[[ ## answer ## ]]\na\n[[ ## answer ## ]]\nb"},
		{adapter.JSON{}, `{"reasoning": "r", "answer": "0", "answer": "0"}`, `{"reasoning": "r", "answer": "a", "answer": "b"}`},
		{adapter.XML{}, "<reasoning>r</reasoning><answer>0</answer><answer>0</answer>", "<reasoning>r</reasoning><answer>a</answer><answer>b</answer>"},
	} {
		for _, text := range []string{c.same, c.diff} {
			fs := c.a.(adapter.StreamParser).NewFieldStream(sig)
			got := map[string]string{}
			var ds []adapter.FieldDelta
			for i := range len(text) {
				ds = fs.Write(ds[:0], text[i:i+1])
				for _, d := range ds {
					got[d.Field] += d.Text
				}
			}
			for _, d := range fs.Close(ds[:0]) {
				got[d.Field] += d.Text
			}
			vals, err := c.a.(adapter.Parser).Parse(sig, text)
			if text == c.same {
				require.NoError(t, err, c.a.Name())
				assert.Equal(t, vals["answer"], got["answer"], c.a.Name())
				continue
			}
			assert.ErrorIs(t, err, adapter.ErrAmbiguous, c.a.Name())
			assert.Equal(t, "a", got["answer"], c.a.Name())
		}
	}
}

// TestJSONDuplicateKeys: a key repeated with another value is
// ErrAmbiguous wherever it is, in a reply or a field's JSON; repeated with
// the same value it is read.
func TestJSONDuplicateKeys(t *testing.T) {
	sig, err := signature.Parse("q -> answer, p: Person, d: dict[str, int]", signature.WithTypes(map[string]reflect.Type{"Person": reflect.TypeFor[Person]()}))
	require.NoError(t, err)
	ok := `{"answer": "x", "p": {"name": "Ada", "age": 36, "age": 36}, "d": {"a": 1}}`
	vals, err := adapter.JSON{}.Parse(sig, ok)
	require.NoError(t, err)
	assert.Equal(t, Person{Name: "Ada", Age: 36}, vals["p"])
	for _, text := range []string{
		`{"answer": "x", "answer": "y", "p": {"name": "Ada", "age": 36}, "d": {}}`,
		`{"answer": "x", "p": {"name": "Ada", "name": "Bob", "age": 36}, "d": {}}`,
		`{"answer": "x", "p": {"name": "Ada", "age": 36}, "d": {"a": 1, "a": 2}}`,
		"Here it is:\n```json\n{\"answer\": \"x\", \"p\": {\"name\": \"Ada\", \"age\": 36}, \"d\": {\"a\": 1, \"a\": 2},}\n```",
	} {
		_, err := adapter.JSON{}.Parse(sig, text)
		assert.ErrorIs(t, err, adapter.ErrAmbiguous, text)
	}
	_, err = adapter.Chat{}.Parse(sig, "[[ ## answer ## ]]\nx\n[[ ## p ## ]]\n{\"name\": \"Ada\", \"name\": \"Bob\", \"age\": 1}\n[[ ## d ## ]]\n{}")
	assert.ErrorIs(t, err, adapter.ErrAmbiguous)
	_, err = adapter.ParseValue(`{"a": 1, "a": 2}`, sig.Output(2))
	assert.ErrorIs(t, err, adapter.ErrAmbiguous)
}
