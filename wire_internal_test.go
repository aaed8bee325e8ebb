package adapter

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sigwire/adapter/lmtest"
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

// FuzzWireExtras: whatever a message (or a delta) holds, reading its
// extras never panics nor fails the rest of the reply; every extra kept is
// a JSON object, which reads back the same from JSON (a cache's store); a
// blocking body and a stream carrying the same message give the same
// extras (the stream without exact repeats of an annotation).
func FuzzWireExtras(f *testing.F) {
	for _, s := range []string{
		`{"content":"hi","annotations":[{"type":"url_citation","url_citation":{"url":"https://e.org","title":"E","start_index":0,"end_index":2}}]}`,
		`{"content":"hi","annotations":[{"a":1},{"a":1},{"b":2}]}`,
		`{"content":"hi","provider_specific_fields":{"citations":[[{"type":"char_location","cited_text":"x"}],[{"type":"char_location"}]]}}`,
		`{"content":"hi","provider_specific_fields":{"citation":{"type":"char_location"},"citations":[{"k":1},[{"k":2},3,[{"k":4}]]]}}`,
		`{"content":"hi","annotations":{"type":"url_citation"},"provider_specific_fields":"x"}`,
		`{"content":"hi","annotations":[1,"x",null,[{}]],"provider_specific_fields":{"citations":null,"citation":[{}]}}`,
		`{"content":null,"annotations":[ {"x":"\u00e9"} ]}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, msg string) {
		if !json.Valid([]byte(msg)) {
			return
		}
		body := []byte(`{"choices":[{"index":0,"finish_reason":"stop","message":` + msg + `}]}`)
		var resp openai.ChatCompletionResponse
		extras, err := normalize(&resp, body, DefaultWireItems)
		if err != nil {
			t.Fatalf("%s: %v", msg, err)
		}
		// Each item is read once now; what it gives is what the old reading
		// gave (every item decoded, compacted, then escaped), and a choice
		// over the limit is an error exactly when it holds more items.
		var wb0 wireBody
		if json.Unmarshal(body, &wb0) == nil && len(wb0.Choices) == 1 {
			want := referenceExtras(wb0.Choices[0].Message.wireExtras)
			got := extras.Choice(0)
			if !slices.EqualFunc(want.Annotations, got.Annotations, rawEqual) || !slices.EqualFunc(want.Citations, got.Citations, rawEqual) {
				t.Fatalf("%s: extras %s %s, the reference %s %s", msg, got.Annotations, got.Citations, want.Annotations, want.Citations)
			}
			n := len(want.Annotations) + len(want.Citations)
			var r openai.ChatCompletionResponse
			if _, err := normalize(&r, body, 2); (err != nil) != (n > 2) || err != nil && !errors.Is(err, ErrReplyTooLarge) {
				t.Fatalf("%s: %d items, limit 2: %v", msg, n, err)
			}
		}

		var c wireChunk
		chunk := []byte(`{"choices":[{"index":0,"delta":` + msg + `}]}`)
		acc := assembly{maxItems: DefaultWireItems}
		if json.Unmarshal(chunk, &c) == nil {
			if err := acc.add(&c); err != nil {
				t.Fatalf("%s: %v", msg, err)
			}
		}
		streamed := acc.extras()
		for _, e := range append(extras.Choices, streamed.Choices...) {
			for _, x := range append(append([]json.RawMessage{}, e.Annotations...), e.Citations...) {
				// UseNumber: a number past float64's range is still JSON
				// (found by the fuzzer: {"":2e311} is an object).
				var obj map[string]any
				d := json.NewDecoder(bytes.NewReader(x))
				d.UseNumber()
				if d.Decode(&obj) != nil || obj == nil {
					t.Fatalf("%s: an extra that is not an object: %s", msg, x)
				}
			}
		}
		// What a cache storing JSON gives back is the same.
		j, err := json.Marshal(extras)
		if err != nil {
			t.Fatalf("%s: %v", msg, err)
		}
		var back WireExtras
		if err := json.Unmarshal(j, &back); err != nil || !reflect.DeepEqual(back, extras) && len(extras.Choices) > 0 {
			t.Fatalf("%s: extras %+v read back as %+v (%v)", msg, extras, back, err)
		}
		var wb wireBody
		if json.Unmarshal(body, &wb) != nil || json.Unmarshal(chunk, &c) != nil {
			return // the reply itself is unreadable; nothing to compare
		}
		b, s := extras.Choice(0), streamed.Choice(0)
		if !slices.EqualFunc(b.Citations, s.Citations, rawEqual) {
			t.Fatalf("%s: citations %s (body) vs %s (stream)", msg, b.Citations, s.Citations)
		}
		var dedup []json.RawMessage
		for _, a := range b.Annotations {
			if !slices.ContainsFunc(dedup, func(x json.RawMessage) bool { return rawEqual(x, a) }) {
				dedup = append(dedup, a)
			}
		}
		if !slices.EqualFunc(dedup, s.Annotations, rawEqual) {
			t.Fatalf("%s: annotations %s (body) vs %s (stream)", msg, b.Annotations, s.Annotations)
		}
	})
}

func rawEqual(a, b json.RawMessage) bool { return bytes.Equal(a, b) }

// referenceExtras is how extras were read before each item was read once:
// every list decoded into items, each item compacted, then escaped as
// encoding/json writes a json.RawMessage.
func referenceExtras(w wireExtras) ChoiceExtras {
	var dst ChoiceExtras
	canon := func(b json.RawMessage) json.RawMessage {
		var c, out bytes.Buffer
		if json.Compact(&c, b) != nil {
			return b
		}
		json.HTMLEscape(&out, c.Bytes())
		return out.Bytes()
	}
	var items []json.RawMessage
	if json.Unmarshal(w.Annotations, &items) == nil {
		for _, it := range items {
			if isObject(it) {
				dst.Annotations = append(dst.Annotations, canon(it))
			}
		}
	}
	var p struct {
		Citations json.RawMessage `json:"citations"`
		Citation  json.RawMessage `json:"citation"`
	}
	if len(w.Provider) == 0 || json.Unmarshal(w.Provider, &p) != nil {
		return dst
	}
	items = nil
	if json.Unmarshal(p.Citations, &items) == nil {
		for _, it := range items {
			if isObject(it) {
				dst.Citations = append(dst.Citations, canon(it))
				continue
			}
			var inner []json.RawMessage
			if json.Unmarshal(it, &inner) == nil {
				for _, c := range inner {
					if isObject(c) {
						dst.Citations = append(dst.Citations, canon(c))
					}
				}
			}
		}
	}
	if isObject(p.Citation) {
		dst.Citations = append(dst.Citations, canon(p.Citation))
	}
	return dst
}

// TestWireExtrasByChoice: extras belong to their choice, in a body and in
// a stream whose choices interleave.
func TestWireExtrasByChoice(t *testing.T) {
	a := `{"type":"url_citation","url_citation":{"url":"https://e.org/1"}}`
	c := `{"type":"char_location","cited_text":"x"}`
	body := `{"choices":[{"index":0,"finish_reason":"stop","message":{"content":"a"}},` +
		`{"index":1,"finish_reason":"stop","message":{"content":"b","annotations":[` + a + `],"provider_specific_fields":{"citations":[[` + c + `]]}}}]}`
	var resp openai.ChatCompletionResponse
	extras, err := normalize(&resp, []byte(body), DefaultWireItems)
	require.NoError(t, err)
	want := WireExtras{Choices: []ChoiceExtras{{Index: 1, Annotations: []json.RawMessage{json.RawMessage(a)}, Citations: []json.RawMessage{json.RawMessage(c)}}}}
	if !reflect.DeepEqual(extras, want) {
		t.Fatalf("body: %+v", extras)
	}
	if got := extras.Choice(0); len(got.Annotations)+len(got.Citations) != 0 || got.Index != 0 {
		t.Fatalf("choice 0: %+v", got)
	}

	var acc assembly
	for _, chunk := range []string{
		`{"choices":[{"index":1,"delta":{"content":"b","provider_specific_fields":{"citation":` + c + `}}},{"index":0,"delta":{"content":"a"}}]}`,
		`{"choices":[{"index":1,"delta":{"annotations":[` + a + `]}}]}`,
		`{"choices":[{"index":1,"delta":{"annotations":[` + a + `]}}]}`, // a repeat
	} {
		var w wireChunk
		if err := json.Unmarshal([]byte(chunk), &w); err != nil {
			t.Fatal(err)
		}
		if err := acc.add(&w); err != nil {
			t.Fatal(err)
		}
	}
	if got := acc.extras(); !reflect.DeepEqual(got, want) {
		t.Fatalf("stream: %+v", got)
	}
}

// recordedEvents returns the data lines of every recorded stream in
// testdata/providers.
func recordedEvents(tb testing.TB) [][]byte {
	files, err := filepath.Glob("testdata/providers/*.sse")
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
