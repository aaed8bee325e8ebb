package predict_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/lmtest"
	"github.com/sigwire/adapter/predict"
	"github.com/sigwire/adapter/signature"
	"github.com/sigwire/adapter/types"
)

type queryArgs struct {
	Query string `json:"query"`
}

type titleArgs struct {
	Title string `json:"title"`
}

// TestRealReActPrograms runs the dspy.ReAct programs among the real saved
// files with Go tools: loaded onto NewReAct, both predictors give the
// prompts DSPy 3.3.1 gives (dspy_reference.json), and a run goes end to end
// through lmtest: a tool step, finish, the extract call.
func TestRealReActPrograms(t *testing.T) {
	ref, _ := readReal(t)
	tool := func(name string, fn func(context.Context, queryArgs) (string, error)) types.Tool {
		tl, err := types.NewTool(name, "", fn)
		require.NoError(t, err)
		return tl
	}
	var searched []string
	search := func(_ context.Context, a queryArgs) (string, error) {
		searched = append(searched, a.Query)
		return "Walt Disney Productions produced both films.", nil
	}
	lookup, err := types.NewTool("lookup_wikipedia", "", func(_ context.Context, a titleArgs) (string, error) { return a.Title, nil })
	require.NoError(t, err)

	for _, c := range []struct {
		file, path string // path: where the ReAct sits in the program
		sig        string
		tools      []types.Tool
		inputs     adapter.Values
		toolName   string
		extract    string
		want       adapter.Values
	}{
		{file: "01-dspy-saved_program.json", sig: "question: str -> answer: str",
			tools: []types.Tool{tool("search_wikipedia", search)}, toolName: "search_wikipedia",
			inputs:  adapter.Values{"question": "Which studio produced That Darn Cat!?"},
			extract: "[[ ## reasoning ## ]]\nThe search says Disney.\n\n[[ ## answer ## ]]\nWalt Disney Productions\n\n[[ ## completed ## ]]",
			want:    adapter.Values{"reasoning": "The search says Disney.", "answer": "Walt Disney Productions"}},
		{file: "22-hello-dspy-optimized_react.json", sig: "claim: str -> titles: list[str]",
			tools: []types.Tool{tool("search_wikipedia", search), lookup}, toolName: "search_wikipedia",
			inputs:  adapter.Values{"claim": "That Darn Cat! was made by Disney."},
			extract: "[[ ## reasoning ## ]]\nOne article.\n\n[[ ## titles ## ]]\n[\"That Darn Cat!\"]\n\n[[ ## completed ## ]]",
			want:    adapter.Values{"reasoning": "One article.", "titles": []string{"That Darn Cat!"}}},
		{file: "25-dspy-tool-use-optimized_react.json", sig: "question: str -> answer: str",
			tools: []types.Tool{tool("search", search)}, toolName: "search",
			inputs:  adapter.Values{"question": "Which studio produced That Darn Cat!?"},
			extract: "[[ ## reasoning ## ]]\nDisney.\n\n[[ ## answer ## ]]\nDisney\n\n[[ ## completed ## ]]",
			want:    adapter.Values{"reasoning": "Disney.", "answer": "Disney"}},
		{file: "29-dspy-testing-optimized_agent.json", path: "react",
			sig:   "question: str, context: str, history: list[str] -> sql_query: str, answer: str",
			tools: []types.Tool{tool("execute_sql", search)}, toolName: "execute_sql",
			inputs:  adapter.Values{"question": "How many customers?", "context": "customers(id)", "history": []string{}},
			extract: "[[ ## reasoning ## ]]\nCount them.\n\n[[ ## sql_query ## ]]\nSELECT COUNT(*) FROM customers\n\n[[ ## answer ## ]]\n3\n\n[[ ## completed ## ]]",
			want:    adapter.Values{"reasoning": "Count them.", "sql_query": "SELECT COUNT(*) FROM customers", "answer": "3"}},
	} {
		t.Run(c.file, func(t *testing.T) {
			searched = nil
			prog, err := predict.ReadProgram(filepath.Join("testdata", "realworld", c.file))
			require.NoError(t, err)
			prefix := ""
			if c.path != "" {
				prog, prefix = prog.Sub(c.path), c.path+"."
			}
			sig, err := signature.Parse(c.sig)
			require.NoError(t, err)
			r, err := predict.NewReAct(sig, c.tools)
			require.NoError(t, err)
			r, err = r.Load(prog)
			require.NoError(t, err)
			if c.file != "22-hello-dspy-optimized_react.json" {
				assert.NotEmpty(t, r.Ignored(), "the training examples' extra keys are reported")
			}

			// Both predictors format as DSPy formats them.
			for name, m := range map[string]*predict.Module{"react": r.React(), "extract.predict": r.Extract()} {
				want := ref[c.file+"|"+prefix+name+"|faithful"]
				require.True(t, want.Loaded)
				msgs, err := adapter.Chat{}.Format(m.Signature(), m.Demos(), sampleInputs(t, m.Signature()))
				require.NoError(t, err)
				got := messagesJSON(msgs)
				require.Len(t, got, len(want.Messages), name)
				for i := range got {
					require.Equal(t, *want.Messages[i].Content, *got[i].Content, "%s message %d", name, i)
				}
			}

			srv := lmtest.NewServer(
				lmtest.Text("[[ ## next_thought ## ]]\nLook it up.\n\n[[ ## next_tool_name ## ]]\n"+c.toolName+"\n\n[[ ## next_tool_args ## ]]\n{\"query\": \"That Darn Cat!\"}\n\n[[ ## completed ## ]]"),
				lmtest.Text("[[ ## next_thought ## ]]\nDone.\n\n[[ ## next_tool_name ## ]]\nfinish\n\n[[ ## next_tool_args ## ]]\n{}\n\n[[ ## completed ## ]]"),
				lmtest.Text(c.extract))
			defer srv.Close()
			res, err := r.Call(context.Background(), srv.Client(), c.inputs)
			require.NoError(t, err)
			assert.Equal(t, []string{"That Darn Cat!"}, searched, "the Go tool ran with the model's arguments")
			assert.Equal(t, 3, res.Calls)
			traj := res.Outputs[0]["trajectory"].(predict.Trajectory)
			require.Len(t, traj, 2)
			assert.Equal(t, "Walt Disney Productions produced both films.", traj[0].Observation)
			assert.Equal(t, "Completed.", traj[1].Observation)
			for k, v := range c.want {
				assert.Equal(t, v, res.Outputs[0][k], k)
			}
			reqs := srv.Requests()
			require.Len(t, reqs, 3)
			first := reqs[0].Chat.Messages
			assert.Equal(t, strings.SplitN(first[0].Content, "\n", 2)[0], "Your input fields are:")
			assert.Contains(t, first[0].Content, strings.ReplaceAll(r.React().Signature().Instructions(), "\n", "\n        "),
				"the saved (optimised) instructions")
			assert.Contains(t, reqs[1].Chat.Messages[len(reqs[1].Chat.Messages)-1].Content,
				"[[ ## observation_0 ## ]]\nWalt Disney Productions produced both films.")
			last := reqs[2].Chat.Messages
			assert.Contains(t, last[len(last)-1].Content, "[[ ## tool_name_1 ## ]]\nfinish\n\n[[ ## tool_args_1 ## ]]\n{}\n\n[[ ## observation_1 ## ]]\nCompleted.")
		})
	}
}
