package reply

import (
	"testing"

	"github.com/sigwire/adapter/internal/jsonx"
)

// BenchmarkReadMarkers reads the reference workload's Chat reply (issue
// 32): the part of Chat's Parse that finds the fields' texts.
func BenchmarkReadMarkers(b *testing.B) {
	sig := mustSig(b, "question, context -> reasoning, answer")
	reply := "[[ ## reasoning ## ]]\nThe context states that water boils at 100 degrees Celsius at sea level.\n\n[[ ## answer ## ]]\n100 °C\n\n[[ ## completed ## ]]"
	fields := make([]Field, 2)
	b.SetBytes(int64(len(reply)))
	b.ReportAllocs()
	for b.Loop() {
		if err := Read(sig, reply, Markers, fields, new(jsonx.Budget)); err != nil {
			b.Fatal(err)
		}
	}
	if fields[1].Text != "100 °C" {
		b.Fatalf("answer %q", fields[1].Text)
	}
}
