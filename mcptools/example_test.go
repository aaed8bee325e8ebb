package mcptools_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/lmtest"
	"github.com/sigwire/adapter/mcptools"
	"github.com/sigwire/adapter/predict"
	"github.com/sigwire/adapter/signature"
)

// A ReAct agent over the tools of an MCP server (here one in process; a
// remote one connects with mcp.StreamableClientTransport the same way).
func ExampleTools() {
	ctx := context.Background()
	server := mcp.NewServer(&mcp.Implementation{Name: "clock", Version: "v1"}, nil)
	server.AddTool(&mcp.Tool{
		Name:        "time_in",
		Description: "The local time in a city.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`),
	}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "14:05"}}}, nil
	})
	st, ct := mcp.NewInMemoryTransports()
	ss, _ := server.Connect(ctx, st, nil)
	defer ss.Close()
	session, _ := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "v1"}, nil).Connect(ctx, ct, nil)
	defer session.Close()

	tools, err := mcptools.Tools(ctx, session)
	fmt.Println(tools[0], err)

	lm := lmtest.NewServer( // the model's replies, recorded
		step("Ask the clock.", "time_in", `{"city": "Oslo"}`),
		step("I have it.", "finish", "{}"),
		answer("14:05"))
	defer lm.Close()
	sig, _ := signature.Parse("question -> answer")
	agent, _ := predict.NewReAct(sig, tools)
	res, err := agent.Call(ctx, lm.Client(), adapter.Values{"question": "What time is it in Oslo?"})
	fmt.Println(res.Outputs[0]["trajectory"].(predict.Trajectory)[0].Observation, res.Outputs[0]["answer"], err)
	// Output:
	// time_in, whose description is <desc>The local time in a city.</desc>. It takes arguments {'city': {'type': 'string'}}. <nil>
	// 14:05 14:05 <nil>
}
