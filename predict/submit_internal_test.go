package predict

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/sigwire/adapter/internal/pyjson"
	"github.com/sigwire/adapter/signature"
)

// fuzzFacts is a struct output for FuzzSubmit.
type fuzzFacts struct {
	Name      string   `json:"name"`
	Count     int      `json:"count"`
	Landmarks []string `json:"landmarks"`
	Score     *float64 `json:"score,omitempty"`
}

// FuzzSubmit: a submit call's arguments are the model's, untrusted.
// Whatever they are, the submit tool never panics; what it accepts passed
// the outputs' JSON schemas (as DSPy's jsonschema check) and holds, for
// every output, a value of exactly its field's Go type.
func FuzzSubmit(f *testing.F) {
	sig, err := signature.Parse("q -> answer, n: int, tags: list[str], label: Literal['pos', 'neg'], maybe: Optional[float], facts: Facts, kv: dict[str, int]",
		signature.WithTypes(map[string]reflect.Type{"Facts": reflect.TypeFor[fuzzFacts]()}))
	if err != nil {
		f.Fatal(err)
	}
	tool, err := submitTool(sig)
	if err != nil {
		f.Fatal(err)
	}
	var schemas pyjson.Object
	if v, err := pyjson.Decode(tool.Args); err == nil {
		schemas, _ = v.(pyjson.Object)
	}
	for _, s := range []string{
		`{"answer": "a", "n": 3, "tags": ["x"], "label": "pos", "maybe": null, "facts": {"name": "P", "count": 1, "landmarks": []}, "kv": {"a": 1}}`,
		`{"answer": "a", "n": 3.0, "tags": [], "label": "neg", "maybe": 1.5, "facts": {"name": "P", "count": 1, "landmarks": ["L"], "score": 2}, "kv": {}}`,
		`{"answer": 1, "n": "3"}`, `{"n": true}`, `{}`, `[]`, `null`, `{"answer": "a", "extra": 1}`,
		`{"answer": "a", "n": 1e400, "tags": ["x"], "label": "POS", "maybe": null, "facts": {}, "kv": {"a": "b"}}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		v, err := tool.Call(context.Background(), json.RawMessage(raw))
		if err != nil {
			return
		}
		sub, ok := v.(submitted)
		if !ok {
			t.Fatalf("%q: submit returned %T", raw, v)
		}
		args, err := pyjson.Decode([]byte(raw))
		if err != nil {
			t.Fatalf("%q: accepted, but not JSON: %v", raw, err)
		}
		obj := args.(pyjson.Object)
		for _, f := range sig.Outputs() {
			got, ok := sub.values[f.Name]
			if !ok {
				t.Fatalf("%q: %s missing from the outputs", raw, f.Name)
			}
			if got != nil && reflect.TypeOf(got) != f.Type {
				t.Fatalf("%q: %s is a %T, not a %s", raw, f.Name, got, f.Type)
			}
			arg, _ := obj.Get(f.Name)
			schema, _ := schemas.Get(f.Name)
			if err := validateSchema(arg, schema); err != nil {
				t.Fatalf("%q: %s accepted against its schema: %v", raw, f.Name, err)
			}
		}
	})
}
