package adapter

import (
	"context"
	"strings"

	openai "github.com/sashabaranov/go-openai"
)

// Capabilities says which native features an LM supports. Adapters use it
// to choose how to ask: the JSON adapter sends a strict json_schema
// response format only where StructuredOutputs is set.
type Capabilities struct {
	// StructuredOutputs: response_format {"type": "json_schema", strict}.
	StructuredOutputs bool
	// JSONMode: response_format {"type": "json_object"}.
	JSONMode bool
	// Tools: native function calling.
	Tools bool
	// Reasoning: native reasoning (reasoning_effort, reasoning_content).
	Reasoning bool
}

// CapabilityReporter is implemented by LMs that declare what they support.
// Wrap any LM with [WithCapabilities] to declare it; otherwise
// [ModelCapabilities] guesses from the model name.
type CapabilityReporter interface {
	Capabilities() Capabilities
}

// WithCapabilities returns lm declaring caps. The result is a StreamingLM
// when lm is one.
func WithCapabilities(lm LM, caps Capabilities) LM {
	if s, ok := lm.(StreamingLM); ok {
		return streamingDeclared{declared{lm, caps}, s}
	}
	return declared{lm, caps}
}

type declared struct {
	lm   LM
	caps Capabilities
}

func (d declared) CreateChatCompletion(ctx context.Context, req openai.ChatCompletionRequest) (openai.ChatCompletionResponse, error) {
	return d.lm.CreateChatCompletion(ctx, req)
}

func (d declared) Capabilities() Capabilities { return d.caps }

// Unwrap returns the wrapped LM.
func (d declared) Unwrap() LM { return d.lm }

type streamingDeclared struct {
	declared
	s StreamingLM
}

func (d streamingDeclared) CreateChatCompletionStream(ctx context.Context, req openai.ChatCompletionRequest) (*openai.ChatCompletionStream, error) {
	return d.s.CreateChatCompletionStream(ctx, req)
}

// Unwrapper is implemented by LM wrappers (logging, rate limiting, …) that
// expose the LM they wrap, as [WithMiddleware] and [WithCapabilities] do:
// the pipeline looks through them for a [CapabilityReporter] and an
// [Identifier], the way http.ResponseController looks through wrapped
// ResponseWriters.
type Unwrapper interface {
	Unwrap() LM
}

// capabilitiesOf returns what lm (or an LM it wraps) declares, else the
// guess for model.
func capabilitiesOf(lm LM, model string) Capabilities {
	for lm != nil {
		if r, ok := lm.(CapabilityReporter); ok {
			return r.Capabilities()
		}
		u, ok := lm.(Unwrapper)
		if !ok {
			break
		}
		lm = u.Unwrap()
	}
	return ModelCapabilities(model)
}

// ModelCapabilities guesses what a model supports from its name (a
// provider prefix such as "openai/" is ignored). The table:
//
//	gpt-4o*, gpt-4.1*, chatgpt-4o*       structured outputs, JSON mode, tools
//	gpt-5*, o1*, o3*, o4*                 the same, plus native reasoning
//	gpt-4-turbo*, gpt-3.5-turbo*         JSON mode, tools
//	anything else                         nothing: the prompt alone asks for JSON
//
// Servers that speak the OpenAI protocol for other models (vLLM, Ollama,
// llama.cpp, OpenRouter) differ too much to guess: declare their support
// with [WithCapabilities].
func ModelCapabilities(model string) Capabilities {
	m := strings.ToLower(model)
	if i := strings.LastIndexByte(m, '/'); i >= 0 {
		m = m[i+1:]
	}
	has := func(prefixes ...string) bool {
		for _, p := range prefixes {
			if strings.HasPrefix(m, p) {
				return true
			}
		}
		return false
	}
	switch {
	case has("gpt-5", "o1", "o3", "o4"):
		return Capabilities{StructuredOutputs: true, JSONMode: true, Tools: true, Reasoning: true}
	case has("gpt-4o", "gpt-4.1", "chatgpt-4o"):
		return Capabilities{StructuredOutputs: true, JSONMode: true, Tools: true}
	case has("gpt-4-turbo", "gpt-3.5-turbo"):
		return Capabilities{JSONMode: true, Tools: true}
	}
	return Capabilities{}
}
