// Command quickstart asks a language model a typed question through a
// signature and prints the messages sent and the typed result.
//
// With OPENAI_API_KEY set it calls the live model (OPENAI_BASE_URL and
// OPENAI_MODEL are honoured; the model defaults to gpt-4o-mini). Without
// it, it says so and runs the same program against an lmtest server that
// replays a recorded reply.
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
)

// recorded is what gpt-4o-mini answered to this program's prompt.
const recorded = "[[ ## reasoning ## ]]\nThe Eiffel Tower was completed in 1889 for the World's Fair in Paris.\n\n[[ ## year ## ]]\n1889\n\n[[ ## city ## ]]\nParis\n\n[[ ## completed ## ]]"

func main() {
	ctx := context.Background()
	sig, err := signature.Parse("question -> reasoning, year: int, city")
	if err != nil {
		log.Fatal(err)
	}

	var lm adapter.LM
	model := os.Getenv("OPENAI_MODEL")
	if model == "" {
		model = "gpt-4o-mini"
	}
	if key := os.Getenv("OPENAI_API_KEY"); key != "" {
		cfg := openai.DefaultConfig(key)
		if base := os.Getenv("OPENAI_BASE_URL"); base != "" {
			cfg.BaseURL = base
		}
		lm = openai.NewClientWithConfig(cfg)
		fmt.Printf("Calling %s at %s.\n\n", model, cfg.BaseURL)
	} else {
		srv := lmtest.NewServer(lmtest.Text(recorded))
		defer srv.Close()
		lm = srv.Client()
		fmt.Printf("OPENAI_API_KEY is not set: using an lmtest server at %s with a recorded reply.\n\n", srv.URL())
	}

	inputs := adapter.Values{"question": "When was the Eiffel Tower completed, and where is it?"}
	msgs, err := adapter.Chat{}.Format(sig, nil, inputs)
	if err != nil {
		log.Fatal(err)
	}
	for _, m := range msgs {
		fmt.Printf("----- %s -----\n%s\n\n", m.Role, m.Content)
	}

	res, err := adapter.Call(ctx, lm, sig, nil, inputs,
		adapter.WithRequest(openai.ChatCompletionRequest{Model: model, Temperature: adapter.ZeroTemperature}))
	if err != nil {
		log.Fatal(err)
	}
	out := res.Outputs[0]
	fmt.Printf("----- result (%s adapter, %d LM call, %d tokens) -----\n", res.Adapter, res.Calls, res.Usage.TotalTokens)
	fmt.Printf("reasoning: %s\n", out["reasoning"])
	fmt.Printf("year:      %d (%T)\n", out["year"], out["year"])
	fmt.Printf("city:      %s\n", out["city"])
}
