package adapter

import (
	"context"
	"errors"
	"fmt"
	"strings"

	openai "github.com/sashabaranov/go-openai"

	"github.com/sigwire/adapter/internal/pyjson"
	"github.com/sigwire/adapter/signature"
)

// TwoStep is DSPy's TwoStepAdapter: the main LM gets the task in plain
// prose, without markers, and answers freely; a second, usually cheaper,
// extractor LM then turns that text into the output fields, through
// ExtractorAdapter (Chat by default, whose own JSON fallback applies).
//
// Both LM calls count in the Result (Calls, Usage) and are seen by a
// [Trace]. An extraction that fails is a *ParseError of adapter "twostep"
// whose Completion is the main LM's text and whose cause is the
// extractor's *ParseError, which carries the extractor's reply. LM errors
// of the extractor are returned as they are.
//
// A TwoStep without an Extractor cannot be used: Format (and so every call)
// fails with an error that says so, before any LM call.
type TwoStep struct {
	// Extractor is the LM that extracts the fields. Required.
	Extractor LM
	// ExtractorRequest is the request template for the extraction call
	// (its model above all).
	ExtractorRequest openai.ChatCompletionRequest
	// ExtractorAdapter formats and parses the extraction call; nil means
	// Chat{}.
	ExtractorAdapter Adapter
}

// Name returns "twostep".
func (TwoStep) Name() string { return "twostep" }

// Format renders DSPy's TwoStep prompt: a system message describing the
// task in prose, the demos as "name: value" turns, and the inputs.
func (t TwoStep) Format(sig *signature.Signature, demos []Values, inputs Values) ([]openai.ChatCompletionMessage, error) {
	if sig == nil {
		return nil, errNilSignature
	}
	if t.Extractor == nil {
		return nil, errNoExtractor
	}
	msgs := make([]openai.ChatCompletionMessage, 0, 2+2*len(demos))
	var b strings.Builder
	b.WriteString("You are a helpful assistant that can solve tasks based on user input.\nAs input, you will be provided with:\n")
	writeFieldDescriptions(&b, sig, signature.Input)
	b.WriteString("\nYour outputs must contain:\n")
	writeFieldDescriptions(&b, sig, signature.Output)
	b.WriteString("\nYou should lay out your outputs in detail so that your answer can be understood by another agent")
	if in := sig.Instructions(); in != "" {
		b.WriteString("\nSpecific instructions: ")
		b.WriteString(in)
	}
	msgs = append(msgs, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleSystem, Content: b.String()})
	inputs, err := convertInputs(sig, inputs)
	if err != nil {
		return nil, err
	}
	ar := &arena{}
	ar.grow(sig, demos, 0)
	msgs, err = formatDemos(ar, msgs, sig, demos, twoStepUser, twoStepAssistant)
	if err != nil {
		return nil, err
	}
	user, err := twoStepUser(ar, sig, inputs, "", "")
	if err != nil {
		return nil, err
	}
	msgs = append(msgs, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Content: user})
	expandAll(msgs)
	return msgs, nil
}

// twoStepLines writes "name: value" for the fields of role r present in
// vals, blank-line separated, values as Python's str() prints them; a value that
// formats as content parts (an image, audio) as its marker, which str()
// gives in DSPy and which becomes parts in a user message.
func twoStepLines(b *strings.Builder, start int, sig *signature.Signature, r signature.Role, vals Values) error {
	for i := range numFields(sig, r) {
		f := fieldAt(sig, r, i)
		v, ok := vals[f.Name]
		if !ok {
			continue
		}
		if b.Len() > start {
			b.WriteString("\n\n")
		}
		b.WriteString(f.Name)
		b.WriteString(": ")
		if _, ok := v.(Formatter); ok {
			m, err := formatValue(v, f)
			if err != nil {
				return err
			}
			b.WriteString(m)
			continue
		}
		b.WriteString(pyjson.Str(v))
	}
	return nil
}

func twoStepUser(a *arena, sig *signature.Signature, vals Values, prefix, _ string) (string, error) {
	start := a.b.Len()
	a.b.WriteString(prefix)
	if err := twoStepLines(&a.b, start, sig, signature.Input, vals); err != nil {
		return "", err
	}
	return a.since(start), nil
}

// twoStepAssistant writes the outputs present; DSPy omits missing ones
// (the missing text is unused).
func twoStepAssistant(a *arena, sig *signature.Signature, vals Values, _ string) (string, error) {
	start := a.b.Len()
	if err := twoStepLines(&a.b, start, sig, signature.Output, vals); err != nil {
		return "", err
	}
	return a.b.String()[start:], nil
}

// extractionKey keeps the extraction signature in a signature's memo.
type extractionKey struct{}

// extractionSignature returns the signature TwoStep's extractor answers
// for sig, built once per signature (so the extractor's prompt parts are
// built once too).
func extractionSignature(sig *signature.Signature) (*signature.Signature, error) {
	type built struct {
		sig *signature.Signature
		err error
	}
	b := sig.Memo(extractionKey{}, func() any {
		x, err := buildExtractionSignature(sig)
		return built{x, err}
	}).(built)
	return b.sig, b.err
}

// buildExtractionSignature builds the signature TwoStep's extractor
// answers: the main LM's text in, the original outputs out, with DSPy's
// instructions. The input is named "text" as in DSPy, unless an output has
// that name: then underscores are appended until the name is free (DSPy's
// dict merge lets such an output silently replace the input).
func buildExtractionSignature(sig *signature.Signature) (*signature.Signature, error) {
	var names strings.Builder
	for i := range sig.NumOutputs() {
		if i > 0 {
			names.WriteString(", ")
		}
		names.WriteString("`" + sig.Output(i).Name + "`")
	}
	// DSPy's f-string continues its line with a backslash, leaving the
	// next line's indentation: 13 spaces between the sentences.
	instructions := "The input is a text that should contain all the necessary information to produce the fields " +
		names.String() + "." + strings.Repeat(" ", 13) +
		"Your job is to extract the fields from the text verbatim. Extract precisely the appropriate value (content) for each field."
	input := "text"
	for {
		if _, isOutput, ok := sig.Field(input); !ok || !isOutput {
			break
		}
		input += "_"
	}
	return signature.New(instructions, []signature.Field{{Name: input}}, sig.Outputs())
}

// ParseCall extracts the output fields from the main LM's completion with
// the extractor LM.
func (t TwoStep) ParseCall(ctx context.Context, sig *signature.Signature, completion string) (Values, *Result, error) {
	if t.Extractor == nil {
		return nil, nil, errNoExtractor
	}
	xsig, err := extractionSignature(sig)
	if err != nil {
		return nil, nil, err
	}
	inner := t.ExtractorAdapter
	if inner == nil {
		inner = Chat{}
	}
	res, err := Call(ctx, t.Extractor, xsig, nil, Values{xsig.Input(0).Name: completion}, UseAdapter(inner), WithRequest(t.ExtractorRequest))
	if err != nil {
		var le *LMError
		if errors.As(err, &le) {
			return nil, res, err
		}
		pe := &ParseError{Adapter: "twostep", Completion: completion, Err: fmt.Errorf("extraction failed: %w", err)}
		var ipe *ParseError
		if errors.As(err, &ipe) {
			pe.Field, pe.Partial = ipe.Field, ipe.Partial
		}
		return nil, res, pe
	}
	return res.Outputs[0], res, nil
}
