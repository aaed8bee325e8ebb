package signature_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sigwire/adapter/signature"
)

type strictNode struct {
	Name     string       `json:"name" desc:"the node's name"`
	Weight   *float64     `json:"weight" ge:"0"`
	Children []strictNode `json:"children"`
}

type strictColor string

func (strictColor) EnumValues() []string { return []string{"red", "green"} }

func TestStrictSchemaSimple(t *testing.T) {
	sig, err := signature.Parse("question -> answer, score: float")
	require.NoError(t, err)
	s, err := sig.StrictSchema()
	require.NoError(t, err)
	assert.Equal(t, "DSPyProgramOutputs", s.Name)
	assert.Equal(t, `{"properties":{"answer":{"type":"string"},"score":{"type":"number"}},"additionalProperties":false,"type":"object","required":["answer","score"]}`, string(s.Schema))
}

func TestStrictSchemaTypes(t *testing.T) {
	sig, err := signature.New("", []signature.Field{{Name: "q"}}, []signature.Field{
		{Name: "maybe", Type: reflect.TypeFor[*int]()},
		{Name: "tags", Type: reflect.TypeFor[[]string]()},
		{Name: "color", Type: reflect.TypeFor[strictColor](), Desc: "pick one"},
		{Name: "tree", Type: reflect.TypeFor[strictNode](), Desc: "the tree"},
		{Name: "n", Type: reflect.TypeFor[int](), Constraints: []signature.Constraint{{Op: signature.LE, Value: 5}}},
	})
	require.NoError(t, err)
	s, err := sig.StrictSchema()
	require.NoError(t, err)
	var root map[string]any
	require.NoError(t, json.Unmarshal(s.Schema, &root))
	checkStrict(t, root, "$")

	props := root["properties"].(map[string]any)
	assert.Equal(t, map[string]any{"anyOf": []any{map[string]any{"type": "integer"}, map[string]any{"type": "null"}}}, props["maybe"])
	assert.Equal(t, map[string]any{"type": "string", "enum": []any{"red", "green"}, "description": "pick one"}, props["color"])
	assert.Equal(t, map[string]any{"anyOf": []any{map[string]any{"$ref": "#/$defs/strictNode"}}, "description": "the tree"}, props["tree"], "a described $ref is wrapped")
	assert.Equal(t, "Constraints: less than or equal to: 5", props["n"].(map[string]any)["description"], "constraints move into the description")
	assert.NotContains(t, props["n"], "maximum")
	def := root["$defs"].(map[string]any)["strictNode"].(map[string]any)
	assert.Equal(t, []any{"name", "weight", "children"}, def["required"])
	children := def["properties"].(map[string]any)["children"].(map[string]any)
	assert.Equal(t, map[string]any{"$ref": "#/$defs/strictNode"}, children["items"], "recursion through $defs")

	again, err := sig.StrictSchema()
	require.NoError(t, err)
	assert.Equal(t, string(s.Schema), string(again.Schema), "deterministic")
}

func TestStrictSchemaNotStrict(t *testing.T) {
	for _, spec := range []string{"q -> scores: dict[str, int]", "q -> a, x: Any", "q -> a, items: list[dict[str, str]]"} {
		sig, err := signature.Parse(spec)
		require.NoError(t, err)
		_, err = sig.StrictSchema()
		assert.ErrorIs(t, err, signature.ErrNotStrict, spec)
		var fe *signature.FieldError
		require.ErrorAs(t, err, &fe, spec)
		assert.NotEqual(t, "a", fe.Field, spec)
	}
}

// checkStrict asserts OpenAI's strict-mode invariants on every node.
func checkStrict(t *testing.T, n map[string]any, path string) {
	t.Helper()
	if ref, ok := n["$ref"]; ok {
		assert.Len(t, n, 1, "%s: $ref %v has siblings", path, ref)
	}
	for _, k := range []string{"minimum", "maximum", "minLength", "maxLength", "default", "title", "oneOf", "allOf", "$schema"} {
		assert.NotContains(t, n, k, path)
	}
	if n["type"] == "object" {
		props, _ := n["properties"].(map[string]any)
		assert.Equal(t, false, n["additionalProperties"], "%s: additionalProperties", path)
		req, _ := n["required"].([]any)
		assert.Len(t, req, len(props), "%s: all properties required", path)
		for k, p := range props {
			checkStrict(t, p.(map[string]any), path+"."+k)
		}
	}
	if items, ok := n["items"].(map[string]any); ok {
		checkStrict(t, items, path+"[]")
	}
	if alts, ok := n["anyOf"].([]any); ok {
		for _, a := range alts {
			checkStrict(t, a.(map[string]any), path+"|")
		}
	}
	if defs, ok := n["$defs"].(map[string]any); ok {
		for k, d := range defs {
			checkStrict(t, d.(map[string]any), "$defs."+k)
		}
	}
}

type litAddress struct {
	City    string  `json:"city"`
	Country string  `json:"country" literal:"'US', 'CA'"`
	Rank    *int    `json:"rank" literal:"1, 2, None"`
	Score   float64 `json:"score"`
}

func TestLiteralTag(t *testing.T) {
	spec, err := signature.SpecOf(reflect.TypeFor[litAddress]())
	require.NoError(t, err)
	fields, err := spec.Fields()
	require.NoError(t, err)
	assert.Equal(t, "Literal['US', 'CA']", fields[1].Field.Spec.String())
	assert.Equal(t, "Literal[1, 2, None]", fields[2].Field.Spec.String())
	schema, err := spec.PromptSchema()
	require.NoError(t, err)
	country := schema["properties"].(map[string]any)["country"]
	assert.Equal(t, map[string]any{"enum": []any{"US", "CA"}, "title": "Country", "type": "string"}, country)

	type bad struct {
		N int `json:"n" literal:"'a'"`
	}
	_, err = signature.SpecOf(reflect.TypeFor[bad]())
	if err == nil {
		_, err = mustSpec(t, reflect.TypeFor[bad]()).Fields()
	}
	assert.ErrorContains(t, err, "literal")
}

func mustSpec(t *testing.T, typ reflect.Type) *signature.TypeSpec {
	s, err := signature.SpecOf(typ)
	require.NoError(t, err)
	return s
}
