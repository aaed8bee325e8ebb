package predict_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/lmtest"
	"github.com/sigwire/adapter/predict"
	"github.com/sigwire/adapter/signature"
	"github.com/sigwire/adapter/types"
)

func ExampleNewChainOfThought() {
	srv := lmtest.NewServer(lmtest.Text("[[ ## reasoning ## ]]\n40 plus 2.\n\n[[ ## total ## ]]\n42"))
	defer srv.Close()
	cot, _ := predict.NewChainOfThought[Sum, Total]()
	out, reasoning, _, err := cot.Call(context.Background(), srv.Client(), Sum{A: 40, B: 2})
	fmt.Println(out.Total, reasoning, err)
	// Output: 42 40 plus 2. <nil>
}

func ExampleReadProgram() {
	prog, _ := predict.ReadProgram("testdata/program.json")
	cot, _ := predict.NewChainOfThought[Question, Answer]()
	cot, err := cot.Load(prog, "generate_answer.predict")
	fmt.Println(err)
	fmt.Println(cot.Signature().Instructions())
	fmt.Println(len(cot.Module().Demos()), "demos")
	// Output:
	// <nil>
	// Answer questions with short factoid answers.
	// 2 demos
}

func ExampleNewModule() {
	srv := lmtest.NewServer(lmtest.Text("[[ ## sentiment ## ]]\npositive"))
	defer srv.Close()
	sig, _ := signature.Parse("text -> sentiment: Literal['positive', 'negative']")
	m := predict.NewModule(sig, adapter.UseAdapter(adapter.Chat{}))
	res, err := m.Call(context.Background(), srv.Client(), adapter.Values{"text": "I love it"})
	fmt.Println(res.Outputs[0]["sentiment"], err)
	// Output: positive <nil>
}

func ExampleFinetuneLine() {
	sig, _ := signature.Parse("question -> answer")
	line, _ := predict.FinetuneLine(adapter.Chat{}, sig, nil, adapter.Values{"question": "2+2?"}, adapter.Values{"answer": "4"})
	fmt.Println(len(line) > 0)
	// Output: true
}

func ExampleRecorder() {
	srv := lmtest.NewServer(lmtest.Text("[[ ## total ## ]]\n3"))
	defer srv.Close()
	rec := predict.NewRecorder(3)
	p, _ := predict.New[Sum, Total](adapter.UseTrace(rec.Trace()))
	_, _, _ = p.Call(context.Background(), srv.Client(), Sum{A: 1, B: 2})
	fmt.Println(len(rec.Last(10)), rec.Last(1)[0].Completion)
	_ = rec.Inspect(os.Stdout, 0)
	// Output: 1 [[ ## total ## ]]
	// 3
}

func ExampleNewReAct() {
	srv := lmtest.NewServer(
		lmtest.Text("[[ ## next_thought ## ]]\nCheck the weather.\n\n[[ ## next_tool_name ## ]]\nweather\n\n[[ ## next_tool_args ## ]]\n{\"city\": \"Bergen\"}"),
		lmtest.Text("[[ ## next_thought ## ]]\nDone.\n\n[[ ## next_tool_name ## ]]\nfinish\n\n[[ ## next_tool_args ## ]]\n{}"),
		lmtest.Text("[[ ## reasoning ## ]]\nIt rains.\n\n[[ ## answer ## ]]\nYes, take an umbrella."))
	defer srv.Close()
	weather, _ := types.NewTool("weather", "Today's weather in a city.", func(_ context.Context, a cityArgs) (string, error) {
		return "rain in " + a.City, nil
	})
	sig, _ := signature.Parse("question -> answer")
	agent, _ := predict.NewReAct(sig, []types.Tool{weather})
	res, err := agent.Call(context.Background(), srv.Client(), adapter.Values{"question": "Umbrella in Bergen?"})
	fmt.Println(res.Outputs[0]["answer"], err)
	traj, _ := json.Marshal(res.Outputs[0]["trajectory"])
	fmt.Println(string(traj))
	// Output:
	// Yes, take an umbrella. <nil>
	// {"thought_0":"Check the weather.","tool_name_0":"weather","tool_args_0":{"city":"Bergen"},"observation_0":"rain in Bergen","thought_1":"Done.","tool_name_1":"finish","tool_args_1":{},"observation_1":"Completed."}
}

// A max_iters input may lower the step limit; raising it above WithMaxIters
// takes WithMaxItersFromInputs.
func ExampleWithMaxItersFromInputs() {
	srv := lmtest.NewServer()
	defer srv.Close()
	srv.Handle(func(r lmtest.Request) lmtest.Reply { // a model that never calls finish
		if strings.Contains(r.Chat.Messages[0].Content, "`reasoning`") {
			return lmtest.Text("[[ ## reasoning ## ]]\nIt rains.\n\n[[ ## answer ## ]]\nYes.")
		}
		return lmtest.Text("[[ ## next_thought ## ]]\nLook again.\n\n[[ ## next_tool_name ## ]]\nweather\n\n[[ ## next_tool_args ## ]]\n{\"city\": \"Bergen\"}")
	})
	weather, _ := types.NewTool("weather", "Today's weather in a city.", func(_ context.Context, a cityArgs) (string, error) {
		return "rain in " + a.City, nil
	})
	sig, _ := signature.Parse("question -> answer")
	in := adapter.Values{"question": "Umbrella in Bergen?", "max_iters": 4}

	capped, _ := predict.NewReAct(sig, []types.Tool{weather}, predict.WithMaxIters(2))
	res, err := capped.Call(context.Background(), srv.Client(), in)
	fmt.Println(len(res.Outputs[0]["trajectory"].(predict.Trajectory)), "steps", err)

	raised, _ := predict.NewReAct(sig, []types.Tool{weather}, predict.WithMaxIters(2), predict.WithMaxItersFromInputs())
	res, err = raised.Call(context.Background(), srv.Client(), in)
	fmt.Println(len(res.Outputs[0]["trajectory"].(predict.Trajectory)), "steps", err)
	// Output:
	// 2 steps <nil>
	// 4 steps <nil>
}

// A failed step's observation is the tool's error, verbatim, as in DSPy;
// WithToolErrorText decides what the model is shown instead.
func ExampleWithToolErrorText() {
	srv := lmtest.NewServer(
		lmtest.Text("[[ ## next_thought ## ]]\nCheck.\n\n[[ ## next_tool_name ## ]]\nweather\n\n[[ ## next_tool_args ## ]]\n{\"city\": \"Bergen\"}"),
		lmtest.Text("[[ ## next_thought ## ]]\nDone.\n\n[[ ## next_tool_name ## ]]\nfinish\n\n[[ ## next_tool_args ## ]]\n{}"),
		lmtest.Text("[[ ## reasoning ## ]]\nNo data.\n\n[[ ## answer ## ]]\nUnknown."))
	defer srv.Close()
	weather, _ := types.NewTool("weather", "Today's weather in a city.", func(_ context.Context, a cityArgs) (string, error) {
		return "", errors.New("GET https://weather.example/?city=" + a.City + "&key=SECRET: 503")
	})
	sig, _ := signature.Parse("question -> answer")
	agent, _ := predict.NewReAct(sig, []types.Tool{weather}, predict.WithToolErrorText(func(tool string, err error) string {
		return "Execution error in " + tool + ": the service is unavailable"
	}))
	res, _ := agent.Call(context.Background(), srv.Client(), adapter.Values{"question": "Umbrella in Bergen?"})
	step := res.Outputs[0]["trajectory"].(predict.Trajectory)[0]
	fmt.Println(step.Observation)
	fmt.Println(step.Err)
	// Output:
	// Execution error in weather: the service is unavailable
	// GET https://weather.example/?city=Bergen&key=SECRET: 503
}
