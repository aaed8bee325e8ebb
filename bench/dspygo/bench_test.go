package dspygo

import (
	"context"
	"testing"

	"github.com/XiaoConstantine/dspy-go/pkg/core"
	"github.com/XiaoConstantine/dspy-go/pkg/modules"
	"github.com/XiaoConstantine/dspy-go/pkg/utils"
	openai "github.com/sashabaranov/go-openai"

	adapter "github.com/sigwire/adapter"
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

func sigwireWorkload(b *testing.B) (*signature.Signature, []adapter.Values, adapter.Values) {
	sig, err := signature.Parse("question, context -> reasoning, answer")
	if err != nil {
		b.Fatal(err)
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

func BenchmarkSigwire(b *testing.B) {
	sig, ds, in := sigwireWorkload(b)
	for _, c := range []struct {
		name  string
		a     adapter.Adapter
		reply string
	}{
		{"chat", adapter.Chat{}, chatReply},
		{"json", adapter.JSON{}, jsonReply},
		{"xml", adapter.XML{}, xmlReply},
	} {
		b.Run(c.name, func(b *testing.B) {
			lm := fakeLM{c.reply}
			opts := []adapter.CallOption{adapter.UseAdapter(c.a), adapter.NoRetry()}
			b.ReportAllocs()
			for b.Loop() {
				res, err := adapter.Call(context.Background(), lm, sig, ds, in, opts...)
				if err != nil || res.Outputs[0]["answer"] != answer {
					b.Fatal(err, res)
				}
			}
		})
	}
	b.Run("chat-format", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := (adapter.Chat{}).Format(sig, ds, in); err != nil {
				b.Fatal(err)
			}
		}
	})
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

func dspygoPredict(mode string) *modules.Predict {
	sig := core.NewSignature(
		[]core.InputField{{Field: core.NewField("question")}, {Field: core.NewField("context")}},
		[]core.OutputField{{Field: core.NewField("reasoning")}, {Field: core.NewField("answer")}},
	)
	p := modules.NewPredict(sig)
	switch mode {
	case "text":
		p = p.WithTextOutput()
	case "json":
		p = p.WithStructuredOutput()
	}
	var ex []core.Example
	for _, d := range demos {
		ex = append(ex, core.Example{
			Inputs:  map[string]any{"question": d["question"], "context": d["context"]},
			Outputs: map[string]any{"reasoning": d["reasoning"], "answer": d["answer"]},
		})
	}
	p.SetDemos(ex)
	return p
}

func BenchmarkDSPyGo(b *testing.B) {
	for _, c := range []struct{ name, mode, reply string }{
		{"text", "text", textReply},
		{"json", "json", jsonReply},
		{"xml", "xml", xmlReply},
	} {
		b.Run(c.name, func(b *testing.B) {
			p := dspygoPredict(c.mode)
			p.SetLLM(newFakeLLM(c.reply))
			in := map[string]any{"question": question, "context": context_}
			b.ReportAllocs()
			for b.Loop() {
				out, err := p.Process(context.Background(), in)
				if err != nil || out["answer"] != answer {
					b.Fatal(err, out)
				}
			}
		})
	}
}
