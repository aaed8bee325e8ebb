package predict

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/internal/pyjson"
	"github.com/sigwire/adapter/signature"
	"github.com/sigwire/adapter/types"
)

// advise is Refine's feedback step: DSPy's Predict(OfferFeedback) on the
// attempt that fell short, returning the advice to each predictor.
func (s *search[In, Out]) advise(ctx context.Context, lm adapter.LM, vals adapter.Values, res *adapter.Result, st *attemptState, reward float64, opts []adapter.CallOption) (map[string]string, *adapter.Result, error) {
	var outputs adapter.Values
	if res != nil && len(res.Outputs) > 0 {
		outputs = res.Outputs[0]
	}
	trajectory := []any{}
	for _, e := range st.entries() {
		name, ok := st.names[e.m]
		if !ok {
			continue
		}
		trajectory = append(trajectory, pyjson.NewObject(
			pyjson.Member{Key: "module_name", Value: name},
			pyjson.Member{Key: "inputs", Value: e.inputs},
			pyjson.Member{Key: "outputs", Value: e.outputs}))
	}
	names := make([]string, len(s.info.predictors))
	for i, p := range s.info.predictors {
		names[i] = p.name
	}
	// DSPy passes strings as they are and dumps everything else with
	// orjson (OPT_INDENT_2); the float and list[str] fields get that text.
	dump := map[string]any{
		"program_inputs":     ordered(vals, s.info.inputs),
		"program_trajectory": trajectory,
		"program_outputs":    ordered(outputs, s.info.outputs),
		"target_threshold":   s.threshold,
		"reward_value":       reward,
		"module_names":       names,
	}
	text := make(map[string]string, len(dump))
	for k, v := range dump {
		t, err := orjsonDump(v)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", k, err)
		}
		text[k] = t
	}
	inputs := adapter.Values{
		"program_code":       s.programCode,
		"modules_defn":       s.modulesDefn,
		"program_inputs":     text["program_inputs"],
		"program_trajectory": text["program_trajectory"],
		"program_outputs":    text["program_outputs"],
		"reward_code":        s.rewardCode,
		"target_threshold":   floatText(text["target_threshold"]),
		"reward_value":       floatText(text["reward_value"]),
		"module_names":       strListText(text["module_names"]),
	}
	fres, err := s.feedback.Call(ctx, lm, inputs, opts...)
	if err != nil {
		return nil, fres, err
	}
	advice, _ := fres.Outputs[0]["advice"].(map[string]string)
	return advice, fres, nil
}

// floatText is a float input given as text, as DSPy's Refine gives
// target_threshold and reward_value (orjson's dump of the number): the
// prompt shows the field as float and the value as the text.
type floatText string

// TypeName is "float".
func (floatText) TypeName() string { return "float" }

// strListText is a list[str] input given as text (orjson's dump of the
// list), as DSPy's Refine gives module_names.
type strListText string

// TypeName is "list[str]".
func (strListText) TypeName() string { return "list[str]" }

// offerFeedback is DSPy 3.3.1's OfferFeedback signature
// (dspy/predict/refine.py): its instructions (the class docstring, as
// inspect.cleandoc leaves it), its fields and their descriptions, byte for
// byte — "kind ofscenario" included.
var offerFeedback = func() *signature.Signature {
	str := reflect.TypeFor[string]()
	sig, err := signature.New(
		"In the discussion, assign blame to each module that contributed to the final reward being below the threshold, if\n"+
			"any. Then, prescribe concrete advice of how the module should act on its future input when we retry the process, if\n"+
			"it were to receive the same or similar inputs. If a module is not to blame, the advice should be N/A.\n"+
			"The module will not see its own history, so it needs to rely on entirely concrete and actionable advice from you\n"+
			"to avoid the same mistake on the same or similar inputs.",
		[]signature.Field{
			{Name: "program_code", Type: str, Desc: "The code of the program that we are analyzing"},
			{Name: "modules_defn", Type: str, Desc: "The definition of each module in the program, including its I/O"},
			{Name: "program_inputs", Type: str, Desc: "The inputs to the program that we are analyzing"},
			{Name: "program_trajectory", Type: str, Desc: "The trajectory of the program's execution, showing each module's I/O"},
			{Name: "program_outputs", Type: str, Desc: "The outputs of the program that we are analyzing"},
			{Name: "reward_code", Type: str, Desc: "The code of the reward function that we are analyzing"},
			{Name: "target_threshold", Type: reflect.TypeFor[floatText](), Desc: "The target threshold for the reward function"},
			{Name: "reward_value", Type: reflect.TypeFor[floatText](), Desc: "The reward value assigned to the program's outputs"},
			{Name: "module_names", Type: reflect.TypeFor[strListText](), Desc: "The names of the modules in the program, for which we seek advice"},
		},
		[]signature.Field{
			{Name: "discussion", Type: str, Desc: "Discussing blame of where each module went wrong, if it did"},
			{Name: "advice", Type: reflect.TypeFor[map[string]string](), Desc: "For each module, describe very concretely, in this order: the specific scenarios in which it has made " +
				"mistakes in the past and what each mistake was, followed by what it should do differently in that kind of" +
				"scenario in the future. If the module is not to blame, write N/A."},
		})
	if err != nil {
		panic(err)
	}
	return sig
}()

// inspectModules is DSPy's inspect_modules: for each predictor, its name,
// its input and output fields as the adapters describe them, and its
// instructions, between lines of 80 dashes.
func inspectModules(predictors []namedModule) (string, error) {
	sep := strings.Repeat("-", 80)
	out := []string{sep}
	for _, p := range predictors {
		in, outs, instr, err := describeSignature(p.m.sig)
		if err != nil {
			return "", fmt.Errorf("predictor %s: %w", p.name, err)
		}
		out = append(out,
			"Module "+p.name,
			"\n\tInput Fields:",
			tabbed(splitLines(in)),
			"\tOutput Fields:",
			tabbed(splitLines(outs)),
			"\tOriginal Instructions: "+tabbed(instr),
			sep)
	}
	for i, o := range out {
		out[i] = strings.Trim(o, "\n")
	}
	return strings.Join(out, "\n"), nil
}

// tabbed is ("\n" + "\t" * 2).join([""] + lines).
func tabbed(lines []string) string {
	var b strings.Builder
	for _, l := range lines {
		b.WriteString("\n\t\t")
		b.WriteString(l)
	}
	return b.String()
}

// splitLines splits s at line breaks (\n, \r\n, \r: the adapters' rule)
// as Python's splitlines does: no empty line after a final break.
func splitLines(s string) []string {
	var lines []string
	for len(s) > 0 {
		i := strings.IndexAny(s, "\r\n")
		if i < 0 {
			return append(lines, s)
		}
		lines = append(lines, s[:i])
		if s[i] == '\r' && i+1 < len(s) && s[i+1] == '\n' {
			i++
		}
		s = s[i+1:]
	}
	return lines
}

// describeSignature returns what the Chat adapter writes for sig (one
// rule for all): the description of its inputs and of its outputs
// (DSPy's get_field_description_string) and the lines of its dedented
// instructions.
func describeSignature(sig *signature.Signature) (in, out string, instructions []string, err error) {
	const (
		inHead    = "Your input fields are:\n"
		outHead   = "\nYour output fields are:\n"
		objective = "In adhering to this structure, your objective is: "
	)
	var desc, task string
	chat := adapter.Chat{Options: adapter.Options{Prompt: &adapter.Prompt{
		FieldDescription: func(_ *signature.Signature, text string) string { desc = text; return text },
		TaskDescription:  func(_ *signature.Signature, text string) string { task = text; return text },
	}}}
	onlyInputs, onlyOutputs := sig, sig
	for _, f := range sig.Outputs() {
		onlyInputs = onlyInputs.Delete(f.Name)
	}
	for _, f := range sig.Inputs() {
		onlyOutputs = onlyOutputs.Delete(f.Name)
	}
	if _, err := chat.Format(onlyInputs, nil, adapter.Values{}); err != nil {
		return "", "", nil, err
	}
	in, ok1 := strings.CutPrefix(desc, inHead)
	in, ok2 := strings.CutSuffix(in, outHead)
	if _, err := chat.Format(onlyOutputs, nil, adapter.Values{}); err != nil {
		return "", "", nil, err
	}
	out, ok3 := strings.CutPrefix(desc, inHead+outHead)
	rest, ok4 := strings.CutPrefix(task, objective)
	if !ok1 || !ok2 || !ok3 || !ok4 {
		return "", "", nil, errors.New("the Chat adapter's system message is not laid out as expected")
	}
	// rest is "\n" + 8 spaces before each line; lines hold no line break.
	for _, l := range strings.Split(rest, "\n")[1:] {
		instructions = append(instructions, strings.TrimPrefix(l, "        "))
	}
	return in, out, instructions, nil
}

// orjsonDump is DSPy's orjson.dumps(recursive_mask(v),
// option=orjson.OPT_INDENT_2) for the Go value v: two-space indentation,
// non-ASCII kept, floats as orjson writes them (1.0, 1e-7, 1e16; NaN and
// infinities as null), DSPy's custom types (Image, Audio, Tool, History …)
// as "<non-serializable: Image>". A struct is written as its JSON object,
// where DSPy writes a pydantic model as "<non-serializable: Model>".
func orjsonDump(v any) (string, error) {
	b, err := pyjson.MarshalIndentSubst(v, "", "  ", maskCustom)
	if err != nil {
		return "", err
	}
	return orjsonNumbers(b), nil
}

// customNames maps DSPy's custom types to their Python class names.
var customNames = func() map[reflect.Type]string {
	out := map[reflect.Type]string{}
	r := strings.NewReplacer("['", "_", "']", "")
	for name, t := range types.Names() {
		out[t] = r.Replace(name) // Code['python'] is class Code_python
	}
	return out
}()

// maskCustom is recursive_mask's placeholder for the values orjson cannot
// write: DSPy's custom types.
func maskCustom(v reflect.Value) (string, bool, error) {
	for v.IsValid() && (v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface) && !v.IsNil() {
		if name, ok := customNames[v.Type()]; ok {
			return "<non-serializable: " + name + ">", true, nil
		}
		v = v.Elem()
	}
	if !v.IsValid() {
		return "", false, nil
	}
	if name, ok := customNames[v.Type()]; ok {
		return "<non-serializable: " + name + ">", true, nil
	}
	return "", false, nil
}

// orjsonNumbers rewrites the numbers of JSON text written Python's way
// (repr of a float: 1e-05, 1e+16, NaN, Infinity) as orjson writes them.
func orjsonNumbers(b []byte) string {
	var out strings.Builder
	out.Grow(len(b))
	inStr := false
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch {
		case inStr:
			out.WriteByte(c)
			if c == '\\' && i+1 < len(b) {
				i++
				out.WriteByte(b[i])
			} else if c == '"' {
				inStr = false
			}
		case c == '"':
			inStr = true
			out.WriteByte(c)
		case c == '-' || c >= '0' && c <= '9' || c == 'N' || c == 'I':
			j := i
			for j < len(b) && (b[j] == '-' || b[j] == '+' || b[j] == '.' || b[j] >= '0' && b[j] <= '9' || b[j] >= 'a' && b[j] <= 'z' || b[j] >= 'A' && b[j] <= 'Z') {
				j++
			}
			out.WriteString(orjsonNumber(string(b[i:j])))
			i = j - 1
		default:
			out.WriteByte(c)
		}
	}
	return out.String()
}

func orjsonNumber(tok string) string {
	switch tok {
	case "NaN", "Infinity", "-Infinity":
		return "null"
	}
	if !strings.ContainsAny(tok, ".eE") {
		return tok // an int
	}
	f, err := strconv.ParseFloat(tok, 64)
	if err != nil {
		return tok
	}
	return orjsonFloat(f)
}

// orjsonFloat writes f as orjson does (the ryu crate's format): positional
// from 1e-5 up to 1e16 with ".0" on integral values, otherwise an
// exponent without "+" or leading zeros; NaN and infinities as null.
func orjsonFloat(f float64) string {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return "null"
	}
	if abs := math.Abs(f); abs == 0 || abs >= 1e-5 && abs < 1e16 {
		s := strconv.FormatFloat(f, 'f', -1, 64)
		if !strings.Contains(s, ".") {
			s += ".0"
		}
		return s
	}
	s := strconv.FormatFloat(f, 'e', -1, 64)
	mant, exp, _ := strings.Cut(s, "e")
	sign := ""
	if exp[0] == '-' {
		sign = "-"
	}
	return mant + "e" + sign + strings.TrimLeft(exp[1:], "0")
}
