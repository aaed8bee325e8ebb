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
// re-ask's cause; the fields that describe one call's reply stay; the
// profile, which describes the run, is taken when r has none. Every field
// of Result is one of these, so that a new field is a decision.
func TestResultAdd(t *testing.T) {
	counters := []string{"Counts", "ReaskCause", "Usage", "UsageByModel", "Notes"}
	perCall := []string{"Outputs", "Adapter", "FallbackCause", "Completions", "Mode", "Model", "SystemFingerprint", "Logprobs"}
	perRun := []string{"Profile"}
	var fields []string
	for f := range reflect.TypeFor[adapter.Result]().Fields() {
		fields = append(fields, f.Name)
	}
	assert.ElementsMatch(t, append(append(append([]string{}, counters...), perCall...), perRun...), fields,
		"each field of Result is a counter Add sums, describes one call, or describes the run")
	var counts []string
	for f := range reflect.TypeFor[adapter.Counts]().Fields() {
		counts = append(counts, f.Name)
	}
	assert.Equal(t, []string{"Calls", "Requests", "Reasks", "Retries", "RetryWait", "CacheHits", "Coalesced", "CacheErrors", "ModelFallbacks"}, counts,
		"Counts.Add sums each (a new counter is one field here and one line there)")

	usage := func(n int) openai.Usage {
		return openai.Usage{PromptTokens: 3 * n, CompletionTokens: 2 * n, TotalTokens: 5 * n,
			PromptTokensDetails: &openai.PromptTokensDetails{CachedTokens: n}, CompletionTokensDetails: &openai.CompletionTokensDetails{ReasoningTokens: n}}
	}
	first, second := errors.New("first"), errors.New("second")
	result := func(n int, cause error, model string) *adapter.Result {
		return &adapter.Result{
			Outputs: []adapter.Values{{"a": model}}, Adapter: model, FallbackCause: cause, Completions: []string{model}, Mode: model,
			Model: model, SystemFingerprint: model, Logprobs: []*openai.LogProbs{{}},
			Counts:     adapter.Counts{Calls: n, Requests: n, Reasks: n, Retries: n, CacheHits: n, Coalesced: n, RetryWait: time.Duration(n), CacheErrors: n},
			ReaskCause: cause,
			Usage:      usage(n), UsageByModel: map[string]openai.Usage{model: usage(n)}, Notes: []string{model}, Profile: model,
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

	run := &adapter.Result{}
	run.Add(&adapter.Result{Counts: adapter.Counts{Calls: 1}, Profile: "dspy-3.5"})
	run.Add(&adapter.Result{Counts: adapter.Counts{Calls: 1}, Profile: "dspy-3.3.1"})
	assert.Equal(t, "dspy-3.5", run.Profile, "a run's Result takes the profile of its first call that has one, and keeps it")
}
