package adapter_test

import (
	"maps"
	"strings"
	"sync"
	"testing"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/signature"
)

// Each adapter starts a conversation's buffer at the size of the latest
// one it wrote for the signature: conversations much larger and much
// smaller than the one before come out as they do the first time.
func TestFormatSizeHint(t *testing.T) {
	inputs := map[string]adapter.Values{
		"small": {"question": "q?", "context": "c."},
		"large": {"question": strings.Repeat("why? ", 2000), "context": strings.Repeat("because. ", 3000)},
	}
	for _, a := range markerAdapters {
		want := map[string][]openai.ChatCompletionMessage{}
		for name, in := range inputs {
			fresh := must(signature.Parse("question, context -> reasoning, answer"))
			want[name] = must(a.Format(fresh, benchDemos, in))
		}
		sig := must(signature.Parse("question, context -> reasoning, answer"))
		for _, name := range []string{"small", "large", "small", "large", "large", "small"} {
			msgs, err := a.Format(sig, benchDemos, inputs[name])
			require.NoError(t, err)
			assert.Equal(t, want[name], msgs, "%s: %s after others", a.Name(), name)
		}
	}
}

// Each adapter reuses the demos it rendered last for a signature while
// they hold the same texts: every change to a demo shows in the next
// Format, as it would with a new signature.
func TestFormatDemoReuse(t *testing.T) {
	clone := func(demos []adapter.Values) []adapter.Values {
		out := make([]adapter.Values, len(demos))
		for i, d := range demos {
			out[i] = maps.Clone(d)
		}
		return out
	}
	in := adapter.Values{"question": "q?", "context": "c."}
	for _, a := range markerAdapters {
		sig := must(signature.Parse("question, context -> reasoning, answer"))
		demos := clone(benchDemos)
		check := func(step string) {
			t.Helper()
			fresh := must(signature.Parse("question, context -> reasoning, answer"))
			want := must(a.Format(fresh, demos, in))
			got, err := a.Format(sig, demos, in)
			require.NoError(t, err)
			assert.Equal(t, want, got, "%s: %s", a.Name(), step)
		}
		check("first")
		check("same demos again")
		check("same demos a third time")
		check("same demos a fourth time")
		demos[1]["answer"] = "Shakespeare"
		check("a value changed in place")
		check("the changed demos again")
		check("the changed demos a third time")
		demos[1]["answer"] = strings.Clone("Shakespeare") // equal text, another string
		check("an equal value")
		delete(demos[0], "reasoning")
		check("a field removed: an incomplete demo")
		demos[0]["reasoning"] = nil
		check("a nil value")
		demos[2]["answer"] = 8
		check("a value that is not a string")
		check("and again")
		demos[2]["answer"] = "8"
		demos = append(demos, adapter.Values{"question": "Q", "context": "C", "reasoning": "R", "answer": "A"})
		check("a demo added")
		demos = demos[1:]
		check("a demo dropped")
		demos = demos[:0]
		check("no demos")
		demos = nil
		check("nil demos")
	}
}

// Concurrent Formats with alternating demos on one signature each get
// their own demos' messages.
func TestFormatDemoReuseConcurrent(t *testing.T) {
	other := []adapter.Values{{"question": "Q2", "context": "C2", "reasoning": "R2", "answer": "A2"}}
	in := adapter.Values{"question": "q?", "context": "c."}
	for _, a := range markerAdapters {
		fresh := func() *signature.Signature { return must(signature.Parse("question, context -> reasoning, answer")) }
		want := [][]openai.ChatCompletionMessage{must(a.Format(fresh(), benchDemos, in)), must(a.Format(fresh(), other, in))}
		sig := fresh()
		var wg sync.WaitGroup
		for g := range 8 {
			wg.Go(func() {
				for i := range 200 {
					k := (g + i) % 2
					demos := [][]adapter.Values{benchDemos, other}[k]
					msgs, err := a.Format(sig, demos, in)
					if !assert.NoError(t, err) || !assert.Equal(t, want[k], msgs, a.Name()) {
						return
					}
				}
			})
		}
		wg.Wait()
	}
}
