package adapter

import (
	"strings"

	"github.com/sigwire/adapter/signature"
)

// Prompt changes pieces of the Chat, JSON, XML or BAML adapter's prompt
// without rewriting Format, as DSPy users override
// format_field_description, format_field_structure, format_task_description
// and user_message_output_requirements in a subclass.
//
// Each function is given the signature and the text the adapter would
// write for that piece, and returns the text to use instead: wrap it, edit
// it or replace it. A nil function keeps the adapter's text, so the zero
// Prompt changes nothing and the prompt stays byte-identical to DSPy's.
//
// The system message is the field description, the field structure and the
// task description, joined by newlines as DSPy joins them; a piece whose
// function returns "" is left out with its newline. The output requirements
// end the user message of the request (never a demo's); "" leaves them
// out.
//
// The functions run on every Format, possibly from several goroutines at
// once, so they must be safe for concurrent use; the adapter keeps nothing
// they return. When Chat or XML falls back to the JSON adapter after a
// reply it cannot read, the JSON prompt keeps this Prompt's field and task
// descriptions (the pieces JSON writes as Chat does) but not its field
// structure or output requirements, which describe the other format
// (DSPy's fallback, a fresh JSONAdapter, keeps none of a subclass's
// overrides).
type Prompt struct {
	// FieldDescription changes "Your input fields are: … Your output
	// fields are: …", the list of fields with their types and
	// descriptions.
	FieldDescription func(sig *signature.Signature, text string) string
	// FieldStructure changes "All interactions will be structured in the
	// following way, …": how the fields are laid out, with the type notes
	// of the outputs.
	FieldStructure func(sig *signature.Signature, text string) string
	// TaskDescription changes "In adhering to this structure, your
	// objective is: …", the signature's instructions.
	TaskDescription func(sig *signature.Signature, text string) string
	// OutputRequirements changes the reminder that ends the request's user
	// message ("Respond with the corresponding output fields, …").
	OutputRequirements func(sig *signature.Signature, text string) string
}

// structureFunc writes an adapter's field structure: from "All
// interactions …" to the end of the output layout.
type structureFunc func(b *strings.Builder, sig *signature.Signature) error

// writeFieldDescription writes DSPy's format_field_description.
func writeFieldDescription(b *strings.Builder, sig *signature.Signature) {
	b.WriteString("Your input fields are:\n")
	writeFieldDescriptions(b, sig, signature.Input)
	b.WriteString("\nYour output fields are:\n")
	writeFieldDescriptions(b, sig, signature.Output)
}

// systemText writes DSPy's format_system_message with an adapter's field
// structure: field description, structure and task description, joined by
// newlines.
func systemText(sig *signature.Signature, structure structureFunc) (string, error) {
	var b strings.Builder
	b.Grow(320 + fieldsSize(sig) + 2*len(sig.Instructions()))
	writeFieldDescription(&b, sig)
	b.WriteByte('\n')
	if err := structure(&b, sig); err != nil {
		return "", err
	}
	b.WriteByte('\n')
	writeObjective(&b, sig.Instructions())
	return b.String(), nil
}

// systemMessage returns the system message: the adapter's own (built once
// per signature), or one with this Prompt's pieces.
func (p *Prompt) systemMessage(sig *signature.Signature, own memoText, structure structureFunc) (string, error) {
	if p == nil || p.FieldDescription == nil && p.FieldStructure == nil && p.TaskDescription == nil {
		return own.text, own.err
	}
	var b strings.Builder
	writeFieldDescription(&b, sig)
	desc := b.String()
	b.Reset()
	if err := structure(&b, sig); err != nil {
		return "", err
	}
	fields := b.String()
	b.Reset()
	writeObjective(&b, sig.Instructions())
	task := b.String()
	b.Reset()
	for _, piece := range [...]string{
		rewrite(p.FieldDescription, sig, desc),
		rewrite(p.FieldStructure, sig, fields),
		rewrite(p.TaskDescription, sig, task),
	} {
		if piece == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(piece)
	}
	return b.String(), nil
}

// requirements returns the output requirements of the request's user
// message: the adapter's own, built once per signature, or this Prompt's.
func (p *Prompt) requirements(sig *signature.Signature, own memoText) (string, error) {
	if own.err != nil || p == nil {
		return own.text, own.err
	}
	return rewrite(p.OutputRequirements, sig, own.text), nil
}

// forFallback is the Prompt the JSON fallback uses: the pieces JSON writes
// as the other adapters do, nil when there are none.
func (p *Prompt) forFallback() *Prompt {
	if p == nil || p.FieldDescription == nil && p.TaskDescription == nil {
		return nil
	}
	return &Prompt{FieldDescription: p.FieldDescription, TaskDescription: p.TaskDescription}
}

// rewrite runs a piece's function on the adapter's text, or keeps the text.
func rewrite(f func(*signature.Signature, string) string, sig *signature.Signature, text string) string {
	if f == nil {
		return text
	}
	return f(sig, text)
}
