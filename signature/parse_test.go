package signature_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sigwire/adapter/signature"
)

type point struct {
	X int `json:"x"`
	Y int `json:"y"`
}

func TestParseTypes(t *testing.T) {
	types := map[string]reflect.Type{"Point": reflect.TypeFor[point](), "Code['python']": reflect.TypeFor[tCodePy]()}
	tests := []struct {
		typ    string
		name   string // DSPy type name
		goType reflect.Type
		kind   signature.Kind
	}{
		{"", "str", reflect.TypeFor[string](), signature.KindString},
		{"str", "str", reflect.TypeFor[string](), signature.KindString},
		{"string", "str", reflect.TypeFor[string](), signature.KindString},
		{"int", "int", reflect.TypeFor[int](), signature.KindInt},
		{"int64", "int", reflect.TypeFor[int64](), signature.KindInt},
		{"float", "float", reflect.TypeFor[float64](), signature.KindFloat},
		{"float64", "float", reflect.TypeFor[float64](), signature.KindFloat},
		{"bool", "bool", reflect.TypeFor[bool](), signature.KindBool},
		{"Any", "Any", reflect.TypeFor[any](), signature.KindAny},
		{"any", "Any", reflect.TypeFor[any](), signature.KindAny},
		{"interface{}", "Any", reflect.TypeFor[any](), signature.KindAny},
		{"list[str]", "list[str]", reflect.TypeFor[[]string](), signature.KindList},
		{"List[int]", "list[int]", reflect.TypeFor[[]int](), signature.KindList},
		{"typing.List[int]", "list[int]", reflect.TypeFor[[]int](), signature.KindList},
		{"[]string", "list[str]", reflect.TypeFor[[]string](), signature.KindList},
		{"list[list[float]]", "list[list[float]]", reflect.TypeFor[[][]float64](), signature.KindList},
		{"dict[str, int]", "dict[str, int]", reflect.TypeFor[map[string]int](), signature.KindDict},
		{"dict[str,Any]", "dict[str, Any]", reflect.TypeFor[map[string]any](), signature.KindDict},
		{"map[string]int", "dict[str, int]", reflect.TypeFor[map[string]int](), signature.KindDict},
		{"map[string][]string", "dict[str, list[str]]", reflect.TypeFor[map[string][]string](), signature.KindDict},
		{"Optional[int]", "Union[int, NoneType]", reflect.TypeFor[*int](), signature.KindOptional},
		{"*int", "Union[int, NoneType]", reflect.TypeFor[*int](), signature.KindOptional},
		{"int | None", "UnionType[int, NoneType]", reflect.TypeFor[*int](), signature.KindOptional},
		{"Union[int, None]", "Union[int, NoneType]", reflect.TypeFor[*int](), signature.KindOptional},
		{"Optional[list[str]]", "Union[list[str], NoneType]", reflect.TypeFor[[]string](), signature.KindOptional},
		{"Union[int, str]", "Union[int, str]", reflect.TypeFor[any](), signature.KindUnion},
		{"Literal['a', 'b']", "Literal['a', 'b']", reflect.TypeFor[string](), signature.KindLiteral},
		{`Literal["she's", 'x"y', 1, True]`, `Literal["she's", 'x"y', 1, True]`, reflect.TypeFor[any](), signature.KindLiteral},
		{"Literal[1, 2]", "Literal[1, 2]", reflect.TypeFor[int](), signature.KindLiteral},
		{"Point", "Point", reflect.TypeFor[point](), signature.KindStruct},
		{"list[Point]", "list[Point]", reflect.TypeFor[[]point](), signature.KindList},
		{"Optional[Point]", "Union[Point, NoneType]", reflect.TypeFor[*point](), signature.KindOptional},
		{"Code['python']", "Code_python", reflect.TypeFor[tCodePy](), signature.KindCustom},
		{"set[str]", "set[str]", reflect.TypeFor[[]string](), signature.KindList},
	}
	for _, tt := range tests {
		t.Run(tt.typ, func(t *testing.T) {
			spec := "x"
			if tt.typ != "" {
				spec += ": " + tt.typ
			}
			sig, err := signature.Parse(spec+" -> y", signature.WithTypes(types))
			require.NoError(t, err)
			f := sig.Input(0)
			assert.Equal(t, tt.name, f.Spec.String())
			assert.Equal(t, tt.kind, f.Spec.Kind())
			assert.Equal(t, tt.goType, f.Type)
			assert.Equal(t, tt.goType, f.Spec.GoType())
		})
	}
}

func TestParseFields(t *testing.T) {
	sig, err := signature.Parse("question, context: list[str] -> reasoning, answer: int")
	require.NoError(t, err)
	names := func(fs []signature.Field) (out []string) {
		for _, f := range fs {
			out = append(out, f.Name)
		}
		return out
	}
	assert.Equal(t, []string{"question", "context"}, names(sig.Inputs()))
	assert.Equal(t, []string{"reasoning", "answer"}, names(sig.Outputs()))
	assert.Equal(t, "Given the fields `question`, `context`, produce the fields `reasoning`, `answer`.", sig.Instructions())
	assert.Equal(t, "Question:", sig.Input(0).Prefix)
	assert.Equal(t, "", sig.Input(0).Desc)

	sig, err = signature.Parse("q -> a", signature.WithInstructions("Be brief."))
	require.NoError(t, err)
	assert.Equal(t, "Be brief.", sig.Instructions())

	sig, err = signature.Parse("-> a")
	require.NoError(t, err)
	assert.Equal(t, 0, sig.NumInputs())
	assert.Equal(t, "Given the fields , produce the fields `a`.", sig.Instructions())
}

func TestParseLiteralValues(t *testing.T) {
	sig, err := signature.Parse(`x -> y: Literal['yes', "no", 3, True]`)
	require.NoError(t, err)
	assert.Equal(t, []any{"yes", "no", 3, true}, sig.Output(0).Spec.Literals())
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		spec   string
		offset int
		text   string
		msg    string
	}{
		{"question answer", 15, "", "->"},
		{"a -> b -> c", 7, "->", "->"},
		{"", 0, "", "->"},
		{"a, -> b", 3, "->", "name"},
		{"1a -> b", 0, "1a", "name"},
		{"a -> b: Foo", 8, "Foo", "unknown type"},
		{"a -> b: list[", 13, "", ""},
		{"a -> b: list[str", 16, "", "]"},
		{"a -> b: dict[str]", 12, "", ""},
		{"a -> b: Literal[]", 16, "", ""},
		{"a -> b: Literal['x", 16, "", ""},
		{"a -> b: int = 3", 12, "=", ""},
		{"a -> b: Bar['x']", 8, "Bar", "unknown"},
		{"a -> b: #", 8, "#", "unexpected character"},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			_, err := signature.Parse(tt.spec)
			var se *signature.SyntaxError
			require.ErrorAs(t, err, &se)
			assert.Equal(t, tt.spec, se.Spec)
			assert.Equal(t, tt.offset, se.Offset, err.Error())
			if tt.text != "" {
				assert.Equal(t, tt.text, se.Text)
			}
			assert.Contains(t, err.Error(), tt.msg)
		})
	}
}

func TestParseFieldErrors(t *testing.T) {
	tests := []struct {
		spec string
		name string
		err  error
	}{
		{"a, a -> b", "a", signature.ErrDuplicate},
		{"a -> a", "a", signature.ErrDuplicate},
		{"a -> b, b: int", "b", signature.ErrDuplicate},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			_, err := signature.Parse(tt.spec)
			require.Error(t, err)
			var fe *signature.FieldError
			require.ErrorAs(t, err, &fe)
			assert.Equal(t, tt.name, fe.Field)
			assert.ErrorIs(t, err, tt.err)
		})
	}
}

func TestStringRoundTrip(t *testing.T) {
	types := map[string]reflect.Type{"Point": reflect.TypeFor[point]()}
	for _, spec := range []string{
		"question -> answer",
		"question, context: list[str] -> reasoning, answer: int",
		"a: dict[str, list[int]], b: Optional[float] -> c: Literal['x', \"y'z\", 1, True], d: bool",
		"p: Point -> ps: list[Point], q: int | None",
		"-> a: Any",
	} {
		sig, err := signature.Parse(spec, signature.WithTypes(types))
		require.NoError(t, err, spec)
		again, err := signature.Parse(sig.String(), signature.WithTypes(types))
		require.NoError(t, err, sig.String())
		assert.True(t, sig.Equal(again), "%s -> %s", spec, sig.String())
		assert.Equal(t, sig.String(), again.String())
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"question -> answer",
		"question, context: list[str] -> reasoning, answer: int",
		"a: dict[str, Optional[list[int]]] -> b: Literal['x', \"y\", 1] | None",
		"a: map[string][]*int -> b: Union[int, str, None]",
		"a: Code['python'] -> b: tuple[int, str]",
		"a -> b -> c",
		"a: Literal['unterminated -> b",
	} {
		f.Add(s)
	}
	types := map[string]reflect.Type{"Point": reflect.TypeFor[point](), "Code['python']": reflect.TypeFor[tCodePy]()}
	f.Fuzz(func(t *testing.T, spec string) {
		sig, err := signature.Parse(spec, signature.WithTypes(types))
		if err != nil {
			var se *signature.SyntaxError
			var fe *signature.FieldError
			if !errors.As(err, &se) && !errors.As(err, &fe) {
				t.Fatalf("untyped error %T: %v", err, err)
			}
			if se != nil && (se.Offset < 0 || se.Offset > len(spec)) {
				t.Fatalf("offset %d out of range", se.Offset)
			}
			return
		}
		// What parses renders and re-parses to an equal signature.
		again, err := signature.Parse(sig.String(), signature.WithTypes(types))
		if err != nil {
			t.Fatalf("re-parse of %q (from %q): %v", sig.String(), spec, err)
		}
		if !strings.EqualFold(again.String(), sig.String()) || !fieldsEqual(sig, again) {
			t.Fatalf("round trip changed %q -> %q", sig.String(), again.String())
		}
	})
}

func fieldsEqual(a, b *signature.Signature) bool {
	return a.WithInstructions("").Equal(b.WithInstructions(""))
}
