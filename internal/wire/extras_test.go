package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"testing"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/require"
)

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
		extras, err := normalize(&resp, body, defaultItems)
		if err != nil {
			t.Fatalf("%s: %v", msg, err)
		}
		// Each item is read once now; what it gives is what the old reading
		// gave (every item decoded, compacted, then escaped), and a choice
		// over the limit is an error exactly when it holds more items.
		var wb0 wireBody
		if json.Unmarshal(body, &wb0) == nil && len(wb0.Choices) == 1 {
			want := referenceExtras(wb0.Choices[0].Message.wireExtras)
			got := choiceOf(extras, 0)
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
		acc := assembly{maxItems: defaultItems}
		if json.Unmarshal(chunk, &c) == nil {
			if err := acc.add(&c); err != nil {
				t.Fatalf("%s: %v", msg, err)
			}
		}
		streamed := acc.extras()
		for _, e := range append(extras, streamed...) {
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
		var back []ChoiceExtras
		if err := json.Unmarshal(j, &back); err != nil || !reflect.DeepEqual(back, extras) && len(extras) > 0 {
			t.Fatalf("%s: extras %+v read back as %+v (%v)", msg, extras, back, err)
		}
		var wb wireBody
		if json.Unmarshal(body, &wb) != nil || json.Unmarshal(chunk, &c) != nil {
			return // the reply itself is unreadable; nothing to compare
		}
		b, s := choiceOf(extras, 0), choiceOf(streamed, 0)
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

// defaultItems is the root's DefaultWireItems, the bound the pipeline
// passes unless the call's Limits change it.
const defaultItems = 1024

// choiceOf is the root's WireExtras.Choice: the extras of the choice with
// the given index (none when it carried none).
func choiceOf(xs []ChoiceExtras, index int) ChoiceExtras {
	for _, c := range xs {
		if c.Index == index {
			return c
		}
	}
	return ChoiceExtras{Index: index}
}

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
	extras, err := normalize(&resp, []byte(body), defaultItems)
	require.NoError(t, err)
	want := []ChoiceExtras{{Index: 1, Annotations: []json.RawMessage{json.RawMessage(a)}, Citations: []json.RawMessage{json.RawMessage(c)}}}
	if !reflect.DeepEqual(extras, want) {
		t.Fatalf("body: %+v", extras)
	}
	if got := choiceOf(extras, 0); len(got.Annotations)+len(got.Citations) != 0 || got.Index != 0 {
		t.Fatalf("choice 0: %+v", got)
	}

	acc := assembly{maxItems: defaultItems}
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
