package predict_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/lmtest"
	"github.com/sigwire/adapter/predict"
)

// TestReActV2LoadVersions: what DSPy's ReActV2 saved loads as it is
// (3.3.1, no version); saved by DSPy 3.5 (whose dspy.ReAct it is) it is a
// *VersionError naming ReActV2 unless WithAnyDSPyVersion, and then runs
// with DSPy 3.5's default adapter, XML with native function calling
// (Result.Profile "dspy-3.5"); a ReAct program (its extract step) is
// ErrWrongModule.
func TestReActV2LoadVersions(t *testing.T) {
	c := readV2Cases(t, "testdata/dspy_reactv2_public.json")[1] // v2_chat_one_tool_then_submit
	require.Equal(t, "v2_chat_one_tool_then_submit", c.ID)
	script := &v2Script{t: t, c: &c}
	a, err := predict.NewReActV2(v2Signature(t, c.Signature), script.tools(c.Tools))
	require.NoError(t, err)
	load := func(version string, opts ...predict.LoadOption) (*predict.ReActV2, error) {
		text := strings.Replace(c.SavedJSONText, `"dspy": "3.3.1"`, `"dspy": "`+version+`"`, 1)
		prog, err := predict.LoadProgram(strings.NewReader(text))
		require.NoError(t, err)
		return a.Load(prog, opts...)
	}
	for _, v := range []string{"3.3.1", "3.4.1"} {
		_, err := load(v)
		require.NoError(t, err, v)
	}
	_, err = load("3.5.0")
	require.ErrorIs(t, err, predict.ErrDSPyVersion)
	var ve *predict.VersionError
	require.ErrorAs(t, err, &ve)
	assert.Equal(t, "ReActV2", ve.Module)
	assert.Contains(t, err.Error(), "predict.WithAnyDSPyVersion()")

	loaded, err := load("3.5.0", predict.WithAnyDSPyVersion())
	require.NoError(t, err)
	srv := lmtest.NewServer(
		nativeStep("", fcall("a", "search_wiki", `{"query": "Eiffel Tower height"}`)),
		nativeStep("", fcall("b", "submit", `{"answer": "330 metres"}`)))
	defer srv.Close()
	ctx := adapter.WithTrace(t.Context(), script.trace())
	res, err := loaded.Call(ctx, toolsLM(srv), adapter.Values{"question": "How tall is the Eiffel Tower?"})
	require.NoError(t, err)
	assert.Equal(t, "330 metres", res.Outputs[0]["answer"])
	assert.Equal(t, "dspy-3.5", res.Profile)
	reqs := srv.Requests()
	require.Len(t, reqs, 2)
	assert.NotEmpty(t, reqs[0].Chat.Tools, "native function calling, DSPy 3.5's default")
	assert.Contains(t, reqs[0].Chat.Messages[0].Content, "<question>\n{question}\n</question>", "the XML adapter")

	_, err = predict.NewReAct(v2Signature(t, c.Signature), script.tools(c.Tools))
	require.NoError(t, err)
	prog, err := predict.ReadProgram("testdata/program.json")
	require.NoError(t, err)
	prog.Predictors["react"] = prog.Predictors["generate_answer.predict"]
	prog.Predictors["extract.predict"] = prog.Predictors["generate_answer.predict"]
	_, err = a.Load(prog)
	assert.ErrorIs(t, err, predict.ErrWrongModule)
}
