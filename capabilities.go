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
	// CacheControl: Anthropic-style prompt caching through an
	// OpenAI-compatible route ("cache_control": {"type": "ephemeral"} on a
	// content part), as Claude models take it through LiteLLM, OpenRouter
	// and other gateways. [WithPromptCache] marks the stable prefix so.
	CacheControl bool
	// PromptCacheKey: OpenAI's "prompt_cache_key" request member, which
	// routes requests that share a prefix to the same cache.
	// [WithPromptCache] sends it.
	PromptCacheKey bool
}

// CapabilityReporter is implemented by LMs that declare what they support.
// Wrap any LM with [WithCapabilities] to declare it; otherwise
// [ModelCapabilities] guesses from the model name. WithCapabilities is the
// one place that overrides the guess: a call that fails while it used a
// guess says so (a *[CapabilityGuessError]), and so do the Result's Notes
// when the guess kept a native feature from the request.
type CapabilityReporter interface {
	Capabilities() Capabilities
}

// WithCapabilities returns lm declaring caps. The result streams when lm
// does, so it can be given to [Stream] as it is; when lm cannot stream,
// its CreateChatCompletionStream (and Stream) fails with an error matching
// errors.ErrUnsupported.
func WithCapabilities(lm LM, caps Capabilities) StreamingLM {
	return declared{lm, caps}
}

type declared struct {
	lm   LM
	caps Capabilities
}

func (d declared) CreateChatCompletion(ctx context.Context, req openai.ChatCompletionRequest) (openai.ChatCompletionResponse, error) {
	return d.lm.CreateChatCompletion(ctx, req)
}

// CreateChatCompletionStream streams from the wrapped LM.
func (d declared) CreateChatCompletionStream(ctx context.Context, req openai.ChatCompletionRequest) (*openai.ChatCompletionStream, error) {
	return streamFrom(ctx, d.lm, req)
}

func (d declared) Capabilities() Capabilities { return d.caps }

// Unwrap returns the wrapped LM.
func (d declared) Unwrap() LM { return d.lm }

// Unwrapper is implemented by LM wrappers (logging, rate limiting, …) that
// expose the LM they wrap, as [WithMiddleware] and [WithCapabilities] do:
// the pipeline looks through them for a [CapabilityReporter] and an
// [Identifier], the way http.ResponseController looks through wrapped
// ResponseWriters.
type Unwrapper interface {
	Unwrap() LM
}

// capabilitiesOf returns what lm (or an LM it wraps) declares, else
// ModelCapabilities' guess for model, with guessed set.
func capabilitiesOf(lm LM, model string) (caps Capabilities, guessed bool) {
	for lm != nil {
		if f, ok := lm.(*FallbackLM); ok {
			return f.capabilities(model)
		}
		if r, ok := lm.(CapabilityReporter); ok {
			return r.Capabilities(), false
		}
		u, ok := lm.(Unwrapper)
		if !ok {
			break
		}
		lm = u.Unwrap()
	}
	return ModelCapabilities(model), true
}

// String lists what c supports ("structured outputs, JSON mode, tools,
// reasoning, cache_control, prompt_cache_key"), "none" for nothing.
func (c Capabilities) String() string {
	var s []string
	for _, f := range []struct {
		on   bool
		name string
	}{{c.StructuredOutputs, "structured outputs"}, {c.JSONMode, "JSON mode"}, {c.Tools, "tools"}, {c.Reasoning, "reasoning"},
		{c.CacheControl, "cache_control"}, {c.PromptCacheKey, "prompt_cache_key"}} {
		if f.on {
			s = append(s, f.name)
		}
	}
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// ModelCapabilities guesses what a model supports from its name, as the
// providers' OpenAI-compatible endpoints document it (a provider prefix
// such as "openai/" or OpenRouter's "anthropic/" is ignored). The table,
// first match wins:
//
//	name prefix                                 structured outputs  JSON mode  tools  reasoning  prompt cache
//	gpt-5, o1, o3, o4                           yes                 yes        yes    yes        prompt_cache_key
//	gpt-oss                                     yes                 yes        yes    yes
//	gpt-4o, gpt-4.1                             yes                 yes        yes               prompt_cache_key
//	chatgpt-4o                                  yes                 yes        yes
//	gpt-4-turbo, gpt-3.5-turbo                                      yes        yes
//	gemini-2.5, gemini-3                        yes                 yes        yes    yes
//	gemini                                      yes                 yes        yes
//	grok-3-mini                                 yes                 yes        yes    yes
//	grok                                        yes                 yes        yes
//	deepseek-reasoner, deepseek-r1                                  yes               yes
//	deepseek-chat, deepseek-v3                                      yes        yes
//	mistral, open-mistral, ministral, codestral,
//	  pixtral, magistral, devstral               yes                 yes        yes
//	claude, anthropic.claude (Bedrock's ids)                                   yes               cache_control
//	anything else                               none: the prompt alone asks for JSON
//
// "Reasoning" means the model reasons natively and takes reasoning_effort:
// a Reasoning output then leaves the prompt and is read from the reply.
// The prompt cache column is the shape [WithPromptCache] marks a request
// in: cache_control for Claude through an Anthropic-compatible gateway
// (LiteLLM, OpenRouter, Vercel's, Bedrock's), prompt_cache_key for
// OpenAI's models; other providers cache without being asked (DeepSeek,
// Gemini's implicit caching, xAI) or not at all, and get neither.
// Models served under names of your own (vLLM, Ollama, llama.cpp, LM
// Studio, Groq's or Together's open models) cannot be told apart by name:
// declare what your server supports with [WithCapabilities], for example
// vLLM with guided decoding and a tool parser:
//
//	lm := adapter.WithCapabilities(client, adapter.Capabilities{StructuredOutputs: true, JSONMode: true, Tools: true})
//
// Declaring too much costs little for structured outputs (a provider that
// rejects the schema makes the JSON adapter move down a tier, once) but
// fails the call for tools and reasoning the server does not accept.
func ModelCapabilities(model string) Capabilities {
	m := strings.ToLower(model)
	if i := strings.LastIndexByte(m, '/'); i >= 0 {
		m = m[i+1:]
	}
	if m == "" {
		return Capabilities{}
	}
	for _, p := range modelIndex[m[0]] {
		if strings.HasPrefix(m, p.prefix) {
			return p.caps
		}
	}
	return Capabilities{}
}

// modelPrefix is a prefix of the model table with its row's capabilities.
type modelPrefix struct {
	prefix string
	caps   Capabilities
}

// modelIndex is modelTable's prefixes by their first byte, each list in
// the table's order: a name is matched against the prefixes it can
// match, and the first of those in the table wins, as a scan of the
// whole table would have it.
var modelIndex = func() (idx [256][]modelPrefix) {
	for _, row := range modelTable {
		for _, p := range row.prefixes {
			idx[p[0]] = append(idx[p[0]], modelPrefix{p, row.caps})
		}
	}
	return idx
}()

// modelTable is ModelCapabilities' table, in its order.
var modelTable = func() []struct {
	prefixes []string
	caps     Capabilities
} {
	all := Capabilities{StructuredOutputs: true, JSONMode: true, Tools: true, Reasoning: true}
	structured := Capabilities{StructuredOutputs: true, JSONMode: true, Tools: true}
	keyed := func(c Capabilities) Capabilities { c.PromptCacheKey = true; return c }
	return []struct {
		prefixes []string
		caps     Capabilities
	}{
		{[]string{"gpt-5", "o1", "o3", "o4"}, keyed(all)},
		{[]string{"gpt-oss"}, all},
		{[]string{"gpt-4o", "gpt-4.1"}, keyed(structured)},
		{[]string{"chatgpt-4o"}, structured},
		{[]string{"gpt-4-turbo", "gpt-3.5-turbo"}, Capabilities{JSONMode: true, Tools: true}},
		{[]string{"gemini-2.5", "gemini-3", "grok-3-mini"}, all},
		{[]string{"gemini", "grok"}, structured},
		{[]string{"deepseek-reasoner", "deepseek-r1"}, Capabilities{JSONMode: true, Reasoning: true}},
		{[]string{"deepseek-chat", "deepseek-v3"}, Capabilities{JSONMode: true, Tools: true}},
		{[]string{"mistral", "open-mistral", "ministral", "codestral", "pixtral", "magistral", "devstral"}, structured},
		{[]string{"claude", "anthropic.claude"}, Capabilities{Tools: true, CacheControl: true}},
	}
}()
