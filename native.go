package adapter

import (
	"context"
	"maps"
	"reflect"
	"sync"

	openai "github.com/sashabaranov/go-openai"

	"github.com/sigwire/adapter/signature"
)

// NativeHook is implemented by output field types that a capable LM can
// produce natively rather than in the text: reasoning models'
// reasoning_content (types.Reasoning), native tool calls (types.ToolCalls).
// It is detected on the field's type (its zero value).
//
// PlanNative runs once per LM call, before formatting. Its Plan may drop
// the field (and inputs it consumed) from the prompt and set request
// options on the call's own request copy; it never changes shared state.
// After the call, NativeValue reads the field's value from each choice; a
// dropped field without a native value takes its type's zero value.
type NativeHook interface {
	PlanNative(r NativeRequest) Plan
	NativeValue(choice openai.ChatCompletionChoice) (any, bool)
}

// WireReader is implemented by output field types whose value a reply may
// carry on the wire outside go-openai's types: provider citations
// (types.Citations reads OpenAI's url_citation annotations and Anthropic's
// citations). It is detected on the field's type (its zero value), like
// NativeHook, and asked for every choice after the text is parsed: a value
// it reports replaces what the text gave, as DSPy's parse_lm_response
// does, and fills a field its NativeHook dropped from the prompt.
//
// A streamed reply's extras are read from its raw lines; a blocking
// reply's only through a client whose HTTP client is wrapped with
// [HTTPDoer] (otherwise the extras are empty). A reply served by [Cached]
// brings the extras it was stored with.
type WireReader interface {
	WireValue(choice openai.ChatCompletionChoice, extras ChoiceExtras) (any, bool)
}

// NativeRequest is what a NativeHook decides from.
type NativeRequest struct {
	Field     string               // the output field
	Signature *signature.Signature // the call's signature
	Inputs    Values               // the call's inputs
	Caps      Capabilities         // what the LM declares, or the guess
	// Guessed: the LM declares nothing (see [CapabilityReporter]), and
	// Caps is [ModelCapabilities]' guess from the request's model name.
	Guessed bool
	Request openai.ChatCompletionRequest // the request template (a copy)
	// NativeTools: the adapter asks for native function calling (see
	// [NativeToolAdapter]; JSON and BAML by default, Chat and XML when
	// their Options.NativeTools turns it on).
	NativeTools bool
}

// Plan is what a NativeHook decides for one call.
type Plan struct {
	// Drop leaves the field out of the prompt and the parse.
	Drop bool
	// DropInputs leaves these inputs out of the prompt (the tools a native
	// tool call was given through the request).
	DropInputs []string
	// Request, when set, adjusts the call's request (never shared).
	Request func(*openai.ChatCompletionRequest)
	// Err, when set, stops the call before any LM call: the field cannot
	// be answered as the adapter asks (a ToolCalls output for native tool
	// calling, with no input holding the tools).
	Err error
	// Note, when set, says what the hook did other than the adapter asked,
	// and why: tool calls asked for in the text because the LM does not
	// support native calling, say. It is added once to the call's
	// Result.Notes, which the [Trace]'s CallDone carries. A Note made
	// from a guess (NativeRequest.Guessed) makes the call's failure a
	// *[CapabilityGuessError].
	Note string
}

// NativeToolAdapter is implemented by adapters that can ask for tool
// calls through the provider's function calling (DSPy's
// use_native_function_calling): Chat, JSON, XML and BAML, and any adapter
// written elsewhere that implements it.
//
// NativeTools reports whether the adapter asks for it, and the
// parallel_tool_calls it sends with native tool calls (Auto leaves it to
// the provider; see [Options].ParallelToolCalls). The pipeline tells the
// outputs' [NativeHook]s (a ToolCalls output then gets the request's
// tools); when the adapter does not ask for it, tools, tool_choice and
// parallel_tool_calls are removed from the request, as DSPy's adapters do.
// An adapter that does not implement the interface asks for no native
// tools and leaves the request's tool options as the template sets them.
//
// WithNativeTools returns a copy of the adapter with native function
// calling on, for a caller that wants it (predict.ReActV2 calls tools
// natively when its adapter does, as DSPy); an adapter without the
// interface asks for the calls in the text.
type NativeToolAdapter interface {
	Adapter
	NativeTools() (on bool, parallel Switch)
	WithNativeTools() Adapter
}

var (
	nativeHookType = reflect.TypeFor[NativeHook]()
	wireReaderType = reflect.TypeFor[WireReader]()
)

// nativeField is an output handled natively in this call.
type nativeField struct {
	name string
	typ  reflect.Type
	hook NativeHook
}

// lmCaps is what an LM supports, as it declares it or as guessed from
// the model name (guessed).
type lmCaps struct {
	caps    Capabilities
	guessed bool
}

// nativePlan is what planNative decided for one request: the signature
// the adapter formats and parses (without the dropped fields), the inputs
// without the dropped inputs, the dropped outputs, and the hooks' notes
// (guessNote: one of them was made from a guess; guessUsed: a field went
// native on a guess).
type nativePlan struct {
	sig                  *signature.Signature
	inputs               Values
	dropped              []nativeField
	notes                []string
	guessNote, guessUsed bool
}

// planNative applies the outputs' native hooks to req. When a hook puts
// tools in the request, parallel_tool_calls follows the adapter's option
// unless the template sets it, and a request that then has
// parallel_tool_calls gets tool_choice "auto" unless the template sets
// one: DSPy's LM layer adds it only then, so a request without
// parallel_tool_calls leaves tool_choice to the provider. A hook's Err
// stops the call (an *InputError naming the field). A [NativeToolAdapter]
// that asks for no native tools gets a request without tool options.
func planNative(a Adapter, sig *signature.Signature, inputs Values, lc lmCaps, req *openai.ChatCompletionRequest) (nativePlan, error) {
	nt, ok := a.(NativeToolAdapter)
	var native bool
	var parallel Switch
	if ok {
		native, parallel = nt.NativeTools()
	}
	p, err := applyHooks(sig, inputs, lc, req, native, parallel)
	if err == nil && ok && !native {
		stripTools(req)
	}
	return p, err
}

// applyHooks is planNative's work on the outputs' hooks, for an adapter
// that asks for native function calling or not (native) with parallel,
// its parallel_tool_calls.
func applyHooks(sig *signature.Signature, inputs Values, lc lmCaps, req *openai.ChatCompletionRequest, native bool, parallel Switch) (nativePlan, error) {
	p := nativePlan{sig: sig, inputs: inputs}
	if !traitsOfSig(sig).native {
		return p, nil
	}
	copied := false
	for i := range sig.NumOutputs() {
		f := sig.Output(i)
		if !traitsOf(f.Type).native {
			continue
		}
		hook := reflect.Zero(f.Type).Interface().(NativeHook)
		plan := hook.PlanNative(NativeRequest{Field: f.Name, Signature: sig, Inputs: inputs, Caps: lc.caps, Guessed: lc.guessed,
			Request: *req, NativeTools: native})
		if plan.Err != nil {
			return nativePlan{}, &InputError{Field: f.Name, Err: plan.Err}
		}
		if plan.Note != "" {
			p.notes = append(p.notes, plan.Note)
			p.guessNote = p.guessNote || lc.guessed
		}
		hadTools := len(req.Tools) > 0
		if plan.Request != nil {
			// A copy for the hook, which may keep its pointer: req itself
			// stays where the caller has it (on its stack).
			shaped := new(openai.ChatCompletionRequest)
			*shaped = *req
			plan.Request(shaped)
			*req = *shaped
		}
		if !hadTools && len(req.Tools) > 0 {
			if parallel != Auto && req.ParallelToolCalls == nil {
				req.ParallelToolCalls = parallel == On
			}
			if req.ParallelToolCalls != nil && req.ToolChoice == nil {
				req.ToolChoice = "auto"
			}
		}
		if plan.Drop {
			p.guessUsed = p.guessUsed || lc.guessed
			p.sig = p.sig.Delete(f.Name)
			p.dropped = append(p.dropped, nativeField{f.Name, f.Type, hook})
		}
		for _, in := range plan.DropInputs {
			p.sig = p.sig.Delete(in)
			if _, ok := p.inputs[in]; ok {
				if !copied {
					p.inputs, copied = maps.Clone(inputs), true
				}
				delete(p.inputs, in)
			}
		}
	}
	return p, nil
}

// stripTools removes the native tool-calling options from req.
func stripTools(req *openai.ChatCompletionRequest) {
	req.Tools, req.ToolChoice, req.ParallelToolCalls = nil, nil, nil
}

// wireField is an output whose type is a WireReader.
type wireField struct {
	name   string
	reader WireReader
}

// wireFields returns the outputs of sig whose types are WireReaders (a
// slice kept for sig: not to be changed).
func wireFields(sig *signature.Signature) []wireField { return traitsOfSig(sig).wires }

// sigTraits is what the pipeline detects on a signature's fields, kept
// per signature.
type sigTraits struct {
	history int         // the Conversation input, -1 for none
	native  bool        // an output's type is a NativeHook
	wires   []wireField // the outputs whose types are WireReaders
	// text: every input is a str field of Go type string, without a
	// default or constraints (see textInputs).
	text bool
}

// traitsKey keeps a signature's traits in its memo.
type traitsKey struct{}

// traitsOfSig returns the traits of sig's fields, computed once.
func traitsOfSig(sig *signature.Signature) *sigTraits {
	return sig.Memo(traitsKey{}, func() any {
		st := &sigTraits{history: -1, text: true}
		for i := range sig.NumInputs() {
			f := sig.Input(i)
			if traitsOf(f.Type).conversation && st.history < 0 {
				st.history = i
			}
			if f.Type != stringType || f.Spec.Kind() != signature.KindString || f.HasDefault || len(f.Constraints) > 0 {
				st.text = false
			}
		}
		for i := range sig.NumOutputs() {
			f := sig.Output(i)
			tr := traitsOf(f.Type)
			st.native = st.native || tr.native
			if tr.wire {
				st.wires = append(st.wires, wireField{f.Name, reflect.Zero(f.Type).Interface().(WireReader)})
			}
		}
		return st
	}).(*sigTraits)
}

// wireValue is what one WireReader gave for a choice.
type wireValue struct {
	v  any
	ok bool
}

// readWires asks each WireReader once for its value in a choice (the items
// on the wire are decoded once per reader, not once per question asked).
// The pipeline calls it only when there are wires to read.
func readWires(wires []wireField, choice openai.ChatCompletionChoice, extras ChoiceExtras) []wireValue {
	out := make([]wireValue, len(wires))
	for i, w := range wires {
		out[i].v, out[i].ok = w.reader.WireValue(choice, extras)
	}
	return out
}

// nativeValues reports whether a choice carries a value for any dropped
// field, or a value on the wire for any output (wv, from readWires; so an
// empty text is not an empty reply).
func nativeValues(dropped []nativeField, wv []wireValue, choice openai.ChatCompletionChoice) bool {
	for _, d := range dropped {
		if _, ok := d.hook.NativeValue(choice); ok {
			return true
		}
	}
	for _, w := range wv {
		if w.ok {
			return true
		}
	}
	return false
}

// fillNative sets the dropped fields' values from a choice, then the
// values the wire carried (wv, from readWires: they replace what the text
// gave), and every other output still missing to its zero value (DSPy sets
// them to None).
func fillNative(vals Values, sig *signature.Signature, dropped []nativeField, wires []wireField, wv []wireValue, choice openai.ChatCompletionChoice) {
	for _, d := range dropped {
		if v, ok := d.hook.NativeValue(choice); ok {
			vals[d.name] = v
		} else {
			vals[d.name] = reflect.Zero(d.typ).Interface()
		}
	}
	for i, w := range wires {
		if i < len(wv) && wv[i].ok {
			vals[w.name] = wv[i].v
		}
	}
	for i := range sig.NumOutputs() {
		f := sig.Output(i)
		if _, ok := vals[f.Name]; !ok {
			vals[f.Name] = reflect.Zero(f.Type).Interface()
		}
	}
}

// typeTraits is what the pipeline detects on a field type, computed once
// per type.
type typeTraits struct {
	native       bool // implements NativeHook
	wire         bool // implements WireReader
	conversation bool // implements Conversation (on the value or pointer)
}

var traitsCache sync.Map // reflect.Type → typeTraits

func traitsOf(t reflect.Type) typeTraits {
	if t == nil {
		return typeTraits{}
	}
	if v, ok := traitsCache.Load(t); ok {
		return v.(typeTraits)
	}
	tr := typeTraits{
		native:       t.Implements(nativeHookType),
		wire:         t.Implements(wireReaderType),
		conversation: t.Implements(conversationType) || reflect.PointerTo(t).Implements(conversationType),
	}
	traitsCache.Store(t, tr)
	return tr
}

// CallAdapter returns the adapter a [Call] with ctx and opts uses:
// [UseAdapter], else [WithAdapter] on ctx, else an adapter named under
// [Defaults], else [DefaultAdapter](). Code that makes calls for a module
// and must adjust their adapter (a native-tool agent switching native
// function calling on) reads it here instead of repeating the rule.
func CallAdapter(ctx context.Context, opts ...CallOption) Adapter {
	var c callConfig
	c.apply(opts)
	if ctx == nil {
		ctx = context.Background()
	}
	return c.resolve(ctx)
}
