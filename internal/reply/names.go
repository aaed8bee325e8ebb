package reply

import (
	"strings"

	"github.com/sigwire/adapter/signature"
)

// Name kinds besides an output index.
const (
	Other     = -1 // an input field or an unknown name
	Completed = -2 // the "completed" marker: the end of the reply
)

// OutputIndex maps a marker name, tag or key to an output index: the exact
// name first, then "completed", then a unique case-insensitive match; else
// Other.
func OutputIndex(sig *signature.Signature, name string) int {
	n := sig.NumOutputs()
	for i := range n {
		if sig.OutputName(i) == name {
			return i
		}
	}
	if strings.EqualFold(name, "completed") {
		return Completed
	}
	found := Other
	for i := range n {
		if strings.EqualFold(sig.OutputName(i), name) {
			if found != Other {
				return Other
			}
			found = i
		}
	}
	return found
}

// IsInput reports whether name names an input field (case-insensitively).
func IsInput(sig *signature.Signature, name string) bool {
	for i := range sig.NumInputs() {
		if strings.EqualFold(sig.Input(i).Name, name) {
			return true
		}
	}
	return false
}

// normName folds a name for rename matching: lower case, without '_', '-'
// and spaces.
func normName(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '_' || c == '-' || c == ' ':
			continue
		case c >= 'A' && c <= 'Z':
			c += 'a' - 'A'
		}
		b.WriteByte(c)
	}
	return b.String()
}

// minRename is the shortest folded name that counts as a rename of
// another (shorter names match too much).
const minRename = 3

// renamed reports whether a name the model wrote is a rename of a field:
// once folded, one is a prefix or a suffix of the other ("tool_name" for
// "next_tool_name", "answer1" for "answer", "reason" for "reasoning").
func renamed(written, field string) bool {
	a, b := normName(written), normName(field)
	if len(a) > len(b) {
		a, b = b, a
	}
	return len(a) >= minRename && (strings.HasPrefix(b, a) || strings.HasSuffix(b, a))
}

// RenameTarget returns the output a left-over name stands for: when
// exactly one required output is missing and exactly one of the left-over
// names is a rename of it (see renamed). missing is the index of the
// missing output, or -1 when none or several are missing.
func RenameTarget(sig *signature.Signature, missing int, leftover []string) (string, bool) {
	if missing < 0 {
		return "", false
	}
	f := sig.Output(missing)
	found := ""
	for _, k := range leftover {
		if !renamed(k, f.Name) {
			continue
		}
		if found != "" && found != k {
			return "", false
		}
		found = k
	}
	return found, found != ""
}
