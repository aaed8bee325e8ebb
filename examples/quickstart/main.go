// Command quickstart asks a language model a typed question: Go structs in
// and out, one ChainOfThought call, then the same question streamed.
//
// With OPENAI_API_KEY set it calls the live model (OPENAI_BASE_URL and
// OPENAI_MODEL are honoured; the model defaults to gpt-4o-mini). Without
// it, it says so and runs the same program against an lmtest server that
// replays a recorded reply.
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"

	openai "github.com/sashabaranov/go-openai"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/lmtest"
	"github.com/sigwire/adapter/predict"
)

// Question is the input; its json names are the field names the model sees.
type Question struct {
	Question string `json:"question"`
}

// Landmark is the output, typed: the model's year comes back as an int.
type Landmark struct {
	Year int    `json:"year" desc:"the year it was completed"`
	City string `json:"city"`
}

// recorded is what gpt-4o-mini answered to this program's prompt.
const recorded = "[[ ## reasoning ## ]]\nThe Eiffel Tower was completed in 1889 for the World's Fair in Paris.\n\n[[ ## year ## ]]\n1889\n\n[[ ## city ## ]]\nParis\n\n[[ ## completed ## ]]"

func main() {
	ctx := context.Background()
	lm, model := client()

	cot, err := predict.NewChainOfThought[Question, Landmark](
		adapter.WithRequest(openai.ChatCompletionRequest{Model: model, Temperature: adapter.ZeroTemperature}))
	if err != nil {
		log.Fatal(err)
	}
	q := Question{"When was the Eiffel Tower completed, and where is it?"}

	out, reasoning, res, err := cot.Call(ctx, lm, q)
	if err != nil {
		log.Fatal(explain(err))
	}
	fmt.Printf("reasoning: %s\n", reasoning)
	fmt.Printf("year:      %d (%T)\n", out.Year, out.Year)
	fmt.Printf("city:      %s\n", out.City)
	fmt.Printf("(%s adapter, LM calls: %d, tokens: %d)\n\n", res.Adapter, res.Calls, res.Usage.TotalTokens)

	fmt.Println("The same question, streamed:")
	for chunk, err := range cot.Stream(ctx, lm, q) {
		if err != nil {
			log.Fatal(err)
		}
		if chunk.Done {
			fmt.Printf("\ndone: %+v\n", chunk.Out)
			break
		}
		if chunk.Delta != "" {
			fmt.Printf("[%s] %s\n", chunk.Field, chunk.Delta)
		}
	}
}

// explain says what failed, by the error's class. The classes exclude
// each other — after a fallback too, where an LM failure is an *LMError
// and not a *ParseError — so the order of the cases does not matter.
func explain(err error) string {
	var (
		pe  *adapter.ParseError
		ref *adapter.RefusalError
		lme *adapter.LMError
		in  *adapter.InputError
	)
	switch {
	case errors.As(err, &pe):
		msg := fmt.Sprintf("the reply could not be read (field %q): %v\nreply: %s", pe.Field, err, pe.Completion)
		if errors.Is(err, adapter.ErrTruncated) {
			msg += "\n(the reply was cut off: raise MaxCompletionTokens)"
		}
		return msg
	case errors.As(err, &ref):
		return fmt.Sprintf("the model refused: %v", err)
	case errors.As(err, &lme):
		return fmt.Sprintf("the LM call failed, so there was no reply to read: %v", err)
	case errors.As(err, &in):
		return fmt.Sprintf("input %q does not fit the question: %v", in.Field, err)
	}
	return err.Error()
}

// client returns the live model when OPENAI_API_KEY is set, else an lmtest
// server replaying the recorded reply.
func client() (adapter.StreamingLM, string) {
	model := os.Getenv("OPENAI_MODEL")
	if model == "" {
		model = "gpt-4o-mini"
	}
	if key := os.Getenv("OPENAI_API_KEY"); key != "" {
		cfg := openai.DefaultConfig(key)
		if base := os.Getenv("OPENAI_BASE_URL"); base != "" {
			cfg.BaseURL = base
		}
		cfg.HTTPClient = adapter.HTTPDoer(cfg.HTTPClient) // Retry-After, and what go-openai drops from replies
		fmt.Printf("Calling %s at %s.\n\n", model, cfg.BaseURL)
		return openai.NewClientWithConfig(cfg), model
	}
	srv := lmtest.NewServer() // left open: the program ends with it
	srv.Handle(func(lmtest.Request) lmtest.Reply { return lmtest.Text(recorded).ChunkSize(24) })
	fmt.Printf("OPENAI_API_KEY is not set: using an lmtest server at %s with a recorded reply.\n\n", srv.URL())
	return srv.Client(), model
}
