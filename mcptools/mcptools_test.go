package mcptools_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/lmtest"
	"github.com/sigwire/adapter/mcptools"
	"github.com/sigwire/adapter/predict"
	"github.com/sigwire/adapter/signature"
	"github.com/sigwire/adapter/types"
)

// weatherServer is an MCP server with three tools; got records the raw
// arguments each call received, by tool.
type weatherServer struct {
	*mcp.Server
	mu      sync.Mutex
	got     map[string][]string
	started chan struct{} // a "slow" call has started
	release chan struct{} // closed: "slow" returns
	hold    chan struct{} // not nil: "weather" answers once it is closed
}

func newWeatherServer(t testing.TB) *weatherServer {
	t.Helper()
	ws := &weatherServer{got: map[string][]string{}, started: make(chan struct{}, 1), release: make(chan struct{})}
	ws.Server = mcp.NewServer(&mcp.Implementation{Name: "weather", Version: "v1"}, nil)
	record := func(req *mcp.CallToolRequest) {
		ws.mu.Lock()
		defer ws.mu.Unlock()
		ws.got[req.Params.Name] = append(ws.got[req.Params.Name], string(req.Params.Arguments))
	}
	ws.AddTool(&mcp.Tool{
		Name:        "weather",
		Description: "The weather in a city.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string","description":"the city"},"unit":{"$ref":"#/$defs/Unit"}},"required":["city"],"$defs":{"Unit":{"type":"string","enum":["C","F"]}}}`),
	}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		record(req)
		if ws.hold != nil {
			select {
			case <-ws.hold:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		var args map[string]any // not a struct: encoding/json would match "CITY" to City
		_ = json.Unmarshal(req.Params.Arguments, &args)
		return &mcp.CallToolResult{Content: []mcp.Content{
			&mcp.TextContent{Text: fmt.Sprintf("Sunny in %v, 21 C.", args["city"])},
			&mcp.ImageContent{MIMEType: "image/png", Data: []byte("png!")},
		}}, nil
	})
	ws.AddTool(&mcp.Tool{Name: "broken", Description: "Always fails.", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			record(req)
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "the weather station is offline"}}}, nil
		})
	ws.AddTool(&mcp.Tool{Name: "slow", Description: "Never answers.", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			record(req)
			ws.started <- struct{}{}
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-ws.release:
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "late"}}}, nil
			}
		})
	return ws
}

func (ws *weatherServer) calls(tool string) []string {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	return append([]string(nil), ws.got[tool]...)
}

// inMemory connects a client to ws in process.
func inMemory(t *testing.T, ws *weatherServer) *mcp.ClientSession { return inProcess(t, ws) }

// inProcess is inMemory for a test, a benchmark or a fuzz target.
func inProcess(t testing.TB, ws *weatherServer) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := ws.Connect(ctx, st, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v1"}, nil).Connect(ctx, ct, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// overHTTP serves ws with the SDK's streamable HTTP handler on a loopback
// port and connects a client to it.
func overHTTP(t *testing.T, ws *weatherServer) *mcp.ClientSession {
	t.Helper()
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return ws.Server }, nil))
	t.Cleanup(hs.Close)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v1"}, nil).
		Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: hs.URL, DisableStandaloneSSE: true}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func step(thought, tool, args string) lmtest.Reply {
	return lmtest.Text("[[ ## next_thought ## ]]\n" + thought + "\n\n[[ ## next_tool_name ## ]]\n" + tool + "\n\n[[ ## next_tool_args ## ]]\n" + args + "\n\n[[ ## completed ## ]]")
}

func answer(a string) lmtest.Reply {
	return lmtest.Text("[[ ## reasoning ## ]]\nr\n\n[[ ## answer ## ]]\n" + a + "\n\n[[ ## completed ## ]]")
}

func byName(tools []types.Tool) map[string]types.Tool {
	out := map[string]types.Tool{}
	for _, t := range tools {
		out[t.Name] = t
	}
	return out
}

// TestListing: the listed tools keep their names, descriptions and
// argument schemas, references resolved.
func TestListing(t *testing.T) {
	tools, err := mcptools.Tools(context.Background(), inMemory(t, newWeatherServer(t)))
	require.NoError(t, err)
	require.Len(t, tools, 3)
	w := byName(tools)["weather"]
	assert.Equal(t, "The weather in a city.", w.Desc)
	assert.JSONEq(t, `{"city":{"type":"string","description":"the city"},"unit":{"type":"string","enum":["C","F"]}}`, string(w.Args))
	assert.True(t, w.Callable())
	assert.Equal(t, "weather, whose description is <desc>The weather in a city.</desc>. It takes arguments {'city': {'description': 'the city', 'type': 'string'}, 'unit': {'enum': ['C', 'F'], 'type': 'string'}}.", w.String(),
		"what the text ReAct shows the model (keys in the order the Go SDK's map gives: sorted)")
	def, err := w.ToolDefinition()
	require.NoError(t, err)
	assert.Equal(t, "weather", def.Function.Name)
	assert.JSONEq(t, `{"type":"object","properties":{"city":{"type":"string","description":"the city"},"unit":{"type":"string","enum":["C","F"]}},"required":["city","unit"]}`,
		string(def.Function.Parameters.(json.RawMessage)), "what native function calling sends")
	assert.Equal(t, "{}", string(byName(tools)["broken"].Args))
}

// TestReAct drives a text ReAct agent over the MCP tools, in process and
// over loopback HTTP: the model's arguments reach the server as the trace
// shows them, the result is the observation, an isError result is an
// execution error the model sees.
func TestReAct(t *testing.T) {
	for name, connect := range map[string]func(*testing.T, *weatherServer) *mcp.ClientSession{"in-memory": inMemory, "http": overHTTP} {
		t.Run(name, func(t *testing.T) {
			ws := newWeatherServer(t)
			tools, err := mcptools.Tools(context.Background(), connect(t, ws))
			require.NoError(t, err)
			srv := lmtest.NewServer(
				step("Look it up.", "weather", `{"city": "Paris", "CITY": "Lyon"}`),
				step("Try the station.", "broken", `{}`),
				step("Done.", "finish", "{}"),
				answer("Sunny"))
			defer srv.Close()
			sig, err := signature.Parse("question -> answer")
			require.NoError(t, err)
			agent, err := predict.NewReAct(sig, tools)
			require.NoError(t, err)
			var traced []string
			tr := &adapter.Trace{ToolStart: func(i adapter.ToolStartInfo) { traced = append(traced, string(i.Args)) }}
			res, err := agent.Call(context.Background(), srv.Client(), adapter.Values{"question": "Weather in Paris?"}, adapter.UseTrace(tr))
			require.NoError(t, err)
			assert.Equal(t, "Sunny", res.Outputs[0]["answer"])

			got := ws.calls("weather")
			require.Len(t, got, 1)
			require.NotEmpty(t, traced)
			assert.JSONEq(t, traced[0], got[0], "the server gets the arguments the trace shows")
			assert.Contains(t, got[0], `"CITY":"Lyon"`, "keys are not case-folded or dropped on the way")

			traj := res.Outputs[0]["trajectory"].(predict.Trajectory)
			require.Len(t, traj, 3)
			assert.Equal(t, []any{"Sunny in Paris, 21 C.", types.Image{URL: "data:image/png;base64,cG5nIQ=="}}, traj[0].Observation, "the image as a types.Image")
			assert.True(t, hasImagePart(srv.Requests()[1], "data:image/png;base64,cG5nIQ=="), "the model sees the image")
			assert.Equal(t, "Execution error in broken: Failed to call a MCP tool: the weather station is offline", traj[1].Observation)
			var te *mcptools.ToolError
			require.ErrorAs(t, traj[1].Err, &te)
			assert.Equal(t, "broken", te.Tool)
			assert.Contains(t, lastUser(srv.Requests()[2]), "[[ ## observation_1 ## ]]\nExecution error in broken: Failed to call a MCP tool: the weather station is offline")
		})
	}
}

// lastUser is the text of a request's last message, its parts' text
// joined when it has parts.
func lastUser(r lmtest.Request) string {
	m := r.Chat.Messages[len(r.Chat.Messages)-1]
	text := m.Content
	for _, p := range m.MultiContent {
		text += p.Text
	}
	return text
}

// TestNativeToolCalls: the MCP tools as the provider's function
// definitions, the model's native tool call run on the server.
func TestNativeToolCalls(t *testing.T) {
	ws := newWeatherServer(t)
	tools, err := mcptools.Tools(context.Background(), overHTTP(t, ws))
	require.NoError(t, err)
	srv := lmtest.NewServer(lmtest.Text("").WithFinish("tool_calls").WithToolCalls(openai.ToolCall{ID: "call_1", Type: "function",
		Function: openai.FunctionCall{Name: "weather", Arguments: `{"city":"Oslo","unit":"C"}`}}))
	defer srv.Close()
	sig, err := signature.Parse("question, tools: list[Tool] -> calls: ToolCalls", signature.WithTypes(types.Names()))
	require.NoError(t, err)
	lm := adapter.WithCapabilities(srv.Client(), adapter.Capabilities{Tools: true, JSONMode: true})
	res, err := adapter.Call(context.Background(), lm, sig, nil, adapter.Values{"question": "Weather in Oslo?", "tools": tools}, adapter.UseAdapter(adapter.JSON{}))
	require.NoError(t, err)
	sent := map[string]openai.Tool{}
	for _, d := range srv.Requests()[0].Chat.Tools {
		sent[d.Function.Name] = d
	}
	require.Len(t, sent, 3)
	params, err := json.Marshal(sent["weather"].Function.Parameters)
	require.NoError(t, err)
	assert.JSONEq(t, `{"type":"object","properties":{"city":{"type":"string","description":"the city"},"unit":{"type":"string","enum":["C","F"]}},"required":["city","unit"]}`,
		string(params), "the MCP tool's schema is the function's parameters")

	out := res.Outputs[0]["calls"].(types.ToolCalls).Execute(context.Background(), tools)
	require.Len(t, out.Results, 1)
	assert.False(t, out.Results[0].IsError, "%v", out.Results[0].Value)
	assert.Equal(t, []any{"Sunny in Oslo, 21 C.", types.Image{URL: "data:image/png;base64,cG5nIQ=="}}, out.Results[0].Value)
	assert.Equal(t, []string{`{"city":"Oslo","unit":"C"}`}, ws.calls("weather"))
}

// TestNativeReAct drives a native ReActV2 agent over the MCP tools, in
// process and over loopback HTTP: the MCP schemas go out as function
// definitions; one reply's two calls run at once on the one client session
// (weather answers only after broken has ended, or the test would hang),
// one of them an isError result; the next request replays the assistant's
// calls and one tool message per result in the model's order, the
// weather's image after them as an image part; the server receives the
// arguments the trace and the history show; submit ends the run.
func TestNativeReAct(t *testing.T) {
	for name, connect := range map[string]func(*testing.T, *weatherServer) *mcp.ClientSession{"in-memory": inMemory, "http": overHTTP} {
		t.Run(name, func(t *testing.T) {
			ws := newWeatherServer(t)
			ws.hold = make(chan struct{})
			tools, err := mcptools.Tools(context.Background(), connect(t, ws))
			require.NoError(t, err)
			call := func(id, name, args string) openai.ToolCall {
				return openai.ToolCall{ID: id, Type: openai.ToolTypeFunction, Function: openai.FunctionCall{Name: name, Arguments: args}}
			}
			srv := lmtest.NewServer(
				lmtest.Text("[[ ## next_thought ## ]]\nAsk the station and the forecast.\n\n[[ ## completed ## ]]").WithFinish("tool_calls").
					WithToolCalls(call("call_w", "weather", `{"city": "Oslo", "unit": "C"}`), call("call_b", "broken", `{}`)),
				lmtest.Text("").WithFinish("tool_calls").WithToolCalls(call("call_f", "submit", `{"answer": "Sunny"}`)))
			defer srv.Close()
			sig, err := signature.Parse("question -> answer")
			require.NoError(t, err)
			agent, err := predict.NewReActV2(sig, tools, predict.WithToolConcurrency(2),
				adapter.UseAdapter(adapter.Chat{Options: adapter.Options{NativeTools: adapter.On}}))
			require.NoError(t, err)

			var mu sync.Mutex
			traced := map[string]string{}
			var done []string
			tr := &adapter.Trace{
				ToolStart: func(i adapter.ToolStartInfo) {
					mu.Lock()
					defer mu.Unlock()
					traced[i.ToolCallID] = string(i.Args)
				},
				ToolDone: func(i adapter.ToolDoneInfo) {
					mu.Lock()
					defer mu.Unlock()
					done = append(done, i.ToolCallID)
					if i.Tool == "broken" {
						close(ws.hold)
					}
				},
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // bounds a hang, asserts no timing
			defer cancel()
			lm := adapter.WithCapabilities(srv.Client(), adapter.Capabilities{Tools: true})
			res, err := agent.Call(ctx, lm, adapter.Values{"question": "Weather in Oslo?"}, adapter.UseTrace(tr))
			require.NoError(t, err)
			assert.Equal(t, "Sunny", res.Outputs[0]["answer"], "the answer comes from submit")
			assert.Equal(t, []string{"call_b", "call_w", "call_f"}, done, "broken ended first: the two calls ran at once on one session")

			reqs := srv.Requests()
			require.Len(t, reqs, 2)
			first := reqs[0].Chat
			var names []string
			for _, d := range first.Tools {
				names = append(names, d.Function.Name)
			}
			assert.ElementsMatch(t, []string{"weather", "broken", "slow", "submit"}, names, "the MCP tools and submit, as functions")
			for _, d := range first.Tools {
				if d.Function.Name == "weather" {
					params, err := json.Marshal(d.Function.Parameters)
					require.NoError(t, err)
					assert.JSONEq(t, `{"type":"object","properties":{"city":{"type":"string","description":"the city"},"unit":{"type":"string","enum":["C","F"]}},"required":["city","unit"]}`,
						string(params), "the MCP tool's schema is the function's parameters")
				}
			}
			assert.NotContains(t, first.Messages[0].Content, "[[ ## tools ## ]]", "the tools are functions, not prompt text")

			hist := predict.HistoryOf(res).Messages
			require.Len(t, hist, 2)
			assert.Equal(t, "Ask the station and the forecast.", hist[0]["next_thought"])
			first0 := hist[0]["tool_calls"].(types.ToolCalls)
			require.Len(t, first0.Calls, 2, "both calls belong to the first reply")
			results := first0.Results.Results
			assert.Equal(t, "call_w", first0.Calls[0].ID)
			assert.Equal(t, "weather", first0.Calls[0].Name)
			assert.Equal(t, []any{"Sunny in Oslo, 21 C.", types.Image{URL: "data:image/png;base64,cG5nIQ=="}}, results[0].Value)
			assert.NoError(t, results[0].Err)
			assert.Equal(t, "call_b", first0.Calls[1].ID)
			assert.Equal(t, "Execution error in broken: Failed to call a MCP tool: the weather station is offline", results[1].Value)
			var te *mcptools.ToolError
			require.ErrorAs(t, results[1].Err, &te)
			assert.Equal(t, "broken", te.Tool)
			assert.Equal(t, "submit", hist[1]["tool_calls"].(types.ToolCalls).Calls[0].Name)

			// What the server received is what the trace and the trajectory show.
			assert.Equal(t, []string{`{"city":"Oslo","unit":"C"}`}, ws.calls("weather"))
			assert.Equal(t, []string{`{}`}, ws.calls("broken"))
			assert.Empty(t, ws.calls("slow"))
			assert.JSONEq(t, traced["call_w"], ws.calls("weather")[0])
			assert.JSONEq(t, first0.Calls[0].RawArgs, ws.calls("weather")[0])
			assert.JSONEq(t, traced["call_b"], ws.calls("broken")[0])
			assert.JSONEq(t, first0.Calls[1].RawArgs, ws.calls("broken")[0])

			second := reqs[1].Chat.Messages
			roles := make([]string, len(second))
			for i, m := range second {
				roles[i] = m.Role
			}
			require.Equal(t, []string{"system", "user", "assistant", "tool", "tool", "user", "user"}, roles, "the tool messages, the attachments, the request")
			require.Len(t, second[2].ToolCalls, 2, "the assistant's calls, replayed")
			assert.Equal(t, "call_w", second[2].ToolCalls[0].ID)
			assert.Equal(t, "weather", second[2].ToolCalls[0].Function.Name)
			assert.JSONEq(t, `{"city":"Oslo","unit":"C"}`, second[2].ToolCalls[0].Function.Arguments)
			assert.Equal(t, "call_b", second[2].ToolCalls[1].ID)
			assert.Equal(t, "broken", second[2].ToolCalls[1].Function.Name)
			assert.Equal(t, openai.ChatCompletionMessage{Role: "tool", ToolCallID: "call_w", Name: "weather", Content: "Sunny in Oslo, 21 C.\n[attachment 1: image, in the message after the tool results]"}, second[3],
				"the results in the model's order, although broken ended first")
			assert.Equal(t, openai.ChatCompletionMessage{Role: "tool", ToolCallID: "call_b", Name: "broken", Content: "Execution error in broken: Failed to call a MCP tool: the weather station is offline"}, second[4])
			assert.True(t, hasImagePart(reqs[1], "data:image/png;base64,cG5nIQ=="), "the server's image reaches the model as an image part")
		})
	}
}

// TestArguments: arguments that are not one JSON object never reach the
// server; an object goes as it is.
func TestArguments(t *testing.T) {
	ws := newWeatherServer(t)
	tools, err := mcptools.Tools(context.Background(), inMemory(t, ws))
	require.NoError(t, err)
	w := byName(tools)["weather"]
	ctx := context.Background()
	for _, args := range []string{`[1, 2]`, `"Paris"`, `3`, `null`, `{"city": `, `{"city": "a"} {"city": "b"}`} {
		_, err := w.Call(ctx, json.RawMessage(args))
		assert.Error(t, err, args)
	}
	_, err = w.Call(ctx, json.RawMessage(`{"city": "Paris", "city": "Lyon"}`))
	assert.ErrorIs(t, err, adapter.ErrAmbiguous, "a key given twice is refused: the server would pick one")
	assert.Empty(t, ws.calls("weather"))

	v, err := w.Call(ctx, json.RawMessage(`{"city": "Kraków", "extra": {"Nested": [1, 2.5]}}`))
	require.NoError(t, err)
	assert.Equal(t, []any{"Sunny in Kraków, 21 C.", types.Image{URL: "data:image/png;base64,cG5nIQ=="}}, v)
	assert.Equal(t, []string{`{"city":"Kraków","extra":{"Nested":[1,2.5]}}`}, ws.calls("weather"))
	_, err = byName(tools)["broken"].Call(ctx, nil)
	require.Error(t, err, "no arguments are the empty object")
	assert.Equal(t, []string{`{}`}, ws.calls("broken"))
}

// TestContext: a tool call ends when its context is done.
func TestContext(t *testing.T) {
	ws := newWeatherServer(t)
	tools, err := mcptools.Tools(context.Background(), overHTTP(t, ws))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-ws.started
		cancel()
	}()
	_, err = byName(tools)["slow"].Call(ctx, json.RawMessage(`{}`))
	close(ws.release) // the server may not have seen the cancellation: let it go
	assert.ErrorIs(t, err, context.Canceled)
}

// TestListingErrors: a server that fails to list, a closed session, a
// schema that is not one.
func TestListingErrors(t *testing.T) {
	ctx := context.Background()
	ws := newWeatherServer(t)
	ws.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "tools/list" {
				return nil, errors.New("the tool registry is down")
			}
			return next(ctx, method, req)
		}
	})
	_, err := mcptools.Tools(ctx, overHTTP(t, ws))
	assert.ErrorContains(t, err, "the tool registry is down")

	cs := inMemory(t, newWeatherServer(t))
	require.NoError(t, cs.Close())
	_, err = mcptools.Tools(ctx, cs)
	assert.ErrorContains(t, err, "listing the server's tools")

	_, err = mcptools.Tools(ctx, nil)
	assert.Error(t, err)
	_, err = mcptools.NewTool(cs, &mcp.Tool{Name: "x", InputSchema: map[string]any{"type": "object", "properties": []any{"a"}}})
	assert.ErrorContains(t, err, `tool x: input schema: "properties" is not an object`)
	_, err = mcptools.NewTool(cs, &mcp.Tool{InputSchema: map[string]any{"type": "object"}})
	assert.ErrorContains(t, err, "no name")
	_, err = mcptools.NewTool(nil, &mcp.Tool{Name: "x"})
	assert.Error(t, err)
}

// TestRecursiveSchema: a reference inside its own definition stays a
// reference (resolving it would never end).
func TestRecursiveSchema(t *testing.T) {
	tool, err := mcptools.NewTool(inMemory(t, newWeatherServer(t)), &mcp.Tool{Name: "tree", InputSchema: map[string]any{
		"type":       "object",
		"properties": map[string]any{"root": map[string]any{"$ref": "#/$defs/Node"}},
		"$defs": map[string]any{"Node": map[string]any{"type": "object", "properties": map[string]any{
			"children": map[string]any{"type": "array", "items": map[string]any{"$ref": "#/$defs/Node"}}}}},
	}})
	require.NoError(t, err)
	assert.JSONEq(t, `{"root":{"type":"object","properties":{"children":{"type":"array","items":{"$ref":"#/$defs/Node"}}}}}`, string(tool.Args))
}

// TestArgumentsProperty: over generated objects (keys in several cases
// and Unicode foldings, nested values, some keys repeated), a call either
// reaches the server with exactly the members it was given, or, for a key
// given twice, is refused and sends nothing.
func TestArgumentsProperty(t *testing.T) {
	ws := newWeatherServer(t)
	tools, err := mcptools.Tools(context.Background(), inMemory(t, ws))
	require.NoError(t, err)
	w := byName(tools)["weather"]
	keys := []string{"city", "City", "CITY", "ciTy", "unit", "unıt", "\u212aey", "key", "a b", `q"uote`, "東京"}
	values := []string{`1`, `-2.5e3`, `"x"`, `"Zürich"`, `true`, `null`, `[1,"a",{"k":[]}]`, `{"Nested":{"n":1}}`}
	r := rand.New(rand.NewPCG(3, 5))
	sent := 0
	for i := range 300 {
		var b strings.Builder
		b.WriteByte('{')
		seen := map[string]bool{}
		dup := false
		for j := range 1 + r.IntN(5) {
			k := keys[r.IntN(len(keys))]
			dup = dup || seen[k]
			seen[k] = true
			if j > 0 {
				b.WriteString(", ")
			}
			kb, _ := json.Marshal(k)
			b.Write(kb)
			b.WriteString(": ")
			b.WriteString(values[r.IntN(len(values))])
		}
		b.WriteByte('}')
		args := b.String()
		_, err := w.Call(context.Background(), json.RawMessage(args))
		got := ws.calls("weather")
		if dup {
			// the same key twice: refused unless both values are equal
			if err != nil {
				require.Len(t, got, sent, "case %d: %s was refused yet sent", i, args)
				continue
			}
		}
		require.NoError(t, err, "case %d: %s", i, args)
		sent++
		require.Len(t, got, sent, "case %d", i)
		var want, have map[string]any
		require.NoError(t, json.Unmarshal([]byte(args), &want))
		require.NoError(t, json.Unmarshal([]byte(got[sent-1]), &have))
		require.Equal(t, want, have, "case %d: the server got %s for %s", i, got[sent-1], args)
		require.Equal(t, topKeys(t, args), topKeys(t, got[sent-1]), "case %d: every member arrives, in order: %s", i, got[sent-1])
	}
}

// topKeys lists an object's keys in order, repeats included.
func topKeys(t *testing.T, s string) []string {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(s))
	_, err := dec.Token()
	require.NoError(t, err)
	var keys []string
	for dec.More() {
		k, err := dec.Token()
		require.NoError(t, err)
		keys = append(keys, k.(string))
		var skip json.RawMessage
		require.NoError(t, dec.Decode(&skip))
	}
	return keys
}

// TestLargeResultsBounded: the review's reproduction (security review 4,
// P7): an MCP tool whose result is 8 MiB of text, called four times by a
// native agent over a real in-process server. Before, the requests grew to
// 8, 16, 24 and 32 MiB (112 MiB in all, the extract included); now the
// model is shown at most the bound on one result of each (64 KiB, with a
// note saying what was cut), and no request carries more than about the
// bound on a request's results (1 MiB).
func TestLargeResultsBounded(t *testing.T) {
	const size = 8 << 20
	server := mcp.NewServer(&mcp.Implementation{Name: "pages", Version: "v1"}, nil)
	server.AddTool(&mcp.Tool{Name: "fetch", Description: "Fetch a page.", InputSchema: json.RawMessage(`{"type":"object","properties":{"url":{"type":"string"}},"required":["url"]}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("x", size)}}}, nil
		})
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := server.Connect(ctx, st, nil)
	require.NoError(t, err)
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v1"}, nil).Connect(ctx, ct, nil)
	require.NoError(t, err)
	defer cs.Close()
	tools, err := mcptools.Tools(ctx, cs)
	require.NoError(t, err)

	call := func(id string) openai.ToolCall {
		return openai.ToolCall{ID: id, Type: openai.ToolTypeFunction, Function: openai.FunctionCall{Name: "fetch", Arguments: `{"url": "https://example.com/` + id + `"}`}}
	}
	var replies []lmtest.Reply
	for i := range 4 {
		replies = append(replies, lmtest.Text("").WithFinish("tool_calls").WithToolCalls(call(fmt.Sprint("c", i))))
	}
	replies = append(replies, lmtest.Text("").WithFinish("tool_calls").WithToolCalls(openai.ToolCall{ID: "f", Type: openai.ToolTypeFunction,
		Function: openai.FunctionCall{Name: "submit", Arguments: `{"answer": "done"}`}}))
	srv := lmtest.NewServer(replies...)
	defer srv.Close()
	sig, err := signature.Parse("question -> answer")
	require.NoError(t, err)
	agent, err := predict.NewReActV2(sig, tools, adapter.UseAdapter(adapter.Chat{Options: adapter.Options{NativeTools: adapter.On}}))
	require.NoError(t, err)
	var cuts []int
	tr := adapter.UseTrace(&adapter.Trace{ToolDone: func(i adapter.ToolDoneInfo) {
		if i.Tool == "fetch" {
			cuts = append(cuts, i.Cut)
		}
	}})
	res, err := agent.Call(ctx, adapter.WithCapabilities(srv.Client(), adapter.Capabilities{Tools: true}), adapter.Values{"question": "Read the pages."}, tr)
	require.NoError(t, err)
	assert.Equal(t, "done", res.Outputs[0]["answer"])
	require.Len(t, cuts, 4)
	for i, c := range cuts {
		assert.Equal(t, size-adapter.DefaultToolResultBytes, c, "result %d: cut to the bound on one result", i)
	}
	total := 0
	for i, r := range srv.Requests() {
		assert.Less(t, len(r.Body), adapter.DefaultRequestToolBytes+64<<10, "request %d", i)
		total += len(r.Body)
	}
	assert.Less(t, total, 2<<20, "all requests (112 MiB before)")
	assert.Contains(t, string(srv.Requests()[1].Body), "more bytes of this result were cut", "the model is told")
}

// hasImagePart reports whether a request carries an image_url part with
// the URL.
func hasImagePart(r lmtest.Request, url string) bool {
	for _, m := range r.Chat.Messages {
		for _, p := range m.MultiContent {
			if p.Type == openai.ChatMessagePartTypeImageURL && p.ImageURL != nil && p.ImageURL.URL == url {
				return true
			}
		}
	}
	return false
}
