package signature_test

import (
	"encoding/json"
	"reflect"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sigwire/adapter/signature"
)

type Sentiment string

func (Sentiment) EnumValues() []string { return []string{"positive", "negative", "neutral"} }

type reviewIn struct {
	Review   string `json:"review" desc:"the customer review"`
	Language string
}

type reviewOut struct {
	Sentiment  Sentiment `desc:"overall tone"`
	Confidence float64   `json:"confidence" ge:"0" le:"1"`
	Topics     []string  `json:"topics"`
	Reply      *string   `json:"reply" default:"null"`
}

func TestFromStructs(t *testing.T) {
	sig, err := signature.FromStructs[reviewIn, reviewOut](signature.WithInstructions("Classify the review."))
	require.NoError(t, err)
	assert.Equal(t, "Classify the review.", sig.Instructions())
	assert.Equal(t, "review: str, language: str", sideString(sig.Inputs()))
	assert.Equal(t, "sentiment: Sentiment, confidence: float, topics: list[str], reply: Union[str, NoneType]", sideString(sig.Outputs()))
	assert.Equal(t, "the customer review", sig.Input(0).Desc)
	assert.Equal(t, signature.KindEnum, sig.Output(0).Spec.Kind())
	assert.Equal(t, []string{"positive", "negative", "neutral"}, sig.Output(0).Spec.EnumValues())
	assert.Equal(t, []signature.Constraint{{Op: signature.GE, Value: 0}, {Op: signature.LE, Value: 1}}, normalize(sig.Output(1).Constraints))
	assert.True(t, sig.Output(3).HasDefault)
	assert.Nil(t, sig.Output(3).Default)
}

func normalize(cs []signature.Constraint) []signature.Constraint {
	out := make([]signature.Constraint, len(cs))
	for i, c := range cs {
		out[i] = c
		if f, ok := c.Value.(float64); ok && f == float64(int(f)) {
			out[i].Value = int(f)
		}
	}
	return out
}

func sideString(fs []signature.Field) string {
	s := ""
	for i, f := range fs {
		if i > 0 {
			s += ", "
		}
		s += f.Name + ": " + f.Spec.String()
	}
	return s
}

type withEmbedded struct {
	reviewIn
	X string
}
type withUnexported struct {
	X string
	y string
}
type withChan struct{ C chan int }
type withFunc struct{ F func() }

func TestFromStructsErrors(t *testing.T) {
	_, err := signature.FromStructs[withEmbedded, reviewOut]()
	assert.ErrorContains(t, err, "embedded")
	_, err = signature.FromStructs[withUnexported, reviewOut]()
	assert.ErrorContains(t, err, "y")
	assert.ErrorContains(t, err, "unexported")
	_, err = signature.FromStructs[reviewIn, withChan]()
	assert.ErrorContains(t, err, "C")
	_, err = signature.FromStructs[withFunc, reviewOut]()
	assert.ErrorContains(t, err, "F")
	_, err = signature.FromStructs[string, reviewOut]()
	assert.ErrorContains(t, err, "not a struct")
	_ = withUnexported{}.y
}

func TestNew(t *testing.T) {
	sig, err := signature.New("", []signature.Field{
		{Name: "question"},
		{Name: "context", Type: reflect.TypeFor[[]string](), Desc: "facts"},
	}, []signature.Field{
		{Name: "answer", Type: reflect.TypeFor[int](), Constraints: []signature.Constraint{{Op: signature.GE, Value: 0}}},
	})
	require.NoError(t, err)
	assert.Equal(t, "Given the fields `question`, `context`, produce the fields `answer`.", sig.Instructions())
	assert.Equal(t, "question, context: list[str] -> answer: int", sig.String())
	assert.Equal(t, "Context:", sig.Input(1).Prefix)
	assert.Equal(t, reflect.TypeFor[string](), sig.Input(0).Type)
	assert.Equal(t, "greater than or equal to: 0", sig.Output(0).Constraints[0].String())

	lit, err := signature.Literal("yes", "no")
	require.NoError(t, err)
	sig, err = signature.New("Judge.", []signature.Field{{Name: "claim"}}, []signature.Field{{Name: "verdict", Spec: lit}})
	require.NoError(t, err)
	assert.Equal(t, "Literal['yes', 'no']", sig.Output(0).Spec.String())
	assert.Equal(t, reflect.TypeFor[string](), sig.Output(0).Type)
}

func TestNewErrors(t *testing.T) {
	tests := []struct {
		name    string
		in, out []signature.Field
		field   string
		want    error
	}{
		{"duplicate", []signature.Field{{Name: "a"}}, []signature.Field{{Name: "a"}}, "a", signature.ErrDuplicate},
		{"bad name", []signature.Field{{Name: "a b"}}, []signature.Field{{Name: "c"}}, "a b", signature.ErrBadName},
		{"empty name", []signature.Field{{Name: ""}}, []signature.Field{{Name: "c"}}, "", signature.ErrBadName},
		{"chan", []signature.Field{{Name: "a", Type: reflect.TypeFor[chan int]()}}, []signature.Field{{Name: "c"}}, "a", signature.ErrUnsupported},
		{"func", nil, []signature.Field{{Name: "c", Type: reflect.TypeFor[func()]()}}, "c", signature.ErrUnsupported},
		{"map key", nil, []signature.Field{{Name: "c", Type: reflect.TypeFor[map[bool]int]()}}, "c", signature.ErrUnsupported},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := signature.New("", tt.in, tt.out)
			var fe *signature.FieldError
			require.ErrorAs(t, err, &fe)
			assert.Equal(t, tt.field, fe.Field)
			assert.ErrorIs(t, err, tt.want)
		})
	}
}

func TestInferPrefix(t *testing.T) {
	for name, want := range map[string]string{
		"question":        "Question",
		"context_list":    "Context List",
		"camelCaseName":   "Camel Case Name",
		"HTTPResponse":    "HTTP Response",
		"tool_calls":      "Tool Calls",
		"answer2":         "Answer 2",
		"some_XML_parser": "Some XML Parser",
	} {
		assert.Equal(t, want, signature.InferPrefix(name), name)
	}
}

func TestEdits(t *testing.T) {
	base, err := signature.Parse("question -> answer: int")
	require.NoError(t, err)
	orig := base.String()

	cot, err := base.Prepend(signature.Output, signature.Field{Name: "reasoning", Desc: "${reasoning}"})
	require.NoError(t, err)
	assert.Equal(t, "question -> reasoning, answer: int", cot.String())
	assert.Equal(t, "", cot.Output(0).Desc)
	assert.Equal(t, "Reasoning:", cot.Output(0).Prefix)
	assert.Equal(t, base.Instructions(), cot.Instructions())

	app, err := base.Append(signature.Input, signature.Field{Name: "context", Type: reflect.TypeFor[[]string]()})
	require.NoError(t, err)
	assert.Equal(t, "question, context: list[str] -> answer: int", app.String())

	ins, err := app.Insert(signature.Input, -2, signature.Field{Name: "hint"})
	require.NoError(t, err)
	assert.Equal(t, "question, hint, context: list[str] -> answer: int", ins.String())

	_, err = base.Insert(signature.Input, 5, signature.Field{Name: "x"})
	assert.Error(t, err)
	_, err = base.Append(signature.Output, signature.Field{Name: "question"})
	assert.ErrorIs(t, err, signature.ErrDuplicate)

	del := ins.Delete("hint").Delete("missing")
	assert.Equal(t, "question, context: list[str] -> answer: int", del.String())

	upd, err := base.Update("answer", func(f *signature.Field) {
		f.Desc = "the number"
		f.Type = reflect.TypeFor[float64]()
	})
	require.NoError(t, err)
	assert.Equal(t, "question -> answer: float", upd.String())
	assert.Equal(t, "the number", upd.Output(0).Desc)
	_, err = base.Update("nope", func(f *signature.Field) {})
	assert.Error(t, err)

	assert.Equal(t, "New.", base.WithInstructions("New.").Instructions())
	assert.Equal(t, base.Instructions()+"\n\nMore.", base.AppendInstructions("More.").Instructions())

	// The original is untouched by every edit.
	assert.Equal(t, orig, base.String())
	assert.Equal(t, "", base.Output(0).Desc)
	outs := base.Outputs()
	outs[0].Name = "mutated"
	assert.Equal(t, "answer", base.Output(0).Name)
}

func TestState(t *testing.T) {
	sig, err := signature.Parse("question -> reasoning, answer")
	require.NoError(t, err)
	st := sig.State()
	b, err := json.Marshal(st)
	require.NoError(t, err)
	assert.Equal(t, `{"instructions":"Given the fields `+"`question`"+`, produce the fields `+"`reasoning`, `answer`"+`.","fields":[{"prefix":"Question:","description":"${question}"},{"prefix":"Reasoning:","description":"${reasoning}"},{"prefix":"Answer:","description":"${answer}"}]}`, string(b))

	// A state optimized in Python.
	var saved signature.State
	require.NoError(t, json.Unmarshal([]byte(`{"instructions": "Think, then answer tersely.", "fields": [
		{"prefix": "Q:", "description": "a trivia question"},
		{"prefix": "Reasoning: Let's think step by step in order to", "description": "${reasoning}"},
		{"prefix": "A:", "description": "often between 1 and 5 words"}]}`), &saved))
	opt, err := sig.WithState(saved)
	require.NoError(t, err)
	assert.Equal(t, "Think, then answer tersely.", opt.Instructions())
	assert.Equal(t, "Q:", opt.Input(0).Prefix)
	assert.Equal(t, "", opt.Output(0).Desc)
	assert.Equal(t, "often between 1 and 5 words", opt.Output(1).Desc)
	assert.Equal(t, saved, opt.State())

	_, err = sig.WithState(signature.State{Fields: saved.Fields[:2]})
	assert.ErrorContains(t, err, "2 fields")
}

func TestPromptSchema(t *testing.T) {
	type summary struct {
		Headline string  `json:"headline"`
		Score    float64 `json:"score"`
	}
	sig, err := signature.Parse("x -> s: Summary, l: list[str], d: dict[str, int], o: Optional[int], t: list[Literal['a', 'b']], a: Any, u: set[str]",
		signature.WithTypes(map[string]reflect.Type{"Summary": reflect.TypeFor[summary]()}))
	require.NoError(t, err)
	want := []string{
		`{"type": "object", "properties": {"headline": {"type": "string", "title": "Headline"}, "score": {"type": "number", "title": "Score"}}, "required": ["headline", "score"], "title": "Summary"}`,
		`{"type": "array", "items": {"type": "string"}}`,
		`{"type": "object", "additionalProperties": {"type": "integer"}}`,
		`{"anyOf": [{"type": "integer"}, {"type": "null"}]}`,
		`{"type": "array", "items": {"type": "string", "enum": ["a", "b"]}}`,
		`{}`,
		`{"type": "array", "items": {"type": "string"}, "uniqueItems": true}`,
	}
	for i, w := range want {
		got, err := sig.Output(i).Spec.PromptSchema()
		require.NoError(t, err)
		assertSameJSON(t, w, got, sig.Output(i).Name)
	}
}

func TestConcurrentUse(t *testing.T) {
	type inner struct {
		A int `json:"a"`
	}
	sig, err := signature.Parse("x -> y: Inner", signature.WithTypes(map[string]reflect.Type{"Inner": reflect.TypeFor[inner]()}))
	require.NoError(t, err)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			spec := sig.Output(0).Spec
			if _, err := spec.Fields(); err != nil {
				t.Error(err)
			}
			if _, err := spec.PromptSchema(); err != nil {
				t.Error(err)
			}
			_ = sig.String()
			_, _ = sig.Prepend(signature.Output, signature.Field{Name: "reasoning"})
		}()
	}
	wg.Wait()
}
