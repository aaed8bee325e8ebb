package types

import (
	"strings"

	openai "github.com/sashabaranov/go-openai"

	adapter "github.com/sigwire/adapter"
)

// Reasoning is DSPy's dspy.Reasoning: the model's reasoning as text, shown
// as str. With an LM that reasons natively (Capabilities.Reasoning) the
// field leaves the prompt, reasoning_effort is set ("low" unless the
// request says otherwise; "none" keeps the field in the prompt) and the
// value comes from the reply's reasoning_content. GPT-5 models over Chat
// Completions return no reasoning text, so there the field stays in the
// prompt, as in DSPy.
type Reasoning string

// TypeName returns "str", the name DSPy shows.
func (Reasoning) TypeName() string { return "str" }

// PlanNative moves the field to native reasoning when the LM supports it.
func (Reasoning) PlanNative(r adapter.NativeRequest) adapter.Plan {
	caps, req := r.Caps, r.Request
	if req.ReasoningEffort == "none" {
		// DSPy's reasoning_effort=None: no native reasoning, and nothing sent.
		return adapter.Plan{Request: func(r *openai.ChatCompletionRequest) { r.ReasoningEffort = "" }}
	}
	if !caps.Reasoning || strings.Contains(req.Model, "gpt-5") {
		return adapter.Plan{}
	}
	effort := req.ReasoningEffort
	if effort == "" {
		effort = "low"
	}
	return adapter.Plan{Drop: true, Request: func(r *openai.ChatCompletionRequest) { r.ReasoningEffort = effort }}
}

// NativeValue reads the reasoning from the reply.
func (Reasoning) NativeValue(choice openai.ChatCompletionChoice) (any, bool) {
	if choice.Message.ReasoningContent == "" {
		return nil, false
	}
	return Reasoning(choice.Message.ReasoningContent), true
}
