package adapter_test

import (
	"strings"
	"testing"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/signature"
)

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// The reference workload of DESIGN.md: question, context -> reasoning,
// answer with 3 demos.
var (
	benchSig   = must(signature.Parse("question, context -> reasoning, answer"))
	benchDemos = []adapter.Values{
		{"question": "What is the capital of France?", "context": "France is a country in Europe. Its capital is Paris.", "reasoning": "The context says the capital is Paris.", "answer": "Paris"},
		{"question": "Who wrote Hamlet?", "context": "Hamlet is a tragedy by William Shakespeare.", "reasoning": "The context names Shakespeare as the author.", "answer": "William Shakespeare"},
		{"question": "How many legs does a spider have?", "context": "Spiders are arachnids with eight legs.", "reasoning": "Arachnids have eight legs.", "answer": "8"},
	}
	benchInputs     = adapter.Values{"question": "What is the boiling point of water at sea level?", "context": "At sea level water boils at 100 degrees Celsius."}
	benchCompletion = "[[ ## reasoning ## ]]\nThe context states that water boils at 100 degrees Celsius at sea level.\n\n[[ ## answer ## ]]\n100 °C\n\n[[ ## completed ## ]]"
)

func BenchmarkChatFormat(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := (adapter.Chat{}).Format(benchSig, benchDemos, benchInputs); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkChatParse(b *testing.B) {
	b.ReportAllocs()
	b.SetBytes(int64(len(benchCompletion)))
	for b.Loop() {
		if _, err := (adapter.Chat{}).Parse(benchSig, benchCompletion); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkChatParse1MB parses a 1 MB multi-line completion.
func BenchmarkChatParse1MB(b *testing.B) {
	line := "The quick brown fox jumps over the lazy dog; reasoning continues at length, with [brackets] and # signs.\n"
	body := strings.Repeat(line, (1<<20)/len(line))
	completion := "[[ ## reasoning ## ]]\n" + body + "\n[[ ## answer ## ]]\n" + body + "\n[[ ## completed ## ]]"
	b.ReportAllocs()
	b.SetBytes(int64(len(completion)))
	for b.Loop() {
		if _, err := (adapter.Chat{}).Parse(benchSig, completion); err != nil {
			b.Fatal(err)
		}
	}
}
