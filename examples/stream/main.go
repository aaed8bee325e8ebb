// Command stream prints an answer's fields as the model writes them, then
// the parsed values: adapter.Stream over a signature string (the typed
// modules stream the same way, ending with the typed Out: see
// examples/quickstart).
//
// With OPENAI_API_KEY set it calls the live model (OPENAI_BASE_URL and
// OPENAI_MODEL are honoured; the model defaults to gpt-4o-mini). Without
// it, an lmtest server replays a recorded reply in small, slow chunks.
package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	openai "github.com/sashabaranov/go-openai"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/lmtest"
	"github.com/sigwire/adapter/signature"
)

const recorded = "[[ ## reasoning ## ]]\nLight from the sun is scattered by the air; short blue wavelengths scatter the most, so blue reaches our eyes from every direction.\n\n[[ ## answer ## ]]\nRayleigh scattering.\n\n[[ ## confidence ## ]]\n0.9\n\n[[ ## completed ## ]]"

func main() {
	sig, err := signature.Parse("question -> reasoning, answer, confidence: float")
	if err != nil {
		log.Fatal(err)
	}
	model := os.Getenv("OPENAI_MODEL")
	if model == "" {
		model = "gpt-4o-mini"
	}
	var lm adapter.StreamingLM
	if key := os.Getenv("OPENAI_API_KEY"); key != "" {
		cfg := openai.DefaultConfig(key)
		if base := os.Getenv("OPENAI_BASE_URL"); base != "" {
			cfg.BaseURL = base
		}
		lm = openai.NewClientWithConfig(cfg)
	} else {
		srv := lmtest.NewServer(lmtest.Text(recorded).ChunkSize(6).ChunkDelay(15 * time.Millisecond))
		defer srv.Close()
		lm = srv.Client()
		fmt.Println("OPENAI_API_KEY is not set: replaying a recorded reply from an lmtest server.")
	}
	field := ""
	for ch, err := range adapter.Stream(context.Background(), lm, sig, nil, adapter.Values{"question": "Why is the sky blue?"},
		adapter.WithRequest(openai.ChatCompletionRequest{Model: model})) {
		if err != nil {
			log.Fatal(err)
		}
		switch {
		case ch.Done:
			fmt.Printf("\n\nresult (%s adapter, LM calls: %d): %v\n", ch.Result.Adapter, ch.Result.Calls, ch.Result.Outputs[0])
		case ch.Reasoning != "":
			fmt.Print(ch.Reasoning)
		case ch.Delta != "":
			if ch.Field != field {
				field = ch.Field
				fmt.Printf("\n[%s] ", field)
			}
			fmt.Print(ch.Delta)
		}
	}
}
