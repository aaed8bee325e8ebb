package predict_test

import (
	"context"
	"fmt"
	"strings"

	openai "github.com/sashabaranov/go-openai"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/predict"
	"github.com/sigwire/adapter/signature"
)

// The prompt of a program DSPy saved, as a call would send it, without
// calling a model: what dspy.inspect_history shows after a call in
// Python, to diff against it. (The lines are printed without their
// trailing spaces, which this comment cannot hold: DSPy's system message
// ends "your objective is: " with one.)
func ExampleModule_Prepare() {
	prog, err := predict.ReadProgram("testdata/program.json")
	if err != nil {
		panic(err)
	}
	sig, _ := signature.Parse("question -> answer")
	cot, err := predict.NewChainOfThoughtModule(sig)
	if err != nil {
		panic(err)
	}
	cot, err = cot.Load(prog, "generate_answer.predict")
	if err != nil {
		panic(err)
	}
	saved := prog.Predictors["generate_answer.predict"]
	client := openai.NewClient("") // nothing is sent: no key is needed
	req, err := cot.Prepare(context.Background(), client,
		adapter.Values{"question": "What is the capital of Japan?"},
		adapter.WithRequest(saved.Request()))
	if err != nil {
		panic(err)
	}
	// The saved lm block's temperature 0.0 is ZeroTemperature, which
	// adapter.HTTPDoer sends as 0.
	fmt.Println("temperature 0:", req.Temperature == adapter.ZeroTemperature, "max_tokens:", req.MaxTokens)
	for _, m := range req.Messages {
		fmt.Println("---", m.Role)
		for line := range strings.Lines(m.Content) {
			fmt.Println(strings.TrimRight(line, " \n"))
		}
	}
	// Output:
	// temperature 0: true max_tokens: 4000
	// --- system
	// Your input fields are:
	// 1. `question` (str):
	// Your output fields are:
	// 1. `reasoning` (str):
	// 2. `answer` (str): often between 1 and 5 words
	// All interactions will be structured in the following way, with the appropriate values filled in.
	//
	// [[ ## question ## ]]
	// {question}
	//
	// [[ ## reasoning ## ]]
	// {reasoning}
	//
	// [[ ## answer ## ]]
	// {answer}
	//
	// [[ ## completed ## ]]
	// In adhering to this structure, your objective is:
	//         Answer questions with short factoid answers.
	// --- user
	// This is an example of the task, though some input or output fields are not supplied.
	//
	// [[ ## question ## ]]
	// Who wrote Hamlet?
	// --- assistant
	// [[ ## reasoning ## ]]
	// Not supplied for this particular example.
	//
	// [[ ## answer ## ]]
	// William Shakespeare
	//
	// [[ ## completed ## ]]
	// --- user
	// [[ ## question ## ]]
	// What is the capital of France?
	// --- assistant
	// [[ ## reasoning ## ]]
	// The question asks for the capital of France, which is Paris.
	//
	// [[ ## answer ## ]]
	// Paris
	//
	// [[ ## completed ## ]]
	// --- user
	// [[ ## question ## ]]
	// What is the capital of Japan?
	//
	// Respond with the corresponding output fields, starting with the field `[[ ## reasoning ## ]]`, then `[[ ## answer ## ]]`, and then ending with the marker for `[[ ## completed ## ]]`.
}
