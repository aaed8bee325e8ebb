package reply

import (
	"slices"
	"strings"

	"github.com/sigwire/adapter/signature"
)

// Name kinds besides an output index (Mark.Field).
const (
	otherField     = -1 // an input field or an unknown name
	completedField = -2 // the "completed" marker: the end of the reply
)

// outputIndex maps a marker name, tag or key to an output index: the exact
// name first, then "completed", then a unique case-insensitive match; else
// otherField.
func outputIndex(sig *signature.Signature, name string) int {
	n := sig.NumOutputs()
	if n >= indexFrom {
		if i, ok := indexOf(sig).output(name); ok {
			return i
		}
	}
	for i := range n {
		if sig.OutputName(i) == name {
			return i
		}
	}
	if strings.EqualFold(name, "completed") {
		return completedField
	}
	found := otherField
	for i := range n {
		if strings.EqualFold(sig.OutputName(i), name) {
			if found != otherField {
				return otherField
			}
			found = i
		}
	}
	return found
}

// isInput reports whether name names an input field (case-insensitively).
func isInput(sig *signature.Signature, name string) bool {
	if sig.NumInputs() >= indexFrom {
		if is, ok := indexOf(sig).input(name); ok {
			return is
		}
	}
	for i := range sig.NumInputs() {
		if strings.EqualFold(sig.Input(i).Name, name) {
			return true
		}
	}
	return false
}

// nameWords splits a name into lower-case words at '_', '-', spaces and
// camelCase boundaries ("nextToolName" and "next_tool_name" are both
// next, tool, name).
func nameWords(s string) []string {
	var words []string
	start := -1
	for i := 0; i <= len(s); i++ {
		boundary := i == len(s) || s[i] == '_' || s[i] == '-' || s[i] == ' '
		upper := !boundary && s[i] >= 'A' && s[i] <= 'Z'
		if (boundary || upper && i > 0 && s[i-1] >= 'a' && s[i-1] <= 'z') && start >= 0 {
			words = append(words, strings.ToLower(s[start:i]))
			start = -1
		}
		if !boundary && start < 0 {
			start = i
		}
	}
	return words
}

// minRename is the shortest name that counts as a rename of another by
// its letters (shorter ones match too much).
const minRename = 3

// renamed reports whether a name the model wrote is a rename of a field:
// the words of one are the first or last words of the other ("tool_name"
// for "next_tool_name", "answer" for "final_answer"), or its letters
// start the other's and make at least half of them ("answer1" for
// "answer", "reason" for "reasoning").
func renamed(written, field string) bool {
	a, b := nameWords(written), nameWords(field)
	if len(a) == 0 || len(b) == 0 {
		return false
	}
	if len(a) > len(b) {
		a, b = b, a
	}
	if slices.Equal(a, b[:len(a)]) || slices.Equal(a, b[len(b)-len(a):]) {
		return true
	}
	x, y := strings.Join(a, ""), strings.Join(b, "")
	if len(x) > len(y) {
		x, y = y, x
	}
	return len(x) >= minRename && 2*len(x) >= len(y) && strings.HasPrefix(y, x)
}

// renameTarget returns the output a left-over name stands for: when
// exactly one required output is missing and exactly one of the left-over
// names is a rename of it (see renamed). missing is the index of the
// missing output, or -1 when none or several are missing.
func renameTarget(sig *signature.Signature, missing int, leftover []string) (string, bool) {
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
