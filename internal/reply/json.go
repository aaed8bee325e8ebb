package reply

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/sigwire/adapter/internal/jsonx"
	"github.com/sigwire/adapter/internal/value"
	"github.com/sigwire/adapter/signature"
)

// jsonFound is what the JSON reader found in a reply.
type jsonFound struct {
	obj   map[string]any // the answer object (nil: none)
	whole bool           // the reply is that JSON value and nothing else
}

// errNotJSON: the reply holds no JSON value that reads as the answer.
var errNotJSON = errors.New("no JSON answer")

// readJSON finds the JSON answer in text: the whole text as JSON (strict,
// a double-encoded object, an object serialised under a wrapper key), or
// the objects in prose and code fences. Among several candidates it keeps
// the one that takes no judgement (see choose). A bare array is the
// answer of a signature whose one output takes it (see takesArray); a
// reply that is any other array is an error (see notAnObject).
func readJSON(sig *signature.Signature, text string, b *jsonx.Budget) (jsonFound, error) {
	t := strings.TrimSpace(text)
	if flat, ok := jsonx.DecodeFlat(t); ok {
		return jsonFound{obj: flat, whole: true}, nil
	}
	if v, err := jsonx.DecodePython(t); err == nil || isDuplicate(err) {
		if err != nil {
			return jsonFound{whole: true}, ambiguousKey(err)
		}
		obj, ok := answerObject(sig, v)
		if !ok {
			return jsonFound{whole: true}, notAnObject(sig, v)
		}
		return jsonFound{obj: obj, whole: true}, nil
	}
	if inner, ok := stringWrapped(t); ok {
		if obj, ok := decodeLoose(inner).(map[string]any); ok {
			return jsonFound{obj: obj, whole: true}, nil
		}
	}
	cands, err := candidates(sig, t, b)
	if err != nil {
		return jsonFound{whole: len(cands) == 1 && cands[0].whole}, err
	}
	c, err := choose(sig, t, cands)
	if err != nil {
		return jsonFound{}, err
	}
	return jsonFound{obj: c.obj, whole: c.whole}, nil
}

// answerObject returns the object a decoded reply answers with: the
// object itself (a JSON string holding an object is decoded: a
// double-encoded reply), or a bare array for a signature whose one output
// takes it (see takesArray).
func answerObject(sig *signature.Signature, v any) (map[string]any, bool) {
	v = undouble(v)
	switch x := v.(type) {
	case map[string]any:
		return x, true
	case []any:
		if sig.NumOutputs() == 1 && takesArray(sig.Output(0).Spec, x) {
			return map[string]any{sig.OutputName(0): x}, true
		}
	}
	return nil, false
}

// undouble decodes a JSON string that holds a JSON value (a double-encoded
// reply); any other value is returned as it is.
func undouble(v any) any {
	if s, ok := v.(string); ok {
		if inner, err := jsonx.Decode(strings.TrimSpace(s)); err == nil {
			return inner
		}
	}
	return v
}

// takesArray reports whether a field of type spec takes the array a as its
// value: a list (or an Optional one) always, so its items' errors name the
// field; a str never (a list is not text, though str() of it would be);
// any other type when a converts to it (Any, a union with a list member, a
// type that decodes JSON arrays itself).
func takesArray(spec *signature.TypeSpec, a []any) bool {
	switch spec.Kind() {
	case signature.KindList:
		return true
	case signature.KindOptional:
		return takesArray(spec.Elem(), a)
	case signature.KindString:
		return false
	}
	_, err := value.FromJSON(a, spec)
	return err == nil
}

// notAnObject is the error for a reply that is one JSON value, neither an
// object nor a value its one output takes: as in DSPy, such a reply does
// not answer (issue 30: ["Paris"] for answer: str is not the text
// `["Paris"]`). Any other value (a number, a string) is errNotJSON: the
// reply may still be read as text.
func notAnObject(sig *signature.Signature, v any) error {
	if _, arr := undouble(v).([]any); !arr {
		return errNotJSON
	}
	err := wrapf(value.ErrInvalid, "the reply is a JSON array, not an object holding the output fields")
	if sig.NumOutputs() == 1 {
		err = replyErr(0, fmt.Errorf("the reply is a JSON array, not an object holding the output field, and %s does not take an array: %w", value.WithArticle(sig.Output(0).Spec.String()), value.ErrInvalid))
	}
	return err
}

// candidate is one JSON value found in a reply.
type candidate struct {
	obj    map[string]any // after unwrapping, with at least one output key
	start  int            // the span's offset in the text
	end    int
	whole  bool // the span is all the text (apart from a fence)
	fenced bool
}

// maxCandidates bounds the JSON values compared.
const maxCandidates = 16

// candidates decodes the JSON spans of text (fenced blocks and balanced
// brackets in prose) and keeps those that answer: objects with an output
// key once wrappers are unwrapped, and a bare array for a single list
// output. A span the text ends inside is ErrTruncated when it starts the
// reply or names an output; a span that cannot be read at all might be
// the answer, so it stops the search with errNotJSON when it names an
// output.
func candidates(sig *signature.Signature, t string, b *jsonx.Budget) ([]candidate, error) {
	var out []candidate
	spans := jsonx.Spans(t, maxCandidates)
	for _, sp := range spans {
		if t[sp.Start] == '[' && opensMarker(sig, t, sp.Start) {
			continue // a field marker's bracket ("[[ ## completed ## ]]"): no JSON
		}
		whole := strings.TrimSpace(t[:sp.Start]) == "" && strings.TrimSpace(t[sp.End:]) == "" ||
			sp.Fenced && len(spans) == 1
		var v any
		var err error
		if !whole && !sp.Fenced && t[sp.Start] == '[' {
			// A bracket in prose ("[1]", "uses a [JOIN]") is an answer
			// only when it is a list as written, not once repaired.
			if v, err = jsonx.Decode(t[sp.Start:sp.End]); err != nil {
				continue
			}
		} else {
			v, err = decodeSpan(sig, t[sp.Start:sp.End], whole, b)
		}
		if err != nil {
			if errors.Is(err, errTruncated) && (whole || sp.Start == 0 || namesOutput(sig, t[sp.Start:sp.End])) {
				return []candidate{{whole: whole}}, err
			}
			if errors.Is(err, errAmbiguous) && namesOutput(sig, t[sp.Start:sp.End]) {
				return nil, err
			}
			if whole || namesOutput(sig, t[sp.Start:sp.End]) {
				// An object that cannot be read might be the answer; the
				// error says why (a repair limit, a bad number, …).
				return nil, wrapf(value.ErrInvalid, "the reply's JSON cannot be read: "+strings.TrimPrefix(err.Error(), "jsonx: "))
			}
			continue
		}
		obj, ok := answerObject(sig, v)
		if !ok {
			// A whole reply that is an array answers nothing; but text in
			// Chat's markers ("[[ ## completed ## ]]"), which repair would
			// turn into an array, is no JSON reply at all.
			if err := notAnObject(sig, v); whole && !errors.Is(err, errNotJSON) && !hasMarker(sig, t[sp.Start:sp.End]) {
				return nil, err
			}
			continue
		}
		if _, isArr := v.([]any); !isArr {
			obj = unwrap(sig, obj)
			if !matchesAnyOutput(sig, obj) && !whole {
				continue
			}
		} else if !whole && !sp.Fenced && !arrayAnswers(sig, v.([]any)) {
			continue
		}
		out = append(out, candidate{obj: obj, start: sp.Start, end: sp.End, whole: whole, fenced: sp.Fenced})
	}
	return out, nil
}

// arrayAnswers reports whether a bare array in prose looks like the list
// answer rather than a citation ("[1]"): it is not a single number.
func arrayAnswers(sig *signature.Signature, a []any) bool {
	if len(a) == 1 {
		if _, num := a[0].(json.Number); num {
			return false
		}
	}
	return true
}

// namesOutput reports whether a span quotes an output's name as a key.
func namesOutput(sig *signature.Signature, span string) bool {
	for i := range sig.NumOutputs() {
		name := sig.OutputName(i)
		for _, q := range [...]string{`"`, `'`} {
			if k := strings.Index(span, q+name+q); k >= 0 {
				rest := strings.TrimLeft(span[k+len(name)+2:], " \t\r\n")
				if strings.HasPrefix(rest, ":") {
					return true
				}
			}
		}
	}
	return false
}

// choose picks the answer among the candidates when that takes no
// judgement: the only one; one that holds every other's output values
// (a partial draft, then the complete answer); the same object repeated;
// or the last one when the text before it corrects what came earlier
// ("Correction:", "Actually, …", "I made a mistake", "Final answer:").
// Two candidates that disagree otherwise are ErrAmbiguous.
func choose(sig *signature.Signature, t string, cands []candidate) (candidate, error) {
	switch len(cands) {
	case 0:
		return candidate{}, errNotJSON
	case 1:
		return cands[0], nil
	}
	for _, c := range cands {
		if holdsAll(sig, c.obj, cands) {
			return c, nil
		}
	}
	last := cands[len(cands)-1]
	prev := cands[len(cands)-2]
	if correctionRE.MatchString(t[prev.end:last.start]) {
		return last, nil
	}
	return candidate{}, wrapf(errAmbiguous, "the reply holds two different JSON objects")
}

// correctionRE matches text that replaces an earlier answer with the next
// one.
var correctionRE = regexp.MustCompile(`(?i)\b(correct(ion|ed|ing)?|revis(ed|ion)|updated|amended|fixed|mistake|erratum|actually|instead|final (answer|version|object|json|output|result)|scratch that|disregard|ignore (the|that|my) (above|previous|earlier))\b|\bfinal\s*:`)

// holdsAll reports whether big has every output key of each candidate with
// an equal value.
func holdsAll(sig *signature.Signature, big map[string]any, cands []candidate) bool {
	for _, c := range cands {
		for k, v := range c.obj {
			if outputIndex(sig, k) < 0 {
				continue
			}
			w, ok := big[k]
			if !ok || !jsonx.Equal(v, w) {
				return false
			}
		}
	}
	return true
}

// wrapperDepth bounds how many wrapper objects are unwrapped.
const wrapperDepth = 3

// wrapped returns what a wrapper object holds: the value of its only key
// ({"json": {...}}, {"function": {...}}), or the arguments of a tool-call
// envelope ({"name": "respond", "arguments": {...}}).
func wrapped(obj map[string]any) (any, bool) {
	if len(obj) == 1 {
		for _, v := range obj {
			return v, true
		}
	}
	if _, named := obj["name"].(string); !named || len(obj) > 4 {
		return nil, false
	}
	var args any
	found := 0
	for _, k := range [...]string{"arguments", "parameters", "args", "input"} {
		if v, ok := obj[k]; ok {
			args = v
			found++
		}
	}
	return args, found == 1
}

// unwrap returns the object inside wrapper objects (see wrapped) when obj
// itself has no output key.
func unwrap(sig *signature.Signature, obj map[string]any) map[string]any {
	for range wrapperDepth {
		if matchesAnyOutput(sig, obj) {
			break
		}
		v, ok := wrapped(obj)
		if !ok {
			break
		}
		if str, ok := v.(string); ok {
			// A stringified object under a wrapper key.
			v = decodeLoose(str)
		}
		inner, ok := v.(map[string]any)
		if !ok {
			break
		}
		obj = inner
	}
	return obj
}

// decodeLoose decodes a JSON object serialised into a string, strictly,
// else from the span found in it; nil when it holds none.
func decodeLoose(s string) any {
	t := strings.TrimSpace(s)
	if v, err := jsonx.Decode(t); err == nil {
		return v
	}
	if inner, ok := stringWrapped(t); ok {
		if v, err := jsonx.Decode(inner); err == nil {
			return v
		}
	}
	if span, _, ok := jsonx.Extract(t); ok {
		if v, err := jsonx.Decode(span); err == nil {
			return v
		}
	}
	return nil
}

func matchesAnyOutput(sig *signature.Signature, obj map[string]any) bool {
	for k := range obj {
		if outputIndex(sig, k) >= 0 {
			return true
		}
	}
	return false
}

// members files an answer object's members under the outputs they name:
// exact names, then a unique case-insensitive match, then one left-over
// key that is a rename of the one missing output. Without the exact name,
// case variants that give different values ({"Answer": "a", "ANSWER":
// "b"}) are ErrAmbiguous, the error of the first such output.
func members(sig *signature.Signature, obj map[string]any, fields []Field) error {
	var clashes []int // outputs whose case variants disagree
	for k, v := range obj {
		i := outputIndex(sig, k)
		if i < 0 {
			continue
		}
		f := &fields[i]
		if f.Source == Member {
			name := sig.OutputName(i)
			if f.Text == name {
				continue // the exact name wins over a case variant
			}
			if k != name {
				if !jsonx.Equal(f.Value, v) {
					clashes = append(clashes, i)
				}
				continue
			}
		}
		*f = Field{Source: Member, Text: k, Value: v}
	}
	slices.Sort(clashes)
	for _, i := range clashes {
		if fields[i].Text != sig.OutputName(i) {
			return &Error{Field: i, Err: wrapf(errAmbiguous, "keys that differ only in case name the field, with different values")}
		}
	}
	liftMisplaced(sig, fields)
	missing := onlyMissing(sig, fields)
	if missing < 0 {
		return nil
	}
	var left []string
	for k := range obj {
		if outputIndex(sig, k) < 0 {
			left = append(left, k)
		}
	}
	if len(left) != 1 {
		return nil // which left-over key is the field, the reply does not say
	}
	if k, ok := renameTarget(sig, missing, left); ok {
		fields[missing] = Field{Source: Member, Text: k, Value: obj[k]}
	}
	return nil
}

// liftMisplaced reads a missing output from inside another output's
// struct value, when the struct has no member of that name: the model
// forgot the struct's closing brace and the outputs after it landed
// inside ({"person": {"name": "Ada", "notes": "…"}).
func liftMisplaced(sig *signature.Signature, fields []Field) {
	for m := range fields {
		if fields[m].Source != Missing {
			continue
		}
		name := sig.OutputName(m)
		for i := range fields {
			obj, ok := fields[i].Value.(map[string]any)
			if fields[i].Source != Member || !ok {
				continue
			}
			spec := sig.Output(i).Spec
			if spec.Kind() == signature.KindOptional {
				spec = spec.Elem()
			}
			if spec.Kind() != signature.KindStruct || structHas(spec, name) {
				continue
			}
			if v, ok := obj[name]; ok {
				fields[m] = Field{Source: Member, Text: name, Value: v}
				delete(obj, name)
				break
			}
		}
	}
}

func structHas(spec *signature.TypeSpec, name string) bool {
	fs, err := spec.Fields()
	if err != nil {
		return true
	}
	for _, f := range fs {
		if strings.EqualFold(f.Field.Name, name) {
			return true
		}
	}
	return false
}

// onlyMissing returns the one output not found and without a default, or
// -1 when none or several are missing.
func onlyMissing(sig *signature.Signature, fields []Field) int {
	missing := -1
	for i := range fields {
		if fields[i].Source != Missing {
			continue
		}
		if missing >= 0 {
			return -1
		}
		missing = i
	}
	if missing >= 0 && sig.Output(missing).HasDefault {
		return -1
	}
	return missing
}

// isDuplicate reports a *jsonx.DuplicateKeyError.
func isDuplicate(err error) bool {
	var dk *jsonx.DuplicateKeyError
	return errors.As(err, &dk)
}

// ambiguousKey makes a repeated key with two values an ErrAmbiguous error.
func ambiguousKey(err error) error {
	if isDuplicate(err) {
		return wrapf(errAmbiguous, err.Error())
	}
	return err
}

// decodeSpan decodes an extracted span: strictly; then with bare-word
// values read as text (an unquoted, possibly multi-line string the
// repairer would mangle); then with the one missing closing bracket
// supplied; then repaired. A span cut off mid-value is ErrTruncated,
// except a trailing comma after members that give every output (the
// model stopped after a complete answer).
func decodeSpan(sig *signature.Signature, span string, whole bool, b *jsonx.Budget) (any, error) {
	if v, err := jsonx.Decode(span); err == nil || isDuplicate(err) {
		return v, ambiguousKey(err)
	}
	if obj, ok := bareWordMembers(sig, span); ok {
		return obj, nil
	}
	if fixed, ok := jsonx.CloseOne(span); ok {
		if v, err := jsonx.Decode(fixed); err == nil || isDuplicate(err) {
			return v, ambiguousKey(err)
		}
		if rep, info, err := b.Repair(fixed); err == nil && !info.Truncated {
			if v, err := jsonx.Decode(rep); err == nil || isDuplicate(err) {
				return v, ambiguousKey(err)
			}
		}
	}
	fixed, info, err := b.Repair(span)
	if info.Truncated {
		if v, ok := completeBeforeComma(sig, span, b); ok {
			return v, nil
		}
		return nil, errTruncated
	}
	if err != nil {
		return nil, err
	}
	v, err := jsonx.Decode(fixed)
	return v, ambiguousKey(err)
}

// completeBeforeComma reads a span that ends in a comma after complete
// members ({"answer": "Paris", "n": 1,) when those members give every
// output.
func completeBeforeComma(sig *signature.Signature, span string, b *jsonx.Budget) (any, bool) {
	t := strings.TrimRight(span, " \t\r\n")
	if !strings.HasSuffix(t, ",") {
		return nil, false
	}
	fixed, info, err := b.Repair(t[:len(t)-1])
	if err != nil || info.Truncated {
		return nil, false
	}
	v, err := jsonx.Decode(fixed)
	obj, ok := v.(map[string]any)
	if err != nil || !ok {
		return nil, false
	}
	obj = unwrap(sig, obj)
	for i := range sig.NumOutputs() {
		if _, ok := lookupOutput(obj, sig.OutputName(i)); !ok {
			return nil, false
		}
	}
	return obj, true
}

func lookupOutput(obj map[string]any, name string) (any, bool) {
	if v, ok := obj[name]; ok {
		return v, true
	}
	for k, v := range obj {
		if strings.EqualFold(k, name) {
			return v, true
		}
	}
	return nil, false
}

// keyRE finds a quoted key followed by ':' (the start of a member).
var keyRE = regexp.MustCompile(`["']([A-Za-z_][A-Za-z0-9_ -]{0,63})["']\s*:`)

// bareWordMembers reads an object whose members are found by their
// output keys and some value is bare text ({"answer": Paris is the
// capital,\n "n": 1}): each value runs to the next output key (or the
// closing brace) and is read as JSON when it is JSON, else as its text.
// It applies only when some output's value starts with a bare word, and
// every key found names an output.
func bareWordMembers(sig *signature.Signature, span string) (map[string]any, bool) {
	t := strings.TrimSpace(span)
	if len(t) < 2 || t[0] != '{' || !hasBareValue(t) {
		return nil, false
	}
	locs := keyRE.FindAllStringSubmatchIndex(t, 2*sig.NumOutputs()+8)
	type member struct {
		field      int
		start, end int // value text
	}
	var ms []member
	for _, l := range locs {
		i := outputIndex(sig, t[l[2]:l[3]])
		if i < 0 {
			continue
		}
		if n := len(ms); n > 0 {
			ms[n-1].end = l[0]
		}
		ms = append(ms, member{field: i, start: l[1], end: len(t)})
	}
	if len(ms) == 0 {
		return nil, false
	}
	bare := false
	obj := make(map[string]any, len(ms))
	for k, m := range ms {
		raw := strings.TrimSpace(t[m.start:m.end])
		if k == len(ms)-1 {
			raw = strings.TrimSpace(strings.TrimSuffix(raw, "}"))
		}
		raw = strings.TrimSpace(strings.TrimSuffix(raw, ","))
		if raw == "" {
			return nil, false
		}
		name := sig.OutputName(m.field)
		if _, dup := obj[name]; dup {
			return nil, false
		}
		if v, err := jsonx.Decode(raw); err == nil {
			obj[name] = v
			continue
		}
		if !startsBareWord(raw) {
			return nil, false // a broken JSON value: the repairer's job
		}
		bare = true
		obj[name] = raw
	}
	return obj, bare
}

// hasBareValue reports a ':' followed (after blanks) by a bare word: the
// cheap test before looking for members.
func hasBareValue(t string) bool {
	for i := 0; i < len(t); {
		j := strings.IndexByte(t[i:], ':')
		if j < 0 {
			return false
		}
		k := i + j + 1
		for k < len(t) && (t[k] == ' ' || t[k] == '\t' || t[k] == '\n' || t[k] == '\r') {
			k++
		}
		if k < len(t) && startsBareWord(t[k:]) {
			return true
		}
		i = k
	}
	return false
}

// startsBareWord reports text that no JSON or Python value starts like:
// a letter that does not begin true/false/null/True/False/None.
func startsBareWord(s string) bool {
	r, _ := utf8.DecodeRuneInString(s)
	if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r > 0x7f) {
		return false
	}
	for _, lit := range [...]string{"true", "false", "null", "True", "False", "None"} {
		if rest, ok := strings.CutPrefix(s, lit); ok && (rest == "" || !isWordByte(rest[0])) {
			return false
		}
	}
	return true
}

// stringWrapped recognises {"key": "{...}"} whose string holds a JSON
// object with unescaped quotes (models serialise the answer into a string
// under a wrapper key), and returns the object's text.
func stringWrapped(t string) (string, bool) {
	if !strings.HasPrefix(t, "{") || !strings.HasSuffix(t, "}") {
		return "", false
	}
	body := strings.TrimSpace(t[1 : len(t)-1])
	if len(body) < 2 || body[0] != '"' {
		return "", false
	}
	end := strings.IndexByte(body[1:], '"')
	if end < 0 {
		return "", false
	}
	rest := strings.TrimSpace(body[end+2:])
	rest, ok := strings.CutPrefix(rest, ":")
	if !ok {
		return "", false
	}
	rest = strings.TrimSpace(rest)
	if len(rest) < 3 || rest[0] != '"' || rest[len(rest)-1] != '"' || (rest[1] != '{' && rest[1] != '[') {
		return "", false
	}
	inner := rest[1 : len(rest)-1]
	return strings.NewReplacer(`\n`, "\n", `\t`, "\t", `\r`, "\r", `\"`, `"`, `\\`, `\`).Replace(inner), true
}

// opensMarker reports whether the bracket s[i] opens a field marker (of
// any name, "completed" too): what the marker reader takes for a marker
// is never JSON, however a repair would read it ("[[ ##\tcompleted\t## ]]"
// is not an array, "[ ## answer ##" not a truncated one).
func opensMarker(sig *signature.Signature, s string, i int) bool {
	lim := min(len(s), i+markerBound(sig)+maxMarker) // a marker and its decoration
	m, ok := FindMarker(sig, s[:lim], i)
	return ok && m.Start == i
}

// hasMarker reports a Chat field marker anywhere in s.
func hasMarker(sig *signature.Signature, s string) bool {
	_, ok := FindMarker(sig, s, 0)
	return ok
}
