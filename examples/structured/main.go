// Command structured fills a nested Go struct — a slice of structs, a
// pointer field, an enum — through the JSON adapter with OpenAI structured
// outputs (a strict json_schema response format built from the struct).
//
// With OPENAI_API_KEY set it calls the live model (OPENAI_BASE_URL and
// OPENAI_MODEL are honoured; the model defaults to gpt-4o-mini). Without
// it, it says so and runs against an lmtest server with a recorded reply.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"

	openai "github.com/sashabaranov/go-openai"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/lmtest"
	"github.com/sigwire/adapter/signature"
)

// Priority is an enum: the model must answer one of its values.
type Priority string

// EnumValues lists the allowed priorities.
func (Priority) EnumValues() []string { return []string{"low", "medium", "high"} }

// Task is one action item.
type Task struct {
	Title    string   `json:"title"`
	Owner    string   `json:"owner" desc:"who does it"`
	Priority Priority `json:"priority"`
	Due      *string  `json:"due" desc:"ISO date, or null when none is given"`
}

// Email is the input.
type Email struct {
	Email string `json:"email" desc:"the email to read"`
}

// Actions is the output.
type Actions struct {
	Summary string `json:"summary" desc:"one sentence"`
	Tasks   []Task `json:"tasks"`
	Urgent  bool   `json:"urgent"`
}

const email = `Hi team, Dana needs the Q3 report by 2026-10-01 — that's urgent. Sam, when you have time, please tidy the wiki.`

// recorded is what gpt-4o-mini answered to this program's request.
const recorded = `{"summary":"Dana needs the Q3 report urgently and Sam should tidy the wiki.","tasks":[{"title":"Finish the Q3 report","owner":"Dana","priority":"high","due":"2026-10-01"},{"title":"Tidy the wiki","owner":"Sam","priority":"low","due":null}],"urgent":true}`

func main() {
	sig, err := signature.FromStructs[Email, Actions](signature.WithInstructions("Extract the action items from the email."))
	if err != nil {
		log.Fatal(err)
	}
	model := os.Getenv("OPENAI_MODEL")
	if model == "" {
		model = "gpt-4o-mini"
	}
	var lm adapter.LM
	var srv *lmtest.Server
	if key := os.Getenv("OPENAI_API_KEY"); key != "" {
		cfg := openai.DefaultConfig(key)
		if base := os.Getenv("OPENAI_BASE_URL"); base != "" {
			cfg.BaseURL = base
		}
		lm = openai.NewClientWithConfig(cfg)
	} else {
		srv = lmtest.NewServer(lmtest.Text(recorded))
		defer srv.Close()
		lm = srv.Client()
		fmt.Println("OPENAI_API_KEY is not set: using an lmtest server with a recorded reply.")
	}

	res, err := adapter.Call(context.Background(), lm, sig, nil, adapter.Values{"email": email},
		adapter.UseAdapter(adapter.JSON{}),
		adapter.WithRequest(openai.ChatCompletionRequest{Model: model, Temperature: adapter.ZeroTemperature}))
	if err != nil {
		log.Fatal(err)
	}
	if srv != nil {
		var body struct {
			ResponseFormat json.RawMessage `json:"response_format"`
		}
		if err := json.Unmarshal(srv.Requests()[0].Body, &body); err == nil {
			fmt.Printf("response_format sent:\n%s\n\n", body.ResponseFormat)
		}
	}
	out := res.Outputs[0]
	fmt.Printf("mode %s, %d LM call(s), %d tokens\n", res.Mode, res.Calls, res.Usage.TotalTokens)
	fmt.Printf("summary: %s\nurgent:  %v\n", out["summary"], out["urgent"])
	for _, t := range out["tasks"].([]Task) {
		due := "none"
		if t.Due != nil {
			due = *t.Due
		}
		fmt.Printf("- %-22s owner %-5s priority %-6s due %s\n", t.Title, t.Owner, t.Priority, due)
	}
}
