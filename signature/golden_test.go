package signature_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sigwire/adapter/internal/golden"
	"github.com/sigwire/adapter/signature"
)

// Stand-ins for the custom types of package types, so that every golden
// signature can be built here without importing it.
type (
	tHistory   struct{ Messages []map[string]any }
	tImage     struct{ URL string }
	tTool      struct{ Name string }
	tToolCalls struct {
		ToolCalls []tToolCall `json:"tool_calls"`
	}
	tToolCall struct {
		Name string         `json:"name"`
		Args map[string]any `json:"args"`
	}
	tCitations struct{ Citations []map[string]any }
	tReasoning string
	tCode      string
	tCodePy    string
)

func (tReasoning) TypeName() string { return "str" }
func (tToolCall) TypeName() string  { return "ToolCall" }
func (tCodePy) TypeName() string    { return "Code_python" }

var customTypes = map[string]reflect.Type{
	"History":        reflect.TypeFor[tHistory](),
	"Image":          reflect.TypeFor[tImage](),
	"Tool":           reflect.TypeFor[tTool](),
	"ToolCalls":      reflect.TypeFor[tToolCalls](),
	"Citations":      reflect.TypeFor[tCitations](),
	"Reasoning":      reflect.TypeFor[tReasoning](),
	"Code":           reflect.TypeFor[tCode](),
	"Code['python']": reflect.TypeFor[tCodePy](),
}

func loadCases(t *testing.T) []golden.Case {
	t.Helper()
	cases, err := golden.LoadGlob("../testdata/dspy_golden*.json")
	require.NoError(t, err)
	require.NotEmpty(t, cases)
	return cases
}

// fieldLine matches one line of DSPy's field description block.
var fieldLine = regexp.MustCompile("(?m)^\\d+\\. `([^`]+)` \\((.*)\\):")

// schemaNote matches a structure placeholder with a JSON schema note.
var schemaNote = regexp.MustCompile(`(?m)^\{(\w+)\}        # note: the value you produce must adhere to the JSON schema: (.*)$`)

// TestGoldenSignatures builds every golden signature and checks the type
// name and prompt schema of each field against what DSPy printed.
func TestGoldenSignatures(t *testing.T) {
	b := &golden.Builder{Custom: customTypes}
	var checkedNames, checkedSchemas int
	for _, c := range loadCases(t) {
		if c.Signature == nil {
			continue
		}
		t.Run(c.ID, func(t *testing.T) {
			sig, err := b.Signature(c.Signature)
			require.NoError(t, err)
			assert.Equal(t, c.Signature.Instructions, sig.Instructions())
			require.Equal(t, len(c.Signature.Inputs), sig.NumInputs())
			require.Equal(t, len(c.Signature.Outputs), sig.NumOutputs())
			for i, fs := range c.Signature.Inputs {
				assert.Equal(t, fs.Name, sig.Input(i).Name)
			}
			for i, fs := range c.Signature.Outputs {
				assert.Equal(t, fs.Name, sig.Output(i).Name)
			}
			if c.Kind != "format" {
				return
			}
			var msgs []struct {
				Role    string
				Content json.RawMessage
			}
			require.NoError(t, json.Unmarshal(c.Expected, &msgs))
			var system string
			if msgs[0].Role != "system" || json.Unmarshal(msgs[0].Content, &system) != nil {
				return
			}
			for _, m := range fieldLine.FindAllStringSubmatch(system, -1) {
				f, _, ok := sig.Field(m[1])
				if !ok {
					continue // TwoStep's extraction signature lists other fields
				}
				assert.Equal(t, m[2], f.Spec.String(), "type name of %s", m[1])
				checkedNames++
			}
			for _, m := range schemaNote.FindAllStringSubmatch(system, -1) {
				f, _, ok := sig.Field(m[1])
				require.True(t, ok, m[1])
				got, err := f.Spec.PromptSchema()
				require.NoError(t, err)
				assertSameJSON(t, m[2], got, m[1])
				checkedSchemas++
			}
		})
	}
	assert.Greater(t, checkedNames, 40)
	assert.GreaterOrEqual(t, checkedSchemas, 3)
}

// TestGoldenAnnotations builds every parse_value / format_value annotation.
func TestGoldenAnnotations(t *testing.T) {
	b := &golden.Builder{Custom: customTypes}
	for _, c := range loadCases(t) {
		if c.Annotation == "" {
			continue
		}
		spec, err := b.Spec(c.Annotation)
		require.NoError(t, err, c.ID)
		want := c.Annotation
		if strings.HasPrefix(want, "object ") || strings.HasPrefix(want, "Enum ") {
			continue
		}
		want = strings.ReplaceAll(want, ",", ", ")
		want = strings.ReplaceAll(want, ",  ", ", ")
		switch want {
		case "Optional[str]":
			want = "Union[str, NoneType]"
		case "Optional[int]":
			want = "Union[int, NoneType]"
		case "Reasoning":
			want = "str"
		}
		assert.Equal(t, want, spec.String(), c.ID)
	}
}

// assertSameJSON compares a JSON text with a Go value by meaning (key order
// is the renderer's business, tested where the prompt is rendered).
func assertSameJSON(t *testing.T, want string, got any, msg string) {
	t.Helper()
	var w, g any
	require.NoError(t, json.Unmarshal([]byte(want), &w), msg)
	b, err := json.Marshal(got)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &g))
	assert.Equal(t, w, g, fmt.Sprintf("schema of %s\nwant %s\ngot  %s", msg, want, b))
}

func TestGoldenUnknownCustomType(t *testing.T) {
	_, err := (&golden.Builder{}).Spec("list[Image]")
	assert.True(t, errors.Is(err, golden.ErrUnknownType))
	var _ *signature.Signature
}
