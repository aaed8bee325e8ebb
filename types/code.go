package types

import (
	"regexp"
	"strings"
)

// Language names a programming language for CodeOf.
type Language interface {
	Language() string
}

// Languages for CodeOf; define your own with a Language method.
type (
	Python     struct{}
	Go         struct{}
	Java       struct{}
	JavaScript struct{}
	SQL        struct{}
)

// Language returns "python".
func (Python) Language() string { return "python" }

// Language returns "go".
func (Go) Language() string { return "go" }

// Language returns "java".
func (Java) Language() string { return "java" }

// Language returns "javascript".
func (JavaScript) Language() string { return "javascript" }

// Language returns "sql".
func (SQL) Language() string { return "sql" }

// Code is DSPy's dspy.Code: source code (Python), shown to the model as
// "Code" with a description asking for a fenced block; parsing takes the
// first fenced block's content, or the text itself.
type Code string

// TypeName returns "Code".
func (Code) TypeName() string { return "Code" }

// TypeDescription is DSPy's Code.description() for Python.
func (Code) TypeDescription() string { return codeDescription("python") }

// ParseField reads the code from a field's text.
func (c *Code) ParseField(raw string) error {
	*c = Code(extractCode(raw))
	return nil
}

// CodeOf is DSPy's dspy.Code["<language>"]: code in language L, shown as
// "Code_<language>".
type CodeOf[L Language] string

// TypeName returns "Code_" and the language.
func (CodeOf[L]) TypeName() string {
	var l L
	return "Code_" + l.Language()
}

// TypeDescription is DSPy's Code.description() for the language.
func (CodeOf[L]) TypeDescription() string {
	var l L
	return codeDescription(l.Language())
}

// ParseField reads the code from a field's text.
func (c *CodeOf[L]) ParseField(raw string) error {
	*c = CodeOf[L](extractCode(raw))
	return nil
}

func codeDescription(lang string) string {
	return "Code represented in a string, specified in the `code` field. If this is an output field, the code field should follow the markdown code block format, e.g. \n```" +
		strings.ToLower(lang) + "\n{code}\n```\nProgramming language: " + lang
}

var (
	fenceWithInfo = regexp.MustCompile("(?s)```(?:[^\n]*)\n(.*?)```")
	fenceInline   = regexp.MustCompile("(?s)```(.*?)```")
)

// extractCode is DSPy's Code validator: the first fenced block's content,
// stripped; else an inline fenced span; else the text.
func extractCode(raw string) string {
	if m := fenceWithInfo.FindStringSubmatch(raw); m != nil {
		return strings.TrimSpace(m[1])
	}
	if m := fenceInline.FindStringSubmatch(raw); m != nil {
		return strings.TrimSpace(m[1])
	}
	return raw
}
