package predict_test

import (
	"context"
	"iter"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/lmtest"
	"github.com/sigwire/adapter/predict"
	"github.com/sigwire/adapter/signature"
)

// lastErr drains a stream and returns its first error.
func lastErr[T any](seq iter.Seq2[T, error]) error {
	for _, err := range seq {
		if err != nil {
			return err
		}
	}
	return nil
}

// TestNilContext: every module's Call and Stream refuse a nil context with
// the error adapter.Call gives, before any request, and never panic.
func TestNilContext(t *testing.T) {
	srv := lmtest.NewServer()
	defer srv.Close()
	lm := srv.Client()
	var ctx context.Context // nil: what is tested
	_, want := adapter.Call(ctx, lm, mustSig(t, "question -> answer"), nil, adapter.Values{"question": "q"})
	require.Error(t, want)

	p, err := predict.New[Question, Answer]()
	require.NoError(t, err)
	cot, err := predict.NewChainOfThought[Question, Answer]()
	require.NoError(t, err)
	m := predict.NewModule(mustSig(t, "question -> answer"))
	agent := searchAgent(t)
	in := adapter.Values{"question": "q"}
	errs := map[string]error{}
	_, _, errs["Predict.Call"] = p.Call(ctx, lm, Question{"q"})
	errs["Predict.Stream"] = lastErr(p.Stream(ctx, lm, Question{"q"}))
	_, _, _, errs["ChainOfThought.Call"] = cot.Call(ctx, lm, Question{"q"})
	errs["ChainOfThought.Stream"] = lastErr(cot.Stream(ctx, lm, Question{"q"}))
	_, errs["Module.Call"] = m.Call(ctx, lm, in)
	errs["Module.Stream"] = lastErr(m.Stream(ctx, lm, in))
	_, errs["ReAct.Call"] = agent.Call(ctx, lm, in)
	errs["ReAct.Stream"] = lastErr(agent.Stream(ctx, lm, in))
	for name, err := range errs {
		assert.EqualError(t, err, want.Error(), name)
	}
	assert.Empty(t, srv.Requests())
}

// TestConstructionErrors: a typed module with nothing to ask for, or a
// ChainOfThought over an output named reasoning, is refused when built, with
// an error that says what to do.
func TestConstructionErrors(t *testing.T) {
	_, err := predict.New[Question, struct{}]()
	assert.ErrorContains(t, err, "has no output fields")
	type withReasoning struct {
		Reasoning string `json:"reasoning"`
		Answer    string `json:"answer"`
	}
	_, err = predict.NewChainOfThought[Question, withReasoning]()
	assert.ErrorContains(t, err, "ChainOfThought adds its own reasoning output")
	assert.ErrorContains(t, err, "duplicate field name")
}

func mustSig(t *testing.T, s string) *signature.Signature {
	t.Helper()
	sig, err := signature.Parse(s)
	require.NoError(t, err)
	return sig
}
