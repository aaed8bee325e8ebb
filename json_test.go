package adapter_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/lmtest"
	"github.com/sigwire/adapter/signature"
)

func TestJSONParseRecovery(t *testing.T) {
	sig := mustParse(t, "question -> answer, confidence: float")
	want := adapter.Values{"answer": "Paris", "confidence": 0.9}
	for name, reply := range map[string]string{
		"strict":          `{"answer": "Paris", "confidence": 0.9}`,
		"prose":           `Sure, here it is: {"answer": "Paris", "confidence": 0.9} Hope it helps!`,
		"fence":           "```json\n{\"answer\": \"Paris\", \"confidence\": 0.9}\n```",
		"wrapper json":    `{"json": {"answer": "Paris", "confidence": 0.9}}`,
		"wrapper props":   `{"properties": {"answer": "Paris", "confidence": 0.9}}`,
		"key case":        `{"Answer": "Paris", "CONFIDENCE": 0.9}`,
		"stringified num": `{"answer": "Paris", "confidence": "0.9"}`,
		"think":           "<think>{\"answer\": \"Lyon\"}</think>{\"answer\": \"Paris\", \"confidence\": 0.9}",
		"trailing comma":  `{"answer": "Paris", "confidence": 0.9,}`,
		"single quotes":   `{'answer': 'Paris', 'confidence': 0.9}`,
		"missing brace":   `{"answer": "Paris", "confidence": 0.9`,
		"renamed key":     `{"final_answer": "Paris", "confidence": 0.9}`,
	} {
		t.Run(name, func(t *testing.T) {
			got, err := adapter.JSON{}.Parse(sig, reply)
			require.NoError(t, err)
			assert.Equal(t, want, got)
		})
	}
}

func TestJSONParseErrors(t *testing.T) {
	sig := mustParse(t, "question -> answer, confidence: float")
	for name, tt := range map[string]struct {
		reply string
		err   error
	}{
		"truncated string": {`{"answer": "The three largest cities are Sydney, Mel`, adapter.ErrTruncated},
		"prose only":       {`I cannot answer that.`, nil},
		"missing field":    {`{"answer": "Paris"}`, adapter.ErrMissingField},
		"two renames":      {`{"answer": "Paris", "conf": 0.9, "confidence_score": 0.8}`, adapter.ErrMissingField},
		"bad float":        {`{"answer": "Paris", "confidence": "high"}`, nil},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := adapter.JSON{}.Parse(sig, tt.reply)
			var pe *adapter.ParseError
			require.ErrorAs(t, err, &pe)
			assert.Equal(t, "json", pe.Adapter)
			assert.Equal(t, tt.reply, pe.Completion)
			if tt.err != nil {
				assert.ErrorIs(t, err, tt.err)
			}
		})
	}
}

func TestJSONBareArray(t *testing.T) {
	got, err := adapter.JSON{}.Parse(mustParse(t, "q -> items: list[str]"), `["a", "b"]`)
	require.NoError(t, err)
	assert.Equal(t, adapter.Values{"items": []string{"a", "b"}}, got)
}

func TestJSONTiers(t *testing.T) {
	sig := mustParse(t, "question -> answer, score: float")
	reply := `{"answer": "Paris", "score": 0.5}`
	run := func(lm adapter.LM, model string) (*adapter.Result, error) {
		return adapter.Call(context.Background(), lm, sig, nil, adapter.Values{"question": "q"},
			adapter.UseAdapter(adapter.JSON{}), adapter.WithRequest(openai.ChatCompletionRequest{Model: model}))
	}
	format := func(r lmtest.Request) string {
		var body struct {
			RF *struct {
				Type       string          `json:"type"`
				JSONSchema json.RawMessage `json:"json_schema"`
			} `json:"response_format"`
		}
		require.NoError(t, json.Unmarshal(r.Body, &body))
		if body.RF == nil {
			return ""
		}
		return body.RF.Type
	}

	t.Run("structured outputs", func(t *testing.T) {
		srv := lmtest.NewServer(lmtest.Text(reply))
		defer srv.Close()
		res, err := run(srv.Client(), "gpt-4o-mini")
		require.NoError(t, err)
		assert.Equal(t, adapter.ModeJSONSchema, res.Mode)
		assert.Equal(t, "json_schema", format(srv.Requests()[0]))
		assert.Contains(t, string(srv.Requests()[0].Body), `"strict":true`)
	})
	t.Run("declared json mode", func(t *testing.T) {
		srv := lmtest.NewServer(lmtest.Text(reply))
		defer srv.Close()
		res, err := run(adapter.WithCapabilities(srv.Client(), adapter.Capabilities{JSONMode: true}), "llama3")
		require.NoError(t, err)
		assert.Equal(t, adapter.ModeJSONObject, res.Mode)
		assert.Equal(t, "json_object", format(srv.Requests()[0]))
	})
	t.Run("unknown model", func(t *testing.T) {
		srv := lmtest.NewServer(lmtest.Text(reply))
		defer srv.Close()
		res, err := run(srv.Client(), "some-local-model")
		require.NoError(t, err)
		assert.Equal(t, adapter.ModePrompt, res.Mode)
		assert.Equal(t, "", format(srv.Requests()[0]))
	})
	t.Run("schema rejected moves down once", func(t *testing.T) {
		srv := lmtest.NewServer(
			lmtest.Error(http.StatusBadRequest, `{"error":{"message":"Invalid schema for response_format 'DSPyProgramOutputs'","type":"invalid_request_error","param":"response_format"}}`),
			lmtest.Text(reply))
		defer srv.Close()
		res, err := run(srv.Client(), "gpt-4o-mini")
		require.NoError(t, err)
		assert.Equal(t, adapter.ModeJSONObject, res.Mode)
		assert.Equal(t, 2, res.Calls)
		reqs := srv.Requests()
		require.Len(t, reqs, 2)
		assert.Equal(t, "json_schema", format(reqs[0]))
		assert.Equal(t, "json_object", format(reqs[1]))
	})
	t.Run("map output is not strict", func(t *testing.T) {
		srv := lmtest.NewServer(lmtest.Text(`{"scores": {"a": 1}}`))
		defer srv.Close()
		res, err := adapter.Call(context.Background(), srv.Client(), mustParse(t, "q -> scores: dict[str, int]"), nil, adapter.Values{"q": "x"},
			adapter.UseAdapter(adapter.JSON{}), adapter.WithRequest(openai.ChatCompletionRequest{Model: "gpt-4o"}))
		require.NoError(t, err)
		assert.Equal(t, adapter.ModeJSONObject, res.Mode)
		assert.Equal(t, map[string]int{"a": 1}, res.Outputs[0]["scores"])
	})
}

func TestChatFallsBackToJSON(t *testing.T) {
	sig := mustParse(t, "question -> answer: int")
	srv := lmtest.NewServer(lmtest.Text("The answer is forty-two."), lmtest.Text(`{"answer": 42}`))
	defer srv.Close()
	res, err := adapter.Call(context.Background(), srv.Client(), sig, nil, adapter.Values{"question": "q"})
	require.NoError(t, err)
	assert.Equal(t, "json", res.Adapter)
	assert.Equal(t, 2, res.Calls)
	assert.Equal(t, 42, res.Outputs[0]["answer"])
	_, err = adapter.Call(context.Background(), srv.Client(), sig, nil, adapter.Values{"question": "q"}, adapter.UseAdapter(adapter.Chat{Options: adapter.Options{NoFallback: true}}), adapter.NoRetry())
	assert.Error(t, err)
}

// FuzzJSONParse: the JSON parser never panics, returns typed errors, and
// what it returns has the output fields' Go types.
func FuzzJSONParse(f *testing.F) {
	addCorpusSeeds(f, "json")
	for _, s := range []string{
		`{"answer": "Paris", "score": 0.5}`,
		"Here:\n```json\n{\"answer\": \"x\", \"score\": \"1,000\"}\n```",
		`{"json": "{\"answer\": \"a\", \"score\": 1}"}`,
		`{'answer': 'x', 'score': None,}`,
		`{"answer": "cut`,
		`{"answer": "a"} {"answer": "b"}`,
	} {
		f.Add(s)
	}
	sig := must(signature.Parse("question -> answer, score: Optional[float]"))
	f.Fuzz(func(t *testing.T, text string) {
		vals, err := adapter.JSON{}.Parse(sig, text)
		if err != nil {
			var pe *adapter.ParseError
			if !errors.As(err, &pe) || pe.Completion != text {
				t.Fatalf("untyped error or raw text lost %T: %v", err, err)
			}
			return
		}
		if _, ok := vals["answer"].(string); !ok {
			t.Fatalf("answer is %T", vals["answer"])
		}
		if _, ok := vals["score"].(*float64); !ok {
			t.Fatalf("score is %T", vals["score"])
		}
	})
}

var benchJSONReply = `{"reasoning": "The context states that water boils at 100 degrees Celsius at sea level.", "answer": "100 °C"}`

// BenchmarkJSONParse is the JSON adapter's happy path; compare with
// BenchmarkJSONDecodeBaseline, a plain encoding/json decode of the same
// reply into a struct.
func BenchmarkJSONParse(b *testing.B) {
	benchParse(b, adapter.JSON{}, benchJSONReply)
}

func BenchmarkJSONDecodeBaseline(b *testing.B) {
	b.SetBytes(int64(len(benchJSONReply)))
	b.ReportAllocs()
	for b.Loop() {
		var v struct {
			Reasoning string `json:"reasoning"`
			Answer    string `json:"answer"`
		}
		if err := json.Unmarshal([]byte(benchJSONReply), &v); err != nil {
			b.Fatal(err)
		}
	}
}

type shapeColor string

func (shapeColor) EnumValues() []string { return []string{"red", "blue"} }

type shapeNode struct {
	Label    string      `json:"label"`
	Color    shapeColor  `json:"color"`
	Weight   *float64    `json:"weight"`
	Children []shapeNode `json:"children"`
}

type shapeIn struct {
	Text string `json:"text"`
}

type shapeOut struct {
	Root  shapeNode   `json:"root"`
	Extra []shapeNode `json:"extra"`
	Note  *string     `json:"note"`
}

// TestJSONStrictRequestShape checks the response_format the JSON adapter
// sends for nested structs, pointers, slices, enums and a recursive type,
// against OpenAI's strict-mode rules, and that the reply fills the structs.
func TestJSONStrictRequestShape(t *testing.T) {
	sig, err := signature.FromStructs[shapeIn, shapeOut]()
	require.NoError(t, err)
	reply := `{"root": {"label": "a", "color": "RED", "weight": null, "children": [{"label": "b", "color": "blue", "weight": 2, "children": []}]}, "extra": [], "note": null}`
	srv := lmtest.NewServer(lmtest.Text(reply))
	defer srv.Close()
	res, err := adapter.Call(context.Background(), srv.Client(), sig, nil, adapter.Values{"text": "t"},
		adapter.UseAdapter(adapter.JSON{}), adapter.WithRequest(openai.ChatCompletionRequest{Model: "gpt-4.1"}))
	require.NoError(t, err)
	assert.Equal(t, adapter.ModeJSONSchema, res.Mode)
	two := 2.0
	assert.Equal(t, shapeNode{Label: "a", Color: "red", Children: []shapeNode{{Label: "b", Color: "blue", Weight: &two, Children: []shapeNode{}}}}, res.Outputs[0]["root"])
	assert.Equal(t, (*string)(nil), res.Outputs[0]["note"])

	var body struct {
		RF struct {
			Type       string `json:"type"`
			JSONSchema struct {
				Name   string         `json:"name"`
				Strict bool           `json:"strict"`
				Schema map[string]any `json:"schema"`
			} `json:"json_schema"`
		} `json:"response_format"`
	}
	require.NoError(t, json.Unmarshal(srv.Requests()[0].Body, &body))
	assert.Equal(t, "json_schema", body.RF.Type)
	assert.True(t, body.RF.JSONSchema.Strict)
	schema := body.RF.JSONSchema.Schema
	assert.Equal(t, []any{"root", "extra", "note"}, schema["required"])
	walkStrict(t, schema, "$")
	node := schema["$defs"].(map[string]any)["shapeNode"].(map[string]any)
	props := node["properties"].(map[string]any)
	assert.Equal(t, map[string]any{"type": "string", "enum": []any{"red", "blue"}}, props["color"])
	assert.Equal(t, map[string]any{"anyOf": []any{map[string]any{"type": "number"}, map[string]any{"type": "null"}}}, props["weight"])
	assert.Equal(t, map[string]any{"type": "array", "items": map[string]any{"$ref": "#/$defs/shapeNode"}}, props["children"])
}

// walkStrict asserts OpenAI's strict-mode rules on every schema node.
func walkStrict(t *testing.T, n map[string]any, path string) {
	t.Helper()
	if _, ok := n["$ref"]; ok {
		assert.Len(t, n, 1, "%s: $ref with siblings", path)
	}
	if n["type"] == "object" {
		props, _ := n["properties"].(map[string]any)
		assert.Equal(t, false, n["additionalProperties"], path)
		assert.Len(t, n["required"], len(props), "%s: every property required", path)
		for k, p := range props {
			walkStrict(t, p.(map[string]any), path+"."+k)
		}
	}
	if items, ok := n["items"].(map[string]any); ok {
		walkStrict(t, items, path+"[]")
	}
	for _, a := range asSlice(n["anyOf"]) {
		walkStrict(t, a.(map[string]any), path+"|")
	}
	if defs, ok := n["$defs"].(map[string]any); ok {
		for k, d := range defs {
			walkStrict(t, d.(map[string]any), "$defs."+k)
		}
	}
}

func asSlice(v any) []any {
	s, _ := v.([]any)
	return s
}

// TestJSONNeverGuessesNumbers: a number cut or malformed, a member left
// after a comma, a word cut short are errors naming no made-up value.
func TestJSONNeverGuessesNumbers(t *testing.T) {
	sig := mustParse(t, "q -> answer: Optional[str], n: Optional[int], ns: Optional[list[int]], ok: Optional[bool]")
	for _, text := range []string{`{"n": -`, `{"n": -}`, `{"ns": [1, -]}`, `{"n": 1.5e`, `{"answer": "x", `, `{"ok": tru`, "```json\n{\"n\": 1e}\n```"} {
		vals, err := adapter.JSON{}.Parse(sig, text)
		var pe *adapter.ParseError
		assert.ErrorAs(t, err, &pe, text)
		assert.Nil(t, vals, text)
	}
	for _, raw := range []string{"[1, -]", "[1, 2e]", "[1, 2e-]"} {
		_, err := adapter.ParseValue(raw, sig.Output(2))
		assert.Error(t, err, raw)
	}
}

// TestJSONUnreadableSaysWhy: a JSON reply that cannot be read says why —
// over the repair limit, a number repair would guess, too deep — and
// keeps the reply. It said only "the reply's JSON cannot be read".
func TestJSONUnreadableSaysWhy(t *testing.T) {
	sig := mustParse(t, "q -> a: dict[str, Any]")
	wide := `{"a": {"k": "` + strings.Repeat("x", 20000) + `"},}`
	for reply, why := range map[string]string{
		wide:                 "16384-byte repair limit",
		`{"a": {"x": 1.5e}}`: `"1.5e" is not a number`,
		`{"a": ` + strings.Repeat("[", 600) + `1` + strings.Repeat("]", 600) + `,}`: "nested over",
	} {
		_, err := adapter.JSON{}.Parse(sig, reply)
		var pe *adapter.ParseError
		if assert.ErrorAs(t, err, &pe, "%.40q", reply) {
			assert.Contains(t, err.Error(), why, "%.40q", reply)
			assert.Equal(t, reply, pe.Completion)
		}
	}
}

// TestJSONTrailingCommaAtEnd: a trailing comma after complete members,
// then the end of the reply, is read when every output is there (the
// model stopped after a complete answer); with an output still missing it
// is a cut reply.
func TestJSONTrailingCommaAtEnd(t *testing.T) {
	sig := mustParse(t, "q -> answer, n: int")
	got, err := adapter.JSON{}.Parse(sig, `{"answer": "Paris", "n": 1,`)
	require.NoError(t, err)
	assert.Equal(t, adapter.Values{"answer": "Paris", "n": 1}, got)

	got, err = adapter.JSON{}.Parse(sig, "```json\n{\"answer\": \"Paris\", \"n\": 1,\n")
	require.NoError(t, err)
	assert.Equal(t, adapter.Values{"answer": "Paris", "n": 1}, got)

	_, err = adapter.JSON{}.Parse(sig, `{"answer": "Paris",`)
	assert.ErrorIs(t, err, adapter.ErrTruncated)
}
