package wire

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// FuzzUnquote: for every well-formed JSON string literal, the stream's
// fast unquote gives what encoding/json gives (a streamed reply reads as
// the same reply sent whole).
func FuzzUnquote(f *testing.F) {
	for _, s := range []string{`"plain"`, `"a\nb\t\"q\" \\ \/"`, `"\u00e9\ud83d\ude00"`, `"\ud83d x"`, `"\udc00\ud800"`, `"\u0000"`, "\"\xff\""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, lit string) {
		b := []byte(lit)
		if len(b) < 2 || b[0] != '"' || !json.Valid(b) {
			return
		}
		var want string
		if err := json.Unmarshal(b, &want); err != nil {
			return
		}
		var c wireContent
		if err := c.UnmarshalJSON(b); err != nil {
			t.Fatalf("%q: %v", lit, err)
		}
		if c.text != want {
			t.Fatalf("%q: got %q, encoding/json %q", lit, c.text, want)
		}
	})
}

// recordedEvents returns the data lines of every recorded stream in
// testdata/providers.
func recordedEvents(tb testing.TB) [][]byte {
	files, err := filepath.Glob("../../testdata/providers/*.sse")
	if err != nil || len(files) == 0 {
		tb.Fatalf("no recorded streams: %v", err)
	}
	var events [][]byte
	for _, f := range files {
		body, err := os.ReadFile(f)
		if err != nil {
			tb.Fatal(err)
		}
		for line := range bytes.Lines(body) {
			if ev, ok := bytes.CutPrefix(bytes.TrimSpace(line), []byte("data: {")); ok {
				events = append(events, append([]byte("{"), ev...))
			}
		}
	}
	return events
}

// sameChunk checks that decodeChunk read raw as encoding/json does.
func sameChunk(t *testing.T, raw []byte, got wireChunk) {
	t.Helper()
	var want wireChunk
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatalf("decodeChunk read %q, encoding/json fails: %v", raw, err)
	}
	if len(got.Choices) == 0 && len(want.Choices) == 0 {
		got.Choices, want.Choices = nil, nil
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%q:\ndecodeChunk   %+v\nencoding/json %+v", raw, got, want)
	}
}

// TestDecodeChunk: the events servers send with every token — text,
// reasoning, refusals, usage, with whatever members a provider adds — are
// read without encoding/json, and read as it reads them; the shapes left
// to encoding/json are read by it.
func TestDecodeChunk(t *testing.T) {
	fast := 0
	events := recordedEvents(t)
	for _, raw := range events {
		var c wireChunk
		if decodeChunk(string(raw), &c) {
			fast++
			sameChunk(t, raw, c)
		}
	}
	t.Logf("%d of %d recorded events read on the fast path", fast, len(events))
	assert.Greater(t, fast, len(events)*3/4)
	for _, raw := range []string{
		`{"id":"x","object":"chat.completion.chunk","created":1,"model":"m","system_fingerprint":null,"choices":[{"index":0,"delta":{"role":"assistant","content":"a\"b\u00e9\ud83d\ude00"},"logprobs":null,"finish_reason":null}],"usage":null,"obfuscation":"abc"}`,
		`{"choices":[{"index":0,"delta":{"reasoning_content":"r","content":null},"content_filter_results":{"hate":{"filtered":false}}}],"citations":["u",1,2.5e3,true,[],{}]}`,
		`{"choices":[],"usage":{"prompt_tokens":9,"completion_tokens":2,"total_tokens":11,"cost":0.0006,"prompt_tokens_details":{"cached_tokens":3,"text_tokens":9},"completion_tokens_details":{"reasoning_tokens":1}}}`,
		` { "choices" : [ { "index" : 1 , "delta" : { } , "finish_reason" : "stop" } ] } `,
		`{"choices":[],"usage":{"prompt_tokens":339,"completion_tokens":83,"total_tokens":422,"prompt_tokens_details":{"cached_tokens":320},"prompt_cache_hit_tokens":320,"prompt_cache_miss_tokens":19}}`,
		`{"choices":[],"usage":{"prompt_tokens":9,"completion_tokens":2,"total_tokens":11,"cache_read_input_tokens":null,"cache_creation_input_tokens":0},"timings":null}`,
	} {
		var c wireChunk
		require.True(t, decodeChunk(raw, &c), raw)
		sameChunk(t, []byte(raw), c)
	}
	for _, raw := range []string{
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{"}}]}}]}`,
		`{"choices":[{"index":0,"delta":{"content":[{"type":"text","text":"a"}]}}]}`,
		`{"choices":[{"index":0,"delta":{"content":"a"},"logprobs":{"content":[]}}]}`,
		`{"choices":[{"index":0,"delta":{"content":"a","Content":"b"}}]}`,
		`{"choices":[{"index":0,"delta":{"content":"a","content":"b"}}]}`,
		`{"choices":[{"index":1.0,"delta":{"content":"a"}}]}`,
		`{"id":"a","x_groq":{"usage":{"prompt_tokens":1}}}`,
		`{"choices":[],"usage":{"prompt_tokens":9,"prompt_cache_hit_tokens":1.5}}`,
		`{"choices":[],"usage":{"prompt_tokens":9,"Prompt_Cache_Hit_Tokens":1}}`,
		`{"choices":[],"usage":{"prompt_tokens":9},"timings":{"cache_n":3}}`,
		`{"error":{"message":"m"}}`,
		`{"choices":[{"index":0,"delta":{"content":"a` + "\xff" + `"}}]}`,
		`{"choices":[{"index":0,"delta":{"content":"a"}}]} x`,
		`{"id":"a",}`,
	} {
		var c wireChunk
		assert.False(t, decodeChunk(raw, &c), raw)
	}
}

// FuzzDecodeChunk: whatever an event holds, decodeChunk either leaves it
// to encoding/json or reads exactly what encoding/json reads.
func FuzzDecodeChunk(f *testing.F) {
	for _, ev := range recordedEvents(f) {
		f.Add(string(ev))
	}
	f.Add(`{"choices":[{"index":0,"delta":{"content":"\ud800\u0041 \\ \/"},"finish_reason":null}],"usage":{"prompt_tokens":-0}}`)
	f.Add(`{"choices":[],"usage":{"prompt_tokens":9,"prompt_cache_hit_tokens":"x","cache_read_input_tokens":3},"timings":{"cache_n":2}}`)
	f.Fuzz(func(t *testing.T, raw string) {
		var c wireChunk
		if decodeChunk(raw, &c) {
			sameChunk(t, []byte(raw), c)
		}
	})
}

// BenchmarkDecodeChunk reads a typical token event (OpenAI's shape) with
// decodeChunk and with encoding/json, as go-openai's Recv does.
func BenchmarkDecodeChunk(b *testing.B) {
	raw := []byte(`{"id":"chatcmpl-ABfw031mOJeYCSHe4yI2ZjOA6kMJL","object":"chat.completion.chunk","created":1727346168,"model":"gpt-4o-2024-08-06","system_fingerprint":"fp_5050236cbd","choices":[{"index":0,"delta":{"content":" degrees Celsius"},"logprobs":null,"finish_reason":null}]}`)
	b.Run("fast", func(b *testing.B) {
		b.ReportAllocs()
		var c wireChunk
		for b.Loop() {
			c = wireChunk{Choices: c.Choices[:0]}
			if !decodeChunk(string(raw), &c) {
				b.Fatal("not read")
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		var c wireChunk
		for b.Loop() {
			c = wireChunk{Choices: c.Choices[:0]}
			if err := json.Unmarshal(raw, &c); err != nil {
				b.Fatal(err)
			}
		}
	})
}
