package adapter_test

import (
	"context"
	"fmt"
	"strings"

	openai "github.com/sashabaranov/go-openai"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/signature"
)

// Prepare shows the request a call would send, without sending it: the
// JSON adapter on a model with structured outputs asks for a strict
// schema beside the messages.
func ExamplePrepare() {
	client := openai.NewClient("") // nothing is sent: no key is needed
	sig, err := signature.Parse("question -> answer: int")
	if err != nil {
		panic(err)
	}
	req, err := adapter.Prepare(context.Background(), client, sig, nil,
		adapter.Values{"question": "What is 6 times 7?"},
		adapter.UseAdapter(adapter.JSON{}),
		adapter.WithRequest(openai.ChatCompletionRequest{Model: "gpt-4o-mini"}))
	if err != nil {
		panic(err)
	}
	fmt.Println(req.Model, req.ResponseFormat.Type)
	for _, m := range req.Messages {
		if m.Role == openai.ChatMessageRoleSystem {
			fmt.Printf("%s: %d lines\n", m.Role, strings.Count(m.Content, "\n")+1)
			continue
		}
		fmt.Printf("%s:\n%s\n", m.Role, m.Content)
	}
	// Output:
	// gpt-4o-mini json_schema
	// system: 18 lines
	// user:
	// [[ ## question ## ]]
	// What is 6 times 7?
	//
	// Respond with a JSON object in the following order of fields: `answer` (must be formatted as a valid Python int).
}
