// Command serve-web serves an agent over HTTP with package serve, and a
// web page that calls its stream endpoint from the browser and shows the
// run as it arrives: each step's thought as the model writes it, each
// tool's call and result, then the answer.
//
// The page (index.html, embedded) posts the question to /api/stream with
// fetch and reads the Server-Sent Events from the response body's
// ReadableStream — EventSource cannot POST. The agent is DSPy 3.3.1's
// ReAct over two Go tools; an lmtest server stands in for the model and
// answers each step as a model would, in small delayed pieces.
//
//	go run ./examples/serve-web            # then open http://127.0.0.1:8080/
//	go run ./examples/serve-web -addr :9000
//
// Opening /?q=question runs the question at once (the CI check does that
// in headless Chromium); the page sets data-done="true" on its body when
// the done event has arrived.
package main

import (
	"context"
	"embed"
	"flag"
	"fmt"
	"log"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/lmtest"
	"github.com/sigwire/adapter/predict"
	"github.com/sigwire/adapter/serve"
	"github.com/sigwire/adapter/signature"
	"github.com/sigwire/adapter/types"
)

//go:embed index.html
var page embed.FS

// CityArgs are the weather tool's arguments.
type CityArgs struct {
	City string `json:"city" jsonschema:"description=the city to look up"`
}

// Forecast is what the weather tool returns.
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

// newAgent is the agent served: question -> umbrella: bool, advice.
func newAgent() (*predict.ReAct, error) {
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
	return predict.NewReAct(sig, []types.Tool{weatherTool, packingTool}, predict.WithMaxIters(5))
}

// Advice is the answer the stand-in model gives.
const Advice = "Yes: it rains all day in Bergen (14 °C). Take an umbrella, a rain jacket and waterproof shoes; Oslo will be sunny."

// model answers each request of the agent's run as a model would: the
// step the trajectory has reached, then the extract step's answer,
// streamed in 6-byte pieces delay apart.
func model(delay time.Duration) func(lmtest.Request) lmtest.Reply {
	step := func(thought, tool, args string) string {
		return "[[ ## next_thought ## ]]\n" + thought + "\n\n[[ ## next_tool_name ## ]]\n" + tool + "\n\n[[ ## next_tool_args ## ]]\n" + args + "\n\n[[ ## completed ## ]]"
	}
	steps := []string{
		step("I need today's forecast for Bergen.", "weather", `{"city": "Bergen"}`),
		step("And tomorrow's for Oslo.", "weather", `{"city": "Oslo"}`),
		step("Rain in Bergen: I will ask what to pack for rain.", "packing_list", `{"rain": true}`),
		step("I know the weather and what to pack.", "finish", `{}`),
	}
	extract := "[[ ## reasoning ## ]]\nBergen has light rain all day at 14 °C; Oslo is sunny. The packing list for rain has an umbrella.\n\n" +
		"[[ ## umbrella ## ]]\nTrue\n\n[[ ## advice ## ]]\n" + Advice + "\n\n[[ ## completed ## ]]"
	return func(r lmtest.Request) lmtest.Reply {
		msgs := r.Chat.Messages
		text := extract
		if len(msgs) > 0 && strings.Contains(msgs[0].Content, "`next_tool_name`") {
			n := strings.Count(msgs[len(msgs)-1].Content, "[[ ## observation_")
			text = steps[min(n, len(steps)-1)]
		}
		return lmtest.Text(text).ChunkSize(6).ChunkDelay(delay).WithUsage(200, 40)
	}
}

// newMux serves the page at / and the agent's serve.Handler under /api/.
func newMux(lm adapter.StreamingLM, logger *slog.Logger) (*http.ServeMux, error) {
	agent, err := newAgent()
	if err != nil {
		return nil, err
	}
	h := &serve.Handler{Module: agent, LM: lm, Logger: logger, Title: "serve-web"}
	mux := http.NewServeMux()
	mux.Handle("/api/", http.StripPrefix("/api", h))
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		http.ServeFileFS(w, r, page, "index.html")
	})
	return mux, nil
}

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "the address to listen on")
	delay := flag.Duration("delay", 15*time.Millisecond, "the stand-in model's pause between pieces of a reply")
	flag.Parse()
	lm := lmtest.NewServer()
	defer lm.Close()
	lm.Handle(model(*delay))
	logger := slog.Default()
	mux, err := newMux(lm.Client(), logger)
	if err != nil {
		log.Fatal(err)
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	logger.Info("serving the page", "url", "http://"+ln.Addr().String()+"/")
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	log.Fatal(srv.Serve(ln))
}
