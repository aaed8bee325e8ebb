package predict

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestInModelOrderProperty: for generated arguments (keys in random order,
// nested objects, look-alike objects with other values around them),
// arguments read through a Go map (keys sorted) come back in the order the
// reply wrote them, and are never replaced by other values.
func TestInModelOrderProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	names := []string{"query", "min_price", "max_price", "a", "z", "k", "Ünï", "x y"}
	var object func(depth int) string
	value := func(depth int) string {
		switch r.IntN(5) {
		case 0:
			return fmt.Sprint(r.IntN(100))
		case 1:
			return fmt.Sprintf("%q", names[r.IntN(len(names))])
		case 2:
			if depth < 2 {
				return object(depth + 1)
			}
		case 3:
			return "[1, " + fmt.Sprint(r.Float64()) + "]"
		}
		return "null"
	}
	object = func(depth int) string {
		keys := r.Perm(len(names))[:1+r.IntN(4)]
		var b strings.Builder
		b.WriteString("{")
		for i, k := range keys {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "%q: %s", names[k], value(depth))
		}
		b.WriteString("}")
		return b.String()
	}
	for i := range 1000 {
		written := object(0)
		var m map[string]any
		dec := json.NewDecoder(strings.NewReader(written))
		dec.UseNumber()
		if err := dec.Decode(&m); err != nil {
			t.Fatal(err)
		}
		sortedText, _ := json.Marshal(m)
		var sorted ToolArgs
		if err := sorted.UnmarshalJSON(sortedText); err != nil {
			t.Fatal(err)
		}
		want, err := toolArgsOf(written)
		if err != nil {
			t.Fatal(err)
		}
		decoy := object(0)
		reply := `{"next_thought": "t", "decoy": ` + decoy + `, "next_tool_name": "search", "next_tool_args": ` + written + `}`
		if r.IntN(3) == 0 {
			reply = "Sure:\n```json\n" + reply + "\n```"
		}
		got := sorted.inModelOrder(reply)
		if gs, _ := sortedJSON(got); gs != mustSorted(t, sorted) {
			t.Fatalf("case %d: %s became other values %s (reply %s)", i, sorted, got, reply)
		}
		if dec, _ := toolArgsOf(decoy); mustSorted(t, dec) != mustSorted(t, want) && string(got) != string(want) {
			t.Fatalf("case %d: got %s, want the model's order %s (reply %s)", i, got, want, reply)
		}
	}
}

func mustSorted(t *testing.T, a ToolArgs) string {
	t.Helper()
	s, err := sortedJSON(a)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// FuzzInModelOrder: the reply is the model's text. inModelOrder never
// panics and never changes the arguments' values, only their order.
func FuzzInModelOrder(f *testing.F) {
	f.Add(`{"b": 1, "a": {"y": 2, "x": 3}}`, `{"next_tool_args": {"b": 1, "a": {"y": 2, "x": 3}}}`)
	f.Add(`{"b": 1, "a": 2}`, "```json\n{\"next_tool_args\": \"{\\\"b\\\": 1, \\\"a\\\": 2}\"}\n```")
	f.Add(`{"b": 1, "a": 2}`, `{"a": 2, "b": 1.0} {"b": 1, "a": 2}`)
	f.Add(`{"k": [1, {"z": 0, "y": 1}]}`, `{{{{`)
	f.Fuzz(func(t *testing.T, argsText, reply string) {
		var a ToolArgs
		if a.ParseField(argsText) != nil {
			return
		}
		got := a.inModelOrder(reply)
		if mustSorted(t, got) != mustSorted(t, a) {
			t.Fatalf("inModelOrder(%s, %q) = %s: other values", a, reply, got)
		}
		var back ToolArgs
		if err := back.ParseField(string(got)); err != nil || string(back) != string(got) {
			t.Fatalf("inModelOrder gave %s, which reads back as %s (%v)", got, back, err)
		}
	})
}
