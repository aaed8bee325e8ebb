package signature_test

import (
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sigwire/adapter/signature"
)

type CityFacts struct {
	Name       string   `json:"name"`
	Population int      `json:"population"`
	Landmarks  []string `json:"landmarks"`
}

// TestPydanticSchema: pydantic's TypeAdapter(T).json_schema() as DSPy's
// ReActV2 puts it in its submit tool's arguments, byte for byte (the
// golden's schemas): keys sorted, a model's properties in field order.
func TestPydanticSchema(t *testing.T) {
	for typ, want := range map[reflect.Type]string{
		reflect.TypeFor[string]():    `{"type": "string"}`,
		reflect.TypeFor[int]():       `{"type": "integer"}`,
		reflect.TypeFor[[]string]():  `{"items": {"type": "string"}, "type": "array"}`,
		reflect.TypeFor[CityFacts](): `{"properties": {"name": {"title": "Name", "type": "string"}, "population": {"title": "Population", "type": "integer"}, "landmarks": {"items": {"type": "string"}, "title": "Landmarks", "type": "array"}}, "required": ["name", "population", "landmarks"], "title": "CityFacts", "type": "object"}`,
	} {
		spec, err := signature.SpecOf(typ)
		require.NoError(t, err)
		got, err := spec.PydanticSchema()
		require.NoError(t, err)
		assert.Equal(t, want, string(got), "%s", typ)
	}
}

// TestOrNone: T | None as DSPy names it (ReActV2's optional inputs); an
// Optional stays as it is.
func TestOrNone(t *testing.T) {
	spec, err := signature.SpecOf(reflect.TypeFor[string]())
	require.NoError(t, err)
	opt := spec.OrNone()
	assert.Equal(t, "UnionType[str, NoneType]", opt.String())
	assert.Equal(t, reflect.TypeFor[*string](), opt.GoType())
	assert.True(t, opt.Nullable())
	assert.Same(t, opt, opt.OrNone())
}
