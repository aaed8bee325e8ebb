package types_test

import (
	"context"
	"fmt"
	"net/http"

	openai "github.com/sashabaranov/go-openai"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/lmtest"
	"github.com/sigwire/adapter/signature"
	"github.com/sigwire/adapter/types"
)

// A Document input and a Citations output, as DSPy's
// dspy.experimental.Document and Citations: through the HTTPDoer wrapper
// the document reaches the provider as DSPy's document part, and the
// citations the provider returns fill the output.
func ExampleDocument() {
	// A server answering as LiteLLM relays Claude's citations.
	srv := lmtest.NewServer(lmtest.Raw(http.StatusOK, http.Header{"Content-Type": {"application/json"}}, []byte(`{
	  "id": "chatcmpl-1", "object": "chat.completion", "model": "claude-sonnet-4",
	  "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant",
	    "content": "[[ ## answer ## ]]\nWater boils at 100°C at sea level.\n\n[[ ## completed ## ]]",
	    "provider_specific_fields": {"citations": [[{"type": "char_location", "cited_text": "Water boils at 100°C at standard atmospheric pressure.",
	      "document_index": 0, "document_title": "Physics Fundamentals", "start_char_index": 0, "end_char_index": 54}]]}}}]}`)))
	defer srv.Close()

	cfg := srv.Config() // openai.DefaultConfig(key), with BaseURL for a LiteLLM proxy
	cfg.HTTPClient = adapter.HTTPDoer(cfg.HTTPClient)
	client := openai.NewClientWithConfig(cfg)

	sig, err := signature.Parse("documents: list[Document], question -> answer, citations: Citations", signature.WithTypes(types.Names()))
	if err != nil {
		panic(err)
	}
	docs := []types.Document{{Data: "Water boils at 100°C at standard atmospheric pressure.", Title: "Physics Fundamentals"}}
	res, err := adapter.Call(context.Background(), client, sig, nil,
		adapter.Values{"documents": docs, "question": "What temperature does water boil?"},
		adapter.WithRequest(openai.ChatCompletionRequest{Model: "anthropic/claude-sonnet-4"}))
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Outputs[0]["answer"])
	for _, c := range res.Outputs[0]["citations"].(types.Citations).Citations {
		fmt.Printf("%q (%s, chars %d-%d)\n", c.CitedText, *c.DocumentTitle, c.StartCharIndex, c.EndCharIndex)
	}
	// Output:
	// Water boils at 100°C at sea level.
	// "Water boils at 100°C at standard atmospheric pressure." (Physics Fundamentals, chars 0-54)
}

// Audio from bytes becomes DSPy's input_audio part.
func ExampleAudioFromBytes() {
	wav := []byte("RIFF\x24\x00\x00\x00WAVEfmt ") // the start of a WAV file
	clip, err := types.AudioFromBytes(wav, "")    // the format is detected
	if err != nil {
		panic(err)
	}
	parts, _ := clip.FormatParts()
	part, _ := adapter.RawPartJSON(parts[0])
	fmt.Println(clip)
	fmt.Println(string(part))
	// Output:
	// Audio(data=<AUDIO_BASE_64_ENCODED(24)>, audio_format='wav')
	// {"type":"input_audio","input_audio":{"data":"UklGRiQAAABXQVZFZm10IA==","format":"wav"}}
}
