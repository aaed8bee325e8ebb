// Command twostep lets a main model answer in free prose and a second,
// cheaper model extract the typed fields (DSPy's TwoStepAdapter), and
// prints both calls' counts and usage.
//
// With OPENAI_API_KEY set it calls the live models (OPENAI_BASE_URL is
// honoured; OPENAI_MODEL, default gpt-4o, answers and OPENAI_EXTRACTOR_MODEL,
// default gpt-4o-mini, extracts). Without it, two lmtest servers replay
// recorded replies.
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

const (
	recordedAnswer     = "Let's work it out. A train covering 180 km in 2.5 hours travels at 180 / 2.5 = 72 km/h, so the average speed is 72 km/h."
	recordedExtraction = "[[ ## solution ## ]]\n180 km / 2.5 h = 72 km/h\n\n[[ ## speed_kmh ## ]]\n72\n\n[[ ## completed ## ]]"
)

func main() {
	sig, err := signature.Parse("question -> solution, speed_kmh: float")
	if err != nil {
		log.Fatal(err)
	}
	model, small := getenv("OPENAI_MODEL", "gpt-4o"), getenv("OPENAI_EXTRACTOR_MODEL", "gpt-4o-mini")
	var mainLM, extractor adapter.LM
	if key := os.Getenv("OPENAI_API_KEY"); key != "" {
		cfg := openai.DefaultConfig(key)
		if base := os.Getenv("OPENAI_BASE_URL"); base != "" {
			cfg.BaseURL = base
		}
		mainLM = openai.NewClientWithConfig(cfg)
		extractor = mainLM
	} else {
		a, b := lmtest.NewServer(lmtest.Text(recordedAnswer)), lmtest.NewServer(lmtest.Text(recordedExtraction))
		defer a.Close()
		defer b.Close()
		mainLM, extractor = a.Client(), b.Client()
		fmt.Println("OPENAI_API_KEY is not set: using lmtest servers with recorded replies.")
	}
	two := adapter.TwoStep{Extractor: extractor, ExtractorRequest: openai.ChatCompletionRequest{Model: small}}
	res, err := adapter.Call(context.Background(), mainLM, sig, nil,
		adapter.Values{"question": "A train covers 180 km in 2.5 hours. What is its average speed?"},
		adapter.UseAdapter(two), adapter.WithRequest(openai.ChatCompletionRequest{Model: model}))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("main model said: %s\n\n", res.Completions[0])
	fmt.Printf("solution:  %s\nspeed_kmh: %v (%T)\n", res.Outputs[0]["solution"], res.Outputs[0]["speed_kmh"], res.Outputs[0]["speed_kmh"])
	fmt.Printf("%d LM calls, %d tokens in all\n", res.Calls, res.Usage.TotalTokens)
}

func getenv(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}
