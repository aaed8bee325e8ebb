// Command agent runs two steps of a tool-using conversation: the model asks
// for a tool call (native function calling through the JSON adapter), the
// program runs the Go function behind the tool, and the next step sees the
// earlier turn and its result through a History.
//
// With OPENAI_API_KEY set it calls the live model (OPENAI_BASE_URL and
// OPENAI_MODEL are honoured; the model defaults to gpt-4o-mini). Without
// it, an lmtest server replays recorded replies.
package main

import (
	"context"
	"fmt"
	"log"
	"os"

	openai "github.com/sashabaranov/go-openai"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/lmtest"
	"github.com/sigwire/adapter/signature"
	"github.com/sigwire/adapter/types"
)

// WeatherArgs are the tool's arguments.
type WeatherArgs struct {
	City string `json:"city" jsonschema:"description=the city to look up"`
}

func weather(_ context.Context, a WeatherArgs) (string, error) {
	return "14 °C and light rain in " + a.City, nil
}

func main() {
	ctx := context.Background()
	sig, err := signature.Parse("history: History, question, tools: list[Tool] -> next_thought, tool_calls: ToolCalls", signature.WithTypes(types.Names()))
	if err != nil {
		log.Fatal(err)
	}
	tool, err := types.NewTool("weather", "Current weather for a city.", weather)
	if err != nil {
		log.Fatal(err)
	}
	model := os.Getenv("OPENAI_MODEL")
	if model == "" {
		model = "gpt-4o-mini"
	}
	var lm adapter.LM
	if key := os.Getenv("OPENAI_API_KEY"); key != "" {
		cfg := openai.DefaultConfig(key)
		if base := os.Getenv("OPENAI_BASE_URL"); base != "" {
			cfg.BaseURL = base
		}
		lm = adapter.WithCapabilities(openai.NewClientWithConfig(cfg), adapter.ModelCapabilities(model))
	} else {
		call := openai.ToolCall{ID: "call_1", Type: "function", Function: openai.FunctionCall{Name: "weather", Arguments: `{"city": "Bergen"}`}}
		srv := lmtest.NewServer(
			lmtest.Text(`{"next_thought": "I need the weather in Bergen."}`).WithToolCalls(call),
			lmtest.Text(`{"next_thought": "It is 14 °C and raining in Bergen: take an umbrella."}`))
		defer srv.Close()
		lm = adapter.WithCapabilities(srv.Client(), adapter.Capabilities{StructuredOutputs: true, JSONMode: true, Tools: true})
		fmt.Println("OPENAI_API_KEY is not set: using an lmtest server with recorded replies.")
	}
	opts := []adapter.CallOption{adapter.UseAdapter(adapter.JSON{}), adapter.WithRequest(openai.ChatCompletionRequest{Model: model})}
	question := "Do I need an umbrella in Bergen today?"
	history := types.History{}

	for step := 1; step <= 2; step++ {
		res, err := adapter.Call(ctx, lm, sig, nil, adapter.Values{"history": history, "question": question, "tools": []types.Tool{tool}}, opts...)
		if err != nil {
			log.Fatal(err)
		}
		out := res.Outputs[0]
		fmt.Printf("step %d: %s\n", step, out["next_thought"])
		calls := out["tool_calls"].(types.ToolCalls)
		if len(calls.Calls) == 0 {
			break
		}
		results := calls.Execute(ctx, []types.Tool{tool})
		for _, r := range results.Results {
			fmt.Printf("        %s(%v) -> %v\n", r.Name, calls.Calls[0].Args, r.Value)
		}
		calls.Results = &results
		history.Messages = append(history.Messages, map[string]any{"question": question, "next_thought": out["next_thought"], "tool_calls": calls})
	}
}
