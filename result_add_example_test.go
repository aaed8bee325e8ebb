package adapter_test

import (
	"fmt"

	openai "github.com/sashabaranov/go-openai"

	"github.com/sigwire/adapter"
)

// A module that makes two calls reports them in one Result: the counters
// of both, and the reply of the call that gave its outputs.
func ExampleResult_Add() {
	plan := &adapter.Result{Counts: adapter.Counts{Calls: 2, Requests: 2, Reasks: 1}, Usage: openai.Usage{PromptTokens: 120, CompletionTokens: 30, TotalTokens: 150}}
	answer := &adapter.Result{Counts: adapter.Counts{Calls: 1, CacheHits: 1}, Adapter: "chat", Usage: openai.Usage{PromptTokens: 80, CompletionTokens: 10, TotalTokens: 90}}

	var total adapter.Result
	total.Add(plan)
	total.Add(answer)
	total.Outputs, total.Adapter = answer.Outputs, answer.Adapter // the outputs are the answer's
	fmt.Println(total.Adapter, total.Calls, total.Requests, total.Reasks, total.Usage.TotalTokens)
	// Output:
	// chat 3 2 1 240
}
