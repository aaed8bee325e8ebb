package adapter

import (
	"errors"
	"strings"
	"unicode/utf8"

	openai "github.com/sashabaranov/go-openai"

	"github.com/sigwire/adapter/signature"
)

// A re-ask (WithReask) asks the model again with its reply and what was
// wrong with it, as instructor does: the adapter's messages, the reply as
// an assistant turn, and a user turn stating the error and repeating the
// adapter's output requirements.

// correctable reports an error the model may correct when asked again: a
// *ParseError, but not a reply cut short (the same request would be cut
// again), an empty one (nothing to send back) or a parser panic (the
// parser's bug). Refusals and LM errors are no *ParseError.
func correctable(err error) bool {
	var pe *ParseError
	return errors.As(err, &pe) && !errors.Is(err, ErrTruncated) &&
		!errors.Is(err, ErrEmptyResponse) && !errors.Is(err, ErrParserPanic)
}

// maxReaskProblem bounds the error text a re-ask quotes: a value's error
// may quote the value, which the reply before it already holds.
const maxReaskProblem = 1000

// reaskMessages is the conversation of a re-ask: msgs as the adapter wrote
// them, the reply, and a user turn that states err and ends with the
// adapter's output requirements ("" for none).
func reaskMessages(msgs []openai.ChatCompletionMessage, reply string, err error, requirements string) []openai.ChatCompletionMessage {
	out := make([]openai.ChatCompletionMessage, len(msgs), len(msgs)+2)
	copy(out, msgs)
	return append(out,
		openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, Content: reply},
		openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Content: reaskText(err, requirements)})
}

// reaskText is the user turn of a re-ask: what was wrong, and how to
// answer.
func reaskText(err error, requirements string) string {
	var b strings.Builder
	b.WriteString("Your response above could not be used: ")
	b.WriteString(problem(err))
	b.WriteString(".\n\nPlease answer again, correcting this.")
	if requirements != "" {
		b.WriteByte(' ')
		b.WriteString(requirements)
	}
	return b.String()
}

// problem states a reply's error for the model: the field, and the cause
// without the adapter's name or the reply (which the turn before holds).
// A *ParseError whose cause is another (TwoStep's, around its
// extractor's) is stated as the innermost one.
func problem(err error) string {
	var pe *ParseError
	if !errors.As(err, &pe) {
		return clipProblem(err.Error())
	}
	field, cause := pe.Field, pe.Err
	for inner := (*ParseError)(nil); cause != nil && errors.As(cause, &inner); cause = inner.Err {
		if inner.Field != "" {
			field = inner.Field
		}
	}
	text := "it could not be read"
	if cause != nil {
		text = clipProblem(cause.Error())
	}
	if field == "" {
		return text
	}
	return "field `" + field + "`: " + text
}

// clipProblem shortens s to maxReaskProblem bytes, on a rune boundary.
func clipProblem(s string) string {
	if len(s) <= maxReaskProblem {
		return s
	}
	n := maxReaskProblem
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// outputRequirer is implemented by the adapters whose request ends with
// output requirements (Chat, JSON, XML, BAML, each in its own file): a
// re-ask repeats them. It is unexported: an adapter written outside the
// package gets re-asks without requirements (see WithReask), so that its
// Format stays the one place its prompt is written.
type outputRequirer interface {
	outputRequirements(sig *signature.Signature) (string, error)
}

// requirementsOf returns the output requirements a's Format ended the
// request for sig with, "" for an adapter without them.
func requirementsOf(a Adapter, sig *signature.Signature) string {
	r, ok := a.(outputRequirer)
	if !ok {
		return ""
	}
	text, err := r.outputRequirements(sig)
	if err != nil {
		return "" // Format failed on the same error before any request
	}
	return text
}
