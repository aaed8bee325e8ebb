package types_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/internal/pyjson"
	"github.com/sigwire/adapter/lmtest"
	"github.com/sigwire/adapter/signature"
	"github.com/sigwire/adapter/types"
)

func parse(t testing.TB, spec string) *signature.Signature {
	t.Helper()
	sig, err := signature.Parse(spec, signature.WithTypes(types.Names()))
	require.NoError(t, err)
	return sig
}

func TestImage(t *testing.T) {
	for _, ok := range []string{"https://x.org/a.png", "http://x.org/a.png", "gs://b/a.png", "data:image/png;base64,AAAA"} {
		_, err := types.NewImage(ok)
		assert.NoError(t, err, ok)
	}
	for _, bad := range []string{"/etc/passwd", "file:///etc/passwd", "cat.png", "ftp://x/a.png"} {
		_, err := types.NewImage(bad)
		assert.Error(t, err, bad)
	}
	img, err := types.ImageFromBytes([]byte("\x89PNG\r\n\x1a\n...."), "")
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(img.URL, "data:image/png;base64,"), img.URL)
	assert.Contains(t, img.String(), "<IMAGE_BASE_64_ENCODED(")
}

func TestDownloadImage(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		_, _ = w.Write([]byte("\x89PNG\r\n\x1a\nabcdefgh"))
	}))
	defer srv.Close()
	_, err := types.DownloadImage(context.Background(), srv.URL, types.DownloadOptions{})
	assert.ErrorIs(t, err, types.ErrForbiddenAddress, "loopback is refused by default")
	img, err := types.DownloadImage(context.Background(), srv.URL, types.DownloadOptions{AllowPrivate: true})
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(img.URL, "data:image/png;base64,"))
	_, err = types.DownloadImage(context.Background(), srv.URL, types.DownloadOptions{AllowPrivate: true, MaxBytes: 4})
	assert.ErrorContains(t, err, "larger than 4 bytes")
	_, err = types.DownloadImage(context.Background(), "file:///etc/passwd", types.DownloadOptions{AllowPrivate: true})
	assert.ErrorContains(t, err, "only http and https")
}

// TestImageInRequest sends an image through the real client: the user
// message becomes content parts where the image stands.
func TestImageInRequest(t *testing.T) {
	srv := lmtest.NewServer(lmtest.Text("[[ ## caption ## ]]\nA cat."))
	defer srv.Close()
	sig := parse(t, "image: Image, note -> caption")
	img, err := types.NewImage("https://example.com/cat.png")
	require.NoError(t, err)
	img.Detail = openai.ImageURLDetailLow
	res, err := adapter.Call(context.Background(), srv.Client(), sig, nil, adapter.Values{"image": img, "note": "be brief"})
	require.NoError(t, err)
	assert.Equal(t, "A cat.", res.Outputs[0]["caption"])
	user := srv.Requests()[0].Chat.Messages[1]
	require.Len(t, user.MultiContent, 3)
	assert.Equal(t, "[[ ## image ## ]]\n", user.MultiContent[0].Text)
	assert.Equal(t, "https://example.com/cat.png", user.MultiContent[1].ImageURL.URL)
	assert.Equal(t, openai.ImageURLDetailLow, user.MultiContent[1].ImageURL.Detail)
	assert.True(t, strings.HasPrefix(user.MultiContent[2].Text, "\n\n[[ ## note ## ]]\nbe brief"))
}

func TestCode(t *testing.T) {
	sig := parse(t, "task -> code: Code['python']")
	vals, err := adapter.Chat{}.Parse(sig, "[[ ## code ## ]]\nHere it is:\n```python\nprint(1)\n```\nDone.")
	require.NoError(t, err)
	assert.Equal(t, types.CodeOf[types.Python]("print(1)"), vals["code"])
	assert.Equal(t, "Code_python", sig.Output(0).Spec.String())
}

func TestToolCallsShapes(t *testing.T) {
	// RawArgs keeps the arguments in the model's order, as compact JSON
	// whichever shape they came in.
	for raw, rawArgs := range map[string]string{
		`{"tool_calls": [{"name": "search", "args": {"q": "go", "k": 3}}]}`:                               `{"q":"go","k":3}`,
		`[{'name': 'search', 'args': {'q': 'go', 'k': 3}}]`:                                               `{"q":"go","k":3}`,
		`{"name": "search", "arguments": "{\"q\": \"go\", \"k\": 3}"}`:                                    `{"q":"go","k":3}`,
		`[{"type": "function", "function": {"name": "search", "arguments": "{\"k\": 3, \"q\": \"go\""}}]`: `{"k":3,"q":"go"}`,
	} {
		var tc types.ToolCalls
		require.NoError(t, tc.ParseField(raw), raw)
		assert.Equal(t, []types.ToolCall{{Name: "search", Args: map[string]any{"q": "go", "k": 3}, RawArgs: rawArgs}}, tc.Calls, raw)
	}
	var tc types.ToolCalls
	assert.Error(t, tc.ParseField(`[{"args": {}}]`), "a call without a name")
}

type transferArgs struct {
	Account string  `json:"account"`
	Amount  float64 `json:"amount"`
}

// transferTool counts its runs.
func transferTool(t *testing.T, runs *int) types.Tool {
	tool, err := types.NewTool("transfer", "send money", func(_ context.Context, a transferArgs) (string, error) {
		*runs++
		return fmt.Sprintf("EXECUTED transfer(account=%q, amount=%v)", a.Account, a.Amount), nil
	})
	require.NoError(t, err)
	return tool
}

// TestToolArgumentsNeverGuessed: arguments that are not one JSON object
// readable without guessing never run the tool (security review #1): the
// call keeps the text and an error, which Execute reports to the model.
func TestToolArgumentsNeverGuessed(t *testing.T) {
	for _, tt := range []struct {
		args string
		is   error
	}{
		{`{"account": "DE89 3704 0044 0532 01`, adapter.ErrTruncated},
		{`{"account": "DE89370400440532013000", "amount": 1e`, adapter.ErrTruncated},
		{`{"account": "DE89370400440532013000", "amount": -`, adapter.ErrTruncated},
		{`{"account": "DE89370400440532013000", "amount": 100`, adapter.ErrTruncated},
		{`{"account": "A", "amount": 2e+, "memo": "x"}`, types.ErrToolArguments},
		{`transfer everything`, types.ErrToolArguments},
		{`{"account":"A","amount":5}{"account":"B","amount":500}`, types.ErrToolArguments},
		{`{"account": "A", "amount": 5, "amount": 500}`, adapter.ErrAmbiguous},
		{`["A", 5]`, types.ErrToolArguments},
		{`[0 .`, types.ErrToolArguments},
		{`{"x": ` + strings.Repeat("[", 600) + strings.Repeat("]", 600) + `,}`, types.ErrToolArguments},
		{`{"account": "` + strings.Repeat("x", 20<<10) + `", "amount": 1,}`, types.ErrToolArguments},
	} {
		runs := 0
		tool := transferTool(t, &runs)
		choice := openai.ChatCompletionChoice{Message: openai.ChatCompletionMessage{ToolCalls: []openai.ToolCall{{ID: "call_1", Type: "function", Function: openai.FunctionCall{Name: "transfer", Arguments: tt.args}}}}}
		v, ok := types.ToolCalls{}.NativeValue(choice)
		require.True(t, ok)
		calls := v.(types.ToolCalls)
		require.Len(t, calls.Calls, 1)
		c := calls.Calls[0]
		assert.ErrorIs(t, c.Err, types.ErrToolArguments, clipped(tt.args))
		assert.ErrorIs(t, c.Err, tt.is, clipped(tt.args))
		assert.Nil(t, c.Args, clipped(tt.args))
		assert.Equal(t, tt.args, c.RawArgs)
		res := calls.Execute(context.Background(), []types.Tool{tool})
		require.Len(t, res.Results, 1)
		assert.True(t, res.Results[0].IsError, clipped(tt.args))
		assert.Equal(t, "call_1", res.Results[0].CallID)
		assert.Contains(t, res.Results[0].Value, "was not run")
		assert.Zero(t, runs, "the tool ran with %q", clipped(tt.args))
	}

	// What needs no guess is read: closing braces after a complete
	// string, Python quotes, a trailing comma.
	for _, args := range []string{`{"account": "A", "amount": 5}`, `{"amount": 5, "account": "A"`, `{'account': 'A', 'amount': 5,}`, "  {\"account\": \"A\", \"amount\": 5.0}\n"} {
		choice := openai.ChatCompletionChoice{Message: openai.ChatCompletionMessage{ToolCalls: []openai.ToolCall{{ID: "c", Function: openai.FunctionCall{Name: "transfer", Arguments: args}}}}}
		v, _ := types.ToolCalls{}.NativeValue(choice)
		c := v.(types.ToolCalls).Calls[0]
		require.NoError(t, c.Err, args)
		runs := 0
		res := v.(types.ToolCalls).Execute(context.Background(), []types.Tool{transferTool(t, &runs)})
		assert.Equal(t, `EXECUTED transfer(account="A", amount=5)`, res.Results[0].Value, args)
		assert.Equal(t, 1, runs)
	}

	// No arguments at all are an empty object (a tool without parameters).
	v, _ := types.ToolCalls{}.NativeValue(openai.ChatCompletionChoice{Message: openai.ChatCompletionMessage{ToolCalls: []openai.ToolCall{{ID: "c", Function: openai.FunctionCall{Name: "now"}}}}})
	assert.Equal(t, []types.ToolCall{{ID: "c", Name: "now", Args: map[string]any{}}}, v.(types.ToolCalls).Calls)

	// The text path: a call cut inside its arguments fails the field
	// (truncated); stringified arguments that cannot be read fail the call.
	var tc types.ToolCalls
	err := tc.ParseField(`{"tool_calls": [{"name": "transfer", "args": {"account": "DE89 3704 0044 0532 01`)
	assert.ErrorIs(t, err, adapter.ErrTruncated)
	err = tc.ParseField(`{"name": "transfer", "args": {"account": "A", "amount": 10`)
	assert.ErrorIs(t, err, adapter.ErrTruncated, "a number at the end may have been cut")
	require.NoError(t, tc.ParseField(`[{"name": "transfer", "arguments": "{\"account\": \"A\", \"amount\": 1e"}]`))
	assert.ErrorIs(t, tc.Calls[0].Err, adapter.ErrTruncated)
	sig := parse(t, "question -> calls: ToolCalls")
	_, err = adapter.Chat{}.Parse(sig, "[[ ## calls ## ]]\n{\"tool_calls\": [{\"name\": \"transfer\", \"args\": {\"account\": \"DE89 3704 0044 0532 01\n\n[[ ## completed ## ]]")
	assert.ErrorIs(t, err, adapter.ErrTruncated)

	// Written back (a History turn), a call keeps the text it could not
	// read, and reading that back gives the same error.
	v, _ = types.ToolCalls{}.NativeValue(openai.ChatCompletionChoice{Message: openai.ChatCompletionMessage{ToolCalls: []openai.ToolCall{{ID: "c", Function: openai.FunctionCall{Name: "transfer", Arguments: `{"amount": 1e`}}}}})
	b, err := json.Marshal(v.(types.ToolCalls))
	require.NoError(t, err)
	assert.Equal(t, `{"tool_calls":[{"name":"transfer","args":"{\"amount\": 1e"}]}`, string(b))
	var back types.ToolCalls
	require.NoError(t, json.Unmarshal(b, &back))
	assert.ErrorIs(t, back.Calls[0].Err, adapter.ErrTruncated)

	// Integers beyond int64 are kept exactly, and reach the tool exactly.
	v, _ = types.ToolCalls{}.NativeValue(openai.ChatCompletionChoice{Message: openai.ChatCompletionMessage{ToolCalls: []openai.ToolCall{{ID: "c", Function: openai.FunctionCall{Name: "f", Arguments: `{"n": 123456789012345678901234567890, "i": 7, "f": 0.5}`}}}}})
	assert.Equal(t, map[string]any{"n": json.Number("123456789012345678901234567890"), "i": 7, "f": 0.5}, v.(types.ToolCalls).Calls[0].Args)
}

// TestToolArgumentsEndToEnd is the review's reproducer: through Call, the
// JSON adapter and native tools, arguments cut inside a number never run
// the transfer.
func TestToolArgumentsEndToEnd(t *testing.T) {
	srv := lmtest.NewServer(lmtest.Text("").WithFinish("tool_calls").WithToolCalls(openai.ToolCall{ID: "call_1", Type: "function",
		Function: openai.FunctionCall{Name: "transfer", Arguments: `{"account": "DE89370400440532013000", "amount": 1e`}}))
	defer srv.Close()
	runs := 0
	tool := transferTool(t, &runs)
	sig := parse(t, "question, tools: list[Tool] -> calls: ToolCalls")
	lm := adapter.WithCapabilities(srv.Client(), adapter.Capabilities{Tools: true, JSONMode: true})
	res, err := adapter.Call(context.Background(), lm, sig, nil, adapter.Values{"question": "pay", "tools": []types.Tool{tool}},
		adapter.UseAdapter(adapter.JSON{}), adapter.WithRequest(openai.ChatCompletionRequest{Model: "gpt-4o"}))
	require.NoError(t, err)
	calls := res.Outputs[0]["calls"].(types.ToolCalls)
	out := calls.Execute(context.Background(), []types.Tool{tool})
	assert.True(t, out.Results[0].IsError)
	assert.Zero(t, runs)
}

// TestExecuteStopsWhenCancelled: once the context is done no further tool
// runs.
func TestExecuteStopsWhenCancelled(t *testing.T) {
	runs := 0
	tool := transferTool(t, &runs)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res := types.ToolCalls{Calls: []types.ToolCall{{ID: "1", Name: "transfer", Args: map[string]any{"account": "A", "amount": 1}}}}.Execute(ctx, []types.Tool{tool})
	assert.True(t, res.Results[0].IsError)
	assert.Contains(t, res.Results[0].Value, "context canceled")
	assert.Zero(t, runs)

	var nilCtx context.Context // a nil context runs nothing, and does not panic
	res = types.ToolCalls{Calls: []types.ToolCall{{ID: "1", Name: "transfer", Args: map[string]any{"account": "A", "amount": 1}}}}.Execute(nilCtx, []types.Tool{tool})
	assert.True(t, res.Results[0].IsError)
	assert.Contains(t, res.Results[0].Value, "nil context")
	assert.Zero(t, runs)
}

func clipped(s string) string {
	if len(s) > 80 {
		return s[:77] + "..."
	}
	return s
}

func TestHistoryTurns(t *testing.T) {
	sig := parse(t, "history: History, question -> answer")
	h := types.History{Messages: []map[string]any{{"question": "1+1?", "answer": "2"}, {"question": "2+2?"}}}
	msgs, err := adapter.Chat{}.Format(sig, nil, adapter.Values{"history": h, "question": "3+3?"})
	require.NoError(t, err)
	require.Len(t, msgs, 6)
	assert.Equal(t, "[[ ## question ## ]]\n1+1?", msgs[1].Content)
	assert.Equal(t, "[[ ## answer ## ]]\n2\n\n[[ ## completed ## ]]\n", msgs[2].Content)
	assert.Equal(t, "[[ ## answer ## ]]\nNone\n\n[[ ## completed ## ]]\n", msgs[4].Content, "a missing output shows as None")
	assert.True(t, strings.HasPrefix(msgs[5].Content, "[[ ## question ## ]]\n3+3?\n\nRespond"))
}

func TestReasoningNative(t *testing.T) {
	sig := parse(t, "question -> reasoning: Reasoning, answer")
	srv := lmtest.NewServer(lmtest.Text("[[ ## answer ## ]]\n4").WithReasoning("2 and 2 make 4."), lmtest.Text("[[ ## reasoning ## ]]\nby hand\n\n[[ ## answer ## ]]\n4"))
	defer srv.Close()
	lm := adapter.WithCapabilities(srv.Client(), adapter.Capabilities{Reasoning: true})
	res, err := adapter.Call(context.Background(), lm, sig, nil, adapter.Values{"question": "2+2?"},
		adapter.WithRequest(openai.ChatCompletionRequest{Model: "deepseek-reasoner"}))
	require.NoError(t, err)
	assert.Equal(t, adapter.Values{"reasoning": types.Reasoning("2 and 2 make 4."), "answer": "4"}, res.Outputs[0])
	req := srv.Requests()[0].Chat
	assert.Equal(t, "low", req.ReasoningEffort)
	assert.NotContains(t, req.Messages[0].Content, "[[ ## reasoning ## ]]", "the field left the prompt")

	// Without declared support the field stays in the prompt.
	res, err = adapter.Call(context.Background(), srv.Client(), sig, nil, adapter.Values{"question": "2+2?"},
		adapter.WithRequest(openai.ChatCompletionRequest{Model: "some-model"}))
	require.NoError(t, err)
	assert.Equal(t, types.Reasoning("by hand"), res.Outputs[0]["reasoning"])
	assert.Empty(t, srv.Requests()[1].Chat.ReasoningEffort)
}

func ExampleImage() {
	sig, _ := signature.Parse("photo: Image -> caption", signature.WithTypes(types.Names()))
	img, _ := types.NewImage("https://example.com/cat.png")
	msgs, err := adapter.Chat{}.Format(sig, nil, adapter.Values{"photo": img})
	if err != nil {
		fmt.Println(errors.Unwrap(err))
		return
	}
	for _, p := range msgs[1].MultiContent {
		if p.ImageURL != nil {
			fmt.Printf("image_url %s\n", p.ImageURL.URL)
		} else {
			fmt.Printf("text %q\n", p.Text[:min(len(p.Text), 22)])
		}
	}
	// Output:
	// text "[[ ## photo ## ]]\n"
	// image_url https://example.com/cat.png
	// text "\n\nRespond with the cor"
}

func TestNativeToolCalls(t *testing.T) {
	sig := parse(t, "question, tools: list[Tool] -> answer, tool_calls: ToolCalls")
	tools := []types.Tool{{Name: "search", Desc: "Search the web.", Args: []byte(`{"query": {"type": "string"}, "k": {"type": "integer", "default": 3}}`)}}
	call := openai.ToolCall{ID: "call_1", Type: "function", Function: openai.FunctionCall{Name: "search", Arguments: `{"query": "go generics"}`}}
	srv := lmtest.NewServer(lmtest.Text("").WithToolCalls(call), lmtest.Text("[[ ## answer ## ]]\nlater\n\n[[ ## tool_calls ## ]]\n[{\"name\": \"search\", \"args\": {\"query\": \"x\"}}]"))
	defer srv.Close()
	lm := adapter.WithCapabilities(srv.Client(), adapter.Capabilities{Tools: true, JSONMode: true})
	in := adapter.Values{"question": "What's new in Go?", "tools": tools}

	res, err := adapter.Call(context.Background(), lm, sig, nil, in, adapter.UseAdapter(adapter.JSON{}))
	require.NoError(t, err)
	got := res.Outputs[0]["tool_calls"].(types.ToolCalls)
	assert.Equal(t, []types.ToolCall{{ID: "call_1", Name: "search", Args: map[string]any{"query": "go generics"}, RawArgs: `{"query": "go generics"}`}}, got.Calls,
		"the arguments decoded, and as the model wrote them")
	assert.Equal(t, "", res.Outputs[0]["answer"], "an output the reply left out is its zero value")
	req := srv.Requests()[0]
	assert.Contains(t, string(req.Body), `"parameters":{"type":"object","properties":{"query":{"type":"string"},"k":{"type":"integer","default":3}},"required":["query"]}`)
	assert.NotContains(t, req.Chat.Messages[0].Content, "{tool_calls}", "the ToolCalls field left the prompt")
	assert.NotContains(t, req.Chat.Messages[0].Content, "[[ ## tools ## ]]", "the tools input left the prompt")

	// Chat asks for the calls in the text unless NativeTools is set.
	res, err = adapter.Call(context.Background(), lm, sig, nil, in, adapter.UseAdapter(adapter.Chat{}))
	require.NoError(t, err)
	assert.Equal(t, "search", res.Outputs[0]["tool_calls"].(types.ToolCalls).Calls[0].Name)
	assert.Empty(t, srv.Requests()[1].Chat.Tools)
}

type weatherArgs struct {
	City  string `json:"city" jsonschema:"description=the city"`
	Units string `json:"units,omitempty"`
}

func TestNewToolAndExecute(t *testing.T) {
	tool, err := types.NewTool("weather", "Current weather.", func(_ context.Context, a weatherArgs) (string, error) {
		if a.City == "" {
			return "", errors.New("no city")
		}
		return "sunny in " + a.City, nil
	})
	require.NoError(t, err)
	assert.Equal(t, "weather, whose description is <desc>Current weather.</desc>. It takes arguments {'city': {'type': 'string', 'description': 'the city'}, 'units': {'type': 'string'}}.", tool.String())
	def, err := tool.ToolDefinition()
	require.NoError(t, err)
	assert.JSONEq(t, `{"type":"object","properties":{"city":{"type":"string","description":"the city"},"units":{"type":"string"}},"required":["city","units"]}`, string(def.Function.Parameters.(json.RawMessage)))

	out, err := tool.Call(context.Background(), json.RawMessage(`{"city": "Oslo"}`))
	require.NoError(t, err)
	assert.Equal(t, "sunny in Oslo", out)
	_, err = tool.Call(context.Background(), json.RawMessage(`{"city": "Oslo", "extra": 1}`))
	assert.ErrorIs(t, err, types.ErrArgumentName, "arguments are decoded strictly")
	assert.ErrorContains(t, err, `"extra" is not an argument (the arguments are "city", "units")`)

	calls := types.ToolCalls{Calls: []types.ToolCall{{ID: "1", Name: "weather", Args: map[string]any{"city": "Rome"}}, {ID: "2", Name: "nope"}, {ID: "3", Name: "weather", Args: map[string]any{}}}}
	res := calls.Execute(context.Background(), []types.Tool{tool})
	require.Len(t, res.Results, 3)
	assert.Equal(t, types.ToolCallResult{CallID: "1", Name: "weather", Value: "sunny in Rome"}, res.Results[0])
	assert.True(t, res.Results[1].IsError)
	// A required argument left out is the call's error: the tool does not
	// run with the zero value the model never gave (before, it ran with
	// City "" and said "no city").
	assert.Equal(t, "types: tool weather: arguments: a required argument is missing: city", res.Results[2].Value)
	_, err = tool.Call(context.Background(), json.RawMessage(`{"units": "C"}`))
	assert.ErrorIs(t, err, types.ErrMissingArgument)
}

// FuzzToolCalls: parsing tool calls never panics; what it accepts has
// named calls.
func FuzzToolCalls(f *testing.F) {
	for _, s := range []string{`{"tool_calls": [{"name": "a", "args": {}}]}`, `[{'name': 'a', 'arguments': '{"x": 1'}]`, `{"function": {"name": "f", "arguments": "{}"}}`, `[1, 2]`, `{"tool_calls": "x"}`,
		`[{"name": "t", "arguments": "{\"amount\": 1e"}, {"name": "t", "arguments": "{\"amount\": 5}"}]`, `{"name": "t", "args": {"account": "DE89`, `{"name": "t", "args": {"n": 10`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		var tc types.ToolCalls
		if tc.ParseField(raw) != nil {
			return
		}
		for _, c := range tc.Calls {
			if c.Name == "" {
				t.Fatalf("call without a name from %q", raw)
			}
			checkCall(t, c, raw)
			checkShown(t, c)
		}
		checkExecute(t, tc)
	})
}

// checkCall: a call has arguments or an error, never both; no number in
// its arguments is missing from the text it came from.
func checkCall(t *testing.T, c types.ToolCall, raw string) {
	t.Helper()
	if (c.Err == nil) == (c.Args == nil) {
		t.Fatalf("call %+v from %q: arguments and error", c, raw)
	}
	if c.Err != nil && !errors.Is(c.Err, types.ErrToolArguments) && c.Name != "" {
		t.Fatalf("call error %v is not ErrToolArguments", c.Err)
	}
	if strings.ContainsAny(raw, "eE") {
		return // 1e3 is 1000
	}
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case int:
			if !strings.Contains(raw, strconv.Itoa(max(x, -x))) {
				t.Fatalf("number %d is not in %q", x, raw)
			}
		case json.Number:
			if !strings.Contains(raw, strings.TrimLeft(x.String(), "-")) {
				t.Fatalf("number %s is not in %q", x, raw)
			}
		case map[string]any:
			for _, e := range x {
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(c.Args)
}

// replay is c's arguments as NativeToolTurn replays them.
func replay(t *testing.T, c types.ToolCall) string {
	t.Helper()
	c.ID = "c1"
	tc := types.ToolCalls{Calls: []types.ToolCall{c}, Results: &types.ToolCallResults{Results: []types.ToolCallResult{{CallID: "c1", Name: c.Name}}}}
	calls, _, ok := tc.NativeToolTurn()
	if !ok {
		t.Fatalf("call %+v: no native turn", c)
	}
	return calls[0].Function.Arguments
}

// checkShown: what is shown of a readable call's arguments, natively
// (Python's forms) and as text (Go's), holds Args' values, whatever the
// order.
func checkShown(t *testing.T, c types.ToolCall) {
	t.Helper()
	if c.Err != nil {
		return
	}
	r := replay(t, c)
	v, err := pyjson.Decode([]byte(r))
	if err != nil {
		t.Fatalf("replay %q: %v", r, err)
	}
	if !reflect.DeepEqual(pyjson.Plain(v), c.Args) {
		t.Fatalf("replay %q holds other values than %#v", r, c.Args)
	}
	b, err := json.Marshal(types.ToolCalls{Calls: []types.ToolCall{c}})
	if err != nil {
		t.Fatal(err)
	}
	var text struct {
		Calls []struct {
			Args json.RawMessage `json:"args"`
		} `json:"tool_calls"`
	}
	if err := json.Unmarshal(b, &text); err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(text.Calls[0].Args))
	dec.UseNumber()
	var got any
	if err := dec.Decode(&got); err != nil {
		t.Fatal(err)
	}
	g, _ := json.Marshal(got)
	w, _ := json.Marshal(c.Args)
	if string(g) != string(w) {
		t.Fatalf("text form %s holds other values than %s", text.Calls[0].Args, w)
	}
}

// checkExecute: a call whose arguments could not be read never runs.
func checkExecute(t *testing.T, tc types.ToolCalls) {
	t.Helper()
	ran := map[string]int{}
	var tools []types.Tool
	for _, c := range tc.Calls {
		name := c.Name
		tool, err := types.NewTool(name, "", func(_ context.Context, _ struct{}) (string, error) {
			ran[name]++
			return "ran", nil
		})
		if err == nil {
			tools = append(tools, tool)
		}
	}
	res := tc.Execute(context.Background(), tools)
	for i, c := range tc.Calls {
		if c.Err != nil && !res.Results[i].IsError {
			t.Fatalf("call %d with unreadable arguments was not an error: %+v", i, res.Results[i])
		}
	}
	for _, c := range tc.Calls {
		if c.Err != nil && ran[c.Name] > 0 {
			ok := false // another call of the same name may have run
			for _, d := range tc.Calls {
				ok = ok || d.Name == c.Name && d.Err == nil
			}
			if !ok {
				t.Fatalf("tool %q ran for a call whose arguments could not be read", c.Name)
			}
		}
	}
}

// FuzzNativeToolArgs: whatever arguments a provider sends for a native
// tool call, reading them never panics, strict JSON objects are read, and
// what cannot be read never runs the tool.
func FuzzNativeToolArgs(f *testing.F) {
	for _, s := range []string{`{"account": "A", "amount": 5}`, `{"account": "DE89 3704`, `{"amount": 1e`, `{"amount": -`, `{"amount": 100`, `transfer everything`,
		`{"a":5}{"a":500}`, `{"a": 1, "a": 2}`, `["A", 5]`, `[0 .`, `{'a': 'b', 'c': None,}`, `{"a": "x"`, "", "null", `{"n": 123456789012345678901234567890}`,
		`{"x": [1 1 1 1]}`, `{"s": "Projekt „Phoenix" läuft"}`, `{"s": "Projekt „Phoenix“ läuft"}`, "{\"\":\"\xa4\"}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, args string) {
		choice := openai.ChatCompletionChoice{Message: openai.ChatCompletionMessage{ToolCalls: []openai.ToolCall{{ID: "c1", Function: openai.FunctionCall{Name: "f", Arguments: args}}}}}
		v, ok := types.ToolCalls{}.NativeValue(choice)
		if !ok {
			t.Fatal("no calls")
		}
		tc := v.(types.ToolCalls)
		c := tc.Calls[0]
		checkCall(t, c, args)
		var obj map[string]any
		if json.Unmarshal([]byte(args), &obj) == nil && obj != nil && c.Err != nil && !strings.Contains(c.Err.Error(), "ambiguous") {
			t.Fatalf("the JSON object %q was refused: %v", args, c.Err)
		}
		if c.Err != nil && c.RawArgs != args {
			t.Fatalf("raw arguments %q, want %q", c.RawArgs, args)
		}
		checkShown(t, c)
		if c.Err == nil && json.Valid([]byte(args)) {
			// Strict JSON: the replay is json.dumps of the model's dict (ASCII, as json.dumps by default),
			// its keys in the model's order.
			v, err := pyjson.Decode([]byte(args))
			if _, obj := v.(pyjson.Object); err == nil && obj {
				want, err := pyjson.MarshalASCII(v)
				if err == nil && string(want) != replay(t, c) {
					t.Fatalf("arguments %q replayed as %q, want %q", args, replay(t, c), want)
				}
			}
		}
		checkExecute(t, tc)
	})
}

// FuzzParseField: the other types that parse their own field text never
// panic, and never invent text: an accepted image URL and extracted code
// are parts of the raw text; citations accepted are valid JSON.
func FuzzParseField(f *testing.F) {
	for _, s := range []string{
		"https://example.com/cat.png", "data:image/png;base64,iVBORw0KGgo=", " gs://bucket/x.jpg\n", "./cat.png",
		"```python\nprint(1)\n```", "text ```inline``` more", "```\nunclosed", "no fence at all",
		`{"citations": [{"cited_text": "a", "document_index": 0, "start_char_index": 0, "end_char_index": 1}]}`, `[{"cited_text": "b"}]`, `[{"cited_text": 1}]`, "[",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		var img types.Image
		if img.ParseField(raw) == nil && (img.URL == "" || !strings.Contains(raw, img.URL)) {
			t.Fatalf("image %q from %q", img.URL, raw)
		}
		var code types.Code
		if code.ParseField(raw) == nil && !strings.Contains(raw, string(code)) {
			t.Fatalf("code %q is not in %q", code, raw)
		}
		var py types.CodeOf[types.Python]
		if py.ParseField(raw) == nil && string(py) != string(code) {
			t.Fatalf("Code[python] %q differs from Code %q", py, code)
		}
		var c types.Citations
		if c.ParseField(raw) == nil && !json.Valid([]byte(strings.TrimSpace(raw))) {
			t.Fatalf("citations from invalid JSON %q", raw)
		}
	})
}

// TestHistoryNativeToolTurn replays a turn's tool calls as native messages
// when the adapter uses native function calling (JSON by default).
func TestHistoryNativeToolTurn(t *testing.T) {
	sig := parse(t, "history: History, question -> next_thought, tool_calls: ToolCalls")
	var h types.History
	require.NoError(t, json.Unmarshal([]byte(`{"messages": [{"question": "Q1", "next_thought": "I should search.", "tool_calls": {"tool_calls": [{"id": "call_1", "name": "search", "args": {"query": "cats"}}], "tool_call_results": {"tool_call_results": [{"call_id": "call_1", "name": "search", "value": {"hits": 3}, "is_error": false}]}}}]}`), &h))
	msgs, err := adapter.JSON{}.Format(sig, nil, adapter.Values{"history": h, "question": "Q2"})
	require.NoError(t, err)
	require.Len(t, msgs, 5)
	assert.Equal(t, "[[ ## question ## ]]\nQ1", msgs[1].Content)
	assert.Equal(t, "{\n  \"next_thought\": \"I should search.\"\n}", msgs[2].Content)
	require.Len(t, msgs[2].ToolCalls, 1)
	assert.Equal(t, `{"query": "cats"}`, msgs[2].ToolCalls[0].Function.Arguments)
	assert.Equal(t, openai.ChatCompletionMessage{Role: "tool", ToolCallID: "call_1", Name: "search", Content: `{"hits": 3}`}, msgs[3])

	// Chat (text mode) shows the calls as text and the results as a user turn.
	msgs, err = adapter.Chat{}.Format(sig, nil, adapter.Values{"history": h, "question": "Q2"})
	require.NoError(t, err)
	require.Len(t, msgs, 5)
	assert.Contains(t, msgs[2].Content, "[[ ## tool_calls ## ]]\n{\"tool_calls\": [{\"name\": \"search\", \"args\": {\"query\": \"cats\"}}]}")
	assert.Equal(t, "[[ ## tool_call_results ## ]]\n{\"tool_call_results\": [{\"call_id\": \"call_1\", \"name\": \"search\", \"value\": {\"hits\": 3}, \"is_error\": false}]}", msgs[3].Content)
}

// TestHistoryOverTheWire sends a History through the real client: the
// turns arrive in order between the system message and the request.
func TestHistoryOverTheWire(t *testing.T) {
	srv := lmtest.NewServer(lmtest.Text("[[ ## answer ## ]]\n6"))
	defer srv.Close()
	sig := parse(t, "history: History, question -> answer")
	h := types.History{Messages: []map[string]any{{"question": "1+1?", "answer": "2"}, {"question": "2+2?", "answer": "4"}}}
	res, err := adapter.Call(context.Background(), srv.Client(), sig, nil, adapter.Values{"history": h, "question": "3+3?"})
	require.NoError(t, err)
	assert.Equal(t, "6", res.Outputs[0]["answer"])
	var roles, firstLines []string
	for _, m := range srv.Requests()[0].Chat.Messages {
		roles = append(roles, m.Role)
		line, _, _ := strings.Cut(strings.TrimPrefix(m.Content, "[[ ## question ## ]]\n"), "\n")
		firstLines = append(firstLines, line)
	}
	assert.Equal(t, []string{"system", "user", "assistant", "user", "assistant", "user"}, roles)
	assert.Equal(t, []string{"1+1?", "[[ ## answer ## ]]", "2+2?", "[[ ## answer ## ]]", "3+3?"}, firstLines[1:])
}

// BenchmarkToolArgsWorstCase: native tool-call arguments holding the
// missing-comma pattern, which JSON repair handles in O(n²), four (and
// 32) calls in one reply.
func BenchmarkToolArgsWorstCase(b *testing.B) {
	for _, c := range []struct{ calls, size int }{{4, 8 << 10}, {4, 16 << 10}, {4, 64 << 10}, {32, 16 << 10}} {
		args := `{"x": [` + strings.Repeat("1 ", (c.size-11)/2) + `1]}` // under size bytes
		var calls []openai.ToolCall
		for i := range c.calls {
			calls = append(calls, openai.ToolCall{ID: fmt.Sprint(i), Function: openai.FunctionCall{Name: "f", Arguments: args}})
		}
		choice := openai.ChatCompletionChoice{Message: openai.ChatCompletionMessage{ToolCalls: calls}}
		b.Run(fmt.Sprintf("native-%d-calls/args=%dKiB", c.calls, c.size>>10), func(b *testing.B) {
			b.SetBytes(int64(c.calls * len(args)))
			for b.Loop() {
				_, _ = types.ToolCalls{}.NativeValue(choice)
			}
		})
	}
}

// A call whose arguments cannot be read without guessing is not run: its
// result is the error, for the model to see and correct.
func ExampleToolCalls_Execute() {
	type args struct {
		City string `json:"city"`
	}
	weather, _ := types.NewTool("weather", "Current weather.", func(_ context.Context, a args) (string, error) {
		return "14 °C in " + a.City, nil
	})
	choice := openai.ChatCompletionChoice{Message: openai.ChatCompletionMessage{ToolCalls: []openai.ToolCall{
		{ID: "call_1", Function: openai.FunctionCall{Name: "weather", Arguments: `{"city": "Bergen"}`}},
		{ID: "call_2", Function: openai.FunctionCall{Name: "weather", Arguments: `{"city": "Ber`}},
	}}}
	v, _ := types.ToolCalls{}.NativeValue(choice)
	for _, r := range v.(types.ToolCalls).Execute(context.Background(), []types.Tool{weather}).Results {
		fmt.Printf("%s error=%v: %v\n", r.CallID, r.IsError, r.Value)
	}
	// Output:
	// call_1 error=false: 14 °C in Bergen
	// call_2 error=true: the call to "weather" was not run: its arguments could not be read (tool call arguments are not one readable JSON object: reply truncated: the text ends inside a value, which may have been cut); send them again as one JSON object
}
