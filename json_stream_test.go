package adapter_test

import (
	"context"
	"encoding/json"
	"testing"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/lmtest"
	"github.com/sigwire/adapter/signature"
)

// streamWith feeds text to a field stream in pieces of size bytes and
// collects the deltas per field, a replacement dropping those before it.
func streamWith(fs adapter.FieldStream, text string, size int) map[string][]string {
	got := map[string][]string{}
	var ds []adapter.FieldDelta
	add := func(ds []adapter.FieldDelta) {
		for _, d := range ds {
			if d.Replace {
				got[d.Field] = nil
			}
			got[d.Field] = append(got[d.Field], d.Text)
		}
	}
	for i := 0; i < len(text); i += size {
		ds = fs.Write(ds[:0], text[i:min(i+size, len(text))])
		add(ds)
	}
	add(fs.Close(ds[:0]))
	return got
}

func join(parts []string) string {
	s := ""
	for _, p := range parts {
		s += p
	}
	return s
}

func TestJSONFieldStream(t *testing.T) {
	sig := mustParse(t, "question -> reasoning, answer: int, tags: list[str]")
	reply := "Sure:\n```json\n{\"reasoning\": \"Caf\\u00e9 \\\"quoted\\\"\\nnext line, é\", \"answer\": 42, \"tags\": [\"a\", \"b,c\"]}\n```"
	for _, size := range []int{1, 2, 3, 5, 7, 16, 64} {
		got := streamWith(adapter.JSON{}.NewFieldStream(sig), reply, size)
		assert.Equal(t, "Café \"quoted\"\nnext line, é", join(got["reasoning"]), "size %d", size)
		assert.Equal(t, []string{"42"}, got["answer"], "size %d: a number is reported once complete", size)
		assert.Equal(t, []string{`["a", "b,c"]`}, got["tags"], "size %d", size)
		if size == 1 {
			assert.Greater(t, len(got["reasoning"]), 5, "the string streams as it grows")
		}
	}
}

// TestJSONFieldStreamSingleQuotes: a non-string value ends where Parse
// reads its end: a Python-style single-quoted string inside it (where a
// value may start) holds brackets and commas that are text; an apostrophe
// in a bare word opens no string.
func TestJSONFieldStreamSingleQuotes(t *testing.T) {
	sig := mustParse(t, "question -> tags: list[str], answer")
	for reply, tags := range map[string]string{
		`{"tags": ['a]b', 'c'], "answer": "x"}`:    `['a]b', 'c']`,
		`{"tags": ['a, b', "c'd"], "answer": "x"}`: `['a, b', "c'd"]`,
		`{"tags": ['it\'s]', 'c'], "answer": "x"}`: `['it\'s]', 'c']`,
		`{"tags": [don't], "answer": "x"}`:         `[don't]`,
	} {
		for _, size := range []int{1, 2, 3, 64} {
			got := streamWith(adapter.JSON{}.NewFieldStream(sig), reply, size)
			assert.Equal(t, []string{tags}, got["tags"], "%s, size %d", reply, size)
			assert.Equal(t, "x", join(got["answer"]), "%s, size %d", reply, size)
		}
	}
}

func TestJSONStreamCall(t *testing.T) {
	sig := mustParse(t, "question -> answer, score: float")
	reply := `{"answer": "Paris is the capital of France.", "score": 0.9}`
	srv := lmtest.NewServer(lmtest.Text(reply).ChunkSize(3))
	defer srv.Close()
	fields, _, last, err := collect(t, adapter.Stream(context.Background(), srv.Client(), sig, nil, adapter.Values{"question": "q"},
		adapter.UseAdapter(adapter.JSON{}), adapter.WithRequest(openai.ChatCompletionRequest{Model: "gpt-4o"})))
	require.NoError(t, err)
	assert.Equal(t, "Paris is the capital of France.", fields["answer"])
	assert.Equal(t, "0.9", fields["score"])
	require.True(t, last.Done)
	assert.Equal(t, adapter.Values{"answer": "Paris is the capital of France.", "score": 0.9}, last.Result.Outputs[0])
	assert.Equal(t, adapter.ModeJSONSchema, last.Result.Mode)
}

// FuzzJSONStream: for any reply that is one JSON object, the joined deltas
// of each string member equal the member's decoded value; through Stream,
// a consumer that applies deltas and replacements ends with each output's
// value, whatever the reply (fuzzDeltasAreTheValue): a str output's text,
// or text ParseValue reads as the typed output's value. The size's bit 64
// picks the signature: two str outputs, or str beside int, list, dict and
// Optional outputs.
func FuzzJSONStream(f *testing.F) {
	f.Add(`{"answer": "a\u00e9\\\"b", "n": [1, {"x": "}"}]}`, uint8(1))
	f.Add(`{"answer": "x", "other": {"answer": "y"}}`, uint8(2))
	f.Add(`{"answer": "\ud83d\ude00 \ud800 x \udc00 ÿþ é"}`, uint8(1))
	f.Add(`{"answer": "The document says "Help here" and then…"}`, uint8(1))
	f.Add(`{"answer": "Lyon", "n": 1}`+"\nCorrection: "+`{"answer": "Paris", "n": 1}`, uint8(3))
	f.Add(`{"answer": "a "b": c", "n": 1}`, uint8(2))
	f.Add(`"{\"answer\": \"Paris\", \"n\": 1}"`, uint8(1))
	f.Add(`{"answer": "x", "n": 7, "tags": ["a", "b]"], "meta": {"k": 1}, "maybe": null}`, uint8(64+3))
	f.Add(`{"answer": "x", "n": "7", "tags": "['a', 'b']", "meta": "{'k': 1}", "maybe": "true"}`, uint8(64+1))
	f.Add(`{"answer": "x", "n": 7.0, "tags": [], "meta": {}, "maybe": false} {"answer": "y", "n": 8}`, uint8(64+5))
	f.Add("```json\n{\"n\": -0, \"tags\": [\"\\u00e9\"], \"answer\": \"é\", \"meta\": {\"\": 2}, \"maybe\": True}\n```", uint8(64+2))
	strs := must(signature.Parse("question -> answer, n"))
	typed := must(signature.Parse("question -> answer, n: int, tags: list[str], meta: dict[str, int], maybe: Optional[bool]"))
	srv := newValueServer(f)
	f.Fuzz(func(t *testing.T, text string, size uint8) {
		sig := strs
		if size&64 != 0 {
			sig = typed
		}
		got := streamWith(adapter.JSON{}.NewFieldStream(sig), text, int(size%64)+1)
		fuzzDeltasAreTheValue(t, srv, adapter.JSON{}, sig, text, int(size%64)+1)
		var obj map[string]json.RawMessage
		if json.Unmarshal([]byte(text), &obj) != nil {
			return
		}
		raw, ok := obj["answer"]
		var want string
		if !ok || len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &want) != nil {
			return // no string member (null is none: Parse refuses it for str)
		}
		if n := countKey(text); n != 1 {
			return // duplicated keys: encoding/json keeps the last
		}
		if join(got["answer"]) != want {
			t.Fatalf("stream %q, decoded %q", join(got["answer"]), want)
		}
	})
}

func countKey(text string) int {
	n := 0
	for i := 0; i+len(`"answer"`) <= len(text); i++ {
		if text[i:i+len(`"answer"`)] == `"answer"` {
			n++
		}
	}
	return n
}

// BenchmarkJSONStream streams the reference JSON reply in 16-byte chunks;
// compare with BenchmarkJSONParse.
func BenchmarkJSONStream(b *testing.B) {
	b.SetBytes(int64(len(benchJSONReply)))
	b.ReportAllocs()
	for b.Loop() {
		fs := adapter.JSON{}.NewFieldStream(benchSig)
		var ds []adapter.FieldDelta
		for i := 0; i < len(benchJSONReply); i += 16 {
			ds = fs.Write(ds[:0], benchJSONReply[i:min(i+16, len(benchJSONReply))])
		}
		fs.Close(ds[:0])
	}
}

// BenchmarkXMLStream streams the reference XML reply in 16-byte chunks;
// compare with BenchmarkXMLParse.
func BenchmarkXMLStream(b *testing.B) {
	b.SetBytes(int64(len(benchXMLReply)))
	b.ReportAllocs()
	for b.Loop() {
		fs := adapter.XML{}.NewFieldStream(benchSig)
		var ds []adapter.FieldDelta
		for i := 0; i < len(benchXMLReply); i += 16 {
			ds = fs.Write(ds[:0], benchXMLReply[i:min(i+16, len(benchXMLReply))])
		}
		fs.Close(ds[:0])
	}
}
