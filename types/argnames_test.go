package types_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/lmtest"
	"github.com/sigwire/adapter/types"
)

// The security review's N3: keys that differ from an argument's name only
// in case or Unicode folding reached the struct through encoding/json's
// case-insensitive matching, so the trace showed one value and the tool
// ran with another. A key must be an argument's name exactly.

type payArgs struct {
	Account string `json:"account"`
	Amount  int    `json:"amount"`
}

type untaggedPay struct {
	Account string
	Amount  int
}

type askArgs struct {
	Ask string `json:"ask"`
}

type nestedArgs struct {
	Filter struct {
		Max int `json:"max"`
	} `json:"filter"`
	Items []struct {
		ID string `json:"id"`
	} `json:"items,omitempty"`
	Meta map[string]payArgs `json:"meta,omitempty"`
}

type embeddedBase struct {
	Region string `json:"region"`
}

type embeddedArgs struct {
	embeddedBase
	Name string `json:"name"`
}

// recorder makes a tool of args type A that records what it ran with.
func recorder[A any](t *testing.T, got *[]A) types.Tool {
	t.Helper()
	tool, err := types.NewTool("transfer", "send money", func(_ context.Context, a A) (string, error) {
		*got = append(*got, a)
		return "ok", nil
	})
	require.NoError(t, err)
	return tool
}

func TestToolArgumentNamesExact(t *testing.T) {
	ctx := context.Background()
	t.Run("a case variant beside the name", func(t *testing.T) {
		var ran []payArgs
		_, err := recorder(t, &ran).Call(ctx, []byte(`{"account":"A","amount":5,"AMOUNT":5000}`))
		require.Error(t, err)
		assert.ErrorIs(t, err, types.ErrArgumentName)
		assert.Contains(t, err.Error(), `"amount"`)
		assert.Contains(t, err.Error(), `"AMOUNT"`, "the error names both keys")
		assert.Empty(t, ran, "the tool never runs")
	})
	t.Run("an untagged struct: the Go field name", func(t *testing.T) {
		var ran []untaggedPay
		tool := recorder(t, &ran)
		_, err := tool.Call(ctx, []byte(`{"Account":"A","Amount":5,"amount":5000}`))
		assert.ErrorIs(t, err, types.ErrArgumentName)
		assert.Empty(t, ran)
		_, err = tool.Call(ctx, []byte(`{"Account":"A","Amount":5}`))
		require.NoError(t, err)
		assert.Equal(t, []untaggedPay{{"A", 5}}, ran)
	})
	t.Run("Unicode folding: the long s and the Kelvin sign", func(t *testing.T) {
		var ran []askArgs
		tool := recorder(t, &ran)
		for _, args := range []string{`{"ask":"benign","aſK":"evil"}`, `{"aſk":"evil"}`, `{"asK":"evil"}`, `{"ASK":"evil"}`} {
			_, err := tool.Call(ctx, []byte(args))
			assert.ErrorIs(t, err, types.ErrArgumentName, args)
		}
		assert.Empty(t, ran)
	})
	t.Run("a variant alone is not the argument", func(t *testing.T) {
		var ran []payArgs
		_, err := recorder(t, &ran).Call(ctx, []byte(`{"account":"A","Amount":5}`))
		assert.ErrorIs(t, err, types.ErrArgumentName)
		assert.ErrorContains(t, err, `did you mean "amount"`)
		assert.Empty(t, ran)
	})
	t.Run("nested objects, lists and maps", func(t *testing.T) {
		var ran []nestedArgs
		tool := recorder(t, &ran)
		for _, args := range []string{
			`{"filter":{"max":5,"MAX":5000}}`,
			`{"filter":{"max":5},"items":[{"id":"a"},{"ID":"b"}]}`,
			`{"filter":{"max":5},"meta":{"k":{"account":"A","amount":1,"Amount":9}}}`,
		} {
			_, err := tool.Call(ctx, []byte(args))
			assert.ErrorIs(t, err, types.ErrArgumentName, args)
		}
		assert.Empty(t, ran)
		_, err := tool.Call(ctx, []byte(`{"filter":{"max":5},"items":[{"id":"a"}],"meta":{"K":{"account":"A","amount":1}}}`))
		require.NoError(t, err, "map keys are data, not names")
		require.Len(t, ran, 1)
		assert.Equal(t, 5, ran[0].Filter.Max)
		assert.Equal(t, payArgs{"A", 1}, ran[0].Meta["K"])
	})
	t.Run("embedded structs' promoted fields", func(t *testing.T) {
		var ran []embeddedArgs
		tool := recorder(t, &ran)
		_, err := tool.Call(ctx, []byte(`{"region":"eu","name":"n"}`))
		require.NoError(t, err)
		assert.Equal(t, "eu", ran[0].Region)
		_, err = tool.Call(ctx, []byte(`{"Region":"us","name":"n"}`))
		assert.ErrorIs(t, err, types.ErrArgumentName)
		assert.Len(t, ran, 1)
	})
	t.Run("an unknown key and a key given twice", func(t *testing.T) {
		var ran []payArgs
		tool := recorder(t, &ran)
		_, err := tool.Call(ctx, []byte(`{"account":"A","amount":5,"memo":"x"}`))
		assert.ErrorIs(t, err, types.ErrArgumentName)
		assert.ErrorContains(t, err, `"memo"`)
		_, err = tool.Call(ctx, []byte(`{"account":"A","amount":5,"amount":5000}`))
		assert.ErrorIs(t, err, adapter.ErrAmbiguous, "encoding/json would keep the last")
		assert.Empty(t, ran)
	})
}

// TestToolArgumentNamesNative is the review's native reproducer, end to
// end: a reply's tool call whose arguments smuggle a folded key is traced
// as written and never runs.
func TestToolArgumentNamesNative(t *testing.T) {
	srv := lmtest.NewServer(lmtest.Text("").WithFinish("tool_calls").WithToolCalls(openai.ToolCall{ID: "call_1", Type: "function",
		Function: openai.FunctionCall{Name: "transfer", Arguments: `{"Account":"A","Amount":5,"amount":5000}`}}))
	defer srv.Close()
	var ran []untaggedPay
	tool := recorder(t, &ran)
	sig := parse(t, "question, tools: list[Tool] -> calls: ToolCalls")
	lm := adapter.WithCapabilities(srv.Client(), adapter.Capabilities{Tools: true, JSONMode: true})
	res, err := adapter.Call(context.Background(), lm, sig, nil, adapter.Values{"question": "pay", "tools": []types.Tool{tool}},
		adapter.UseAdapter(adapter.JSON{}))
	require.NoError(t, err)
	var traced []string
	ctx := adapter.WithTrace(context.Background(), &adapter.Trace{ToolStart: func(i adapter.ToolStartInfo) { traced = append(traced, string(i.Args)) }})
	out := res.Outputs[0]["calls"].(types.ToolCalls).Execute(ctx, []types.Tool{tool})
	require.Len(t, out.Results, 1)
	assert.True(t, out.Results[0].IsError)
	assert.Contains(t, out.Results[0].Value, `"Amount"`)
	assert.Contains(t, out.Results[0].Value, `"amount"`)
	assert.Empty(t, ran, "the tool never runs with a value the trace does not show")
	assert.Equal(t, []string{`{"Account":"A","Amount":5,"amount":5000}`}, traced)
}

// TestToolArgumentNamesProperty: over generated keys (the names, their
// case and folding variants, unknown keys), a tool runs exactly when every
// key is an argument's name as written, and then with exactly the values
// those keys give: what a trace of the arguments shows.
func TestToolArgumentNamesProperty(t *testing.T) {
	type args struct { // all optional: the property is about names
		Ask    int `json:"ask,omitempty"`
		Amount int `json:"amount,omitempty"`
		Kind   int `json:"kind,omitempty"`
		Plain  int `json:",omitempty"`
	}
	names := []string{"ask", "amount", "kind", "Plain"}
	variants := func(r *rand.Rand, name string) string {
		switch r.IntN(5) {
		case 0:
			return strings.ToUpper(name)
		case 1:
			return strings.ReplaceAll(name, "s", "ſ")
		case 2:
			return strings.ReplaceAll(strings.ReplaceAll(name, "k", "\u212a"), "K", "\u212a")
		case 3:
			return strings.ToUpper(name[:1]) + name[1:]
		}
		return strings.ToLower(name)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 3000 {
		obj := map[string]int{}
		exact := true
		for range 1 + r.IntN(4) {
			name := names[r.IntN(len(names))]
			key := name
			if r.IntN(3) == 0 {
				key = variants(r, name)
			}
			if r.IntN(20) == 0 {
				key = "other"
			}
			if key != name {
				exact = exact && (key == "ask" || key == "amount" || key == "kind" || key == "Plain")
			}
			obj[key] = r.IntN(1000)
		}
		raw, err := json.Marshal(obj)
		require.NoError(t, err)
		var ran []args
		tool := recorder(t, &ran)
		_, err = tool.Call(context.Background(), raw)
		if !exact {
			require.Error(t, err, "case %d: %s", i, raw)
			require.Empty(t, ran, "case %d: %s", i, raw)
			continue
		}
		require.NoError(t, err, "case %d: %s", i, raw)
		want := args{Ask: obj["ask"], Amount: obj["amount"], Kind: obj["kind"], Plain: obj["Plain"]}
		require.Equal(t, []args{want}, ran, "case %d: %s", i, raw)
	}
}

func TestDecodeArgs(t *testing.T) {
	var a payArgs
	require.NoError(t, types.DecodeArgs([]byte(`{"account":"A","amount":5}`), &a))
	assert.Equal(t, payArgs{"A", 5}, a)
	err := types.DecodeArgs([]byte(`{"account":"A","amount":5,"AMOUNT":5000}`), &a)
	assert.ErrorIs(t, err, types.ErrArgumentName)
	var m map[string]any
	require.NoError(t, types.DecodeArgs([]byte(`{"a":1,"A":2}`), &m), "a map takes any key")
	assert.Len(t, m, 2)
	assert.Error(t, types.DecodeArgs([]byte(`{"account":`), &a))
}

func ExampleDecodeArgs() {
	type transfer struct {
		Account string `json:"account"`
		Amount  int    `json:"amount"`
	}
	var a transfer
	fmt.Println(types.DecodeArgs([]byte(`{"account": "A", "amount": 5}`), &a), a.Amount)
	err := types.DecodeArgs([]byte(`{"account": "A", "amount": 5, "AMOUNT": 5000}`), &a)
	fmt.Println(errors.Is(err, types.ErrArgumentName))
	// Output:
	// <nil> 5
	// true
}

type namesA struct {
	X int `json:"x"`
	Y int
}
type namesB struct {
	Y int
	Z int
}
type namesC struct{ X int }
type namesD struct {
	Y int `json:"Y"`
}
type namesAnnihilate struct {
	namesA
	namesB
}
type namesTagWins struct {
	namesA
	namesD
	namesC
}
type namesShadow struct {
	namesA
	Y string
}

// NamesE is exported: encoding/json cannot set an embedded pointer to an
// unexported struct.
type NamesE struct {
	X int `json:"x"`
	Y int
}
type namesPtr struct {
	*NamesE
	N int `json:"n,omitempty"`
}
type namesDash struct {
	Secret int `json:"-"`
	Dash   int `json:"-,"`
	Bad    int `json:"a\"b"`
	hidden int
}

// TestArgumentNamesAgreeWithEncodingJSON: over struct shapes that test
// encoding/json's naming rules (embedding, annihilation, tagged
// dominance, shadowing, "-", invalid tags), a key DecodeArgs accepts is
// one encoding/json decodes, and a key encoding/json decodes that
// DecodeArgs refuses is a case or folding variant of an accepted one.
func TestArgumentNamesAgreeWithEncodingJSON(t *testing.T) {
	keys := []string{"x", "X", "y", "Y", "z", "Z", "n", "N", "-", "Secret", "Dash", "Bad", "a\"b", "hidden", "namesA", "namesB"}
	// nameOK: the key is taken as a name (the value may still not fit).
	check := func(t *testing.T, newV func() any) {
		jsonNameOK := func(raw []byte) bool {
			dec := json.NewDecoder(strings.NewReader(string(raw)))
			dec.DisallowUnknownFields()
			err := dec.Decode(newV())
			return err == nil || !strings.Contains(err.Error(), "unknown field")
		}
		accepted := map[string]bool{}
		for _, k := range keys {
			raw, _ := json.Marshal(map[string]int{k: 1})
			if !errors.Is(types.DecodeArgs(raw, newV()), types.ErrArgumentName) {
				accepted[k] = true
				assert.True(t, jsonNameOK(raw), "%q: accepted, so encoding/json must know it", k)
			}
		}
		for _, k := range keys {
			raw, _ := json.Marshal(map[string]int{k: 1})
			if jsonNameOK(raw) && !accepted[k] {
				variant := false
				for a := range accepted {
					variant = variant || strings.EqualFold(a, k)
				}
				assert.True(t, variant, "%q: encoding/json knows it, so it must be a variant of an accepted name", k)
			}
		}
	}
	t.Run("annihilate", func(t *testing.T) { check(t, func() any { return new(namesAnnihilate) }) })
	t.Run("tag wins", func(t *testing.T) { check(t, func() any { return new(namesTagWins) }) })
	t.Run("shadow", func(t *testing.T) { check(t, func() any { return new(namesShadow) }) })
	t.Run("pointer", func(t *testing.T) { check(t, func() any { return new(namesPtr) }) })
	t.Run("dash", func(t *testing.T) { check(t, func() any { return new(namesDash) }) })

	// And the accepted sets, spelled out.
	var sh namesShadow
	require.NoError(t, types.DecodeArgs([]byte(`{"x": 1, "Y": "s"}`), &sh))
	assert.Equal(t, "s", sh.Y)
	var an namesAnnihilate
	assert.ErrorIs(t, types.DecodeArgs([]byte(`{"Y": 1}`), &an), types.ErrArgumentName, "Y is ambiguous: encoding/json ignores it")
	require.NoError(t, types.DecodeArgs([]byte(`{"x": 1, "Z": 2}`), &an))
	var d namesDash
	require.NoError(t, types.DecodeArgs([]byte(`{"-": 1, "Bad": 2}`), &d))
	assert.Equal(t, namesDash{Dash: 1, Bad: 2}, d)
}

// TestExecuteToolErrorText: Execute shows a failed call's error as its
// result, verbatim by default; WithToolErrorText decides the text (every
// error result: the tool's, an unknown tool, unreadable arguments).
func TestExecuteToolErrorText(t *testing.T) {
	tool, err := types.NewTool("fetch", "", func(_ context.Context, a weatherArgs) (string, error) {
		return "", errors.New("GET https://x.example/?key=SECRET: 503")
	})
	require.NoError(t, err)
	calls := types.ToolCalls{Calls: []types.ToolCall{
		{ID: "1", Name: "fetch", Args: map[string]any{"city": "Rome"}},
		{ID: "2", Name: "nope", Args: map[string]any{}},
		{ID: "3", Name: "fetch", Err: types.ErrToolArguments, RawArgs: "{"},
	}}
	res := calls.Execute(context.Background(), []types.Tool{tool})
	assert.Equal(t, "GET https://x.example/?key=SECRET: 503", res.Results[0].Value, "verbatim by default")

	var seen []string
	res = calls.Execute(context.Background(), []types.Tool{tool}, types.WithToolErrorText(func(name string, err error) string {
		seen = append(seen, name+": "+err.Error())
		return "the call to " + name + " failed"
	}))
	require.Len(t, res.Results, 3)
	for i, r := range res.Results {
		assert.True(t, r.IsError, i)
		assert.Equal(t, "the call to "+r.Name+" failed", r.Value, i)
	}
	require.Len(t, seen, 3)
	assert.Contains(t, seen[0], "SECRET", "the hook gets the error itself")
	assert.Contains(t, seen[1], `no tool named "nope"`)
}

// TestNativeToolErrorTextEndToEnd: a native tool call's error, redacted,
// is what the next request's tool message carries.
func TestNativeToolErrorTextEndToEnd(t *testing.T) {
	tool, err := types.NewTool("fetch", "", func(_ context.Context, a weatherArgs) (string, error) {
		return "", errors.New("GET https://x.example/?key=SECRET: 503")
	})
	require.NoError(t, err)
	srv := lmtest.NewServer(
		lmtest.Text("").WithFinish("tool_calls").WithToolCalls(openai.ToolCall{ID: "call_1", Type: "function",
			Function: openai.FunctionCall{Name: "fetch", Arguments: `{"city": "Rome"}`}}),
		lmtest.Text(`{"answer": "sorry"}`))
	defer srv.Close()
	sig := parse(t, "question, tools: list[Tool], history: History -> answer, calls: ToolCalls")
	lm := adapter.WithCapabilities(srv.Client(), adapter.Capabilities{Tools: true, JSONMode: true})
	in := adapter.Values{"question": "q", "tools": []types.Tool{tool}, "history": types.History{}}
	res, err := adapter.Call(context.Background(), lm, sig, nil, in, adapter.UseAdapter(adapter.JSON{}))
	require.NoError(t, err)
	calls := res.Outputs[0]["calls"].(types.ToolCalls)
	out := calls.Execute(context.Background(), []types.Tool{tool}, types.WithToolErrorText(func(name string, err error) string {
		return "Execution error in " + name + ": " + strings.ReplaceAll(err.Error(), "SECRET", "[redacted]")
	}))
	calls.Results = &out
	in["history"] = types.History{Messages: []map[string]any{{"question": "q", "answer": res.Outputs[0]["answer"], "calls": calls}}}
	_, err = adapter.Call(context.Background(), lm, sig, nil, in, adapter.UseAdapter(adapter.JSON{}))
	require.NoError(t, err)
	body := string(srv.Requests()[1].Body)
	assert.Contains(t, body, "key=[redacted]")
	assert.NotContains(t, body, "SECRET")
}

// A tool's error is the call's result, verbatim; WithToolErrorText decides
// what the model is shown instead.
func ExampleWithToolErrorText() {
	fetch, _ := types.NewTool("fetch", "Fetch a page.", func(_ context.Context, a struct {
		URL string `json:"url"`
	}) (string, error) {
		return "", errors.New("GET " + a.URL + "?key=SECRET: 503")
	})
	calls := types.ToolCalls{Calls: []types.ToolCall{{ID: "1", Name: "fetch", Args: map[string]any{"url": "https://x.example/"}}}}
	fmt.Println(calls.Execute(context.Background(), []types.Tool{fetch}).Results[0].Value)
	redact := types.WithToolErrorText(func(tool string, err error) string {
		return tool + " failed: " + strings.ReplaceAll(err.Error(), "SECRET", "…")
	})
	fmt.Println(calls.Execute(context.Background(), []types.Tool{fetch}, redact).Results[0].Value)
	// Output:
	// GET https://x.example/?key=SECRET: 503
	// fetch failed: GET https://x.example/?key=…: 503
}

// FuzzDecodeArgs: tool arguments are the model's text. DecodeArgs never
// panics, and what it accepts gives the tool exactly the values the
// arguments show: every key of an object decoded into a struct is a field's
// name as written, and the fields hold those keys' values.
func FuzzDecodeArgs(f *testing.F) {
	for _, s := range []string{`{"account":"A","amount":5}`, `{"account":"A","amount":5,"AMOUNT":5000}`, `{"aſk":"x"}`,
		`{"filter":{"max":5,"MAX":6}}`, `{"items":[{"id":"a"},{"ID":"b"}]}`, `{"meta":{"k":{"account":"A"}}}`, `{"amount":1,"amount":2}`, `[1]`, `null`} {
		f.Add(s)
	}
	type item struct {
		ID string `json:"id"`
	}
	type args struct {
		Account string `json:"account"`
		Amount  int    `json:"amount"`
		Filter  *struct {
			Max int `json:"max"`
		} `json:"filter"`
		Items []item         `json:"items"`
		Meta  map[string]any `json:"meta"`
	}
	top := map[string]bool{"account": true, "amount": true, "filter": true, "items": true, "meta": true}
	f.Fuzz(func(t *testing.T, raw string) {
		var a args
		if types.DecodeArgs([]byte(raw), &a) != nil {
			return
		}
		var obj map[string]json.RawMessage
		if json.Unmarshal([]byte(raw), &obj) != nil || obj == nil {
			return // null: nothing decoded
		}
		for k, v := range obj {
			if !top[k] {
				t.Fatalf("%s: key %q accepted", raw, k)
			}
			switch k {
			case "account":
				var s string
				if json.Unmarshal(v, &s) == nil && s != a.Account {
					t.Fatalf("%s: account %q, the tool got %q", raw, s, a.Account)
				}
			case "amount":
				var n int
				if json.Unmarshal(v, &n) == nil && n != a.Amount {
					t.Fatalf("%s: amount %d, the tool got %d", raw, n, a.Amount)
				}
			case "filter":
				var m map[string]json.RawMessage
				if json.Unmarshal(v, &m) == nil {
					for fk := range m {
						if fk != "max" {
							t.Fatalf("%s: filter key %q accepted", raw, fk)
						}
					}
				}
			case "items":
				var list []map[string]json.RawMessage
				if json.Unmarshal(v, &list) == nil {
					for _, m := range list {
						for ik := range m {
							if ik != "id" {
								t.Fatalf("%s: item key %q accepted", raw, ik)
							}
						}
					}
				}
			}
		}
	})
}

// TestDecodeArgsMapErrorDeterministic: of several entries of a map
// argument whose keys are wrong, the error names the same one every time
// (the first key in order), as it does for a struct's keys.
func TestDecodeArgsMapErrorDeterministic(t *testing.T) {
	type item struct {
		Amount int `json:"amount"`
	}
	raw := []byte(`{"m": {"AMOUNT": 1}, "b": {"Amount": 2}, "z": {"amt": 3}, "a": {"amounT": 4}, "c": {"x": 5}}`)
	var first string
	other := 0
	for range 50 {
		var m map[string]item
		err := types.DecodeArgs(raw, &m)
		require.ErrorIs(t, err, types.ErrArgumentName)
		if first == "" {
			first = err.Error()
		}
		if err.Error() != first {
			other++
		}
	}
	assert.Zero(t, other, "of 50 reads, errors other than the first: %s", first)
	assert.Contains(t, first, `"[\"a\"].amounT" is not an argument`)
}
