package adapter_test

import (
	"errors"
	"reflect"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"

	"github.com/sigwire/adapter"
)

// TestResultAdd: Add sums every counter of a Result and takes the latest
// re-ask's cause; the fields that describe one call's reply stay. Every
// field of Result is one or the other, so that a new field is a decision.
func TestResultAdd(t *testing.T) {
	counters := []string{"Calls", "Reasks", "ReaskCause", "Retries", "CacheHits", "Coalesced", "RetryWait", "CacheErrors", "Usage", "UsageByModel", "Notes"}
	perCall := []string{"Outputs", "Adapter", "FallbackCause", "Completions", "Mode", "Model", "SystemFingerprint", "Logprobs"}
	var fields []string
	for f := range reflect.TypeFor[adapter.Result]().Fields() {
		fields = append(fields, f.Name)
	}
	assert.ElementsMatch(t, append(append([]string{}, counters...), perCall...), fields, "each field of Result is a counter Add sums or describes one call")

	usage := func(n int) openai.Usage {
		return openai.Usage{PromptTokens: 3 * n, CompletionTokens: 2 * n, TotalTokens: 5 * n,
			PromptTokensDetails: &openai.PromptTokensDetails{CachedTokens: n}, CompletionTokensDetails: &openai.CompletionTokensDetails{ReasoningTokens: n}}
	}
	first, second := errors.New("first"), errors.New("second")
	result := func(n int, cause error, model string) *adapter.Result {
		return &adapter.Result{
			Outputs: []adapter.Values{{"a": model}}, Adapter: model, FallbackCause: cause, Completions: []string{model}, Mode: model,
			Model: model, SystemFingerprint: model, Logprobs: []*openai.LogProbs{{}},
			Calls: n, Reasks: n, ReaskCause: cause, Retries: n, CacheHits: n, Coalesced: n, RetryWait: time.Duration(n), CacheErrors: n,
			Usage: usage(n), UsageByModel: map[string]openai.Usage{model: usage(n)}, Notes: []string{model},
		}
	}
	r, o := result(1, first, "a"), result(2, second, "b")
	shared := r.UsageByModel
	r.Add(o)
	want := result(3, first, "a")
	want.ReaskCause = second
	want.UsageByModel = map[string]openai.Usage{"a": usage(1), "b": usage(2)}
	want.Notes = []string{"a", "b"}
	assert.Equal(t, want, r)
	assert.Equal(t, map[string]openai.Usage{"a": usage(1)}, shared, "a map r shared is not changed")

	r.Add(nil)
	r.Add(&adapter.Result{})
	assert.Equal(t, want, r, "nothing to add; no re-ask keeps the latest cause")
}
