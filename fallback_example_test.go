package adapter_test

import (
	"context"
	"fmt"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/lmtest"
	"github.com/sigwire/adapter/signature"
)

// A call moves to a second model when the first is down; the result says
// which model answered and that the call moved.
func ExampleFallback() {
	primary := lmtest.NewServer()
	defer primary.Close()
	primary.Handle(func(lmtest.Request) lmtest.Reply {
		return lmtest.Error(503, `{"error":{"message":"overloaded"}}`)
	})
	backup := lmtest.NewServer(lmtest.Text("[[ ## answer ## ]]\nParis"))
	defer backup.Close()

	lm := adapter.Fallback(adapter.OnOutage|adapter.OnRateLimit,
		adapter.Target{LM: primary.Client(), Model: "gpt-4o"},
		adapter.Target{LM: backup.Client(), Model: "gpt-4o-mini"})
	sig, _ := signature.Parse("question -> answer")
	res, err := adapter.Call(context.Background(), lm, sig, nil, adapter.Values{"question": "Capital of France?"}, adapter.NoRetry())
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Outputs[0]["answer"], "from", res.Model)
	fmt.Println("requests:", res.Requests, "model fallbacks:", res.ModelFallbacks)
	// Output:
	// Paris from gpt-4o-mini
	// requests: 2 model fallbacks: 1
}
