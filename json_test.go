package adapter_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/lmtest"
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
	_, err = adapter.Call(context.Background(), srv.Client(), sig, nil, adapter.Values{"question": "q"}, adapter.UseAdapter(adapter.Chat{NoFallback: true}))
	assert.Error(t, err)
}
