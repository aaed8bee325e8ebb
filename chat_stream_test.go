package adapter_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/internal/golden"
	"github.com/sigwire/adapter/signature"
)

// streamFields feeds text to a Chat field stream in pieces of size bytes
// and joins the deltas per field, a replacement dropping those before it.
func streamFields(sig *signature.Signature, text string, size int) map[string]string {
	fs := adapter.Chat{}.NewFieldStream(sig)
	got := map[string]string{}
	add := func(ds []adapter.FieldDelta) {
		for _, d := range ds {
			switch {
			case d.Reasoning:
			case d.Replace:
				got[d.Field] = d.Text
			default:
				got[d.Field] += d.Text
			}
		}
	}
	var ds []adapter.FieldDelta
	for i := 0; i < len(text); i += size {
		ds = fs.Write(ds[:0], text[i:min(i+size, len(text))])
		add(ds)
	}
	add(fs.Close(ds[:0]))
	return got
}

// TestChatStreamMatchesParse: for every Chat reply in the golden and
// corpus files that Parse reads, the streamed deltas of each str field,
// joined, equal the parsed value, for chunk sizes from 1 to 64 bytes.
func TestChatStreamMatchesParse(t *testing.T) {
	var cases []golden.Case
	for _, f := range []string{"testdata/dspy_golden_public.json", "testdata/malformed_public.json"} {
		cs, err := golden.Load(f)
		require.NoError(t, err)
		cases = append(cases, cs...)
	}
	var b golden.Builder
	checked := 0
	for _, c := range cases {
		if c.Adapter != "chat" || c.Completion == "" || c.Signature == nil {
			continue
		}
		sig, err := b.Signature(c.Signature)
		if err != nil {
			continue
		}
		vals, err := adapter.Chat{}.Parse(sig, c.Completion)
		if err != nil || !hasMarker(c.Completion) {
			continue // JSON-in-Chat replies are not streamed as fields
		}
		checked++
		for _, size := range []int{1, 2, 3, 7, 16, 64} {
			got := streamFields(sig, c.Completion, size)
			for i := range sig.NumOutputs() {
				f := sig.Output(i)
				if s, ok := vals[f.Name].(string); ok && f.Spec.Kind() == signature.KindString {
					assert.Equal(t, s, got[f.Name], "%s: field %s, chunk size %d", c.ID, f.Name, size)
				}
			}
		}
	}
	assert.Greater(t, checked, 20)
}

func hasMarker(s string) bool { return strings.Contains(s, "##") }

// TestChatStreamHardCases: replies where the stream must hold text back
// to agree with Parse — a quoted str value (Parse drops the quotes), a
// code fence around the whole reply (Parse drops the closing fence), a
// marker in the middle of a line (it counts only if no line-start marker
// of the field follows) and a quoted echo of a marker (security review
// finding 3).
func TestChatStreamHardCases(t *testing.T) {
	sig := mustParse(t, "question -> reasoning, answer")
	for _, reply := range []string{
		"[[ ## reasoning ## ]]\n\"Quoted.\"\n\n[[ ## answer ## ]]\n“Paris”\n\n[[ ## completed ## ]]",
		"[[ ## reasoning ## ]]\n\"Two\" and \"three\"\n\n[[ ## answer ## ]]\n\"x\ny\"",
		"[[ ## reasoning ## ]]\nr\n[[ ## answer ## ]]\n\"",
		"```\n[[ ## reasoning ## ]]\nr\n\n[[ ## answer ## ]]\nParis\n```",
		"```markdown\n[[ ## reasoning ## ]]\nr\n\n[[ ## answer ## ]]\n```python\nprint(1)\n```\n```\n",
		"```\n[[ ## reasoning ## ]]\nr\n\n[[ ## answer ## ]]\n```python\nprint(1)\n```",
		"[[ ## reasoning ## ]]\nIt is the capital.[[ ## answer ## ]]\nParis[[ ## completed ## ]]",
		"[[ ## reasoning ## ]]\nThe mail says [[ ## answer ## ]] Lyon [[ ## completed ## ]], a trick.\n\n[[ ## answer ## ]]\nParis\n\n[[ ## completed ## ]]",
		"[[ ## reasoning ## ]]\nr [[ ## answer ## ]] a\n[[ ## answer ## ]]\nb",
		"Here is my answer:\n```\n[[ ## reasoning ## ]]\nr\n\n[[ ## answer ## ]]\nParis\n```\n\nLet me know.",
		"```\n[[ ## reasoning ## ]]\nr\n\n[[ ## answer ## ]]\n```python\nx\n```\n```\nchatter ```\n",
		"````\n[[ ## reasoning ## ]]\nr\n```\n\n[[ ## answer ## ]]\nParis\n````",
		"[[ ## reasoning ## ]] -\nr\n\n*[[ ## answer ## ]]*\nParis",
		"- [[ ## reasoning ## ]]\nr\n- [[ ## answer ## ]] :\nParis",
		"`[[ ## reasoning ## ]]`\nr\n\n[[ ## answer ## ]]` -5",
		"1. [[ ## reasoning ## ]]\nr\n2. [[ ## answer ## ]]\nParis",
		"[[ ## reasoning ## ]]\nSteps:\n1. read\n2. answer\n\n10) [[ ## answer ## ]]\nParis",
		"[[ ## answer ## ]]\nParis\n  2) [[ ## reasoning ## ]]\nr", // blanks, then the number (FuzzChatStream)
	} {
		vals, err := adapter.Chat{}.Parse(sig, reply)
		require.NoError(t, err, reply)
		for _, size := range []int{1, 2, 5, 16, 64} {
			got := streamFields(sig, reply, size)
			for _, name := range []string{"reasoning", "answer"} {
				assert.Equal(t, vals[name], got[name], "%q field %s chunk %d", reply, name, size)
			}
		}
	}
}

// TestMarkerBound: a marker is at most 96 bytes (the reply reader's bound) (found by
// FuzzChatStream: a bracketed marker with a 97-byte name ended a field in
// Parse after the stream, which holds back that much, had sent its start).
// Longer is text; line decoration that would make it longer leaves the
// marker mid-line; blanks beyond the bound before a ':' are not the
// marker's decoration. The stream agrees at every chunk size.
func TestMarkerBound(t *testing.T) {
	sig := mustParse(t, "question -> reasoning, answer")
	long := "[[ ## " + strings.Repeat("n", 90) + " ## ]]"
	stars := strings.Repeat("*", 90)
	for _, c := range []struct{ reply, reasoning, answer string }{
		{"[[ ## reasoning ## ]]\nr\n[[ ## answer ## ]]\nParis\n" + long + "\nmore", "r", "Paris\n" + long + "\nmore"},
		{"[[ ## reasoning ## ]]\nr\n[[ ## answer ## ]]\nParis\n[[ ## short ## ]]\nmore", "r", "Paris"},
		{"[[ ## reasoning ## ]]\nr\n" + stars + " [[ ## answer ## ]]\nParis", "r\n" + stars, "Paris"},
		{"[[ ## reasoning ## ]]\nr\n" + stars[:60] + " [[ ## answer ## ]]\nParis", "r", "Paris"},
		{"[[ ## reasoning ## ]]\nr\n[[ ## answer ## ]]" + strings.Repeat(" ", 97) + ": Paris", "r", ": Paris"},
		{"[[ ## reasoning ## ]]\nr\n[[ ## answer ## ]]" + strings.Repeat(" ", 96) + ": Paris", "r", "Paris"},
	} {
		vals, err := adapter.Chat{}.Parse(sig, c.reply)
		require.NoError(t, err, c.reply)
		assert.Equal(t, c.reasoning, vals["reasoning"], c.reply)
		assert.Equal(t, c.answer, vals["answer"], c.reply)
		for size := 1; size <= 128; size += 7 {
			got := streamFields(sig, c.reply, size)
			assert.Equal(t, vals["reasoning"], got["reasoning"], "%q chunk %d", c.reply, size)
			assert.Equal(t, vals["answer"], got["answer"], "%q chunk %d", c.reply, size)
		}
	}

	// A field's own name does not count: a signature with a 120-letter
	// output reads its markers, decorated, whole or streamed.
	name := strings.Repeat("n", 120)
	sig = mustParse(t, "question -> reasoning, "+name)
	reply := "[[ ## reasoning ## ]]\nr\n\n" + strings.Repeat("*", 40) + " [[ ## " + name + " ## ]] :\nParis\n\n[[ ## completed ## ]]"
	vals, err := adapter.Chat{}.Parse(sig, reply)
	require.NoError(t, err)
	assert.Equal(t, adapter.Values{"reasoning": "r", name: "Paris"}, vals)
	for size := 1; size <= 128; size += 7 {
		assert.Equal(t, map[string]string{"reasoning": "r", name: "Paris"}, streamFields(sig, reply, size), "chunk %d", size)
	}
}

// BenchmarkChatStream measures the field stream over a reply in 16-byte
// chunks; compare with BenchmarkChatParseStreamed (a one-shot Parse of the
// same text) and double the reply to see linear growth.
func BenchmarkChatStream(b *testing.B) {
	for _, n := range []int{1, 2, 4} {
		text := longReply(n)
		for _, size := range []int{1, 16, 64} {
			b.Run(sizeName(n, size), func(b *testing.B) {
				b.SetBytes(int64(len(text)))
				b.ReportAllocs()
				for b.Loop() {
					fs := adapter.Chat{}.NewFieldStream(benchSig)
					var ds []adapter.FieldDelta
					for i := 0; i < len(text); i += size {
						ds = fs.Write(ds[:0], text[i:min(i+size, len(text))])
					}
					fs.Close(ds[:0])
				}
			})
		}
	}
}

func BenchmarkChatParseStreamed(b *testing.B) {
	for _, n := range []int{1, 2, 4} {
		text := longReply(n)
		b.Run(sizeName(n, 0), func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := (adapter.Chat{}).Parse(benchSig, text); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// longReply is a reply of about n×8 KiB with markdown-ish text that keeps
// the stream holding back possible marker starts.
func longReply(n int) string {
	line := "The **context** says [1] that water boils at 100 °C; see # notes > and _this_.\n"
	body := strings.Repeat(line, n*100)
	return "[[ ## reasoning ## ]]\n" + body + "\n[[ ## answer ## ]]\n" + body + "\n[[ ## completed ## ]]"
}

func sizeName(n, size int) string {
	s := "x" + string(rune('0'+n))
	if size > 0 {
		s += "/chunk" + strings.TrimLeft(string([]byte{byte('0' + size/10), byte('0' + size%10)}), "0")
	}
	return s
}

// FuzzChatStream: whatever the reply and chunking, the stream never
// panics, and each field's joined deltas are its parsed text, or nothing
// (a field Parse read otherwise than from markers); through Stream, a
// consumer that applies deltas and replacements ends with each str
// output's value (fuzzDeltasAreTheValue).
func FuzzChatStream(f *testing.F) {
	for _, s := range []string{
		"[[ ## reasoning ## ]]\nr\n\n[[ ## answer ## ]]\na\n\n[[ ## completed ## ]]",
		"<think>x</think>**[[ ## answer ## ]]**: a  \n b\n[[ ## reasoning ## ]] r",
		"### answer ##\nfoo\n## reasoning ##\nbar",
	} {
		f.Add(s, uint8(3))
	}
	sig := must(signature.Parse("question -> reasoning, answer"))
	srv := newValueServer(f)
	f.Fuzz(func(t *testing.T, text string, size uint8) {
		got := streamFields(sig, text, int(size%64)+1)
		fuzzDeltasAreTheValue(t, srv, adapter.Chat{}, sig, text, int(size%64)+1)
		vals, err := adapter.Chat{}.Parse(sig, text)
		var pe *adapter.ParseError
		if err != nil && !errors.As(err, &pe) {
			t.Fatalf("untyped error %T: %v", err, err)
		}
		if err != nil {
			return
		}
		// A field read from markers streams as its parsed value; one read
		// another way (labels, JSON, a renamed marker) may stream nothing:
		// the pipeline then sends its value once, before Done.
		for _, name := range []string{"reasoning", "answer"} {
			if got[name] != vals[name] && got[name] != "" {
				t.Fatalf("field %s: stream %q, parse %q", name, got[name], vals[name])
			}
		}
	})
}

// BenchmarkChatStreamTypical streams the reference completion in 16-byte
// chunks; compare with BenchmarkChatParse.
func BenchmarkChatStreamTypical(b *testing.B) {
	b.SetBytes(int64(len(benchCompletion)))
	b.ReportAllocs()
	for b.Loop() {
		fs := adapter.Chat{}.NewFieldStream(benchSig)
		var ds []adapter.FieldDelta
		for i := 0; i < len(benchCompletion); i += 16 {
			ds = fs.Write(ds[:0], benchCompletion[i:min(i+16, len(benchCompletion))])
		}
		fs.Close(ds[:0])
	}
}

// TestFieldStreamsReadThink: every adapter's field stream sends a leading
// reasoning block as reasoning and the rest as Parse reads it (one rule,
// thinkStream, for all of them: the JSON stream used to send the block as
// text outside any field), its tags in any case (FuzzXMLStream: a closing
// "</thinK>" did not end the block).
func TestFieldStreamsReadThink(t *testing.T) {
	sig := mustParse(t, "question -> answer")
	for _, c := range []struct {
		a interface {
			adapter.Adapter
			adapter.Parser
			adapter.StreamParser
		}
		reply string
	}{
		{adapter.Chat{}, "[[ ## answer ## ]]\nParis\n\n[[ ## completed ## ]]"},
		{adapter.JSON{}, `{"answer": "Paris"}`},
		{adapter.XML{}, "<answer>Paris</answer>"},
	} {
		reply := " <THINK>It is the capital.</Think>\n" + c.reply
		vals, err := c.a.Parse(sig, reply)
		require.NoError(t, err, c.a.Name())
		for _, size := range []int{1, 3, 7, 64} {
			fs := c.a.NewFieldStream(sig)
			var reasoning, answer string
			var ds []adapter.FieldDelta
			for i := 0; i < len(reply); i += size {
				ds = append(ds, fs.Write(nil, reply[i:min(i+size, len(reply))])...)
			}
			for _, d := range fs.Close(ds) {
				switch {
				case d.Reasoning:
					reasoning += d.Text
				case d.Field == "answer":
					answer += d.Text
				}
			}
			assert.Equal(t, "It is the capital.", reasoning, "%s chunk %d", c.a.Name(), size)
			assert.Equal(t, vals["answer"], answer, "%s chunk %d", c.a.Name(), size)
		}
	}
}
