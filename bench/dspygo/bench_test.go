package dspygo

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/XiaoConstantine/dspy-go/pkg/core"
	"github.com/XiaoConstantine/dspy-go/pkg/modules"
	"github.com/XiaoConstantine/dspy-go/pkg/utils"
	openai "github.com/sashabaranov/go-openai"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/predict"
	"github.com/sigwire/adapter/signature"
)

// The reference workload.
var (
	question = "What is the boiling point of water at sea level?"
	context_ = "At sea level water boils at 100 degrees Celsius."
	demos    = []map[string]string{
		{"question": "What is the capital of France?", "context": "France is a country in Europe. Its capital is Paris.", "reasoning": "The context says the capital is Paris.", "answer": "Paris"},
		{"question": "Who wrote Hamlet?", "context": "Hamlet is a tragedy by William Shakespeare.", "reasoning": "The context names Shakespeare as the author.", "answer": "William Shakespeare"},
		{"question": "How many legs does a spider have?", "context": "Spiders are arachnids with eight legs.", "reasoning": "Arachnids have eight legs.", "answer": "8"},
	}
	reasoning = "The context states that water boils at 100 degrees Celsius at sea level."
	answer    = "100 °C"
)

// The described variant of the workload: instructions and a description
// on every field, as a program written for production carries (both
// libraries get the same texts).
var (
	instructions = "Answer the question using only the context. Reason step by step first, then give a short answer."
	descriptions = map[string]string{
		"question":  "The question to answer.",
		"context":   "Facts that may help answer the question.",
		"reasoning": "Step-by-step reasoning that leads to the answer.",
		"answer":    "A short answer: a few words at most.",
	}
)

// workloads are the reference workload bare and described.
var workloads = []struct {
	name      string
	described bool
}{{"bare", false}, {"described", true}}

// The typed workload: the same fields as Go structs, tagged for both
// libraries (json and desc for this one, dspy and description for
// dspy-go).
type (
	qaIn struct {
		Question string `json:"question" dspy:"question"`
		Context  string `json:"context" dspy:"context"`
	}
	qaOut struct {
		Reasoning string `json:"reasoning" dspy:"reasoning"`
		Answer    string `json:"answer" dspy:"answer"`
	}
	qaInDescribed struct {
		Question string `json:"question" dspy:"question" desc:"The question to answer." description:"The question to answer."`
		Context  string `json:"context" dspy:"context" desc:"Facts that may help answer the question." description:"Facts that may help answer the question."`
	}
	qaOutDescribed struct {
		Reasoning string `json:"reasoning" dspy:"reasoning" desc:"Step-by-step reasoning that leads to the answer." description:"Step-by-step reasoning that leads to the answer."`
		Answer    string `json:"answer" dspy:"answer" desc:"A short answer: a few words at most." description:"A short answer: a few words at most."`
	}
)

// Canned completions, one per output protocol.
var (
	chatReply = "[[ ## reasoning ## ]]\n" + reasoning + "\n\n[[ ## answer ## ]]\n" + answer + "\n\n[[ ## completed ## ]]"
	jsonReply = `{"reasoning": "` + reasoning + `", "answer": "` + answer + `"}`
	xmlReply  = "<reasoning>\n" + reasoning + "\n</reasoning>\n<answer>\n" + answer + "\n</answer>"
	textReply = "reasoning:\n" + reasoning + "\n\nanswer:\n" + answer
)

// ---- this library ------------------------------------------------------

// fakeLM answers in process with a canned reply: the figures are library
// overhead only.
type fakeLM struct{ reply string }

func (f fakeLM) CreateChatCompletion(context.Context, openai.ChatCompletionRequest) (openai.ChatCompletionResponse, error) {
	return openai.ChatCompletionResponse{
		Object:  "chat.completion",
		Choices: []openai.ChatCompletionChoice{{Message: openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, Content: f.reply}, FinishReason: openai.FinishReasonStop}},
	}, nil
}

// sigwireWorkload is the reference workload for this library, described
// (instructions and field descriptions) or bare.
func sigwireWorkload(tb testing.TB, described bool) (*signature.Signature, []adapter.Values, adapter.Values) {
	sig, err := signature.Parse("question, context -> reasoning, answer")
	if err != nil {
		tb.Fatal(err)
	}
	if described {
		sig = sig.WithInstructions(instructions)
		for name, d := range descriptions {
			if sig, err = sig.Update(name, func(f *signature.Field) { f.Desc = d }); err != nil {
				tb.Fatal(err)
			}
		}
	}
	var ds []adapter.Values
	for _, d := range demos {
		v := adapter.Values{}
		for k, s := range d {
			v[k] = s
		}
		ds = append(ds, v)
	}
	return sig, ds, adapter.Values{"question": question, "context": context_}
}

// structured is an LM with structured outputs: the JSON adapter sends
// the signature's strict json_schema.
var structured = adapter.Capabilities{StructuredOutputs: true, JSONMode: true}

// sigwirePaths are this library's calls on the reference workload: Call
// through each adapter (JSON with and without structured outputs), typed
// Predict, and Chat's Format and Parse alone.
func sigwirePaths(tb testing.TB, described bool) []path {
	sig, ds, in := sigwireWorkload(tb, described)
	var paths []path
	for _, c := range []struct {
		name  string
		a     adapter.Adapter
		reply string
		caps  *adapter.Capabilities
	}{
		{"chat", adapter.Chat{}, chatReply, nil},
		{"json", adapter.JSON{}, jsonReply, nil},
		{"json-structured", adapter.JSON{}, jsonReply, &structured},
		{"xml", adapter.XML{}, xmlReply, nil},
	} {
		var lm adapter.LM = fakeLM{c.reply}
		mode := adapter.ModePrompt
		if c.caps != nil {
			lm, mode = adapter.WithCapabilities(lm, *c.caps), adapter.ModeJSONSchema
		}
		opts := []adapter.CallOption{adapter.UseAdapter(c.a), adapter.NoRetry()}
		paths = append(paths, path{c.name, func() error {
			res, err := adapter.Call(context.Background(), lm, sig, ds, in, opts...)
			if err != nil {
				return err
			}
			if res.Outputs[0]["answer"] != answer || c.a.Name() == "json" && res.Mode != mode {
				return fmt.Errorf("%s: %v, mode %q", c.name, res.Outputs, res.Mode)
			}
			return nil
		}})
	}
	paths = append(paths, path{"typed", typedPath(tb, described)})
	paths = append(paths, path{"chat-format", func() error {
		_, err := (adapter.Chat{}).Format(sig, ds, in)
		return err
	}})
	paths = append(paths, path{"format-floor", formatFloor(tb, sig, ds, in)})
	paths = append(paths, path{"chat-parse", func() error {
		v, err := (adapter.Chat{}).Parse(sig, chatReply)
		if err == nil && v["answer"] != answer {
			err = fmt.Errorf("chat-parse: %v", v)
		}
		return err
	}})
	return paths
}

// formatFloor is the least any Format returning go-openai messages does
// for the workload, Chat's own output taken as given: the request's slice
// of messages made, the messages that do not depend on the inputs (the
// system message, the demos) copied in, and the last user message's text
// written once. Chat format's CPU time over this is its own work.
func formatFloor(tb testing.TB, sig *signature.Signature, ds []adapter.Values, in adapter.Values) func() error {
	msgs, err := (adapter.Chat{}).Format(sig, ds, in)
	if err != nil {
		tb.Fatal(err)
	}
	kept, last := msgs[:len(msgs)-1], msgs[len(msgs)-1]
	return func() error {
		out := make([]openai.ChatCompletionMessage, len(kept)+1)
		copy(out, kept)
		var b strings.Builder
		b.Grow(len(last.Content))
		b.WriteString(last.Content)
		out[len(kept)] = openai.ChatCompletionMessage{Role: last.Role, Content: b.String()}
		if len(out[len(kept)].Content) != len(last.Content) {
			return fmt.Errorf("format-floor: %d bytes", len(out[len(kept)].Content))
		}
		return nil
	}
}

// typedPath is predict.Predict over the typed workload's structs, with
// the demos and (described) the instructions, through the Chat adapter.
func typedPath(tb testing.TB, described bool) func() error {
	if described {
		return typedCall[qaInDescribed, qaOutDescribed](tb, qaInDescribed{question, context_}, predict.WithInstructions(instructions))
	}
	return typedCall[qaIn, qaOut](tb, qaIn{question, context_})
}

func typedCall[In, Out any](tb testing.TB, in In, opts ...predict.Option) func() error {
	p, err := predict.New[In, Out](append(opts, adapter.NoRetry())...)
	if err != nil {
		tb.Fatal(err)
	}
	var ds []predict.Demo[In, Out]
	for _, d := range demos {
		dIn, err := adapter.Decode[In](adapter.Values{"question": d["question"], "context": d["context"]})
		if err != nil {
			tb.Fatal(err)
		}
		dOut, err := adapter.Decode[Out](adapter.Values{"reasoning": d["reasoning"], "answer": d["answer"]})
		if err != nil {
			tb.Fatal(err)
		}
		ds = append(ds, predict.Demo[In, Out]{In: dIn, Out: dOut})
	}
	if p, err = p.WithDemos(ds...); err != nil {
		tb.Fatal(err)
	}
	// An LM value made once, as a service holds its client: converting
	// the fakeLM struct on every call would box it each time, an
	// allocation of the benchmark's, not of the library's.
	var lm adapter.LM = fakeLM{chatReply}
	return func() error {
		_, _, err := p.Call(context.Background(), lm, in)
		return err
	}
}

// path is one way of answering the reference workload.
type path struct {
	name string
	run  func() error
}

// benchPaths runs each path as a sub-benchmark, per workload.
func benchPaths(b *testing.B, paths func(testing.TB, bool) []path) {
	for _, w := range workloads {
		for _, p := range paths(b, w.described) {
			b.Run(w.name+"/"+p.name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if err := p.run(); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

func BenchmarkSigwire(b *testing.B) { benchPaths(b, sigwirePaths) }

// baselinePaths are encoding/json decoding the JSON reply (the answer):
// the yardstick of the Chat format and parse budgets. "unmarshal" decodes
// into the struct of the outputs, "unmarshal-map" into a map[string]any
// (what an untyped result is).
func baselinePaths(testing.TB, bool) []path {
	return []path{
		{"unmarshal", func() error {
			var v qaOut
			return json.Unmarshal([]byte(jsonReply), &v)
		}},
		{"unmarshal-map", func() error {
			var v map[string]any
			return json.Unmarshal([]byte(jsonReply), &v)
		}},
	}
}

func BenchmarkBaseline(b *testing.B) {
	for _, p := range baselinePaths(b, false) {
		b.Run(p.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := p.run(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// ---- dspy-go -----------------------------------------------------------

// fakeLLM is dspy-go's LLM interface answering in process with a canned
// reply; GenerateWithJSON parses it as dspy-go's providers do
// (utils.ParseJSONResponse).
type fakeLLM struct {
	*core.BaseLLM
	reply string
}

func newFakeLLM(reply string) *fakeLLM {
	return &fakeLLM{
		BaseLLM: core.NewBaseLLM("fake", "fake", []core.Capability{core.CapabilityCompletion, core.CapabilityChat, core.CapabilityJSON}, nil),
		reply:   reply,
	}
}

func (f *fakeLLM) Generate(context.Context, string, ...core.GenerateOption) (*core.LLMResponse, error) {
	return &core.LLMResponse{Content: f.reply}, nil
}

func (f *fakeLLM) GenerateWithJSON(context.Context, string, ...core.GenerateOption) (map[string]any, error) {
	return utils.ParseJSONResponse(f.reply)
}

func (f *fakeLLM) GenerateWithFunctions(context.Context, string, []map[string]any, ...core.GenerateOption) (map[string]any, error) {
	return nil, nil
}

func (f *fakeLLM) CreateEmbedding(context.Context, string, ...core.EmbeddingOption) (*core.EmbeddingResult, error) {
	return nil, nil
}

func (f *fakeLLM) CreateEmbeddings(context.Context, []string, ...core.EmbeddingOption) (*core.BatchEmbeddingResult, error) {
	return nil, nil
}

func (f *fakeLLM) StreamGenerate(context.Context, string, ...core.GenerateOption) (*core.StreamResponse, error) {
	return nil, nil
}

func (f *fakeLLM) GenerateWithContent(context.Context, []core.ContentBlock, ...core.GenerateOption) (*core.LLMResponse, error) {
	return &core.LLMResponse{Content: f.reply}, nil
}

func (f *fakeLLM) StreamGenerateWithContent(context.Context, []core.ContentBlock, ...core.GenerateOption) (*core.StreamResponse, error) {
	return nil, nil
}

// dspygoSig is the reference workload's signature for dspy-go, described
// or bare.
func dspygoSig(described bool) core.Signature {
	field := func(name string) core.Field {
		if described {
			return core.NewField(name, core.WithDescription(descriptions[name]))
		}
		return core.NewField(name)
	}
	sig := core.NewSignature(
		[]core.InputField{{Field: field("question")}, {Field: field("context")}},
		[]core.OutputField{{Field: field("reasoning")}, {Field: field("answer")}},
	)
	if described {
		sig = sig.WithInstruction(instructions)
	}
	return sig
}

// dspygoDemos are the workload's demos for dspy-go.
func dspygoDemos() []core.Example {
	var ex []core.Example
	for _, d := range demos {
		ex = append(ex, core.Example{
			Inputs:  map[string]any{"question": d["question"], "context": d["context"]},
			Outputs: map[string]any{"reasoning": d["reasoning"], "answer": d["answer"]},
		})
	}
	return ex
}

func dspygoPredict(mode string, described bool) *modules.Predict {
	p := modules.NewPredict(dspygoSig(described))
	switch mode {
	case "text":
		p = p.WithTextOutput()
	case "json":
		p = p.WithStructuredOutput()
	}
	p.SetDemos(dspygoDemos())
	return p
}

// dspygoPaths are dspy-go's Predict in each output mode and its typed
// module (NewTypedPredict and ProcessTyped, text output, as dspy-go's
// typed modules default to) on the reference workload.
func dspygoPaths(_ testing.TB, described bool) []path {
	var paths []path
	for _, c := range []struct{ name, mode, reply string }{
		{"text", "text", textReply},
		{"json", "json", jsonReply},
		{"xml", "xml", xmlReply},
	} {
		p := dspygoPredict(c.mode, described)
		p.SetLLM(newFakeLLM(c.reply))
		in := map[string]any{"question": question, "context": context_}
		paths = append(paths, path{c.name, func() error {
			out, err := p.Process(context.Background(), in)
			if err == nil && out["answer"] != answer {
				err = fmt.Errorf("dspy-go %s: %v", c.name, out)
			}
			return err
		}})
	}
	if described {
		paths = append(paths, path{"typed", dspygoTyped[qaInDescribed, qaOutDescribed](qaInDescribed{question, context_}, instructions)})
	} else {
		paths = append(paths, path{"typed", dspygoTyped[qaIn, qaOut](qaIn{question, context_}, "")})
	}
	return paths
}

func dspygoTyped[In, Out any](in In, instr string) func() error {
	p := modules.NewTypedPredict[In, Out]()
	if instr != "" {
		p.SetSignature(p.GetSignature().WithInstruction(instr))
	}
	p.SetDemos(dspygoDemos())
	p.SetLLM(newFakeLLM(textReply))
	return func() error {
		_, err := modules.ProcessTyped[In, Out](context.Background(), p, in)
		return err
	}
}

func BenchmarkDSPyGo(b *testing.B) { benchPaths(b, dspygoPaths) }

// TestPaths runs every path of the side-by-side once: each answers the
// reference workload correctly (the benchmarks measure working calls).
func TestPaths(t *testing.T) {
	for _, w := range workloads {
		for _, paths := range []func(testing.TB, bool) []path{sigwirePaths, dspygoPaths, baselinePaths} {
			for _, p := range paths(t, w.described) {
				if err := p.run(); err != nil {
					t.Errorf("%s/%s: %v", w.name, p.name, err)
				}
			}
		}
	}
}
