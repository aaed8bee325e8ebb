package adapter_test

import (
	"context"
	"fmt"

	openai "github.com/sashabaranov/go-openai"

	"github.com/sigwire/adapter"
	"github.com/sigwire/adapter/signature"
	"github.com/sigwire/adapter/types"
)

// audioLM is an LM of one's own that sends the parts go-openai cannot
// express itself: it says so with CarriesRawParts, and finds them with
// adapter.RawPartJSON.
type audioLM struct{}

func (audioLM) CarriesRawParts() bool { return true }

func (audioLM) CreateChatCompletion(_ context.Context, req openai.ChatCompletionRequest) (openai.ChatCompletionResponse, error) {
	for _, m := range req.Messages {
		for _, p := range m.MultiContent {
			if raw, ok := adapter.RawPartJSON(p); ok {
				fmt.Println("raw part:", string(raw)) // a real LM puts it on its wire as it is
			}
		}
	}
	return openai.ChatCompletionResponse{Choices: []openai.ChatCompletionChoice{{FinishReason: openai.FinishReasonStop,
		Message: openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, Content: "[[ ## transcript ## ]]\nhello\n\n[[ ## completed ## ]]"}}}}, nil
}

// An audio input reaches an LM of one's own as a raw part.
func ExampleRawPartJSON() {
	sig, err := signature.Parse("clip: Audio -> transcript", signature.WithTypes(types.Names()))
	if err != nil {
		panic(err)
	}
	clip, err := types.AudioFromBytes([]byte("RIFF\x24\x00\x00\x00WAVEfmt "), "")
	if err != nil {
		panic(err)
	}
	res, err := adapter.Call(context.Background(), audioLM{}, sig, nil, adapter.Values{"clip": clip})
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Outputs[0]["transcript"])
	// Output:
	// raw part: {"type":"input_audio","input_audio":{"data":"UklGRiQAAABXQVZFZm10IA==","format":"wav"}}
	// hello
}
