// Command vision asks a question about an image (types.Image) and prints
// the content parts sent and the typed answer.
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
	"github.com/sigwire/adapter/signature"
	"github.com/sigwire/adapter/types"
)

const photo = "https://upload.wikimedia.org/wikipedia/commons/3/3a/Cat03.jpg"

func main() {
	sig, err := signature.Parse("photo: Image, question -> answer, animals: list[str]", signature.WithTypes(types.Names()))
	if err != nil {
		log.Fatal(err)
	}
	model := os.Getenv("OPENAI_MODEL")
	if model == "" {
		model = "gpt-4o-mini"
	}
	var lm adapter.LM
	var srv *lmtest.Server
	if key := os.Getenv("OPENAI_API_KEY"); key != "" {
		cfg := openai.DefaultConfig(key)
		if base := os.Getenv("OPENAI_BASE_URL"); base != "" {
			cfg.BaseURL = base
		}
		lm = openai.NewClientWithConfig(cfg)
	} else {
		srv = lmtest.NewServer(lmtest.Text("[[ ## answer ## ]]\nA ginger cat sitting on the ground.\n\n[[ ## animals ## ]]\n[\"cat\"]\n\n[[ ## completed ## ]]"))
		defer srv.Close()
		lm = srv.Client()
		fmt.Println("OPENAI_API_KEY is not set: using an lmtest server with a recorded reply.")
	}
	img, err := types.NewImage(photo)
	if err != nil {
		log.Fatal(err)
	}
	res, err := adapter.Call(context.Background(), lm, sig, nil, adapter.Values{"photo": img, "question": "What is in the picture?"},
		adapter.WithRequest(openai.ChatCompletionRequest{Model: model}))
	if err != nil {
		log.Fatal(err)
	}
	if srv != nil {
		msgs := srv.Requests()[0].Chat.Messages
		for _, p := range msgs[len(msgs)-1].MultiContent {
			if p.ImageURL != nil {
				fmt.Printf("part image_url: %s\n", p.ImageURL.URL)
			} else {
				fmt.Printf("part text: %q\n", p.Text)
			}
		}
	}
	fmt.Printf("answer:  %s\nanimals: %v\n", res.Outputs[0]["answer"], res.Outputs[0]["animals"])
}
