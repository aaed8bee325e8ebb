package main

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/lmtest"
	"github.com/sigwire/adapter/predict"
)

// TestExplain: the quickstart's report names the class of what failed —
// an outage during the JSON fallback is an LM failure, not an unreadable
// reply — against an lmtest server through the program's own module.
func TestExplain(t *testing.T) {
	prose := lmtest.Text("It was finished in 1889, in Paris.") // no markers: the JSON fallback runs
	cases := []struct {
		name   string
		second lmtest.Reply // the fallback's reply
		want   string
	}{
		{"outage after the fallback", lmtest.Error(http.StatusServiceUnavailable, `{"error":{"message":"overloaded","type":"server_error"}}`), "the LM call failed"},
		{"unreadable twice", lmtest.Text(`{"year": "soon", "city": "Paris"}`), "the reply could not be read"},
		{"cut off in the fallback", lmtest.Text(`{"reasoning": "It was`).WithFinish("length"), "raise MaxCompletionTokens"},
		{"refused in the fallback", lmtest.Text("").WithRefusal("I can't help with that."), "the model refused"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := lmtest.NewServer()
			defer srv.Close()
			var n atomic.Int32
			srv.Handle(func(lmtest.Request) lmtest.Reply {
				if n.Add(1) == 1 {
					return prose
				}
				return c.second
			})
			cot, err := predict.NewChainOfThought[Question, Landmark]()
			if err != nil {
				t.Fatal(err)
			}
			_, _, _, err = cot.Call(context.Background(), srv.Client(), Question{"When was the Eiffel Tower completed?"}, adapter.NoRetry())
			if err == nil {
				t.Fatal("no error")
			}
			if n.Load() != 2 {
				t.Fatalf("%d requests, want 2 (the fallback ran): %v", n.Load(), err)
			}
			got := explain(err)
			if !strings.Contains(got, c.want) {
				t.Errorf("explain: %s\nwant %q", got, c.want)
			}
		})
	}
}
