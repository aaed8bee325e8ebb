package predict

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"reflect"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	openai "github.com/sashabaranov/go-openai"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/internal/pyjson"
	"github.com/sigwire/adapter/internal/value"
	"github.com/sigwire/adapter/signature"
	"github.com/sigwire/adapter/types"
)

// Program is a program DSPy saved with program.save("x.json"): the saved
// state of each predictor, by path ("predict", "generate_answer.predict",
// "react", "extract.predict", …; "self", FlatName, for a bare dspy.Predict
// saved on its own).
type Program struct {
	// Predictors holds each predictor's saved state by path.
	Predictors map[string]SavedPredictor
	// Skipped names the top-level members that are not predictor states,
	// which loading leaves alone as DSPy does: "metadata", a retriever's
	// {"k": 3}, dspy.Flex's "module_src".
	Skipped []string
	// DSPyVersion is the DSPy version metadata.dependency_versions names
	// ("" in files saved before DSPy 2.6, which have no metadata; a value
	// that is not a string, such as a number, as its JSON text). Load
	// reads it: a program of DSPy 3.5 or later loads only with
	// WithAnyDSPyVersion (see Module.Load).
	DSPyVersion string
}

// SavedPredictor is one predictor's saved state.
type SavedPredictor struct {
	// Demos are the demos as saved: field name → JSON value, plus DSPy's
	// "augmented" flag and whatever else the training examples carried.
	Demos []map[string]json.RawMessage `json:"demos"`
	// Signature is the saved instructions and field texts.
	Signature signature.State `json:"signature"`
	// ExtendedSignature is the state DSPy 2.5 saved for a ChainOfThought
	// (its reasoning field included), where MIPROv2 wrote the optimised
	// instructions. Load refuses a predictor that has one, as DSPy 2.6+
	// does: loading Signature alone would lose the optimisation.
	ExtendedSignature *signature.State `json:"extended_signature,omitempty"`
	// LM is the saved LM configuration, without the endpoint keys DSPy
	// drops from untrusted files (api_base, base_url, model_list) and
	// without api_key, in any spelling (API_BASE, Api-Key, apiKey, …) and
	// at any depth (inside nested objects and lists). Load does not apply
	// it; see Request.
	LM map[string]any `json:"lm"`

	noSignature bool // saved before DSPy 2.5: no signature state
}

// unsafeLMKeys are the LM keys DSPy drops unless the file is trusted, and
// the credential a saved file should never carry, as unsafeLMKey compares
// them: letters and digits only.
var unsafeLMKeys = []string{"apibase", "baseurl", "modellist", "apikey"}

// unsafeLMKey reports whether k is one of unsafeLMKeys in any spelling:
// any case (Unicode case folding, so "api_baſe" is api_base), with '_',
// '-', another separator or none ("API-KEY", "apiKey", "baseURL").
func unsafeLMKey(k string) bool {
	n := strings.Map(func(r rune) rune {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			return r
		}
		return -1
	}, k)
	for _, u := range unsafeLMKeys {
		if strings.EqualFold(n, u) {
			return true
		}
	}
	return false
}

// dropUnsafeLMKeys removes the unsafe keys from a decoded LM value at every
// depth: in nested objects and in the objects of lists.
func dropUnsafeLMKeys(v any) {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if unsafeLMKey(k) {
				delete(v, k)
				continue
			}
			dropUnsafeLMKeys(x)
		}
	case []any:
		for _, x := range v {
			dropUnsafeLMKeys(x)
		}
	}
}

// UnmarshalJSON reads a predictor's state, noting a state saved before
// DSPy 2.5 (no "signature" member) and dropping the unsafe LM keys.
func (sp *SavedPredictor) UnmarshalJSON(b []byte) error {
	type plain SavedPredictor
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(b, &keys); err != nil {
		return err
	}
	_, has := keys["signature"]
	p.noSignature = !has
	dropUnsafeLMKeys(p.LM)
	*sp = SavedPredictor(p)
	return nil
}

// isPredictorState reports whether a top-level member is a predictor's
// state: an object with demos or a signature (DSPy writes both since 2.5,
// demos alone before).
func isPredictorState(raw json.RawMessage) bool {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return false
	}
	_, demos := m["demos"]
	_, sig := m["signature"]
	return demos || sig
}

// FlatName is the name LoadProgram gives the one predictor of a bare
// dspy.Predict saved on its own (dspy.Predict(…).save(path) writes its
// state at the top level, not under a path): "self", DSPy's own name for
// it (named_predictors).
const FlatName = "self"

// predictorStateKeys are the members of a predictor's saved state.
var predictorStateKeys = []string{"traces", "train", "demos", "signature", "extended_signature", "lm"}

// isFlatState reports whether a saved program's top level is one
// predictor's state: demos as a list, or a signature state (instructions
// and fields), where a program with modules holds predictor states.
func isFlatState(raw map[string]json.RawMessage) bool {
	if d, ok := raw["demos"]; ok && bytes.HasPrefix(bytes.TrimSpace(d), []byte("[")) {
		return true
	}
	var sig map[string]json.RawMessage
	if json.Unmarshal(raw["signature"], &sig) != nil {
		return false
	}
	_, fields := sig["fields"]
	_, instructions := sig["instructions"]
	return fields || instructions
}

// LoadProgram reads a saved program. Top-level members that are not
// predictor states are listed in Skipped; the LM endpoint keys DSPy treats
// as unsafe are dropped. A malformed predictor state is an error naming it.
//
// A bare dspy.Predict saved on its own, whose state sits at the top level
// (as dspy.Predict(…).save(path) writes it and dspy.Predict(…).load(path)
// reads it), is a program of one predictor named FlatName ("self").
func LoadProgram(r io.Reader) (Program, error) {
	var raw map[string]json.RawMessage
	if err := json.NewDecoder(r).Decode(&raw); err != nil {
		return Program{}, fmt.Errorf("predict: saved program: %w", err)
	}
	prog := Program{Predictors: map[string]SavedPredictor{}}
	flat := isFlatState(raw)
	if flat {
		state := map[string]json.RawMessage{}
		for _, k := range predictorStateKeys {
			if v, ok := raw[k]; ok {
				state[k] = v
			}
		}
		b, err := json.Marshal(state)
		if err != nil {
			return Program{}, fmt.Errorf("predict: saved program: %w", err)
		}
		var sp SavedPredictor
		if err := json.Unmarshal(b, &sp); err != nil {
			return Program{}, fmt.Errorf("predict: saved program: the bare predictor's state: %w", err)
		}
		prog.Predictors[FlatName] = sp
	}
	for k, v := range raw {
		if k == "metadata" {
			var md struct {
				Versions struct {
					DSPy json.RawMessage `json:"dspy"`
				} `json:"dependency_versions"`
			}
			if json.Unmarshal(v, &md) == nil {
				prog.DSPyVersion = versionText(md.Versions.DSPy)
			}
		}
		if flat && slices.Contains(predictorStateKeys, k) {
			continue
		}
		if flat || k == "metadata" || !isPredictorState(v) {
			prog.Skipped = append(prog.Skipped, k)
			continue
		}
		var sp SavedPredictor
		if err := json.Unmarshal(v, &sp); err != nil {
			return Program{}, fmt.Errorf("predict: saved program: predictor %q: %w", k, err)
		}
		prog.Predictors[k] = sp
	}
	slices.Sort(prog.Skipped)
	return prog, nil
}

// versionText is a saved version's text: a string's value, "" for null or
// nothing, any other JSON value as written.
func versionText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	if t := string(bytes.TrimSpace(raw)); t != "null" {
		return t
	}
	return ""
}

// ReadProgram reads a saved program file.
func ReadProgram(path string) (Program, error) {
	f, err := os.Open(path)
	if err != nil {
		return Program{}, fmt.Errorf("predict: %w", err)
	}
	defer f.Close()
	return LoadProgram(f)
}

// Names lists the program's predictor paths, sorted.
func (p Program) Names() []string {
	names := make([]string, 0, len(p.Predictors))
	for k := range p.Predictors {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}

// Request returns the generation options of the saved LM as a request
// template for WithRequest: temperature (0 as adapter.ZeroTemperature),
// max_tokens, top_p, n, stop, seed and the penalties. The model is left
// out: DSPy saves LiteLLM's provider-prefixed name ("openai/gpt-4o-mini"),
// which an OpenAI-compatible endpoint does not know; LM["model"] has it.
//
// What a program file sets through Request is configuration: n and
// max_tokens multiply what every call costs. Apply it only to files you
// trust as you trust your code (your own optimiser's output), never to a
// file a user uploaded. Whatever the file says, each option stays within
// what a provider accepts, and an option outside it is left out: n from 1
// to adapter.MaxChoices (128), max_tokens from 1 to MaxSavedTokens,
// temperature 0 to 2, top_p 0 to 1, the penalties -2 to 2, at most 4 stop
// sequences.
func (sp SavedPredictor) Request() openai.ChatCompletionRequest {
	var req openai.ChatCompletionRequest
	num := func(k string, lo, hi float64) (float64, bool) {
		f, ok := sp.LM[k].(float64)
		return f, ok && f >= lo && f <= hi // NaN is in no range
	}
	whole := func(k string, lo, hi float64) (int, bool) {
		f, ok := num(k, lo, hi)
		return int(f), ok && f == math.Trunc(f)
	}
	if f, ok := num("temperature", 0, 2); ok {
		req.Temperature = float32(f)
		if f == 0 {
			req.Temperature = adapter.ZeroTemperature
		}
	}
	if f, ok := num("top_p", 0, 1); ok {
		req.TopP = float32(f)
	}
	if f, ok := num("presence_penalty", -2, 2); ok {
		req.PresencePenalty = float32(f)
	}
	if f, ok := num("frequency_penalty", -2, 2); ok {
		req.FrequencyPenalty = float32(f)
	}
	if n, ok := whole("max_tokens", 1, MaxSavedTokens); ok {
		req.MaxTokens = n
	}
	if n, ok := whole("n", 1, adapter.MaxChoices); ok {
		req.N = n
	}
	if n, ok := whole("seed", math.MinInt32, math.MaxInt32); ok {
		req.Seed = &n
	}
	switch s := sp.LM["stop"].(type) {
	case string:
		req.Stop = []string{s}
	case []any:
		for _, x := range s {
			if t, ok := x.(string); ok {
				req.Stop = append(req.Stop, t)
			}
		}
	}
	if len(req.Stop) > maxSavedStops {
		req.Stop = nil
	}
	return req
}

// MaxSavedTokens is the most max_tokens a saved program's LM settings may
// set through SavedPredictor.Request: 262 144, above every model's output
// limit today.
const MaxSavedTokens = 1 << 18

// maxSavedStops is OpenAI's bound on stop sequences.
const maxSavedStops = 4

// Load returns a copy of m with the saved predictor name's instructions,
// field prefixes and descriptions, and demos (augmented ones included), as
// DSPy's load_state does.
//
// As in DSPy, demo keys that name no field of m's signature (a training
// example's dspy_uuid, gold labels, another predictor's fields) are left
// out, and every demo value keeps its saved JSON: a list in a str field is
// shown as DSPy shows it, objects keep their key order. A custom-type
// value cut short when it was saved (DSPy's marker with no end marker,
// which SIMBA writes for a long demo value) stays that text in any field,
// as DSPy sends it. Ignored lists what was left out or kept as text.
//
// DSPy applies the saved texts to the fields by position, whatever their
// names. Load does so only where the names agree: a predictor whose saved
// state shows a field under another name is refused with a
// FieldMismatchError that lists the saved names, since loading it would
// give that field's texts to another and drop its demo values. The saved
// state shows a name through DSPy's default description ("${name}"), a
// prefix DSPy derived from a name the signature or the demos hold ("News
// Article:"), the keys of the demos DSPy traced ("augmented": true; they
// hold exactly the predictor's fields), or labeled demos none of which
// would keep a key. Where nothing shows a name, the texts go by position,
// as in DSPy. WithFieldsByPosition asks for DSPy's positional load whatever the
// names.
//
// Load also refuses a predictor with another number of fields, one saved
// before DSPy 2.5 (no signature state), and one saved by DSPy 2.5 with an
// extended_signature, whose optimised instructions DSPy 2.6+ cannot load
// either.
//
// Which DSPy saved the program (Program.DSPyVersion) decides the profile
// the module runs under (Result.Profile). A program of DSPy 3.4 or
// earlier, or with no version, loads as described, under DSPy 3.3.1's
// prompts ("dspy-3.3.1"); so does one whose version is not a version
// number, which Ignored notes. A program of DSPy 3.5 or later is a
// *VersionError (ErrDSPyVersion) unless WithAnyDSPyVersion is given, and
// then runs under "dspy-3.5" (see WithAnyDSPyVersion).
func (m *Module) Load(prog Program, name string, opts ...LoadOption) (*Module, error) {
	if err := m.zero(); err != nil {
		return nil, err
	}
	cfg := loadConfigOf(opts)
	prof, note, err := checkVersion(prog, m.kind, name, cfg)
	if err != nil {
		return nil, err
	}
	sp, ok := prog.Predictors[name]
	if !ok {
		has := strings.Join(prog.Names(), ", ")
		if _, flat := prog.Predictors[FlatName]; flat && len(prog.Predictors) == 1 {
			has += ": a bare Predict saved on its own"
		}
		return nil, fmt.Errorf("predict: saved program has no predictor %q (it has %s)", name, has)
	}
	if sp.noSignature {
		return nil, fmt.Errorf("predict: predictor %q was saved before DSPy 2.5 (no signature state): DSPy 2.6+ cannot load it either; re-save it with a current DSPy", name)
	}
	if sp.ExtendedSignature != nil {
		return nil, fmt.Errorf("predict: predictor %q was saved by DSPy 2.5 with an extended_signature, which holds the instructions it ran (the optimised ones); DSPy 2.6+ refuses to load it too: re-save it with a current DSPy", name)
	}
	if m.sig == nil {
		return nil, errors.New("predict: nil signature")
	}
	var ignored []string
	if note != "" {
		ignored = append(ignored, note)
	}
	mismatch, refuse := checkFieldNames(name, sp, m.sig, cfg)
	if refuse {
		return nil, mismatch
	}
	if line := positionalRenames(mismatch); line != "" {
		ignored = append(ignored, line)
	}
	sig, err := m.reasoningFor(prof)
	if err != nil {
		return nil, fmt.Errorf("predict: predictor %q: %w", name, err)
	}
	if sig, err = sig.WithState(sp.Signature); err != nil {
		return nil, fmt.Errorf("predict: predictor %q: %w", name, err)
	}
	demos := make([]adapter.Values, 0, len(sp.Demos))
	var asText []string
	for i, d := range sp.Demos {
		vals := adapter.Values{}
		var unknown []string
		for k, raw := range d {
			if k == "augmented" {
				continue
			}
			f, _, ok := sig.Field(k)
			if !ok {
				unknown = append(unknown, k)
				continue
			}
			v, cut, err := demoValue(raw, f)
			if err != nil {
				return nil, fmt.Errorf("predict: predictor %q: demo %d: field %q: %w", name, i+1, k, err)
			}
			if cut != "" {
				asText = append(asText, fmt.Sprintf("demo %d: field %q: %s", i+1, k, cut))
			}
			vals[k] = v
		}
		if len(unknown) > 0 {
			slices.Sort(unknown)
			ignored = append(ignored, fmt.Sprintf("demo %d: %s: not fields of the signature", i+1, strings.Join(quoteAll(unknown), ", ")))
		}
		slices.Sort(asText)
		ignored = append(ignored, asText...)
		asText = asText[:0]
		demos = append(demos, vals)
	}
	if len(sp.LM) > 0 {
		ignored = append(ignored, fmt.Sprintf("lm: the saved LM settings are not applied (model %s); pass SavedPredictor.Request() to WithRequest to use its options", pyjson.Repr(sp.LM["model"])))
	}
	c := *m
	c.sig, c.demos, c.ignored = sig, demos, ignored
	c.profile, c.defaultsOnly = prof, prof.options(m.defaults)
	return &c, nil
}

// reasoningFor returns m's signature with a ChainOfThought's reasoning
// typed as p says: types.Reasoning when p prefers native reasoning or the
// module was built with WithNativeReasoning, str otherwise.
func (m *Module) reasoningFor(p *profile) (*signature.Signature, error) {
	f, isOutput, ok := m.sig.Field("reasoning")
	if m.kind != "ChainOfThought" || !ok || !isOutput {
		return m.sig, nil
	}
	t := reflect.TypeFor[string]()
	if p.nativeReasoning || m.nativeReasoning {
		t = reflect.TypeFor[types.Reasoning]()
	}
	if f.Type == t {
		return m.sig, nil
	}
	return m.sig.Update("reasoning", func(f *signature.Field) { f.Type = t })
}

func quoteAll(s []string) []string {
	out := make([]string, len(s))
	for i, x := range s {
		out[i] = fmt.Sprintf("%q", x)
	}
	return out
}

// demoValue reads a saved demo value as DSPy holds it: the JSON value
// itself (objects in their saved key order, integers as int, other numbers
// as float64), which formatting renders exactly as DSPy renders a demo's
// raw value. Fields of struct or custom types (Image, a model) take their
// Go value instead, since only that can format them: a type that decodes
// JSON itself reads the saved text (its key order with it).
//
// A value that is exactly DSPy's custom-type marker — how DSPy saves a
// dspy.Image in a demo — is read as the Image it stands for (savedImage),
// in whatever field, as DSPy shows it: an image part in a user message.
//
// A value holding a custom-type marker that was cut short when it was
// saved (it starts with the start marker and has no end marker: SIMBA
// shortens long demo values so) keeps its saved JSON whatever the field's
// type, since no type can read it: DSPy, which holds demo values as saved,
// sends it as that text, and so does formatting here. cut then says so,
// for Module.Ignored; it is "" otherwise.
func demoValue(raw json.RawMessage, f signature.Field) (v any, cut string, err error) {
	if v, err = pyjson.Decode(raw); err != nil {
		return nil, "", err
	}
	v, images, err := savedImages(v, 0)
	if err != nil {
		return nil, "", err
	}
	if s, ok := cutMarker(v, 0); ok {
		return v, cutNote(s), nil
	}
	if v == nil || !needsGoValue(f.Spec, 0) {
		return v, "", nil
	}
	if img, ok := v.(types.Image); ok && f.Spec.GoType() == imageType {
		return img, "", nil
	}
	if images {
		// The Go value is read from the JSON with each image as
		// {"url": …}, which Image's UnmarshalJSON reads.
		if raw, err = pyjson.Marshal(v); err != nil {
			return nil, "", err
		}
	}
	if t := f.Spec.GoType(); t.Kind() != reflect.Pointer && t.Kind() != reflect.Interface && reflect.PointerTo(t).Implements(jsonUnmarshalerType) {
		p := reflect.New(t)
		if err := p.Interface().(json.Unmarshaler).UnmarshalJSON(raw); err == nil {
			return p.Elem().Interface(), "", nil
		}
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var plain any
	if err := dec.Decode(&plain); err != nil {
		return nil, "", err
	}
	v, err = value.FromJSON(plain, f.Spec)
	return v, "", err
}

// cutMarker finds, at any depth of a decoded demo value, a string that
// starts with DSPy's custom-type start marker and holds no end marker: a
// custom type's saved value cut short.
func cutMarker(v any, depth int) (string, bool) {
	if depth > 64 {
		return "", false
	}
	switch x := v.(type) {
	case string:
		if strings.HasPrefix(x, customTypeStart) && !strings.Contains(x, customTypeEnd) {
			return x, true
		}
	case []any:
		for _, e := range x {
			if s, ok := cutMarker(e, depth+1); ok {
				return s, true
			}
		}
	case pyjson.Object:
		for _, m := range x.Members() {
			if s, ok := cutMarker(m.Value, depth+1); ok {
				return s, true
			}
		}
	}
	return "", false
}

// cutNote is Module.Ignored's account of a value holding the cut-short
// marker s.
func cutNote(s string) string {
	tail := s
	if n := utf8.RuneCountInString(s); n > 32 {
		tail = "…" + string([]rune(s)[n-32:])
	}
	return fmt.Sprintf("a custom-type value cut short when it was saved (DSPy's %s with no %s; %d characters ending %q): kept as the saved text, which DSPy sends as it is, not read as the field's type", customTypeStart, customTypeEnd, utf8.RuneCountInString(s), tail)
}

var (
	jsonUnmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	imageType           = reflect.TypeFor[types.Image]()
)

// The markers DSPy 3 wraps a custom type's content parts in when it
// serialises one (dspy.Type.serialize_model), as program.save does with a
// dspy.Image in a demo.
const (
	customTypeStart = "<<CUSTOM-TYPE-START-IDENTIFIER>>"
	customTypeEnd   = "<<CUSTOM-TYPE-END-IDENTIFIER>>"
)

// savedImages replaces, at every depth of a decoded demo value, each
// string that is exactly one custom-type marker with the Image it stands
// for (savedImage). images reports whether it replaced any.
func savedImages(v any, depth int) (out any, images bool, err error) {
	if depth > 64 {
		return v, false, nil
	}
	switch x := v.(type) {
	case string:
		if !isCustomTypeMarker(x) {
			return x, false, nil
		}
		img, err := savedImage(x)
		if err != nil {
			return nil, false, err
		}
		return img, true, nil
	case []any:
		var c []any
		for i, e := range x {
			o, changed, err := savedImages(e, depth+1)
			if err != nil {
				return nil, false, fmt.Errorf("item %d: %w", i+1, err)
			}
			if changed && c == nil {
				c = slices.Clone(x)
			}
			if changed {
				c[i], images = o, true
			}
		}
		if c != nil {
			return c, true, nil
		}
	case pyjson.Object:
		members := x.Members()
		for i, m := range members {
			o, changed, err := savedImages(m.Value, depth+1)
			if err != nil {
				return nil, false, fmt.Errorf("key %q: %w", m.Key, err)
			}
			if changed {
				members[i].Value, images = o, true
			}
		}
		if images {
			return pyjson.NewObject(members...), true, nil
		}
	}
	return v, false, nil
}

// isCustomTypeMarker reports whether s is exactly one custom-type marker:
// it starts with the start marker and ends with the end marker, neither of
// which appears in between. Marker text inside other text stays text, as
// in every other untrusted text.
func isCustomTypeMarker(s string) bool {
	payload, ok := strings.CutPrefix(s, customTypeStart)
	if !ok {
		return false
	}
	payload, ok = strings.CutSuffix(payload, customTypeEnd)
	return ok && !strings.Contains(payload, customTypeStart) && !strings.Contains(payload, customTypeEnd)
}

// savedImage reads the image a custom-type marker stands for: exactly one
// image_url part ({"type": "image_url", "image_url": {"url": …, "detail":
// …}}, nothing else), whose URL passes NewImage's checks as an image in
// any demo does (an http(s) or gs URL, or a valid image data URI; never a
// local path or file:// URL). Anything else the marker claims (audio, a
// file, text, several parts, unknown members) is an error, never a part.
func savedImage(s string) (types.Image, error) {
	payload := strings.TrimSpace(s[len(customTypeStart) : len(s)-len(customTypeEnd)])
	var parts []struct {
		Type     string `json:"type"`
		ImageURL *struct {
			URL    string `json:"url"`
			Detail string `json:"detail"`
		} `json:"image_url"`
	}
	dec := json.NewDecoder(strings.NewReader(payload))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&parts); err != nil || dec.More() {
		return types.Image{}, fmt.Errorf("a saved custom-type value that is not one image part (DSPy's %s[{\"type\": \"image_url\", …}]%s): %s", customTypeStart, customTypeEnd, clipText(payload))
	}
	if len(parts) != 1 || parts[0].Type != "image_url" || parts[0].ImageURL == nil {
		return types.Image{}, fmt.Errorf("a saved custom-type value that is not one image part: %s (only images are read from a saved program's demos)", clipText(payload))
	}
	p := parts[0].ImageURL
	switch p.Detail {
	case "", "low", "high", "auto":
	default:
		return types.Image{}, fmt.Errorf("a saved image with detail %s (want low, high or auto)", clipText(p.Detail))
	}
	img, err := types.NewImage(p.URL)
	if err != nil {
		return types.Image{}, fmt.Errorf("a saved image: %w", err)
	}
	img.Detail = openai.ImageURLDetail(p.Detail)
	return img, nil
}

// needsGoValue reports whether a type holds a struct or custom type.
func needsGoValue(t *signature.TypeSpec, depth int) bool {
	if t == nil || depth > 32 {
		return false
	}
	switch t.Kind() {
	case signature.KindStruct, signature.KindCustom:
		return true
	case signature.KindEnum:
		return t.GoType().Kind() != reflect.String
	}
	for _, o := range t.Options() {
		if needsGoValue(o, depth+1) {
			return true
		}
	}
	return needsGoValue(t.Elem(), depth+1) || needsGoValue(t.Key(), depth+1)
}

// Ignored lists what Load left out of the saved predictor, one line each:
// demo keys that name no field (DSPy ignores them too), demo values kept as
// their saved text rather than read as their field's type (a custom-type
// value cut short when it was saved, as SIMBA saves long ones; DSPy sends
// that text too), naming the demo and the field, and the saved LM
// settings. It is nil for a module that was not loaded.
func (m *Module) Ignored() []string {
	if m == nil {
		return nil
	}
	return slices.Clone(m.ignored)
}

// Load is Module.Load for a typed Predict: the saved fields' names must be
// In's and Out's json names, or WithFieldsByPosition be given.
func (p *Predict[In, Out]) Load(prog Program, name string, opts ...LoadOption) (*Predict[In, Out], error) {
	if err := p.zero(); err != nil {
		return nil, err
	}
	m, err := p.m.Load(prog, name, opts...)
	if err != nil {
		return nil, err
	}
	return &Predict[In, Out]{m: m}, nil
}

// Load is Module.Load for a ChainOfThought; DSPy saves its predictor
// under "<name>.predict".
func (c *ChainOfThought[In, Out]) Load(prog Program, name string, opts ...LoadOption) (*ChainOfThought[In, Out], error) {
	if err := c.zero(); err != nil {
		return nil, err
	}
	m, err := c.p.m.Load(prog, name, opts...)
	if err != nil {
		return nil, err
	}
	return &ChainOfThought[In, Out]{p: &Predict[In, Out]{m: m}}, nil
}
