package predict

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	adapter "github.com/sigwire/adapter"
)

// A profile is what a module does differently for the DSPy that saved its
// program: the choices that depend on DSPy's version. Every such choice
// lives here, one value per profile, and the modules read them from the
// profile they run under; nothing else in the tree asks which DSPy wrote a
// program. A byte-exact DSPy 3.5 profile, once 3.5's source can be read,
// is one more value here (its XML adapter, its ChainOfThought field), not
// edits across the adapters.
type profile struct {
	// name is what Result.Profile reports.
	name string
	// since is the first DSPy release whose programs run under the
	// profile, as release numbers (see releaseOf); nil for any.
	since []string
	// optIn: its programs load only with WithAnyDSPyVersion, since this
	// library does not send their DSPy's prompts byte for byte.
	optIn bool
	// adapter is the modules' default adapter, ranked as a module's own
	// default (below adapter.UseAdapter and adapter.WithAdapter, and below
	// the adapter a module was built with); nil leaves it to the pipeline
	// (adapter.DefaultAdapter: Chat, DSPy's default until 3.5).
	adapter adapter.Adapter
	// nativeReasoning: a ChainOfThought's reasoning is a types.Reasoning,
	// answered by the model's native reasoning where it has it (what
	// WithNativeReasoning asks for); false keeps the module's own choice.
	nativeReasoning bool
	// reactV2: this DSPy's dspy.ReAct is what DSPy 3.3.1 called ReActV2,
	// whose programs ReAct cannot load.
	reactV2 bool
	// changed says, by module kind (Predict, ChainOfThought, ReAct), in
	// one sentence, what this DSPy changed for it, and how to go on: the
	// text of a VersionError.
	changed map[string]string
	// defaults is the call option that makes adapter its modules' default
	// (nil when adapter is nil).
	defaults adapter.CallOption
}

// The profiles, oldest first: a program runs under the last one whose
// since its DSPy version reaches.
var (
	// dspy331 is DSPy 3.3.1's prompts, byte for byte: the programs of DSPy
	// 2.5 to 3.4 (3.4 changed the LM layer, not the prompts), those with
	// no version, and every module not loaded from a program.
	dspy331 = &profile{name: "dspy-3.3.1"}
	// dspy35 is DSPy 3.5's choices where they are known exactly (its
	// upgrade guide and release notes, reference/dspy-3.5.md's EXACT
	// marks), with DSPy 3.3.1's prompt text where 3.5's is not public.
	dspy35 = newProfile(profile{
		name:            "dspy-3.5",
		since:           []string{"3", "5"},
		optIn:           true,
		adapter:         adapter.XML{Options: adapter.Options{NativeTools: adapter.On}},
		nativeReasoning: true,
		reactV2:         true,
		changed: map[string]string{
			"Predict": "since DSPy 3.5 the default adapter is XMLAdapter with native function calling, not ChatAdapter, " +
				"and its XML prompt is not public; load it with predict.WithAnyDSPyVersion() to run it with that adapter and DSPy 3.3.1's prompt text",
			"ChainOfThought": "since DSPy 3.5 ChainOfThought prefers the model's native reasoning and otherwise asks for \"a short plan\" " +
				"in words that are not public, and the default adapter is XMLAdapter with native function calling; " +
				"load it with predict.WithAnyDSPyVersion() to run it with native reasoning where the model has it, that adapter and DSPy 3.3.1's prompt text",
			"ReActV2": "since DSPy 3.5 dspy.ReAct is ReActV2 (DSPy 3.3.1's, as this library runs it) and the default adapter is XMLAdapter with native function calling, " +
				"whose XML prompt is not public; load it with predict.WithAnyDSPyVersion() to run it with that adapter and DSPy 3.3.1's prompt text",
			"ReAct": "since DSPy 3.5 dspy.ReAct is what DSPy 3.3.1 called ReActV2 (native tool calls, a History, a typed submit tool, no extract step), " +
				"whose state ReAct cannot load, with predict.WithAnyDSPyVersion() or without; " +
				"load it with predict.NewReActV2(sig, tools).Load(prog, predict.WithAnyDSPyVersion())",
		},
	})
	profiles = []*profile{dspy331, dspy35}
)

// newProfile completes a profile's derived fields.
func newProfile(p profile) *profile {
	if p.adapter != nil {
		p.defaults = adapter.Defaults(adapter.UseAdapter(p.adapter))
	}
	return &p
}

// profileOf returns the profile a program saved by DSPy version v runs
// under, and, when v is not a version number, a line for Ignored: such a
// program runs under the first profile, as one with no version does.
func profileOf(v string) (*profile, string) {
	if v == "" {
		return profiles[0], ""
	}
	rel, ok := releaseOf(v)
	if !ok {
		return profiles[0], fmt.Sprintf("metadata: the DSPy version %s is not a version number: loaded as a program of DSPy 3.4 or earlier (profile %s)",
			clipText(v), profiles[0].name)
	}
	p := profiles[0]
	for _, q := range profiles[1:] {
		if releaseAtLeast(rel, q.since) {
			p = q
		}
	}
	return p, ""
}

// options puts the profile's default adapter before a module's defaults.
func (p *profile) options(defaults adapter.CallOption) []adapter.CallOption {
	if p.defaults == nil {
		return []adapter.CallOption{defaults}
	}
	return []adapter.CallOption{p.defaults, defaults}
}

// releaseOf reads a version's release numbers as PEP 440 writes them: an
// optional "v", numbers separated by dots, then optionally a pre-, post-,
// dev-release or local part ("3.5.0b1", "3.5.0rc2", "3.5.0.dev0",
// "3.5.0.post1", "3.5.0+local"), which is not compared: a pre-release of
// 3.5 has 3.5's changes, so it counts as 3.5. Each number is its digits
// without leading zeros ("" is 0), compared as numbers of any size (3.10
// is after 3.5). A version that does not start with a number, or whose
// numbers are followed by anything but '.', '-', '_', '+' or a letter (an
// epoch "1!3.5"), is not read.
func releaseOf(v string) ([]string, bool) {
	s := strings.TrimSpace(v)
	if s != "" && (s[0] == 'v' || s[0] == 'V') {
		s = s[1:]
	}
	var rel []string
	for {
		n := 0
		for n < len(s) && isDigit(s[n]) {
			n++
		}
		if n == 0 {
			return nil, false
		}
		rel = append(rel, strings.TrimLeft(s[:n], "0"))
		s = s[n:]
		if len(s) < 2 || s[0] != '.' || !isDigit(s[1]) {
			break
		}
		s = s[1:]
	}
	if s != "" && !strings.ContainsRune(".-_+", rune(s[0])) && !isLetter(s[0]) {
		return nil, false
	}
	return rel, true
}

func isDigit(c byte) bool  { return '0' <= c && c <= '9' }
func isLetter(c byte) bool { return 'a' <= c|0x20 && c|0x20 <= 'z' }

// releaseAtLeast reports whether release a is at or after release b,
// number by number, a missing number being 0.
func releaseAtLeast(a, b []string) bool {
	for i := range max(len(a), len(b)) {
		var x, y string
		if i < len(a) {
			x = a[i]
		}
		if i < len(b) {
			y = b[i]
		}
		if c := compareNumbers(x, y); c != 0 {
			return c > 0
		}
	}
	return true
}

// compareNumbers compares two numbers written as digits without leading
// zeros.
func compareNumbers(x, y string) int {
	if len(x) != len(y) {
		return len(x) - len(y)
	}
	return strings.Compare(x, y)
}

// VersionError is Load's error for a program saved by a DSPy whose prompts
// this library does not reproduce: DSPy 3.5 and later (Program.DSPyVersion).
// Its text names the version, says what that DSPy changed for the module
// loading it, and how to go on: WithAnyDSPyVersion, or, for a ReAct, which
// cannot load such a program, NewReActV2. It matches ErrDSPyVersion.
type VersionError struct {
	// Version is the DSPy version the program's metadata names, as saved.
	Version string
	// Module is the kind of module that was loading it: Predict,
	// ChainOfThought, ReAct or ReActV2.
	Module string
	// Predictor is the saved predictor Load was asked for ("react" for a
	// ReAct).
	Predictor string
}

// Error names the version and the predictor, says what that DSPy changed
// for the module, and how to go on.
func (e *VersionError) Error() string {
	p, _ := profileOf(e.Version)
	what := p.changed[e.Module]
	if what == "" {
		what = p.changed["Predict"]
	}
	v := e.Version
	if len(v) > 40 || strings.ContainsFunc(v, func(r rune) bool {
		return !(r < 0x80 && (isDigit(byte(r)) || isLetter(byte(r)) || strings.ContainsRune(".-_+!", r)))
	}) {
		v = clipText(v)
	}
	subject := fmt.Sprintf("predictor %q", e.Predictor)
	if e.Module == "ReAct" {
		subject = "ReAct: the program"
	}
	if what == "" { // a VersionError built by hand for a version that loads
		return fmt.Sprintf("predict: %s was saved by DSPy %s", subject, v)
	}
	return fmt.Sprintf("predict: %s was saved by DSPy %s, whose prompts this library does not reproduce (it sends DSPy 3.3.1's, for programs of DSPy 3.4 and earlier): %s",
		subject, v, what)
}

// Is reports whether target is ErrDSPyVersion.
func (e *VersionError) Is(target error) bool { return target == ErrDSPyVersion }

// checkVersion returns the profile a module of kind loads prog under, and
// a line for Ignored when the version is not a version number; a
// *VersionError when the profile needs WithAnyDSPyVersion and cfg has not
// got it, or, for a ReAct, when the profile's dspy.ReAct is ReActV2.
func checkVersion(prog Program, kind, predictor string, cfg loadConfig) (*profile, string, error) {
	p, note := profileOf(prog.DSPyVersion)
	if p.optIn && !cfg.allowVersion || kind == "ReAct" && p.reactV2 {
		return nil, "", &VersionError{Version: prog.DSPyVersion, Module: kind, Predictor: predictor}
	}
	return p, note, nil
}

// The fields only ReActV2's react predictor has, and those only ReAct's
// has (next_thought is both's).
var (
	reactV2Fields = []string{"history", "tools", "tool_calls"}
	reactV1Fields = []string{"trajectory", "next_tool_name", "next_tool_args"}
)

// checkReActProgram is ReAct.Load's check of what prog was saved by: a
// *VersionError for a program of DSPy 3.5 or later (its dspy.ReAct is
// ReActV2), and an error matching ErrWrongModule for ReActV2's state
// whatever the version.
func checkReActProgram(prog Program, opts []LoadOption) error {
	if _, _, err := checkVersion(prog, "ReAct", "react", loadConfigOf(opts)); err != nil {
		return err
	}
	if names, ok := reactV2State(prog); ok {
		return wrongModuleError(fmt.Sprintf("predict: ReAct: the saved \"react\" predictor is DSPy's ReActV2 (fields %s; no \"extract.predict\"), "+
			"which dspy.ReActV2 saves, and dspy.ReAct since DSPy 3.5; ReAct cannot load it: load it with predict.NewReActV2(sig, tools).Load(prog)",
			strings.Join(names, ", ")))
	}
	return nil
}

// reactV2State reports whether prog holds DSPy's ReActV2 state where a
// ReAct's is expected: a "react" predictor and no "extract.predict", whose
// saved fields show ReActV2's names (history, tools, tool_calls; see
// savedFieldName) and none of ReAct's (trajectory, next_tool_name,
// next_tool_args). It returns the saved fields' names, "?" where the
// saved state shows none.
func reactV2State(prog Program) ([]string, bool) {
	sp, ok := prog.Predictors["react"]
	if !ok {
		return nil, false
	}
	if _, ok := prog.Predictors["extract.predict"]; ok {
		return nil, false
	}
	candidates := slices.Concat(reactV2Fields, reactV1Fields, []string{"next_thought"})
	names := make([]string, len(sp.Signature.Fields))
	v2 := false
	for i, fs := range sp.Signature.Fields {
		n := savedFieldName(fs, "", candidates)
		if slices.Contains(reactV1Fields, n) {
			return nil, false
		}
		v2 = v2 || slices.Contains(reactV2Fields, n)
		names[i] = cmp.Or(n, "?")
	}
	return names, v2
}

// wrongModuleError is Load's error for a program another kind of module
// saved: it matches ErrWrongModule.
type wrongModuleError string

func (e wrongModuleError) Error() string { return string(e) }

func (e wrongModuleError) Is(target error) bool { return target == ErrWrongModule }
