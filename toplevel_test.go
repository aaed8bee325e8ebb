package adapter_test

import (
	"testing"

	"github.com/sigwire/adapter/lmtest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	adapter "github.com/sigwire/adapter"
)

// TestTopLevelNotAnObject: a reply that is one JSON value but not an
// object (an array) is the answer only when the signature has one output
// whose type takes that value; otherwise it is an error keeping the reply,
// as in DSPy (issue 30 item 3: ["Paris"] for answer: str became the text
// `["Paris"]`). The same rule holds for every adapter, Chat's fallback to
// a reply that is JSON included.
func TestTopLevelNotAnObject(t *testing.T) {
	for _, tt := range []struct {
		sig, reply string
		want       adapter.Values // nil: an error
	}{
		{"q -> answer", `["Paris"]`, nil},
		{"q -> answer", "```json\n[\"Paris\"]\n```", nil},
		{"q -> answer", `  [{"answer": "Paris"}]  `, nil},
		{"q -> answer", `"[\"Paris\"]"`, nil},
		{"q -> answer", `['Paris']`, nil},
		{"q -> answer: Optional[str]", `["Paris"]`, nil},
		{"q -> answer: int", `[5]`, nil},
		{"q -> answer: dict[str, int]", `[["a", 1]]`, nil},
		{"q -> answer: Union[int, str]", `["Paris"]`, nil},
		{"q -> answer, n: int", `["Paris", 3]`, nil},
		{"q -> tags: list[str], n: int", `["a", "b"]`, nil},
		{"q -> tags: list[str]", `["a", "b"]`, adapter.Values{"tags": []string{"a", "b"}}},
		{"q -> tags: Optional[list[str]]", `["a"]`, adapter.Values{"tags": []string{"a"}}},
		{"q -> answer: Any", `["Paris", 1]`, adapter.Values{"answer": []any{"Paris", 1}}},
		{"q -> answer: Union[list[str], str]", `["Paris"]`, adapter.Values{"answer": []string{"Paris"}}},
		// Not a JSON reply: text that starts with a bracket is still text.
		{"q -> answer", `[1] Paris is the capital.`, adapter.Values{"answer": "[1] Paris is the capital."}},
		{"q -> answer", `42`, adapter.Values{"answer": "42"}},
		// Chat's markers are no JSON array, though repair would make one.
		{"q -> note: Optional[int]", "[[ ## completed ## ]]\n", adapter.Values{"note": (*int)(nil)}},
	} {
		sig := mustParse(t, tt.sig)
		for _, p := range []adapter.Parser{adapter.JSON{}, adapter.Chat{}, adapter.XML{}, adapter.BAML{}} {
			name := p.(adapter.Adapter).Name()
			got, err := p.Parse(sig, tt.reply)
			if tt.want == nil {
				var pe *adapter.ParseError
				if assert.ErrorAs(t, err, &pe, "%s %s %q gave %#v", name, tt.sig, tt.reply, got) {
					assert.Equal(t, tt.reply, pe.Completion)
				}
				continue
			}
			require.NoError(t, err, "%s %s %q", name, tt.sig, tt.reply)
			assert.Equal(t, tt.want, got, "%s %s %q", name, tt.sig, tt.reply)
		}
	}
}

// TestTopLevelArrayCallStream: Call and Stream, over the wire, agree on a
// reply that is a JSON array: an error for a str output (after Chat's
// fallback to JSON, which gets the same reply), the list for a list output.
func TestTopLevelArrayCallStream(t *testing.T) {
	for _, tt := range []struct {
		sig  string
		want adapter.Values
	}{
		{"question -> answer", nil},
		{"question -> tags: list[str]", adapter.Values{"tags": []string{"Paris"}}},
	} {
		sig := mustParse(t, tt.sig)
		in := adapter.Values{"question": "Capital of France?"}
		for _, stream := range []bool{false, true} {
			srv := lmtest.NewServer(lmtest.Text(`["Paris"]`), lmtest.Text(`["Paris"]`))
			var res *adapter.Result
			var err error
			if stream {
				for ch, e := range adapter.Stream(t.Context(), srv.Client(), sig, nil, in) {
					if e != nil {
						err = e
						break
					}
					if ch.Done {
						res = ch.Result
					}
				}
			} else {
				res, err = adapter.Call(t.Context(), srv.Client(), sig, nil, in)
			}
			srv.Close()
			if tt.want == nil {
				var pe *adapter.ParseError
				if assert.ErrorAs(t, err, &pe, "stream=%v %s", stream, tt.sig) {
					assert.Equal(t, `["Paris"]`, pe.Completion)
				}
				continue
			}
			require.NoError(t, err, "stream=%v %s", stream, tt.sig)
			assert.Equal(t, tt.want, res.Outputs[0], "stream=%v %s", stream, tt.sig)
		}
	}
}
