package adapter_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/lmtest"
)

// TestGoldenTwoStepParse runs DSPy's TwoStep parse cases end to end: the
// main LM's text goes to the extractor LM, whose request must equal DSPy's
// extraction messages and whose reply gives the values.
func TestGoldenTwoStepParse(t *testing.T) {
	n := 0
	for _, c := range goldenCases(t, "testdata/dspy_golden*.json") {
		if c.Adapter != "twostep" || c.Kind != "parse" {
			continue
		}
		n++
		t.Run(c.ID, func(t *testing.T) {
			sig := buildSig(t, &c)
			main := lmtest.NewServer(lmtest.Text(c.Completion))
			defer main.Close()
			extractor := lmtest.NewServer(lmtest.Text(c.ExtractionCompletion))
			defer extractor.Close()
			in := adapter.Values{}
			for i := range sig.NumInputs() {
				in[sig.Input(i).Name] = "x"
			}
			res, err := adapter.Call(context.Background(), main.Client(), sig, nil, in,
				adapter.UseAdapter(adapter.TwoStep{Extractor: extractor.Client(), ExtractorRequest: openai.ChatCompletionRequest{Model: "small"}}))
			require.NoError(t, err)
			assertValues(t, sig, c.Expected, res.Outputs[0])
			assert.Equal(t, 2, res.Calls)
			assert.Equal(t, "twostep", res.Adapter)

			var want []goldenMessage
			require.NoError(t, json.Unmarshal(c.ExpectedExtractionMessages, &want))
			got := extractor.Requests()[0].Chat
			assert.Equal(t, "small", got.Model)
			require.Len(t, got.Messages, len(want))
			for i, w := range want {
				var text string
				require.NoError(t, json.Unmarshal(w.Content, &text))
				assert.Equal(t, w.Role, got.Messages[i].Role)
				assert.Equal(t, text, got.Messages[i].Content, "extraction message %d", i)
			}
		})
	}
	assert.Positive(t, n)
}

func TestTwoStepFlow(t *testing.T) {
	sig := mustParse(t, "question -> answer: int")
	t.Run("usage summed, trace sees both calls", func(t *testing.T) {
		main := lmtest.NewServer(lmtest.Text("Forty-two, since 6 × 7 = 42.").WithUsage(100, 10))
		defer main.Close()
		extractor := lmtest.NewServer(lmtest.Text("[[ ## answer ## ]]\n42\n\n[[ ## completed ## ]]").WithUsage(20, 5))
		defer extractor.Close()
		var rec recorder
		res, err := adapter.Call(context.Background(), main.Client(), sig, nil, adapter.Values{"question": "6 × 7?"},
			adapter.UseAdapter(adapter.TwoStep{Extractor: extractor.Client()}), adapter.UseTrace(rec.trace()))
		require.NoError(t, err)
		assert.Equal(t, 42, res.Outputs[0]["answer"])
		assert.Equal(t, 2, res.Calls)
		assert.Equal(t, 135, res.Usage.TotalTokens)
		assert.Equal(t, []string{
			"format twostep#1 msgs=2 err=<nil>",
			"lm start twostep#1 stream=false format=none",
			"lm done twostep#1 tokens>0=true err=false",
			"format chat#1 msgs=2 err=<nil>",
			"lm start chat#1 stream=false format=none",
			"lm done chat#1 tokens>0=true err=false",
			"parse chat#1 ok=true",
			"parse twostep#1 ok=true",
		}, rec.events)
		assert.Equal(t, "question: 6 × 7?", main.Requests()[0].Chat.Messages[1].Content, "no markers for the main LM")
	})
	t.Run("extractor failure is a parse error with both texts", func(t *testing.T) {
		main := lmtest.NewServer(lmtest.Text("I am not sure."))
		defer main.Close()
		extractor := lmtest.NewServer(lmtest.Text("no idea"), lmtest.Text("still no idea"))
		defer extractor.Close()
		_, err := adapter.Call(context.Background(), main.Client(), sig, nil, adapter.Values{"question": "q"},
			adapter.UseAdapter(adapter.TwoStep{Extractor: extractor.Client()}))
		var pe *adapter.ParseError
		require.ErrorAs(t, err, &pe)
		assert.Equal(t, "twostep", pe.Adapter)
		assert.Equal(t, "I am not sure.", pe.Completion)
		var inner *adapter.ParseError
		require.ErrorAs(t, pe.Err, &inner)
		assert.Contains(t, err.Error(), "still no idea", "the extractor's reply is in the error")
		assert.ErrorIs(t, err, adapter.ErrMissingField)
		assert.Len(t, extractor.Requests(), 2, "the extractor's Chat adapter fell back to JSON once")
	})
	t.Run("extractor LM error is returned as is", func(t *testing.T) {
		main := lmtest.NewServer(lmtest.Text("42"))
		defer main.Close()
		extractor := lmtest.NewServer(lmtest.ContextLengthExceeded())
		defer extractor.Close()
		_, err := adapter.Call(context.Background(), main.Client(), sig, nil, adapter.Values{"question": "q"},
			adapter.UseAdapter(adapter.TwoStep{Extractor: extractor.Client()}))
		var le *adapter.LMError
		require.ErrorAs(t, err, &le)
		assert.ErrorIs(t, err, adapter.ErrContextWindow)
	})
	t.Run("no extractor", func(t *testing.T) {
		main := lmtest.NewServer(lmtest.Text("42"))
		defer main.Close()
		_, err := adapter.Call(context.Background(), main.Client(), sig, nil, adapter.Values{"question": "q"},
			adapter.UseAdapter(adapter.TwoStep{}))
		assert.True(t, errors.Is(err, adapter.ErrNoExtractor), "%v", err)
		assert.Empty(t, main.Requests(), "fails before any LM call")
	})
}

// TestExtractionSignatureInputName: the extractor's input is "text", as
// in DSPy, even when the main signature has an input of that name; an
// output named "text" moves it aside instead of replacing it.
func TestExtractionSignatureInputName(t *testing.T) {
	for spec, want := range map[string]string{
		"question -> answer":      "text",
		"text -> summary":         "text",
		"q -> text, score: float": "text_",
		"q -> text, text_":        "text__",
	} {
		xsig, err := adapter.ExtractionSignature(mustParse(t, spec))
		require.NoError(t, err, spec)
		require.Equal(t, 1, xsig.NumInputs(), spec)
		assert.Equal(t, want, xsig.Input(0).Name, spec)
		assert.Equal(t, mustParse(t, spec).Outputs(), xsig.Outputs(), spec)
	}
}
