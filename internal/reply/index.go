package reply

import (
	"strings"

	"github.com/sigwire/adapter/signature"
)

// indexFrom is the number of outputs from which outputIndex looks names up
// in the signature's nameIndex instead of comparing them one by one: below
// it, the comparisons cost less than a memo and a map lookup, and above it a
// reply's markers (one per field) would cost quadratic time.
const indexFrom = 16

// indexKey is the signature.Memo key of a signature's nameIndex.
type indexKey struct{}

// nameIndex is outputIndex's and isInput's rule as maps, built once per
// signature.
type nameIndex struct {
	exact  map[string]int  // output name → index
	folded map[string]int  // lower-case output name → index, otherField for two alike; nil unless every name is ASCII
	inputs map[string]bool // lower-case input names; nil unless every name is ASCII
}

// indexOf returns sig's nameIndex, building it once.
func indexOf(sig *signature.Signature) *nameIndex {
	return sig.Memo(indexKey{}, func() any {
		x := &nameIndex{exact: make(map[string]int, sig.NumOutputs()), folded: make(map[string]int, sig.NumOutputs())}
		for i := range sig.NumOutputs() {
			name := sig.OutputName(i)
			if _, dup := x.exact[name]; !dup {
				x.exact[name] = i
			}
			if !isASCII(name) {
				x.folded = nil
				continue
			}
			if x.folded != nil {
				low := strings.ToLower(name)
				if _, two := x.folded[low]; two {
					x.folded[low] = otherField
				} else {
					x.folded[low] = i
				}
			}
		}
		x.inputs = make(map[string]bool, sig.NumInputs())
		for i := range sig.NumInputs() {
			name := sig.InputName(i)
			if !isASCII(name) {
				x.inputs = nil
				break
			}
			x.inputs[strings.ToLower(name)] = true
		}
		return x
	}).(*nameIndex)
}

// output is outputIndex(sig, name) for sig's index x; ok is false when
// the maps cannot tell (a name that is not ASCII, whose case folding
// strings.EqualFold knows and ASCII lower case does not, or the
// completed marker), and the caller compares the names one by one.
func (x *nameIndex) output(name string) (_ int, ok bool) {
	if i, found := x.exact[name]; found {
		return i, true
	}
	if x.folded == nil || !isASCII(name) || strings.EqualFold(name, "completed") {
		return 0, false
	}
	var buf [64]byte
	i, found := x.folded[string(lowerASCII(buf[:0], name))]
	if !found {
		return otherField, true
	}
	return i, true
}

// input is isInput(sig, name) for sig's index x; ok is false when the
// map cannot tell (see output).
func (x *nameIndex) input(name string) (is, ok bool) {
	if x.inputs == nil || !isASCII(name) {
		return false, false
	}
	var buf [64]byte
	return x.inputs[string(lowerASCII(buf[:0], name))], true
}

func isASCII(s string) bool {
	for i := range len(s) {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// lowerASCII appends s in ASCII lower case to b.
func lowerASCII(b []byte, s string) []byte {
	for i := range len(s) {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		b = append(b, c)
	}
	return b
}
