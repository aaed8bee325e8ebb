// Command agent runs a ReAct agent (DSPy's dspy.ReAct, with the same
// prompts) over two Go tools: the model thinks, picks a tool and its
// arguments, reads the result, and so on until it calls finish; then the
// answer is extracted from the trajectory. Every tool run is traced.
//
// It runs offline by default: an lmtest server answers with recorded
// replies. With -live it calls the model behind OPENAI_API_KEY
// (OPENAI_BASE_URL and OPENAI_MODEL are honoured; the model defaults to
// gpt-4o-mini).
//
//	go run ./examples/agent
//	OPENAI_API_KEY=... go run ./examples/agent -live
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"strings"

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

// replies is a recorded run of the agent, for the offline mode.
var replies = []string{
	"[[ ## next_thought ## ]]\nI need today's weather in Bergen.\n\n[[ ## next_tool_name ## ]]\nweather\n\n[[ ## next_tool_args ## ]]\n{\"city\": \"Bergen\"}\n\n[[ ## completed ## ]]",
	"[[ ## next_thought ## ]]\nRain is expected, so I will ask what to pack for rain.\n\n[[ ## next_tool_name ## ]]\npacking_list\n\n[[ ## next_tool_args ## ]]\n{\"rain\": true}\n\n[[ ## completed ## ]]",
	"[[ ## next_thought ## ]]\nI know the weather and what to pack.\n\n[[ ## next_tool_name ## ]]\nfinish\n\n[[ ## next_tool_args ## ]]\n{}\n\n[[ ## completed ## ]]",
	"[[ ## reasoning ## ]]\nBergen has light rain all day at 14 °C, and the packing list for rain has an umbrella.\n\n[[ ## umbrella ## ]]\nTrue\n\n[[ ## advice ## ]]\nYes: it rains all day in Bergen (14 °C). Take an umbrella, a rain jacket and waterproof shoes.\n\n[[ ## completed ## ]]",
}

func main() {
	live := flag.Bool("live", false, "call the model behind OPENAI_API_KEY instead of the recorded replies")
	flag.Parse()
	ctx := context.Background()

	sig, err := signature.Parse("question -> umbrella: bool, advice")
	if err != nil {
		log.Fatal(err)
	}
	sig = sig.WithInstructions("Help the traveller get ready for the day.")
	weatherTool, err := types.NewTool("weather", "Today's forecast for a city.", weather)
	if err != nil {
		log.Fatal(err)
	}
	packingTool, err := types.NewTool("packing_list", "What to take along, given the weather.", packing)
	if err != nil {
		log.Fatal(err)
	}
	agent, err := predict.NewReAct(sig, []types.Tool{weatherTool, packingTool}, predict.MaxIters(5))
	if err != nil {
		log.Fatal(err)
	}

	var lm adapter.LM
	model := os.Getenv("OPENAI_MODEL")
	if model == "" {
		model = "gpt-4o-mini"
	}
	if *live {
		key := os.Getenv("OPENAI_API_KEY")
		if key == "" {
			log.Fatal("-live needs OPENAI_API_KEY")
		}
		cfg := openai.DefaultConfig(key)
		if base := os.Getenv("OPENAI_BASE_URL"); base != "" {
			cfg.BaseURL = base
		}
		lm = openai.NewClientWithConfig(cfg)
	} else {
		var rs []lmtest.Reply
		for _, r := range replies {
			rs = append(rs, lmtest.Text(r))
		}
		srv := lmtest.NewServer(rs...)
		defer srv.Close()
		lm = srv.Client()
		fmt.Println("(offline: an lmtest server replays a recorded run; -live calls a real model)")
	}

	// Trace every tool run: what the agent called, with which arguments,
	// and what came back.
	trace := &adapter.Trace{
		ToolStart: func(i adapter.ToolStartInfo) { fmt.Printf("→ %s %s\n", i.Tool, i.Args) },
		ToolDone: func(i adapter.ToolDoneInfo) {
			if i.Err != nil {
				fmt.Printf("  error: %v\n", i.Err)
				return
			}
			fmt.Printf("  %v\n", i.Result)
		},
	}
	res, err := agent.Call(ctx, lm, adapter.Values{"question": "I am in Bergen today. Do I need an umbrella?"},
		adapter.UseTrace(trace), adapter.WithRequest(openai.ChatCompletionRequest{Model: model}))
	if err != nil {
		log.Fatal(err)
	}
	out := res.Outputs[0]
	fmt.Printf("\numbrella: %v\nadvice: %s\n", out["umbrella"], out["advice"])
	traj, _ := json.MarshalIndent(out["trajectory"], "", "  ")
	fmt.Printf("\n%d LM calls, %d tokens. The trajectory, as DSPy keeps it:\n%s\n", res.Calls, res.Usage.TotalTokens, traj)
}
