package predict

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/sigwire/adapter/signature"
)

// FieldMismatchError is Load's error for a saved predictor whose fields
// are not the signature's: another number of fields, or names the saved
// state shows to differ (see Module.Load). Loading it by position would
// give one field's texts to another and leave the demos' values out.
type FieldMismatchError struct {
	// Predictor is the saved predictor's name.
	Predictor string
	// Saved lists the saved fields' names in order (inputs, then outputs),
	// as far as the saved state shows them; "" where it does not.
	Saved []string
	// Fields lists the signature's fields in order.
	Fields []string
	// DemoKeys lists, sorted, the demos' keys that name no field of the
	// signature: the values loading by position would leave out.
	DemoKeys []string

	fromDemos bool // the demos show the mismatch, not the saved names
}

// Error lists the saved names ("?" where the saved state does not show
// one) and the signature's, and says how to load the program.
func (e *FieldMismatchError) Error() string {
	saved := make([]string, len(e.Saved))
	for i, s := range e.Saved {
		saved[i] = cmp.Or(s, "?")
	}
	if len(e.Saved) != len(e.Fields) {
		return fmt.Sprintf("predict: predictor %q was saved with %d fields (%s); the signature has %d (%s)",
			e.Predictor, len(e.Saved), strings.Join(saved, ", "), len(e.Fields), strings.Join(e.Fields, ", "))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "predict: predictor %q was saved with the fields %s; the signature has %s",
		e.Predictor, strings.Join(saved, ", "), strings.Join(e.Fields, ", "))
	if e.fromDemos && len(e.DemoKeys) > 0 {
		verb := "name"
		if len(e.DemoKeys) == 1 {
			verb = "names"
		}
		fmt.Fprintf(&b, ": its demos hold %s, which %s no field", strings.Join(e.DemoKeys, ", "), verb)
	}
	b.WriteString(": name the fields as saved (Go: the json tags), or load with predict.WithFieldsByPosition() to apply the saved texts by position as DSPy does")
	if len(e.DemoKeys) > 0 {
		fmt.Fprintf(&b, " (the demos' %s are then left out)", strings.Join(e.DemoKeys, ", "))
	}
	return b.String()
}

// exampleKeys are the keys DSPy itself adds to a demo: the flag of a demo
// it traced, and a training example's bookkeeping.
var exampleKeys = []string{"augmented", "dspy_uuid", "dspy_split"}

// checkFieldNames compares the saved predictor's fields with sig's. The
// saved state shows a field's name through:
//
//   - its description, when it is DSPy's default "${name}";
//   - its prefix, when it is the one DSPy derives from a name
//     (signature.InferPrefix: "News Article:" from news_article) that the
//     signature or the demos hold;
//   - the demos DSPy traced ("augmented": true), which hold exactly the
//     predictor's fields: a key of theirs that names no field is a field
//     saved under another name;
//   - labeled demos (training examples) none of which keeps any key, where
//     a field's name is shown by nothing else.
//
// It returns what it found, and whether Load refuses: another number of
// fields whatever the option; names that differ unless WithFieldsByPosition.
func checkFieldNames(name string, sp SavedPredictor, sig *signature.Signature, cfg loadConfig) (*FieldMismatchError, bool) {
	fields := make([]string, 0, sig.NumInputs()+sig.NumOutputs())
	for _, f := range slices.Concat(sig.Inputs(), sig.Outputs()) {
		fields = append(fields, f.Name)
	}
	var foreign, candidates []string
	candidates = append(candidates, fields...)
	bootstrapForeign := false
	keptAny, anyKeys := false, false
	for _, d := range sp.Demos {
		augmented := isAugmented(d["augmented"])
		for k := range d {
			if slices.Contains(exampleKeys, k) {
				continue
			}
			anyKeys = true
			if slices.Contains(fields, k) {
				keptAny = true
				continue
			}
			bootstrapForeign = bootstrapForeign || augmented
			if !slices.Contains(foreign, k) {
				foreign = append(foreign, k)
				candidates = append(candidates, k)
			}
		}
	}
	slices.Sort(foreign)
	saved := make([]string, len(sp.Signature.Fields))
	same := len(saved) == len(fields)
	for i, fs := range sp.Signature.Fields {
		own := ""
		if same {
			own = fields[i]
		}
		saved[i] = savedFieldName(fs, own, candidates)
	}
	mismatch := &FieldMismatchError{Predictor: name, Saved: saved, Fields: fields, DemoKeys: foreign}
	if !same {
		return mismatch, true
	}
	unknown, differ := false, false
	for i, s := range saved {
		differ = differ || s != "" && s != fields[i]
		unknown = unknown || s == ""
	}
	fromDemos := bootstrapForeign || unknown && anyKeys && !keptAny
	mismatch.fromDemos = fromDemos && !differ
	return mismatch, (differ || fromDemos) && !cfg.byPosition
}

// isAugmented reports a demo's "augmented": true.
func isAugmented(raw []byte) bool {
	return strings.TrimSpace(string(raw)) == "true"
}

// savedFieldName returns the name a saved field's texts show: the name in
// DSPy's default description "${name}", or the name among candidates
// (own first) whose derived prefix is the saved prefix; "" when neither
// shows one.
func savedFieldName(fs signature.FieldState, own string, candidates []string) string {
	if inner, ok := strings.CutPrefix(fs.Description, "${"); ok {
		if inner, ok = strings.CutSuffix(inner, "}"); ok && isIdentifier(inner) {
			return inner
		}
	}
	if own != "" && fs.Prefix == signature.InferPrefix(own)+":" {
		return own
	}
	for _, c := range candidates {
		if c != own && fs.Prefix == signature.InferPrefix(c)+":" {
			return c
		}
	}
	return ""
}

// isIdentifier reports a Python identifier: a letter or '_', then letters,
// digits and '_'.
func isIdentifier(s string) bool {
	for i, r := range s {
		if !(r == '_' || unicode.IsLetter(r) || i > 0 && unicode.IsDigit(r)) {
			return false
		}
	}
	return s != ""
}

// positionalRenames describes, for Ignored, the fields that took the texts
// of a field saved under another name.
func positionalRenames(m *FieldMismatchError) string {
	var renames []string
	for i, s := range m.Saved {
		if s != "" && s != m.Fields[i] {
			renames = append(renames, s+" as "+m.Fields[i])
		}
	}
	if len(renames) == 0 {
		return ""
	}
	return "fields: loaded by position (WithFieldsByPosition): " + strings.Join(renames, ", ")
}
