package predict_test

import (
	"context"
	"testing"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/predict"
)

// cannedLM answers in process with one reply: what a call allocates is
// then the library's alone.
type cannedLM struct{ reply string }

func (c *cannedLM) CreateChatCompletion(context.Context, openai.ChatCompletionRequest) (openai.ChatCompletionResponse, error) {
	return openai.ChatCompletionResponse{Choices: []openai.ChatCompletionChoice{{
		Message:      openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, Content: c.reply},
		FinishReason: openai.FinishReasonStop,
	}}}, nil
}

type qaIn struct {
	Question string `json:"question"`
	Context  string `json:"context"`
}

type qaOut struct {
	Reasoning string `json:"reasoning"`
	Answer    string `json:"answer"`
}

// TestTypedCallCost: what a typed Predict.Call allocates beyond the
// adapter.Call it makes (issue 32: allocation is most of a typed call's
// CPU). Before: 9 more allocations than the Call (the module options'
// config and the call's option list on every call, a slice for the one
// Out); now the config is made for a module option only, a call without
// options shares the module's option list, and Call decodes every choice
// without a slice.
func TestTypedCallCost(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector changes allocation counts")
	}
	lm := &cannedLM{reply: "[[ ## reasoning ## ]]\nIt boils at 100.\n\n[[ ## answer ## ]]\n100 °C\n\n[[ ## completed ## ]]"}
	ctx := context.Background()
	in := qaIn{Question: "At what temperature does water boil?", Context: "Water boils at 100 °C at sea level."}
	p, err := predict.New[qaIn, qaOut](adapter.NoRetry())
	require.NoError(t, err)
	p, err = p.WithDemos(predict.Demo[qaIn, qaOut]{In: qaIn{"q", "c"}, Out: qaOut{"r", "a"}})
	require.NoError(t, err)
	typed := testing.AllocsPerRun(100, func() {
		out, _, err := p.Call(ctx, lm, in)
		if err != nil || out.Answer != "100 °C" {
			t.Fatal(out, err)
		}
	})
	sig, demos := p.Module().Signature(), p.Module().Demos()
	vals, err := adapter.ValuesOf(in)
	require.NoError(t, err)
	untyped := testing.AllocsPerRun(100, func() {
		if _, err := adapter.Call(ctx, lm, sig, demos, vals, adapter.NoRetry()); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("allocations per call: typed Predict %v, adapter.Call %v", typed, untyped)
	// The inputs as Values: the map (its header and its slots) and the
	// struct boxed, its strings pointing into the box. The decoded Out
	// stays on the stack (its fields are strings exactly), and a module
	// run no trace hears of puts nothing on its context (issue 48: 5 more
	// allocations than the Call before).
	assert.LessOrEqual(t, typed-untyped, 3.0)
}
