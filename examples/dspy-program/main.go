// Command dspy-program loads a program optimised with DSPy in Python
// (program.save("program.json")) and runs it in Go with the same prompt:
// the optimised instructions, field descriptions and demos.
//
// With OPENAI_API_KEY set it calls the live model (OPENAI_BASE_URL and
// OPENAI_MODEL are honoured; the model defaults to gpt-4o-mini). Without
// it, an lmtest server replays a recorded reply.
package main

import (
	"context"
	"fmt"
	"log"
	"os"

	openai "github.com/sashabaranov/go-openai"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/lmtest"
	"github.com/sigwire/adapter/predict"
)

// Question is the program's input.
type Question struct {
	Question string `json:"question"`
}

// Answer is its output.
type Answer struct {
	Answer string `json:"answer"`
}

func main() {
	prog, err := predict.ReadProgram("examples/dspy-program/program.json")
	if err != nil {
		log.Fatal(err)
	}
	cot, err := predict.NewChainOfThought[Question, Answer]()
	if err != nil {
		log.Fatal(err)
	}
	if cot, err = cot.Load(prog, "generate_answer.predict"); err != nil {
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
		lm = openai.NewClientWithConfig(cfg)
	} else {
		srv := lmtest.NewServer(lmtest.Text("[[ ## reasoning ## ]]\nThe capital of Japan is Tokyo.\n\n[[ ## answer ## ]]\nTokyo\n\n[[ ## completed ## ]]"))
		defer srv.Close()
		lm = srv.Client()
		fmt.Println("OPENAI_API_KEY is not set: using an lmtest server with a recorded reply.")
	}
	msgs, err := adapter.Chat{}.Format(cot.Signature(), cot.Module().Demos(), adapter.Values{"question": "What is the capital of Japan?"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("The prompt DSPy would send (%d messages); its system message:\n\n%s\n\n", len(msgs), msgs[0].Content)
	out, reasoning, res, err := cot.Call(context.Background(), lm, Question{"What is the capital of Japan?"},
		adapter.WithRequest(openai.ChatCompletionRequest{Model: model}))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("reasoning: %s\nanswer:    %s\n(%d tokens)\n", reasoning, out.Answer, res.Usage.TotalTokens)
}
