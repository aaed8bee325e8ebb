package predict_test

import (
	"context"
	"testing"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/predict"
)

// BenchmarkTypedCall: a typed Predict.Call against the adapter.Call it
// makes, in process (cannedLM): the typed path's own cost is the
// difference (issue 48: typed Predict ≤ 0.25× dspy-go's).
func BenchmarkTypedCall(b *testing.B) {
	lm := &cannedLM{reply: "[[ ## reasoning ## ]]\nIt boils at 100.\n\n[[ ## answer ## ]]\n100 °C\n\n[[ ## completed ## ]]"}
	ctx := context.Background()
	in := qaIn{Question: "At what temperature does water boil?", Context: "Water boils at 100 °C at sea level."}
	p, err := predict.New[qaIn, qaOut](adapter.NoRetry())
	if err != nil {
		b.Fatal(err)
	}
	demos := []predict.Demo[qaIn, qaOut]{{In: qaIn{"q1", "c1"}, Out: qaOut{"r1", "a1"}}, {In: qaIn{"q2", "c2"}, Out: qaOut{"r2", "a2"}}, {In: qaIn{"q3", "c3"}, Out: qaOut{"r3", "a3"}}}
	if p, err = p.WithDemos(demos...); err != nil {
		b.Fatal(err)
	}
	b.Run("typed", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, _, err := p.Call(ctx, lm, in); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("module", func(b *testing.B) {
		vals, _ := adapter.ValuesOf(in)
		b.ReportAllocs()
		for b.Loop() {
			if _, err := p.Module().Call(ctx, lm, vals); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("adapter", func(b *testing.B) {
		vals, _ := adapter.ValuesOf(in)
		sig, ds := p.Module().Signature(), p.Module().Demos()
		b.ReportAllocs()
		for b.Loop() {
			if _, err := adapter.Call(ctx, lm, sig, ds, vals, adapter.NoRetry()); err != nil {
				b.Fatal(err)
			}
		}
	})
}
