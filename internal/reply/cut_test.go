package reply

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestCutField: a reply cut anywhere inside a field's value — in field
// markers, JSON or XML, read by any adapter's order — names that field;
// cut inside a reasoning block, after the completed marker or between XML
// elements it names none. (Issue 45: a truncation error named no field.)
func TestCutField(t *testing.T) {
	sig := mustSig(t, "question -> reasoning, answer, n: int, tags: list[str]")
	names := []string{"reasoning", "answer", "n", "tags"}
	r := rand.New(rand.NewPCG(45, 7))
	words := []string{"Paris", "is", "the", "capital", "[1]", "{x}", "it's", "\"quoted\"", "a, b", "x: y", "\n", "##", "<b>"}
	text := func() string {
		var b strings.Builder
		for k := range 1 + r.IntN(8) {
			if k > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(words[r.IntN(len(words))])
		}
		return strings.TrimSpace(b.String())
	}
	type span struct{ start, end, field int }
	checked := 0
	for range 300 {
		vals := []any{text(), text(), r.IntN(5000), []string{text(), text()}}
		for _, shape := range []Shape{Markers, JSON, XML} {
			var b strings.Builder
			var spans []span
			switch shape {
			case Markers:
				for i, n := range names {
					b.WriteString("[[ ## " + n + " ## ]]\n")
					start := b.Len()
					v := fmt.Sprint(vals[i])
					if i == 3 {
						j, _ := json.Marshal(vals[i])
						v = string(j)
					}
					v = strings.ReplaceAll(v, "##", "#") // a value that held a marker would not be carried
					b.WriteString(v)
					spans = append(spans, span{start, b.Len(), i})
					b.WriteString("\n\n")
				}
				b.WriteString("[[ ## completed ## ]]")
			case JSON:
				b.WriteString("{")
				for i, n := range names {
					if i > 0 {
						b.WriteString(", ")
					}
					j, _ := json.Marshal(vals[i])
					b.WriteString(`"` + n + `": `)
					start := b.Len()
					b.WriteString(string(j))
					spans = append(spans, span{start, b.Len(), i})
				}
				b.WriteString("}")
			case XML:
				esc := strings.NewReplacer("&", "&amp;", "<", "&lt;")
				for i, n := range names {
					b.WriteString("<" + n + ">")
					start := b.Len()
					if tags, ok := vals[i].([]string); ok {
						for _, tg := range tags {
							b.WriteString("<item>" + esc.Replace(tg) + "</item>")
						}
					} else {
						b.WriteString(esc.Replace(fmt.Sprint(vals[i])))
					}
					b.WriteString("</" + n)
					spans = append(spans, span{start, b.Len(), i})
					b.WriteString(">\n")
				}
			}
			reply := b.String()
			for _, sp := range spans {
				for cut := sp.start + 1; cut <= sp.end; cut++ {
					for _, prefer := range []Shape{Markers, JSON, XML} {
						if got := CutField(sig, reply[:cut], prefer); got != sp.field {
							t.Fatalf("%q (shape %d, read as %d): field %d, want %s", reply[:cut], shape, prefer, got, names[sp.field])
						}
						checked++
					}
				}
			}
			if shape == Markers {
				if got := CutField(sig, reply+"\nUser: and", Markers); got != -1 {
					t.Fatalf("%q: field %d after the completed marker", reply, got)
				}
			}
		}
	}
	for _, c := range []string{"<think>The question asks", "<reasoning>r</reasoning>\n<answer>Paris</answer>\n<n>3</n>\n"} {
		if got := CutField(sig, c, XML); got != -1 {
			t.Errorf("%q: field %d, want none", c, got)
		}
	}
	if checked < 10000 {
		t.Fatalf("only %d cuts", checked)
	}
}
