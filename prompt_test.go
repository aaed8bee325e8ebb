package adapter_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/lmtest"
	"github.com/sigwire/adapter/signature"
)

// withPrompt returns the golden adapter a with prompt p, or nil for an
// adapter that takes none.
func withPrompt(a adapter.Adapter, p *adapter.Prompt) adapter.Adapter {
	switch a := a.(type) {
	case adapter.Chat:
		a.Options.Prompt = p
		return a
	case adapter.JSON:
		a.Options.Prompt = p
		return a
	case adapter.XML:
		a.Options.Prompt = p
		return a
	case adapter.BAML:
		a.Options.Prompt = p
		return a
	}
	return nil
}

// TestPromptUnchangedIsDSPy: a Prompt whose pieces give back the text they
// are handed builds the system message from the pieces, and that message
// is the one DSPy writes (TestGoldenFormat holds the adapters to DSPy's
// text), for every golden format case of every adapter taking a Prompt.
func TestPromptUnchangedIsDSPy(t *testing.T) {
	same := func(_ *signature.Signature, text string) string { return text }
	identity := &adapter.Prompt{FieldDescription: same, FieldStructure: same, TaskDescription: same, OutputRequirements: same}
	n := 0
	for _, c := range goldenCases(t, "testdata/dspy_golden*.json") {
		a, ok := goldenAdapters[c.Adapter]
		if c.Kind != "format" || !ok || withPrompt(a, nil) == nil {
			continue
		}
		t.Run(c.ID, func(t *testing.T) {
			sig := buildSig(t, &c)
			demos, inputs := caseValues(t, sig, &c)
			want, wantErr := a.Format(sig, demos, inputs)
			for _, p := range []*adapter.Prompt{{}, identity} {
				got, err := withPrompt(a, p).Format(sig, demos, inputs)
				if wantErr != nil {
					assert.EqualError(t, err, wantErr.Error())
					continue
				}
				require.NoError(t, err)
				assert.Equal(t, want, got)
			}
			n++
		})
	}
	assert.Greater(t, n, 20, "golden format cases compared")
}

// TestPromptPieces: each piece changes its own part of the prompt and
// nothing else, for every adapter taking a Prompt.
func TestPromptPieces(t *testing.T) {
	sig := mustParse(t, "question -> answer: str, score: int")
	sig = sig.WithInstructions("Answer the question.")
	demos := []adapter.Values{{"question": "1+1?", "answer": "2", "score": 5}}
	in := adapter.Values{"question": "2+2?"}
	for _, a := range []adapter.Adapter{adapter.Chat{}, adapter.JSON{}, adapter.XML{}, adapter.BAML{}} {
		t.Run(a.Name(), func(t *testing.T) {
			base, err := a.Format(sig, demos, in)
			require.NoError(t, err)
			sys, last := base[0].Content, base[len(base)-1].Content

			// The task description, wrapped: the rest of the system
			// message is unchanged.
			got, err := withPrompt(a, &adapter.Prompt{
				TaskDescription: func(s *signature.Signature, text string) string {
					assert.Same(t, sig, s)
					return text + "\n        Answer in French."
				},
			}).Format(sig, demos, in)
			require.NoError(t, err)
			assert.Equal(t, sys+"\n        Answer in French.", got[0].Content)
			assert.Equal(t, base[1:], got[1:])

			// The field description left out: the message starts at the
			// structure, and still ends with the task.
			got, err = withPrompt(a, &adapter.Prompt{
				FieldDescription: func(*signature.Signature, string) string { return "" },
			}).Format(sig, demos, in)
			require.NoError(t, err)
			_, rest, ok := strings.Cut(sys, "\nAll interactions")
			require.True(t, ok, sys)
			assert.Equal(t, "All interactions"+rest, got[0].Content)

			// The structure replaced.
			got, err = withPrompt(a, &adapter.Prompt{
				FieldStructure: func(_ *signature.Signature, text string) string {
					assert.True(t, strings.HasPrefix(text, "All interactions will be structured"), text)
					return "Use the format of the examples."
				},
			}).Format(sig, demos, in)
			require.NoError(t, err)
			desc, _, _ := strings.Cut(sys, "\nAll interactions")
			_, task, _ := strings.Cut(sys, "\nIn adhering to this structure")
			assert.Equal(t, desc+"\nUse the format of the examples.\nIn adhering to this structure"+task, got[0].Content)

			// The output requirements: only the request's user message
			// changes; demos never carry them.
			var reminder string
			got, err = withPrompt(a, &adapter.Prompt{
				OutputRequirements: func(_ *signature.Signature, text string) string {
					reminder = text
					return "Reply in the format above."
				},
			}).Format(sig, demos, in)
			require.NoError(t, err)
			require.NotEmpty(t, reminder)
			assert.True(t, strings.HasSuffix(last, reminder), "the adapter's reminder is handed over: %q", reminder)
			assert.Equal(t, strings.TrimSuffix(last, reminder)+"Reply in the format above.", got[len(got)-1].Content)
			assert.Equal(t, base[:len(base)-1], got[:len(got)-1])

			got, err = withPrompt(a, &adapter.Prompt{
				OutputRequirements: func(*signature.Signature, string) string { return "" },
			}).Format(sig, demos, in)
			require.NoError(t, err)
			assert.Equal(t, strings.TrimSpace(strings.TrimSuffix(last, reminder)), got[len(got)-1].Content)
		})
	}
}

// TestPromptFallback: after a reply Chat cannot read, the JSON fallback
// keeps the Prompt's field and task descriptions but writes its own
// structure and requirements, end to end through go-openai.
func TestPromptFallback(t *testing.T) {
	srv := lmtest.NewServer(lmtest.Text("I would rather not say."), lmtest.Text(`{"answer": 4}`))
	defer srv.Close()
	sig := mustParse(t, "question -> answer: int")
	p := &adapter.Prompt{
		TaskDescription: func(_ *signature.Signature, text string) string { return text + "\n        Be brief." },
		FieldStructure:  func(*signature.Signature, string) string { return "Write [[ ## answer ## ]] then the answer." },
		OutputRequirements: func(*signature.Signature, string) string {
			return "Start with [[ ## answer ## ]]."
		},
	}
	res, err := adapter.Call(t.Context(), srv.Client(), sig, nil, adapter.Values{"question": "2+2?"}, adapter.UseAdapter(adapter.Chat{Options: adapter.Options{Prompt: p}}))
	require.NoError(t, err)
	assert.Equal(t, "json", res.Adapter)
	assert.Equal(t, 4, res.Outputs[0]["answer"])
	reqs := srv.Requests()
	require.Len(t, reqs, 2)
	chat, json := reqs[0].Chat.Messages, reqs[1].Chat.Messages
	assert.Contains(t, chat[0].Content, "Write [[ ## answer ## ]] then the answer.")
	assert.True(t, strings.HasSuffix(chat[0].Content, "Be brief."), chat[0].Content)
	assert.True(t, strings.HasSuffix(chat[len(chat)-1].Content, "Start with [[ ## answer ## ]]."))

	assert.True(t, strings.HasSuffix(json[0].Content, "Be brief."), json[0].Content)
	assert.Contains(t, json[0].Content, "Outputs will be a JSON object")
	assert.NotContains(t, json[0].Content, "Write [[ ## answer ## ]]")
	assert.Contains(t, json[len(json)-1].Content, "Respond with a JSON object")
}
