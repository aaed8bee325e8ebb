package adapter_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/lmtest"
)

// TestStructuredOutputsCostPerCall: the JSON adapter's structured-output
// call costs about what the plain JSON call does: the strict schema is
// built once per signature, and each request gets a copy of it (issue
// 32: 54 allocations per call against 17, the schema rebuilt and
// marshalled every time). Allocation counts are exact, unlike time.
func TestStructuredOutputsCostPerCall(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector changes allocation counts")
	}
	count := func(caps *adapter.Capabilities) float64 {
		var lm adapter.LM = &fakeLM{replies: []string{benchJSONReply}}
		if caps != nil {
			lm = adapter.WithCapabilities(lm, *caps)
		}
		opts := []adapter.CallOption{adapter.UseAdapter(adapter.JSON{}), adapter.NoRetry()}
		return testing.AllocsPerRun(50, func() {
			res, err := adapter.Call(context.Background(), lm, benchSig, benchDemos, benchInputs, opts...)
			if err != nil {
				t.Fatal(err)
			}
			if caps != nil && res.Mode != adapter.ModeJSONSchema {
				t.Fatalf("mode %q", res.Mode)
			}
		})
	}
	plain := count(nil)
	structured := count(&adapter.Capabilities{StructuredOutputs: true})
	t.Logf("allocations per call: plain JSON %v, structured outputs %v", plain, structured)
	// The JSON call with 3 demos allocates as the Chat call does (issue
	// 48: 32 allocations in an earlier tree, its reply decoded into an
	// any tree first).
	assert.LessOrEqual(t, plain, 10.0)
	// The response format, its json_schema and the schema's copy.
	assert.LessOrEqual(t, structured, plain+4)
}

// TestStructuredOutputsSchemaOnTheWire: every request over the wire
// carries the same strict schema, byte for byte the one StrictSchema
// builds.
func TestStructuredOutputsSchemaOnTheWire(t *testing.T) {
	sig := mustParse(t, "question, context -> reasoning, answer: int")
	want, err := sig.StrictSchema()
	require.NoError(t, err)
	var got []string
	srv := lmtest.NewServer()
	defer srv.Close()
	srv.Handle(func(r lmtest.Request) lmtest.Reply {
		rf := r.Chat.ResponseFormat
		if rf == nil || rf.JSONSchema == nil {
			got = append(got, "")
		} else {
			b, _ := rf.JSONSchema.Schema.MarshalJSON()
			got = append(got, rf.JSONSchema.Name+" "+string(b))
		}
		return lmtest.Text(`{"reasoning": "r", "answer": 3}`)
	})
	lm := adapter.WithCapabilities(srv.Client(), adapter.Capabilities{StructuredOutputs: true})
	for range 3 {
		res, err := adapter.Call(t.Context(), lm, sig, nil, adapter.Values{"question": "q", "context": "c"}, adapter.UseAdapter(adapter.JSON{}))
		require.NoError(t, err)
		assert.Equal(t, adapter.ModeJSONSchema, res.Mode)
		assert.Equal(t, 3, res.Outputs[0]["answer"])
	}
	for i, g := range got {
		assert.Equal(t, want.Name+" "+string(want.Schema), g, "request %d", i)
	}
}
