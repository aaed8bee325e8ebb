package reply

import (
	"errors"
	"strings"
	"testing"

	"github.com/sigwire/adapter/internal/jsonx"
	"github.com/sigwire/adapter/signature"
)

func mustSig(t testing.TB, spec string) *signature.Signature {
	t.Helper()
	sig, err := signature.Parse(spec)
	if err != nil {
		t.Fatal(err)
	}
	return sig
}

func TestReadShapes(t *testing.T) {
	sig := mustSig(t, "question -> reasoning, answer: int")
	for _, tc := range []struct {
		reply  string
		prefer Shape
		src    Source
	}{
		{"[[ ## reasoning ## ]]\nr\n\n[[ ## answer ## ]]\n4", Markers, Marker},
		{"[[ ## reasoning ## ]]\nr\n\n[[ ## answer ## ]]\n4", JSON, Marker},
		{`{"reasoning": "r", "answer": 4}`, Markers, Member},
		{`{"reasoning": "r", "answer": "4"}`, JSON, String},
		{"<reasoning>r</reasoning><answer>4</answer>", Markers, Element},
		{"Reasoning: r\nAnswer: 4", XML, Label},
	} {
		fields := make([]Field, 2)
		if err := Read(sig, tc.reply, tc.prefer, fields, nil); err != nil {
			t.Fatalf("%q: %v", tc.reply, err)
		}
		if fields[1].Source != tc.src {
			t.Errorf("%q: answer from %v, want %v", tc.reply, fields[1].Source, tc.src)
		}
	}
}

// FuzzRead: whatever the reply, Read returns (no panic), its errors are
// *Error values, and every field it fills has a source.
func FuzzRead(f *testing.F) {
	for _, s := range []string{
		"[[ ## reasoning ## ]]\nr\n\n[[ ## answer ## ]]\n4\n\n[[ ## completed ## ]]",
		"```\n[[ ## answer ## ]]\nx\n```\nchatter",
		`{"reasoning": "r", "answer": 4}`, `{"answer": Paris is, "n": 1}`, "{'a': [1, 2}",
		"<reasoning>r</reasoning><answer>4", "Reasoning: r\n## Answer\n4", "<think>x</think>[[ # answer ## ]] 4",
		"[[ ## next_tool ## ]]\nsearch", "Draft {\"answer\": 1}\nCorrection: {\"answer\": 2}",
		// Issue 45: spellings of completed, mixed styles, repeated values.
		"Paris [[ ##  completed  ## ]]", "[[ ##\tcompleted\t## ]]", "[[ ## reasoning ## ]]\nr\n\n## answer\n370",
		"[[ ## reasoning ## ]]\nr\n<answer>4</answer>", "{\"answer\": 1.5, \"answer\": 15e-1 /* c */,}",
		"<tags><item>a</item></tags><tags><item>a</item></tags>",
	} {
		f.Add(s, uint8(0))
	}
	sigs := []*signature.Signature{
		mustSig(f, "question -> reasoning, answer: int"),
		mustSig(f, "question -> answer"),
		mustSig(f, "q -> next_thought, next_tool_name, tags: list[str]"),
	}
	f.Fuzz(func(t *testing.T, reply string, pick uint8) {
		sig := sigs[int(pick)%len(sigs)]
		fields := make([]Field, sig.NumOutputs())
		err := Read(sig, reply, Shape(pick/4%3), fields, new(jsonx.Budget))
		var re *Error
		if err != nil && !errors.As(err, &re) {
			t.Fatalf("%T %v", err, err)
		}
		for _, fl := range fields {
			if fl.Source == Missing && (fl.Text != "" || fl.Value != nil) {
				t.Fatalf("content without a source: %#v", fl)
			}
			if fl.Source == Bare && strings.TrimSpace(fl.Text) == "" {
				t.Fatalf("an empty bare answer")
			}
		}
	})
}
