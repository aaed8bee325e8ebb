package reply

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/sigwire/adapter/signature"
)

// linearOutputIndex and linearIsInput are outputIndex's and isInput's
// rule written out name by name: the index must give what they give.
func linearOutputIndex(sig *signature.Signature, name string) int {
	for i := range sig.NumOutputs() {
		if sig.OutputName(i) == name {
			return i
		}
	}
	if strings.EqualFold(name, "completed") {
		return completedField
	}
	found := otherField
	for i := range sig.NumOutputs() {
		if strings.EqualFold(sig.OutputName(i), name) {
			if found != otherField {
				return otherField
			}
			found = i
		}
	}
	return found
}

func linearIsInput(sig *signature.Signature, name string) bool {
	for i := range sig.NumInputs() {
		if strings.EqualFold(sig.InputName(i), name) {
			return true
		}
	}
	return false
}

// TestNameIndexAgrees: over generated signatures (below and above
// indexFrom fields, names alike but for case, names that are not ASCII)
// and generated names (each field's name in other cases, with Unicode
// letters that fold to ASCII ones, "completed", unknown names),
// outputIndex and isInput give what comparing name by name gives.
func TestNameIndexAgrees(t *testing.T) {
	rng := rand.New(rand.NewPCG(32, 1))
	pieces := []string{"a", "s", "k", "answer", "Answer", "score", "x_", "completed", "ſ", "K", "é"}
	ascii := 8 // pieces[:ascii] are ASCII
	foreignNames := false
	gen := func() string {
		n := ascii
		if foreignNames {
			n = len(pieces)
		}
		var b strings.Builder
		for range 1 + rng.IntN(3) {
			b.WriteString(pieces[rng.IntN(n)])
		}
		return b.String()
	}
	variants := func(s string) []string {
		return []string{s, strings.ToUpper(s), strings.ToLower(s), strings.ReplaceAll(s, "s", "ſ"), strings.ReplaceAll(s, "k", "K"), s + "_", "COMPLETED", "Completed"}
	}
	big, foreign := 0, 0
	for round := range 300 {
		foreignNames = round%2 == 0
		var ins, outs []signature.Field
		seen := map[string]bool{}
		size := 2 + rng.IntN(3*indexFrom)
		for len(ins)+len(outs) < size {
			name := fmt.Sprintf("%s%d", gen(), rng.IntN(3))
			if rng.IntN(4) == 0 {
				name = gen()
			}
			if seen[name] {
				continue
			}
			seen[name] = true
			if rng.IntN(3) == 0 && len(ins) < 2*indexFrom {
				ins = append(ins, signature.Field{Name: name})
			} else {
				outs = append(outs, signature.Field{Name: name})
			}
		}
		if len(ins) == 0 || len(outs) == 0 {
			continue
		}
		sig, err := signature.New("", ins, outs)
		if err != nil {
			continue // a name the signature refuses
		}
		if len(outs) >= indexFrom {
			big++
			if indexOf(sig).folded == nil {
				foreign++
			}
		}
		var names []string
		for _, f := range append(ins, outs...) {
			names = append(names, variants(f.Name)...)
		}
		names = append(names, gen(), gen(), "", "completed")
		for _, name := range names {
			if got, want := outputIndex(sig, name), linearOutputIndex(sig, name); got != want {
				t.Fatalf("round %d, %d outputs: outputIndex(%q) = %d, want %d", round, len(outs), name, got, want)
			}
			if got, want := isInput(sig, name), linearIsInput(sig, name); got != want {
				t.Fatalf("round %d, %d inputs: isInput(%q) = %v, want %v", round, len(ins), name, got, want)
			}
		}
	}
	if big < 50 || foreign == 0 || foreign == big {
		t.Fatalf("the generator made %d indexed signatures, %d of them with names that are not ASCII", big, foreign)
	}
}
