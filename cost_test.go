package adapter_test

import (
	"context"
	"fmt"
	"log"
	"testing"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/lmtest"
	"github.com/sigwire/adapter/signature"
)

// TestCost: a Result's cost is its usage at the caller's prices, per
// model; cached prompt tokens at their own price; a dated model name at
// its undated price; a model without a price an error naming it.
func TestCost(t *testing.T) {
	res := &adapter.Result{UsageByModel: map[string]openai.Usage{
		"gpt-4o-mini-2024-07-18": {PromptTokens: 1_000_000, CompletionTokens: 500_000,
			PromptTokensDetails: &openai.PromptTokensDetails{CachedTokens: 200_000}},
		"claude-sonnet-4-20250514": {PromptTokens: 1000, CompletionTokens: 100},
	}}
	prices := adapter.Prices{
		"gpt-4o-mini":     {Input: 0.15, CachedInput: 0.075, Output: 0.60},
		"claude-sonnet-4": {Input: 3, Output: 15},
	}
	cost, err := res.Cost(prices)
	require.NoError(t, err)
	assert.InDelta(t, 0.8*0.15+0.2*0.075+0.5*0.60+0.001*3+0.0001*15, cost, 1e-12)

	delete(prices, "claude-sonnet-4")
	cost, err = res.Cost(prices)
	assert.ErrorContains(t, err, `no price for model "claude-sonnet-4-20250514"`)
	assert.InDelta(t, 0.8*0.15+0.2*0.075+0.5*0.60, cost, 1e-12, "the models that have a price")

	prices["claude-sonnet-4-20250514"] = adapter.Price{Input: 1}
	cost, err = res.Cost(prices)
	require.NoError(t, err, "an exact name wins")
	assert.InDelta(t, 0.8*0.15+0.2*0.075+0.5*0.60+0.001, cost, 1e-12)

	var none adapter.Result
	cost, err = none.Cost(nil)
	assert.NoError(t, err, "no tokens spent: nothing to price")
	assert.Zero(t, cost)

	// A model that spent no tokens (every request a cache hit, or failed)
	// needs no price.
	zero := &adapter.Result{UsageByModel: map[string]openai.Usage{"m": {}}}
	_, err = zero.Cost(nil)
	assert.NoError(t, err)
}

func ExampleResult_Cost() {
	srv := lmtest.NewServer(lmtest.Text("[[ ## answer ## ]]\nParis").WithUsage(1200, 300))
	defer srv.Close()
	sig, _ := signature.Parse("question -> answer")
	res, err := adapter.Call(context.Background(), srv.Client(), sig, nil, adapter.Values{"question": "Capital of France?"},
		adapter.WithRequest(openai.ChatCompletionRequest{Model: "gpt-4o-mini"}))
	if err != nil {
		log.Fatal(err)
	}
	// Prices per million tokens, in the currency of your choice.
	prices := adapter.Prices{"gpt-4o-mini": {Input: 0.15, CachedInput: 0.075, Output: 0.60}}
	cost, err := res.Cost(prices)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%d tokens, $%.6f\n", res.Usage.TotalTokens, cost)
	// Output: 1500 tokens, $0.000360
}
