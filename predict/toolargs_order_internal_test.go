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
