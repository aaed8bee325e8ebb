package adapter_test

import (
	"context"
	"fmt"

	openai "github.com/sashabaranov/go-openai"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/lmtest"
	"github.com/sigwire/adapter/signature"
)

// A reply whose answer is no int is sent back with the error; the model
// answers again, and the call returns the second reply's value.
func ExampleWithReask() {
	srv := lmtest.NewServer(
		lmtest.Text("[[ ## answer ## ]]\nseveral\n\n[[ ## completed ## ]]"),
		lmtest.Text("[[ ## answer ## ]]\n42\n\n[[ ## completed ## ]]"))
	defer srv.Close()
	sig, err := signature.Parse("question -> answer: int")
	if err != nil {
		panic(err)
	}
	res, err := adapter.Call(context.Background(), srv.Client(), sig, nil,
		adapter.Values{"question": "How many?"},
		adapter.WithRequest(openai.ChatCompletionRequest{Model: "gpt-4o-mini"}),
		adapter.WithReask(2))
	if err != nil {
		panic(err)
	}
	fmt.Println("answer:", res.Outputs[0]["answer"], "re-asks:", res.Reasks, "calls:", res.Calls)

	reask := srv.Requests()[1].Chat.Messages
	for _, m := range reask[len(reask)-2:] {
		fmt.Printf("%s: %s\n", m.Role, m.Content)
	}
	// Output:
	// answer: 42 re-asks: 1 calls: 2
	// assistant: [[ ## answer ## ]]
	// several
	//
	// [[ ## completed ## ]]
	// user: Your response above could not be used: field `answer`: invalid value: "several" is not an int.
	//
	// Please answer again, correcting this. Respond with the corresponding output fields, starting with the field `[[ ## answer ## ]]` (must be formatted as a valid Python int), and then ending with the marker for `[[ ## completed ## ]]`.
}
