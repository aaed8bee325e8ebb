package adapter_test

import (
	"context"
	"errors"
	"fmt"
	"strings"

	openai "github.com/sashabaranov/go-openai"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/lmtest"
	"github.com/sigwire/adapter/signature"
)

// The examples answer from an lmtest server, so that they run offline;
// with a real model, pass an *openai.Client built with your key.

func ExampleCall() {
	srv := lmtest.NewServer(lmtest.Text("[[ ## reasoning ## ]]\n6 times 7 is 42.\n\n[[ ## answer ## ]]\n42\n\n[[ ## completed ## ]]"))
	defer srv.Close()
	client := srv.Client() // openai.NewClient(os.Getenv("OPENAI_API_KEY")) for a real model

	sig, err := signature.Parse("question -> reasoning, answer: int")
	if err != nil {
		panic(err)
	}
	res, err := adapter.Call(context.Background(), client, sig, nil,
		adapter.Values{"question": "What is 6 times 7?"},
		adapter.WithRequest(openai.ChatCompletionRequest{Model: "gpt-4o-mini"}))
	if err != nil {
		panic(err)
	}
	answer := res.Outputs[0]["answer"].(int) // typed: int for an int field
	fmt.Println(answer, res.Adapter, res.Calls)
	// Output: 42 chat 1
}

func ExampleStream() {
	srv := lmtest.NewServer(lmtest.Text("[[ ## answer ## ]]\nParis is the capital of France.\n\n[[ ## completed ## ]]").ChunkSize(8))
	defer srv.Close()
	sig, _ := signature.Parse("question -> answer")

	for chunk, err := range adapter.Stream(context.Background(), srv.Client(), sig, nil, adapter.Values{"question": "Capital of France?"}) {
		if err != nil {
			fmt.Println("error:", err)
			return
		}
		if chunk.Done {
			fmt.Printf("\ndone: %q\n", chunk.Result.Outputs[0]["answer"])
			break
		}
		fmt.Print(chunk.Delta) // the answer's text, as it arrives
	}
	// Output:
	// Paris is the capital of France.
	// done: "Paris is the capital of France."
}

func ExampleWithAdapter() {
	srv := lmtest.NewServer(lmtest.Text(`{"answer": "Paris"}`))
	defer srv.Close()
	sig, _ := signature.Parse("question -> answer")

	// Code that cannot pass call options (a module, a library) still
	// follows the adapter set on the context, as dspy.context(adapter=…).
	ctx := adapter.WithAdapter(context.Background(), adapter.JSON{})
	res, err := adapter.Call(ctx, srv.Client(), sig, nil, adapter.Values{"question": "Capital of France?"})
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Adapter, res.Outputs[0]["answer"])
	// Output: json Paris
}

func ExampleChat_Parse() {
	sig, _ := signature.Parse("question -> confident: bool, answer: list[str]")
	// What a model wrote: bold markers, a heading, a markdown list.
	reply := "**[[ ## confident ## ]]**\nYes\n\n### [[ ## answer ## ]]\n- Paris\n- Lyon"
	vals, err := adapter.Chat{}.Parse(sig, reply)
	if err != nil {
		panic(err)
	}
	fmt.Printf("%v %q\n", vals["confident"], vals["answer"])
	// Output: true ["Paris" "Lyon"]
}

func ExampleChat_Parse_error() {
	sig, _ := signature.Parse("question -> answer: int")
	_, err := adapter.Chat{}.Parse(sig, "[[ ## answer ## ]]\nabout 40 or 50")
	var pe *adapter.ParseError
	if errors.As(err, &pe) {
		fmt.Println("field:", pe.Field)
		fmt.Println("reply kept:", pe.Completion != "")
	}
	// Output:
	// field: answer
	// reply kept: true
}

func ExampleParseValue() {
	sig, _ := signature.Parse("q -> population: int, tags: list[str]")
	n, _ := adapter.ParseValue("2,161,000 people", sig.Output(0))
	tags, _ := adapter.ParseValue("- sql\n- go", sig.Output(1))
	fmt.Println(n, tags)
	// Output: 2161000 [sql go]
}

// Rating is the output of a struct signature whose tags constrain it.
type Rating struct {
	Score  int    `json:"score" desc:"from 1 to 5" ge:"1" le:"5"`
	Reason string `json:"reason" min_length:"3"`
}

// Review is the input.
type Review struct {
	Text string `json:"text"`
}

// Constraint tags (ge, le, gt, lt, multiple_of, min_length, max_length) are
// shown to the model and enforced on its reply: a value outside them is
// a *ParseError matching ErrConstraint.
func Example_constraints() {
	srv := lmtest.NewServer(
		lmtest.Text("[[ ## score ## ]]\n9\n\n[[ ## reason ## ]]\nGreat!\n\n[[ ## completed ## ]]"))
	defer srv.Close()
	sig, err := signature.FromStructs[Review, Rating]()
	if err != nil {
		panic(err)
	}
	_, err = adapter.Call(context.Background(), srv.Client(), sig, nil,
		adapter.Values{"text": "Loved it."}, adapter.NoFallback())
	fmt.Println(errors.Is(err, adapter.ErrConstraint))
	var pe *adapter.ParseError
	errors.As(err, &pe)
	fmt.Println(pe.Field)
	// Output:
	// true
	// score
}

func ExamplePrompt() {
	sig, _ := signature.Parse("question -> answer")

	// Change one piece of the prompt, keep the rest as DSPy writes it:
	// here the task description gets a house rule appended.
	chat := adapter.Chat{Options: adapter.Options{Prompt: &adapter.Prompt{
		TaskDescription: func(_ *signature.Signature, text string) string {
			return text + "\n        Answer in one sentence."
		},
	}}}
	msgs, _ := chat.Format(sig, nil, adapter.Values{"question": "Why is the sky blue?"})
	system := strings.Split(msgs[0].Content, "\n")
	for _, line := range system[len(system)-4:] {
		fmt.Println(strings.TrimSpace(line))
	}
	// Output:
	// [[ ## completed ## ]]
	// In adhering to this structure, your objective is:
	// Given the fields `question`, produce the fields `answer`.
	// Answer in one sentence.
}

func ExampleOptions() {
	// Chat, JSON, XML and BAML share their settings. Native tool calling
	// is off for Chat and XML unless turned on, on for JSON and BAML
	// unless turned off, as in DSPy.
	chat := adapter.Chat{Options: adapter.Options{NativeTools: adapter.On, ParallelToolCalls: adapter.Off}}
	on, parallel := chat.NativeTools()
	fmt.Println("chat: native tools", on, "parallel_tool_calls", parallel)

	// Chat's JSON fallback asks for tool calls as Chat does.
	fallback := chat.Fallback().(adapter.NativeToolAdapter)
	on, parallel = fallback.NativeTools()
	fmt.Println(fallback.Name()+": native tools", on, "parallel_tool_calls", parallel)

	on, _ = adapter.JSON{Options: adapter.Options{NativeTools: adapter.Off}}.NativeTools()
	fmt.Println("json: native tools", on)
	// Output:
	// chat: native tools true parallel_tool_calls off
	// json: native tools true parallel_tool_calls off
	// json: native tools false
}
