package predict

import (
	"encoding/json"
	"reflect"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/sigwire/adapter/internal/pyjson"
	"github.com/sigwire/adapter/types"
)

// FuzzNativeArgs: a native call's arguments are untrusted text. Whatever
// the model wrote, the arguments a call runs with (ToolArgs, which the
// tool decodes and Step.Args shows) hold exactly the values the library
// read from the call (ToolCall.Args), or the call is not run (Err): never
// values of another reading.
func FuzzNativeArgs(f *testing.F) {
	for _, s := range []string{`{"city": "Oslo"}`, `{"b": 1, "a": [1.0, "x"]}`, `{"amount": 10`, `{'city': 'Paris',}`, `{}`, ``, `[1]`,
		`{"a": 1, "a": 2}`, `{"n": 123456789012345678901234567890}`, `{"x": 1e400}`, `{"q": "a"}{"q": "b"}`, `{"f": 5.0, "g": -0}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		v, ok := types.ToolCalls{}.NativeValue(openai.ChatCompletionChoice{Message: openai.ChatCompletionMessage{
			ToolCalls: []openai.ToolCall{{ID: "c", Function: openai.FunctionCall{Name: "t", Arguments: raw}}}}})
		if !ok {
			t.Fatal("no calls read")
		}
		c := v.(types.ToolCalls).Calls[0]
		if c.Err != nil {
			return
		}
		a := nativeArgs(c, "")
		obj, err := pyjson.Decode([]byte(a.orEmpty()))
		if err != nil {
			t.Fatalf("%q: the arguments %q are not JSON: %v", raw, a, err)
		}
		got, ok := pyjson.Plain(obj).(map[string]any)
		if !ok {
			t.Fatalf("%q: the arguments %q are not an object", raw, a)
		}
		want := c.Args
		if want == nil {
			want = map[string]any{}
		}
		if !reflect.DeepEqual(normal(t, want), normal(t, got)) {
			t.Fatalf("%q: the call was read as %v, but runs with %s", raw, want, a)
		}
	})
}

func (a ToolArgs) orEmpty() string {
	b, _ := a.MarshalJSON()
	return string(b)
}

// normal is v through JSON with exact numbers: equal for equal values.
func normal(t *testing.T, v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := pyjsonUnmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func pyjsonUnmarshal(b []byte, v *any) error {
	d, err := pyjson.Decode(b)
	*v = pyjson.Plain(d)
	return err
}
