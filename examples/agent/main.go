// Command agent runs an agent over two Go tools with the provider's
// native function calling — DSPy's ReActV2, which DSPy 3.5 made its
// dspy.ReAct — and prints its live transcript as the run streams: each
// step's thought as the model writes it, the tool calls it chose (several
// at once when it wants them), each tool's start and result. The run ends
// when the model calls submit with the outputs.
//
// It runs offline by default: an lmtest server answers with a recorded
// run. With -live it calls the model behind OPENAI_API_KEY
// (OPENAI_BASE_URL and OPENAI_MODEL are honoured; the model defaults to
// gpt-4o-mini and must support function calling). With -text it runs DSPy
// 3.3.1's ReAct instead: one tool per step in the text, then an extract
// step that writes the answer (the same transcript).
//
//	go run ./examples/agent
//	OPENAI_API_KEY=... go run ./examples/agent -live
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"iter"
	"log"
	"os"
	"strings"
	"time"

	openai "github.com/sashabaranov/go-openai"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/lmtest"
	"github.com/sigwire/adapter/predict"
	"github.com/sigwire/adapter/signature"
	"github.com/sigwire/adapter/types"
)

// CityArgs are the weather tool's arguments.
type CityArgs struct {
	City string `json:"city" jsonschema:"description=the city to look up"`
}

// Forecast is what the weather tool returns; the model sees it as JSON.
type Forecast struct {
	City        string  `json:"city"`
	Celsius     float64 `json:"celsius"`
	Rain        bool    `json:"rain"`
	Description string  `json:"description"`
}

func weather(_ context.Context, a CityArgs) (Forecast, error) {
	switch strings.ToLower(a.City) {
	case "bergen":
		return Forecast{"Bergen", 14, true, "light rain all day"}, nil
	case "oslo":
		return Forecast{"Oslo", 19, false, "sunny"}, nil
	}
	return Forecast{}, fmt.Errorf("no forecast for %q", a.City)
}

// ItemsArgs are the packing tool's arguments.
type ItemsArgs struct {
	Rain bool `json:"rain" jsonschema:"description=whether rain is expected"`
}

func packing(_ context.Context, a ItemsArgs) ([]string, error) {
	if a.Rain {
		return []string{"umbrella", "rain jacket", "waterproof shoes"}, nil
	}
	return []string{"sunglasses", "water bottle"}, nil
}

const question = "I am in Bergen today and in Oslo tomorrow. Do I need an umbrella?"

// streamer is what both agents are for run: a Stream of the run.
type streamer interface {
	Stream(ctx context.Context, lm adapter.StreamingLM, inputs adapter.Values, opts ...adapter.CallOption) iter.Seq2[adapter.Chunk, error]
}

// newAgent is the agent: a ReActV2 with native function calling, or DSPy
// 3.3.1's text ReAct.
func newAgent(native bool) (streamer, error) {
	sig, err := signature.Parse("question -> umbrella: bool, advice")
	if err != nil {
		return nil, err
	}
	sig = sig.WithInstructions("Help the traveller get ready for the trip.")
	weatherTool, err := types.NewTool("weather", "Today's forecast for a city.", weather)
	if err != nil {
		return nil, err
	}
	packingTool, err := types.NewTool("packing_list", "What to take along, given the weather.", packing)
	if err != nil {
		return nil, err
	}
	tools := []types.Tool{weatherTool, packingTool}
	if native {
		// Native function calling is the adapter's setting, as in DSPy:
		// XML with it on is DSPy 3.5's default.
		return predict.NewReActV2(sig, tools, predict.WithMaxIters(5),
			adapter.UseAdapter(adapter.XML{Options: adapter.Options{NativeTools: adapter.On}}))
	}
	return predict.NewReAct(sig, tools, predict.WithMaxIters(5))
}

// recorded is a recorded run of the agent, for the offline mode: the
// steps (native tool calls ending with submit, or text steps and the
// extract call), their text streamed in small pieces delay apart.
func recorded(native bool, delay time.Duration) []lmtest.Reply {
	call := func(id, name, args string) openai.ToolCall {
		return openai.ToolCall{ID: id, Type: openai.ToolTypeFunction, Function: openai.FunctionCall{Name: name, Arguments: args}}
	}
	thought := func(s string) string { return "<next_thought>\n" + s + "\n</next_thought>" }
	text := func(s, tool, args string) lmtest.Reply {
		return lmtest.Text("[[ ## next_thought ## ]]\n" + s + "\n\n[[ ## next_tool_name ## ]]\n" + tool + "\n\n[[ ## next_tool_args ## ]]\n" + args + "\n\n[[ ## completed ## ]]")
	}
	steps := []lmtest.Reply{
		lmtest.Text(thought("I need the forecasts for Bergen today and Oslo tomorrow.")).
			WithToolCalls(call("call_1", "weather", `{"city": "Bergen"}`), call("call_2", "weather", `{"city": "Oslo"}`)).WithFinish("tool_calls"),
		lmtest.Text(thought("Rain in Bergen: I will ask what to pack for rain.")).
			WithToolCalls(call("call_3", "packing_list", `{"rain": true}`)).WithFinish("tool_calls"),
		lmtest.Text(thought("I know the weather and what to pack.")).
			WithToolCalls(call("call_4", "submit", `{"umbrella": true, "advice": "Yes: it rains all day in Bergen (14 °C). Take an umbrella, a rain jacket and waterproof shoes; Oslo will be sunny."}`)).WithFinish("tool_calls"),
	}
	if !native {
		steps = []lmtest.Reply{
			text("I need today's forecast for Bergen.", "weather", `{"city": "Bergen"}`),
			text("And tomorrow's for Oslo.", "weather", `{"city": "Oslo"}`),
			text("Rain in Bergen: I will ask what to pack for rain.", "packing_list", `{"rain": true}`),
			text("I know the weather and what to pack.", "finish", `{}`),
		}
	}
	out := make([]lmtest.Reply, 0, len(steps)+1)
	for _, s := range steps {
		out = append(out, s.ChunkSize(6).ChunkDelay(delay))
	}
	if native {
		return out
	}
	return append(out, lmtest.Text("[[ ## reasoning ## ]]\nBergen has light rain all day at 14 °C; Oslo is sunny. The packing list for rain has an umbrella.\n\n"+
		"[[ ## umbrella ## ]]\nTrue\n\n[[ ## advice ## ]]\nYes: it rains all day in Bergen (14 °C). Take an umbrella, a rain jacket and waterproof shoes; Oslo will be sunny.\n\n[[ ## completed ## ]]").
		ChunkSize(6).ChunkDelay(delay))
}

// run streams the agent on the question and prints the transcript to w.
func run(ctx context.Context, agent streamer, lm adapter.StreamingLM, model string, w io.Writer) (*adapter.Result, error) {
	var res *adapter.Result
	field := "" // the field whose deltas are being printed
	for ch, err := range agent.Stream(ctx, lm, adapter.Values{"question": question},
		adapter.WithRequest(openai.ChatCompletionRequest{Model: model})) {
		if err != nil {
			return nil, err
		}
		switch {
		case ch.Done:
			res = ch.Result
		case (ch.Delta != "" || ch.Replace) && (ch.Step > 0 || ch.Field == "advice"):
			// A step's thought, then the advice, as they are written.
			// A chunk with Replace starts the text anew (a corrected
			// reply): printed as it comes, it starts a new line.
			if key := fmt.Sprint(ch.Step, ch.Field); key != field || ch.Replace {
				field = key
				if ch.Step > 0 {
					fmt.Fprintf(w, "\n[step %d] ", ch.Step)
				} else {
					fmt.Fprint(w, "\n\nadvice: ")
				}
			}
			fmt.Fprint(w, ch.Delta)
		case ch.ToolCalls != nil:
			fmt.Fprintln(w)
			for _, c := range ch.ToolCalls {
				fmt.Fprintf(w, "  → %s %s\n", c.Function.Name, c.Function.Arguments)
			}
			field = ""
		case ch.Tool != nil && !ch.Tool.Done:
			fmt.Fprintf(w, "    … %s\n", ch.Status)
		case ch.Tool != nil:
			obs, _ := json.Marshal(ch.Tool.Observation)
			if ch.Tool.Err != nil {
				fmt.Fprintf(w, "    ✗ %s: %v\n", ch.Tool.Name, ch.Tool.Err)
			} else {
				fmt.Fprintf(w, "    ← %s: %s\n", ch.Tool.Name, obs)
			}
		case ch.Status != "":
			fmt.Fprintf(w, "\n  (%s)\n", ch.Status)
		}
	}
	fmt.Fprintln(w)
	return res, nil
}

func main() {
	live := flag.Bool("live", false, "call the model behind OPENAI_API_KEY instead of the recorded run")
	text := flag.Bool("text", false, "ask for one tool per step in the text (DSPy 3.3.1's ReAct) instead of native function calling")
	flag.Parse()
	ctx := context.Background()

	agent, err := newAgent(!*text)
	if err != nil {
		log.Fatal(err)
	}
	model := os.Getenv("OPENAI_MODEL")
	if model == "" {
		model = "gpt-4o-mini"
	}
	var lm adapter.StreamingLM
	if *live {
		key := os.Getenv("OPENAI_API_KEY")
		if key == "" {
			log.Fatal("-live needs OPENAI_API_KEY")
		}
		cfg := openai.DefaultConfig(key)
		if base := os.Getenv("OPENAI_BASE_URL"); base != "" {
			cfg.BaseURL = base
		}
		// Native tool calling needs an LM that declares function calling:
		// OpenAI's models do by name; declare it for any other server.
		caps := adapter.ModelCapabilities(model)
		caps.Tools = true
		lm = adapter.WithCapabilities(openai.NewClientWithConfig(cfg), caps)
	} else {
		srv := lmtest.NewServer(recorded(!*text, 15*time.Millisecond)...)
		defer srv.Close()
		lm = adapter.WithCapabilities(srv.Client(), adapter.Capabilities{Tools: true})
		fmt.Println("(offline: an lmtest server replays a recorded run; -live calls a real model)")
	}

	fmt.Println("question:", question)
	res, err := run(ctx, agent, lm, model, os.Stdout)
	if err != nil {
		log.Fatal(err)
	}
	out := res.Outputs[0]
	fmt.Printf("\numbrella: %v\nadvice: %v\n", out["umbrella"], out["advice"])
	steps := out["trajectory"] // DSPy 3.3.1's ReAct
	if *text {
		fmt.Printf("\n%d LM calls, %d tokens. The trajectory, as DSPy keeps it:\n", res.Calls, res.Usage.TotalTokens)
	} else {
		steps = predict.HistoryOf(res)
		fmt.Printf("\n%d LM calls, %d tokens; it ended on %s. The history, as DSPy keeps it:\n", res.Calls, res.Usage.TotalTokens, predict.TerminationOf(res))
	}
	b, _ := json.MarshalIndent(steps, "", "  ")
	fmt.Println(string(b))
}
