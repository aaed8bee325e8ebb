package adapter

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Price is what a model's tokens cost, per million tokens, in a currency
// of the caller's choice.
type Price struct {
	// Input is the price of prompt tokens.
	Input float64
	// CachedInput is the price of the prompt tokens the provider read from
	// its prompt cache (Usage.PromptTokensDetails.CachedTokens, a part of
	// the prompt tokens); 0 prices them as Input. The count is read from
	// prompt_tokens_details.cached_tokens (OpenAI, xAI, vLLM, OpenRouter)
	// or, where that is absent or 0, from DeepSeek's
	// prompt_cache_hit_tokens, cache_read_input_tokens (Anthropic's name,
	// as LiteLLM passes it on) or llama.cpp's timings.cache_n; a count
	// above the prompt tokens is not believed. A stream reads them all; a
	// blocking call reads the last three only when its client's HTTP
	// client is wrapped with [HTTPDoer] (go-openai drops them). Tokens
	// written to a cache (Anthropic's cache_creation_input_tokens) are
	// priced as Input.
	CachedInput float64
	// Output is the price of completion tokens, reasoning tokens included.
	Output float64
}

// Prices is a price table: a model's name, as replies name it (the keys
// of Result.UsageByModel), to its price. A name the table lacks that ends
// in a date ("gpt-4o-mini-2024-07-18", "claude-sonnet-4-20250514") takes
// the price of the name without it ("gpt-4o-mini").
type Prices map[string]Price

// datedModel matches a model name's date suffix.
var datedModel = regexp.MustCompile(`-(\d{4}-\d{2}-\d{2}|\d{8})$`)

// price returns model's price.
func (p Prices) price(model string) (Price, bool) {
	if pr, ok := p[model]; ok {
		return pr, true
	}
	if loc := datedModel.FindStringIndex(model); loc != nil {
		pr, ok := p[model[:loc[0]]]
		return pr, ok
	}
	return Price{}, false
}

// Cost returns what the call's tokens cost at prices p: the sum, over the
// models of UsageByModel, of their prompt, cached prompt and completion
// tokens at their prices. Cache hits spent nothing and cost nothing. A
// model that spent tokens but has no price is an error naming it; the
// figure returned with it is the cost of the models that have one.
func (r *Result) Cost(p Prices) (float64, error) {
	var cost float64
	var missing []string
	for model, u := range r.UsageByModel {
		if u.PromptTokens == 0 && u.CompletionTokens == 0 {
			continue
		}
		pr, ok := p.price(model)
		if !ok {
			missing = append(missing, fmt.Sprintf("%q (%d tokens)", model, u.PromptTokens+u.CompletionTokens))
			continue
		}
		cached := 0
		if u.PromptTokensDetails != nil {
			cached = min(u.PromptTokensDetails.CachedTokens, u.PromptTokens)
		}
		ci := pr.CachedInput
		if ci == 0 {
			ci = pr.Input
		}
		cost += (float64(u.PromptTokens-cached)*pr.Input + float64(cached)*ci + float64(u.CompletionTokens)*pr.Output) / 1e6
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		return cost, fmt.Errorf("adapter: no price for model %s", strings.Join(missing, ", nor for "))
	}
	return cost, nil
}
