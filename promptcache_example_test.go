package adapter_test

import (
	"context"
	"encoding/json"
	"fmt"

	openai "github.com/sashabaranov/go-openai"

	"github.com/sigwire/adapter"
	"github.com/sigwire/adapter/lmtest"
	"github.com/sigwire/adapter/signature"
)

// A Claude model through an Anthropic-compatible gateway gets its system
// message and its last demo message marked for the provider's cache; the
// client's HTTP client must be wrapped with HTTPDoer, which puts the marks
// on the wire.
func ExampleWithPromptCache() {
	srv := lmtest.NewServer(lmtest.Text("[[ ## answer ## ]]\nParis\n\n[[ ## completed ## ]]"))
	defer srv.Close()
	cfg := srv.Config() // openai.DefaultConfig(key) with the gateway's BaseURL, in a service
	cfg.HTTPClient = adapter.HTTPDoer(cfg.HTTPClient)
	client := openai.NewClientWithConfig(cfg)

	sig, err := signature.Parse("question -> answer")
	if err != nil {
		panic(err)
	}
	demos := []adapter.Values{{"question": "Capital of Italy?", "answer": "Rome"}}
	res, err := adapter.Call(context.Background(), client, sig, demos, adapter.Values{"question": "Capital of France?"},
		adapter.WithRequest(openai.ChatCompletionRequest{Model: "anthropic/claude-sonnet-4.5"}),
		adapter.WithPromptCache(""))
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Outputs[0]["answer"])

	var sent struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(srv.Requests()[0].Body, &sent); err != nil {
		panic(err)
	}
	for _, m := range sent.Messages {
		var parts []struct {
			CacheControl *struct{ Type string } `json:"cache_control"`
		}
		marked := json.Unmarshal(m.Content, &parts) == nil && parts[len(parts)-1].CacheControl != nil
		fmt.Println(m.Role, marked)
	}
	// Output:
	// Paris
	// system true
	// user false
	// assistant true
	// user false
}
