package adapter_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	adapter "github.com/sigwire/adapter"
)

func TestChatParseVariants(t *testing.T) {
	sig := mustParse(t, "question -> reasoning, answer")
	want := adapter.Values{"reasoning": "Because.", "answer": "Paris"}
	for name, reply := range map[string]string{
		"canonical":       "[[ ## reasoning ## ]]\nBecause.\n\n[[ ## answer ## ]]\nParis\n\n[[ ## completed ## ]]",
		"crlf":            "[[ ## reasoning ## ]]\r\nBecause.\r\n\r\n[[ ## answer ## ]]\r\nParis\r\n\r\n[[ ## completed ## ]]",
		"bold":            "**[[ ## reasoning ## ]]**\nBecause.\n\n**[[ ## answer ## ]]**\nParis",
		"heading":         "### [[ ## reasoning ## ]]\nBecause.\n\n### [[ ## answer ## ]]\nParis",
		"tight spacing":   "[[## reasoning ##]]\nBecause.\n[[##answer##]]\nParis",
		"case":            "[[ ## Reasoning ## ]]\nBecause.\n[[ ## ANSWER ## ]]\nParis",
		"colon":           "[[ ## reasoning ## ]]: Because.\n[[ ## answer ## ]]: Paris",
		"bold colon":      "**[[ ## reasoning ## ]]:** Because.\n**[[ ## answer ## ]]:** Paris",
		"mid-line":        "[[ ## reasoning ## ]] Because.[[ ## answer ## ]] Paris[[ ## completed ## ]]",
		"no brackets":     "## reasoning ##\nBecause.\n\n## answer ##\nParis\n\n## completed ##",
		"single brackets": "[ ## reasoning ## ]\nBecause.\n[ ## answer ## ]\nParis",
		"preamble":        "Sure! Here is my answer.\n\n[[ ## reasoning ## ]]\nBecause.\n[[ ## answer ## ]]\nParis",
		"think":           "<think>\nMaybe [[ ## answer ## ]] Lyon?\n</think>\n[[ ## reasoning ## ]]\nBecause.\n[[ ## answer ## ]]\nParis",
		"harmony":         "<|channel|>analysis<|message|>thinking<|end|><|start|>assistant<|channel|>final<|message|>[[ ## reasoning ## ]]\nBecause.\n[[ ## answer ## ]]\nParis<|return|>",
		"chatter after":   "[[ ## reasoning ## ]]\nBecause.\n[[ ## answer ## ]]\nParis\n[[ ## completed ## ]]\n\nUser: next question\n[[ ## answer ## ]]\nRome",
		"echoed input":    "[[ ## question ## ]]\nWhere?\n[[ ## reasoning ## ]]\nBecause.\n[[ ## answer ## ]]\nParis",
		"same repeat":     "[[ ## reasoning ## ]]\nBecause.\n[[ ## answer ## ]]\nParis\n[[ ## answer ## ]]\nParis",
		"empty then full": "[[ ## answer ## ]]\n\n[[ ## reasoning ## ]]\nBecause.\n[[ ## answer ## ]]\nParis",
		"json":            `{"reasoning": "Because.", "answer": "Paris"}`,
		"fenced json":     "Here you go:\n```json\n{\"reasoning\": \"Because.\", \"answer\": \"Paris\"}\n```",
		"json key case":   `{"Reasoning": "Because.", "ANSWER": "Paris"}`,
	} {
		t.Run(name, func(t *testing.T) {
			got, err := adapter.Chat{}.Parse(sig, reply)
			require.NoError(t, err)
			assert.Equal(t, want, got)
		})
	}
}

func TestChatParseErrors(t *testing.T) {
	sig := mustParse(t, "question -> reasoning, answer: int")
	tests := []struct {
		name, reply, field string
		err                error
		partial            adapter.Values
	}{
		{"missing", "[[ ## reasoning ## ]]\nthinking...", "answer", adapter.ErrMissingField, adapter.Values{"reasoning": "thinking..."}},
		{"no markers", "The answer is 42.", "reasoning", adapter.ErrMissingField, adapter.Values{}},
		{"conflict", "[[ ## reasoning ## ]]\nx\n[[ ## answer ## ]]\n42\n[[ ## answer ## ]]\n44", "answer", adapter.ErrAmbiguous, nil},
		{"unclosed think", "<think>\nstill thinking [[ ## answer ## ]] 4", "reasoning", adapter.ErrMissingField, adapter.Values{}},
		{"bad int", "[[ ## reasoning ## ]]\nx\n[[ ## answer ## ]]\na lot", "answer", nil, adapter.Values{"reasoning": "x"}},
		{"marker in prose", "I will write ## answer ## next: 42", "reasoning", adapter.ErrMissingField, adapter.Values{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := adapter.Chat{}.Parse(sig, tt.reply)
			var pe *adapter.ParseError
			require.ErrorAs(t, err, &pe)
			assert.Equal(t, "chat", pe.Adapter)
			assert.Equal(t, tt.field, pe.Field)
			assert.Equal(t, tt.reply, pe.Completion)
			if tt.err != nil {
				assert.ErrorIs(t, err, tt.err)
			}
			if tt.partial != nil {
				assert.Equal(t, tt.partial, pe.Partial)
			}
		})
	}
}

func TestChatParseDefaults(t *testing.T) {
	sig := mustParse(t, "q -> answer, note: Optional[str], n: Optional[int], tags: Optional[list[str]]")
	got, err := adapter.Chat{}.Parse(sig, "[[ ## answer ## ]]\nyes\n[[ ## n ## ]]\nNone")
	require.NoError(t, err)
	assert.Equal(t, "yes", got["answer"])
	assert.Equal(t, (*string)(nil), got["note"])
	assert.Equal(t, (*int)(nil), got["n"])
	assert.Equal(t, []string(nil), got["tags"])
	assert.Len(t, got, 4)
}

func TestChatFormatDoesNotMutate(t *testing.T) {
	sig := mustParse(t, "question, context: list[str] -> answer: int")
	inputs := adapter.Values{"question": "q", "context": []string{"a", "b"}}
	demos := []adapter.Values{{"question": "q1", "context": []string{"c"}, "answer": 1}, {"question": "q2", "answer": 2}}
	before := sig.String()
	_, err := adapter.Chat{}.Format(sig, demos, inputs)
	require.NoError(t, err)
	assert.Equal(t, adapter.Values{"question": "q", "context": []string{"a", "b"}}, inputs)
	assert.Equal(t, []adapter.Values{{"question": "q1", "context": []string{"c"}, "answer": 1}, {"question": "q2", "answer": 2}}, demos)
	assert.Equal(t, before, sig.String())
}

// TestChatRoundTrip parses Chat's own assistant message back.
func TestChatRoundTrip(t *testing.T) {
	sig := mustParse(t, "q -> text, n: int, score: float, ok: bool, tags: list[str], m: dict[str, int], lit: Literal['a', 'b c']")
	vals := adapter.Values{
		"text":  "line one\n\nline [[ two ]] with «quotes» and \"json\" ## hash ##",
		"n":     -7,
		"score": 0.25,
		"ok":    true,
		"tags":  []string{"x", "y, z", ""},
		"m":     map[string]int{"k": 1},
		"lit":   "b c",
	}
	msgs, err := adapter.Chat{}.Format(sig, []adapter.Values{{"q": "demo", "text": vals["text"], "n": -7, "score": 0.25, "ok": true, "tags": vals["tags"], "m": vals["m"], "lit": "b c"}}, adapter.Values{"q": "x"})
	require.NoError(t, err)
	got, err := adapter.Chat{}.Parse(sig, msgs[2].Content)
	require.NoError(t, err)
	assert.Equal(t, vals, got)
}

func FuzzChatParse(f *testing.F) {
	addCorpusSeeds(f, "chat")
	for _, c := range []string{
		"[[ ## reasoning ## ]]\nBecause.\n\n[[ ## answer ## ]]\n42\n\n[[ ## completed ## ]]",
		"**[[ ## answer ## ]]**: 7",
		"## answer ##\n1",
		"<think>x</think>[[ ## answer ## ]]\n2",
		"```json\n{\"answer\": 3, \"reasoning\": \"r\"}\n```",
		"[[ ## answer ## ]]\n1\n[[ ## answer ## ]]\n2",
		"<|channel|>final<|message|>[[ ## answer ## ]] 5",
	} {
		f.Add(c)
	}
	sig := mustParse(f, "question -> reasoning, answer: int")
	f.Fuzz(func(t *testing.T, s string) {
		vals, err := adapter.Chat{}.Parse(sig, s)
		if err != nil {
			var pe *adapter.ParseError
			if !assert.ErrorAs(t, err, &pe) || pe.Completion != s {
				t.Fatalf("error without the raw text: %v", err)
			}
			return
		}
		if len(vals) != 2 {
			t.Fatalf("want every output, got %v", vals)
		}
		if _, ok := vals["answer"].(int); !ok {
			t.Fatalf("answer is %T", vals["answer"])
		}
		if _, ok := vals["reasoning"].(string); !ok {
			t.Fatalf("reasoning is %T", vals["reasoning"])
		}
	})
}
