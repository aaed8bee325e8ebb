package types_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/internal/pyjson"
	"github.com/sigwire/adapter/lmtest"
	"github.com/sigwire/adapter/types"
)

// modelArgs are arguments whose keys the model wrote in no sorted order,
// at the top and in a nested object.
const modelArgs = `{"query": "shoes", "min_price": 50, "max_price": 150, "filter": {"size": 42, "color": "red"}}`

// TestToolCallsKeepModelOrder: a ToolCalls value read from a reply keeps
// the model's key order wherever it is shown again, as DSPy's dict does:
// its text form (a History turn, a demo), its native replay and the
// arguments Execute traces and hands the tool. Regression (issue 30 item
// 12): every rendering sorted the keys.
func TestToolCallsKeepModelOrder(t *testing.T) {
	const compact = `{"query":"shoes","min_price":50,"max_price":150,"filter":{"size":42,"color":"red"}}`
	reads := map[string]func(t *testing.T) types.ToolCalls{
		"ParseField args object": func(t *testing.T) types.ToolCalls {
			var tc types.ToolCalls
			require.NoError(t, tc.ParseField(`{"tool_calls": [{"id": "c1", "name": "search", "args": `+modelArgs+`}]}`))
			return tc
		},
		"ParseField arguments string": func(t *testing.T) types.ToolCalls {
			var tc types.ToolCalls
			s, _ := json.Marshal(modelArgs)
			require.NoError(t, tc.ParseField(`[{"id": "c1", "function": {"name": "search", "arguments": `+string(s)+`}}]`))
			return tc
		},
		"ParseField Python literal": func(t *testing.T) types.ToolCalls {
			var tc types.ToolCalls
			require.NoError(t, tc.ParseField(strings.ReplaceAll(`{'tool_calls': [{'id': 'c1', 'name': 'search', 'args': `+modelArgs+`}]}`, `"`, `'`)))
			return tc
		},
		"UnmarshalJSON": func(t *testing.T) types.ToolCalls {
			var tc types.ToolCalls
			require.NoError(t, json.Unmarshal([]byte(`{"tool_calls": [{"id": "c1", "name": "search", "args": `+modelArgs+`}]}`), &tc))
			return tc
		},
		"NativeValue": func(t *testing.T) types.ToolCalls {
			v, ok := types.ToolCalls{}.NativeValue(openai.ChatCompletionChoice{Message: openai.ChatCompletionMessage{
				ToolCalls: []openai.ToolCall{{ID: "c1", Function: openai.FunctionCall{Name: "search", Arguments: modelArgs}}}}})
			require.True(t, ok)
			return v.(types.ToolCalls)
		},
	}
	for name, read := range reads {
		t.Run(name, func(t *testing.T) {
			tc := read(t)
			require.Len(t, tc.Calls, 1)
			require.NoError(t, tc.Calls[0].Err)

			b, err := json.Marshal(tc)
			require.NoError(t, err)
			assert.Equal(t, `{"tool_calls":[{"name":"search","args":`+compact+`}]}`, string(b), "the text form")

			tc.Results = &types.ToolCallResults{Results: []types.ToolCallResult{{CallID: "c1", Name: "search", Value: "3 hits"}}}
			calls, _, ok := tc.NativeToolTurn()
			require.True(t, ok)
			assert.Equal(t, modelArgs, calls[0].Function.Arguments, "the native replay, as json.dumps writes the model's dict")

			var started, got string
			tool, err := types.NewTool("search", "", func(_ context.Context, a rawObject) (string, error) {
				got = a.raw
				return "ok", nil
			})
			require.NoError(t, err)
			ctx := adapter.WithTrace(context.Background(), &adapter.Trace{ToolStart: func(i adapter.ToolStartInfo) { started = string(i.Args) }})
			tc.Execute(ctx, []types.Tool{tool})
			assert.Equal(t, compact, started, "the trace")
			assert.Equal(t, compact, got, "the tool's arguments")
		})
	}
}

// TestHistoryToolCallsKeepModelOrder: a History turn holding a ToolCalls
// value read from text shows the arguments in the model's order, in the
// text (Chat adapter) and in the native replay.
func TestHistoryToolCallsKeepModelOrder(t *testing.T) {
	sig := parse(t, "question, history: History, tools: list[Tool] -> answer, tool_calls: ToolCalls")
	var tc types.ToolCalls
	require.NoError(t, tc.ParseField(`{"tool_calls": [{"id": "c1", "name": "search", "args": `+modelArgs+`}]}`))
	tc.Results = &types.ToolCallResults{Results: []types.ToolCallResult{{CallID: "c1", Name: "search", Value: "3 hits"}}}
	h := types.History{Messages: []map[string]any{{"question": "Shoes?", "answer": "Searching.", "tool_calls": tc}}}
	search, err := types.NewTool("search", "Search.", func(_ context.Context, a rawObject) (string, error) { return "", nil })
	require.NoError(t, err)

	// The Chat and XML adapters show the turn as text; the JSON adapter
	// calls tools natively (DSPy's defaults).
	for _, c := range []struct {
		use    adapter.Adapter
		reply  string
		native bool
	}{
		{adapter.Chat{}, "[[ ## answer ## ]]\nok\n\n[[ ## tool_calls ## ]]\n[]\n\n[[ ## completed ## ]]", false},
		{adapter.XML{}, "<answer>ok</answer><tool_calls>[]</tool_calls>", false},
		{adapter.JSON{}, `{"answer": "ok"}`, true},
	} {
		use, reply, native := c.use, c.reply, c.native
		t.Run(fmt.Sprintf("%T", use), func(t *testing.T) {
			srv := lmtest.NewServer(lmtest.Text(reply))
			defer srv.Close()
			lm := adapter.WithCapabilities(srv.Client(), adapter.Capabilities{Tools: native, JSONMode: native})
			_, err := adapter.Call(context.Background(), lm, sig, nil, adapter.Values{"question": "And?", "history": h, "tools": []types.Tool{search}}, adapter.UseAdapter(use))
			require.NoError(t, err)
			msgs := srv.Requests()[0].Chat.Messages
			if native {
				require.Len(t, msgs[2].ToolCalls, 1)
				assert.Equal(t, modelArgs, msgs[2].ToolCalls[0].Function.Arguments)
				return
			}
			assert.Contains(t, msgs[2].Content, `"args": `+modelArgs)
		})
	}
}

// TestToolCallsByHandSorted: a call built by hand has no order but its
// map's, so its arguments are sorted, as before; an order (RawArgs) that
// does not name exactly Args' keys is not used, and values always come
// from Args.
func TestToolCallsByHandSorted(t *testing.T) {
	cases := map[string]struct {
		call types.ToolCall
		want string
	}{
		"Args only":           {types.ToolCall{ID: "1", Name: "f", Args: map[string]any{"b": 1, "a": 2}}, `{"a": 2, "b": 1}`},
		"a key more":          {types.ToolCall{ID: "1", Name: "f", Args: map[string]any{"b": 1, "a": 2, "c": 3}, RawArgs: `{"b": 1, "a": 2}`}, `{"a": 2, "b": 1, "c": 3}`},
		"a key less":          {types.ToolCall{ID: "1", Name: "f", Args: map[string]any{"b": 1}, RawArgs: `{"b": 1, "a": 2}`}, `{"b": 1}`},
		"other key":           {types.ToolCall{ID: "1", Name: "f", Args: map[string]any{"b": 1, "c": 2}, RawArgs: `{"b": 1, "a": 2}`}, `{"b": 1, "c": 2}`},
		"value changed":       {types.ToolCall{ID: "1", Name: "f", Args: map[string]any{"b": 7, "a": "x"}, RawArgs: `{"b": 1, "a": 2}`}, `{"b": 7, "a": "x"}`},
		"nested mismatch":     {types.ToolCall{ID: "1", Name: "f", Args: map[string]any{"z": map[string]any{"d": 1, "c": 2}, "a": 1}, RawArgs: `{"z": {"d": 1}, "a": 1}`}, `{"z": {"c": 2, "d": 1}, "a": 1}`},
		"not an object":       {types.ToolCall{ID: "1", Name: "f", Args: map[string]any{"b": 1, "a": 2}, RawArgs: `[1]`}, `{"a": 2, "b": 1}`},
		"not JSON":            {types.ToolCall{ID: "1", Name: "f", Args: map[string]any{"b": 1, "a": 2}, RawArgs: `nonsense`}, `{"a": 2, "b": 1}`},
		"Args nil":            {types.ToolCall{ID: "1", Name: "f", RawArgs: `{"b": 1}`}, `{}`},
		"list length differs": {types.ToolCall{ID: "1", Name: "f", Args: map[string]any{"l": []any{map[string]any{"y": 1, "x": 2}}}, RawArgs: `{"l": [{"y": 1, "x": 2}, 3]}`}, `{"l": [{"x": 2, "y": 1}]}`},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			tc := types.ToolCalls{Calls: []types.ToolCall{c.call}, Results: &types.ToolCallResults{Results: []types.ToolCallResult{{CallID: "1", Name: "f"}}}}
			calls, _, ok := tc.NativeToolTurn()
			require.True(t, ok)
			assert.Equal(t, c.want, calls[0].Function.Arguments)
			b, err := json.Marshal(tc)
			require.NoError(t, err)
			var back struct {
				Calls []struct {
					Args json.RawMessage `json:"args"`
				} `json:"tool_calls"`
			}
			require.NoError(t, json.Unmarshal(b, &back))
			want, err := pyjson.Decode([]byte(c.want))
			require.NoError(t, err)
			wantCompact, err := want.(pyjson.Object).MarshalJSON()
			require.NoError(t, err)
			assert.Equal(t, string(wantCompact), string(back.Calls[0].Args), "the text form agrees")
		})
	}
}

// TestToolArgsOrderProperty: for generated argument objects (keys in
// random order, nested objects and lists), reading them — as a native
// call's arguments, or inside a ToolCalls field's text — and rendering
// them back gives the model's key order and the same values: the native
// replay is json.dumps of the model's dict, and the text form and the
// trace are the same object. The replay is json.dumps with its default
// ensure_ascii, as DSPy's wire writes it (non-ASCII as \u escapes).
func TestToolArgsOrderProperty(t *testing.T) {
	rng := rand.New(rand.NewPCG(30, 12))
	for i := range 300 {
		obj := genObject(rng, 0)
		text, err := pyjson.Marshal(obj)
		require.NoError(t, err)
		replay, err := pyjson.MarshalASCII(obj)
		require.NoError(t, err)
		shown, err := pyjson.Marshal(wholeFloats(obj))
		require.NoError(t, err)
		checkOrder(t, fmt.Sprintf("native %d", i), nativeCalls(t, string(text)), string(replay), string(shown))
		var tc types.ToolCalls
		require.NoError(t, tc.ParseField(`{"tool_calls": [{"id": "c1", "name": "f", "args": `+string(text)+`}]}`), "case %d", i)
		checkOrder(t, fmt.Sprintf("text %d", i), tc, string(replay), string(shown))
	}
}

// rawObject is a tool's arguments as it is handed them.
type rawObject struct{ raw string }

func (o *rawObject) UnmarshalJSON(b []byte) error { o.raw = string(b); return nil }

func nativeCalls(t *testing.T, args string) types.ToolCalls {
	v, ok := types.ToolCalls{}.NativeValue(openai.ChatCompletionChoice{Message: openai.ChatCompletionMessage{
		ToolCalls: []openai.ToolCall{{ID: "c1", Function: openai.FunctionCall{Name: "f", Arguments: args}}}}})
	require.True(t, ok)
	return v.(types.ToolCalls)
}

// checkOrder: tc's one call is replayed natively as want (json.dumps of
// the model's dict) and shown as text and traced as the same object, in
// Go's number forms (compared through reencode, whole floats as ints).
func checkOrder(t *testing.T, name string, tc types.ToolCalls, want, shown string) {
	t.Helper()
	require.Len(t, tc.Calls, 1, name)
	require.NoError(t, tc.Calls[0].Err, name)
	tc.Results = &types.ToolCallResults{Results: []types.ToolCallResult{{CallID: "c1", Name: "f"}}}
	calls, _, ok := tc.NativeToolTurn()
	require.True(t, ok, name)
	require.Equal(t, want, calls[0].Function.Arguments, name)
	b, err := json.Marshal(tc)
	require.NoError(t, err, name)
	var back struct {
		Calls []struct {
			Args json.RawMessage `json:"args"`
		} `json:"tool_calls"`
	}
	require.NoError(t, json.Unmarshal(b, &back), name)
	require.Equal(t, shown, reencode(t, back.Calls[0].Args), name)
	var started string
	ctx := adapter.WithTrace(context.Background(), &adapter.Trace{ToolStart: func(i adapter.ToolStartInfo) { started = string(i.Args) }})
	tc.Execute(ctx, nil)
	require.Equal(t, shown, reencode(t, []byte(started)), name)
}

// reencode is b's JSON rendered by pyjson, order kept (Go's and Python's
// number and string forms differ; order and values must not).
func reencode(t *testing.T, b []byte) string {
	v, err := pyjson.Decode(b)
	require.NoError(t, err)
	out, err := pyjson.Marshal(wholeFloats(v))
	require.NoError(t, err)
	return string(out)
}

// wholeFloats is v with every float that is a whole number an int: Go's
// encoding/json writes 9.0 as 9.
func wholeFloats(v any) any {
	switch x := v.(type) {
	case float64:
		if x == float64(int(x)) {
			return int(x)
		}
	case pyjson.Object:
		var o pyjson.Object
		for _, m := range x.Members() {
			o.Set(m.Key, wholeFloats(m.Value))
		}
		return o
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = wholeFloats(e)
		}
		return out
	}
	return v
}

func genObject(rng *rand.Rand, depth int) pyjson.Object {
	var o pyjson.Object
	for range rng.IntN(6) {
		key := genKey(rng)
		if _, dup := o.Get(key); dup {
			continue
		}
		o.Set(key, genValue(rng, depth+1))
	}
	return o
}

func genKey(rng *rand.Rand) string {
	const letters = "abcxyzQ_é \"\\<\u2028"
	r := []rune(letters)
	var b strings.Builder
	for range 1 + rng.IntN(4) {
		b.WriteRune(r[rng.IntN(len(r))])
	}
	return b.String()
}

func genValue(rng *rand.Rand, depth int) any {
	n := 7
	if depth > 3 {
		n = 5
	}
	switch rng.IntN(n) {
	case 0:
		return rng.IntN(2000) - 1000
	case 1:
		return genKey(rng)
	case 2:
		return rng.IntN(2) == 0
	case 3:
		return nil
	case 4:
		return float64(rng.IntN(100)) / 8
	case 5:
		return genObject(rng, depth)
	default:
		list := []any{}
		for range rng.IntN(3) {
			list = append(list, genValue(rng, depth+1))
		}
		return list
	}
}

// TestToolCallsWideArguments: a call with tens of thousands of argument
// keys (a reply can hold one) is read and written again with every key in
// the model's order. Reading the order decoded each object through a
// key-by-key scan, quadratic in its keys: 160 000 keys took over a minute
// to read and two to write (BenchmarkDecodeWideObject in internal/pyjson).
func TestToolCallsWideArguments(t *testing.T) {
	const n = 20000
	var b strings.Builder
	b.WriteString(`{"name": "f", "args": {`)
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("k%d", (i*7919)%n) // not sorted
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%q: %d", keys[i], i)
	}
	b.WriteString("}}")
	var tc types.ToolCalls
	require.NoError(t, tc.ParseField(b.String()))
	require.Len(t, tc.Calls, 1)
	require.Len(t, tc.Calls[0].Args, n)
	out, err := tc.MarshalJSON()
	require.NoError(t, err)
	v, err := pyjson.Decode(out)
	require.NoError(t, err)
	calls, _ := v.(pyjson.Object).Get("tool_calls")
	args, _ := calls.([]any)[0].(pyjson.Object).Get("args")
	assert.Equal(t, keys, args.(pyjson.Object).Keys())
}
