package main

import (
	"context"
	"strings"
	"testing"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/lmtest"
	"github.com/sigwire/adapter/predict"
)

// TestTranscript: the offline run, native (ReActV2) and text (ReAct),
// prints each step's thought, the calls it chose and each tool's result,
// and ends with the answer: submitted, or extracted.
func TestTranscript(t *testing.T) {
	for _, native := range []bool{true, false} {
		agent, err := newAgent(native)
		if err != nil {
			t.Fatal(err)
		}
		srv := lmtest.NewServer(recorded(native, 0)...)
		defer srv.Close()
		var out strings.Builder
		res, err := run(context.Background(), agent, adapter.WithCapabilities(srv.Client(), adapter.Capabilities{Tools: true}), "", &out)
		if err != nil {
			t.Fatal(err)
		}
		got := out.String()
		for _, want := range []string{
			"[step 1] I need",
			"  → weather {\"city\":\"Bergen\"}\n",
			"    ← weather: {\"city\":\"Oslo\",\"celsius\":19,\"rain\":false,\"description\":\"sunny\"}\n",
			"  → packing_list {\"rain\":true}\n",
			"    ← packing_list: [\"umbrella\",\"rain jacket\",\"waterproof shoes\"]\n",
		} {
			if !strings.Contains(got, want) {
				t.Errorf("native=%v: the transcript lacks %q:\n%s", native, want, got)
			}
		}
		if native && !strings.Contains(got, "  → weather {\"city\":\"Bergen\"}\n  → weather {\"city\":\"Oslo\"}\n") {
			t.Errorf("the native run asks for both forecasts in one step:\n%s", got)
		}
		if res.Outputs[0]["umbrella"] != true {
			t.Errorf("umbrella = %v", res.Outputs[0]["umbrella"])
		}
		if advice, _ := res.Outputs[0]["advice"].(string); !strings.HasPrefix(advice, "Yes: it rains all day in Bergen") {
			t.Errorf("advice = %q", advice)
		}
		if native {
			if n := len(predict.HistoryOf(res).Messages); n != 3 || predict.TerminationOf(res) != predict.TerminatedBySubmit {
				t.Errorf("native: %d history turns, ended on %q; want 3, submit", n, predict.TerminationOf(res))
			}
		} else if n := len(res.Outputs[0]["trajectory"].(predict.Trajectory)); n != 4 {
			t.Errorf("text: %d trajectory entries, want 4", n)
		}
	}
}
