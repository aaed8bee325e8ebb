package predict_test

import (
	"context"
	"fmt"
	"strings"

	openai "github.com/sashabaranov/go-openai"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/lmtest"
	"github.com/sigwire/adapter/predict"
	"github.com/sigwire/adapter/signature"
	"github.com/sigwire/adapter/types"
)

// A ReActV2 that calls its tools through the provider's function
// calling (the adapter's setting, as in DSPy): one reply asks for two
// forecasts at once, the next submits the answer; the stream prints a
// live transcript of the run.
func ExampleReActV2_Stream() {
	call := func(id, name, args string) openai.ToolCall {
		return openai.ToolCall{ID: id, Type: openai.ToolTypeFunction, Function: openai.FunctionCall{Name: name, Arguments: args}}
	}
	srv := lmtest.NewServer(
		lmtest.Text("[[ ## next_thought ## ]]\nI need the weather in both cities.\n\n[[ ## completed ## ]]").
			WithToolCalls(call("call_1", "weather", `{"city": "Oslo"}`), call("call_2", "weather", `{"city": "Bergen"}`)),
		lmtest.Text("").WithToolCalls(call("call_3", "submit", `{"answer": "Oslo: no umbrella. Bergen: take one."}`)))
	defer srv.Close()
	// An lmtest server declares nothing: say it calls functions.
	lm := adapter.WithCapabilities(srv.Client(), adapter.Capabilities{Tools: true})

	weather, _ := types.NewTool("weather", "Today's weather in a city.", func(_ context.Context, a cityArgs) (string, error) {
		if a.City == "Bergen" {
			return "rain", nil
		}
		return "sun", nil
	})
	sig, _ := signature.Parse("question -> answer")
	// WithToolConcurrency(1) runs a step's calls one after another, so that
	// the transcript below is always in the same order.
	agent, _ := predict.NewReActV2(sig, []types.Tool{weather}, predict.WithToolConcurrency(1),
		adapter.UseAdapter(adapter.Chat{Options: adapter.Options{NativeTools: adapter.On}}))

	var line strings.Builder
	flush := func() {
		if line.Len() > 0 {
			fmt.Println(line.String())
			line.Reset()
		}
	}
	for ch, err := range agent.Stream(context.Background(), lm, adapter.Values{"question": "Umbrella in Oslo or Bergen?"}) {
		switch {
		case err != nil:
			fmt.Println("error:", err)
		case ch.Field == "next_thought":
			if line.Len() == 0 || ch.Replace {
				line.Reset()
				fmt.Fprintf(&line, "step %d thinks: ", ch.Step)
			}
			line.WriteString(ch.Delta)
		case ch.ToolCalls != nil:
			flush()
			for _, c := range ch.ToolCalls {
				fmt.Printf("step %d calls %s %s\n", ch.Step, c.Function.Name, c.Function.Arguments)
			}
		case ch.Tool != nil && ch.Tool.Done && ch.Tool.Name != "submit":
			fmt.Printf("  %s → %v\n", ch.Tool.ID, ch.Tool.Observation)
		case ch.Done:
			flush()
			fmt.Println("answer:", ch.Result.Outputs[0]["answer"], "—", predict.TerminationOf(ch.Result))
		}
	}
	// Output:
	// step 1 thinks: I need the weather in both cities.
	// step 1 calls weather {"city":"Oslo"}
	// step 1 calls weather {"city":"Bergen"}
	//   call_1 → sun
	//   call_2 → rain
	// step 2 calls submit {"answer":"Oslo: no umbrella. Bergen: take one."}
	// answer: Oslo: no umbrella. Bergen: take one. — submit
}

// A text ReAct's stream: each step's thought as it is written, the tool it
// chose, the tool's start and end, then the answer's deltas.
func ExampleReAct_Stream() {
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
	thoughts := map[int]string{}
	answer := ""
	for ch, err := range agent.Stream(context.Background(), srv.Client(), adapter.Values{"question": "Umbrella in Bergen?"}) {
		switch {
		case err != nil:
			fmt.Println("error:", err)
		case ch.Field == "next_thought":
			if ch.Replace {
				thoughts[ch.Step] = ""
			}
			thoughts[ch.Step] += ch.Delta
		case ch.ToolCalls != nil:
			c := ch.ToolCalls[0].Function
			fmt.Printf("%d. %s → %s %s\n", ch.Step, thoughts[ch.Step], c.Name, c.Arguments)
		case ch.Status != "":
			fmt.Println("  ", ch.Status)
		case ch.Field == "answer":
			if ch.Replace {
				answer = ""
			}
			answer += ch.Delta
		case ch.Done:
			fmt.Println(answer)
		}
	}
	// Output:
	// 1. Check the weather. → weather {"city":"Bergen"}
	//    Calling tool weather...
	//    Tool calling finished! Querying the LLM with tool calling results...
	// 2. Done. → finish {}
	//    Calling tool finish...
	//    Tool calling finished! Querying the LLM with tool calling results...
	// Yes, take an umbrella.
}
