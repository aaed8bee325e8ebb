package predict_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"testing"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/lmtest"
	"github.com/sigwire/adapter/predict"
	"github.com/sigwire/adapter/signature"
)

type Question struct {
	Question string `json:"question"`
}

type Answer struct {
	Answer string `json:"answer" desc:"often between 1 and 5 words"`
}

type Sum struct {
	A int `json:"a"`
	B int `json:"b"`
}

type Total struct {
	Total int `json:"total"`
}

func TestPredictTyped(t *testing.T) {
	srv := lmtest.NewServer(lmtest.Text("[[ ## total ## ]]\n5\n\n[[ ## completed ## ]]"))
	defer srv.Close()
	p, err := predict.New[Sum, Total](predict.WithInstructions("Add the numbers."))
	require.NoError(t, err)
	p, err = p.WithDemos(predict.Demo[Sum, Total]{In: Sum{1, 1}, Out: Total{2}})
	require.NoError(t, err)
	out, res, err := p.Call(context.Background(), srv.Client(), Sum{2, 3})
	require.NoError(t, err)
	assert.Equal(t, Total{5}, out)
	assert.Equal(t, 1, res.Calls)

	// The request is exactly the Chat adapter's prompt for the signature.
	want, err := adapter.Chat{}.Format(p.Signature(), []adapter.Values{{"a": 1, "b": 1, "total": 2}}, adapter.Values{"a": 2, "b": 3})
	require.NoError(t, err)
	assert.Equal(t, want, srv.Requests()[0].Chat.Messages)
}

func TestChainOfThoughtAndProgram(t *testing.T) {
	prog, err := predict.ReadProgram("testdata/program.json")
	require.NoError(t, err)
	assert.Equal(t, []string{"generate_answer.predict"}, prog.Names())
	assert.NotContains(t, prog.Predictors["generate_answer.predict"].LM, "api_base", "unsafe LM keys are dropped")
	assert.NotContains(t, prog.Predictors["generate_answer.predict"].LM, "base_url")

	cot, err := predict.NewChainOfThought[Question, Answer]()
	require.NoError(t, err)
	assert.Equal(t, "reasoning", cot.Signature().Output(0).Name)
	cot, err = cot.Load(prog, "generate_answer.predict")
	require.NoError(t, err)
	assert.Equal(t, "Answer questions with short factoid answers.", cot.Signature().Instructions())

	srv := lmtest.NewServer(lmtest.Text("[[ ## reasoning ## ]]\nTokyo is Japan's capital.\n\n[[ ## answer ## ]]\nTokyo\n\n[[ ## completed ## ]]"))
	defer srv.Close()
	out, reasoning, res, err := cot.Call(context.Background(), srv.Client(), Question{"What is the capital of Japan?"},
		adapter.WithRequest(openai.ChatCompletionRequest{Model: "gpt-4o-mini"}))
	require.NoError(t, err)
	assert.Equal(t, Answer{"Tokyo"}, out)
	assert.Equal(t, "Tokyo is Japan's capital.", reasoning)
	assert.Equal(t, 1, res.Calls)

	msgs := srv.Requests()[0].Chat.Messages
	require.Len(t, msgs, 6, "system, two demos, request")
	assert.Contains(t, msgs[0].Content, "2. `answer` (str): often between 1 and 5 words")
	assert.Contains(t, msgs[0].Content, "your objective is: \n        Answer questions with short factoid answers.")
	assert.Contains(t, msgs[1].Content, "This is an example of the task, though some input or output fields are not supplied.", "the demo without reasoning comes first")
	assert.Contains(t, msgs[3].Content, "What is the capital of France?")
	assert.Equal(t, "[[ ## reasoning ## ]]\nThe question asks for the capital of France, which is Paris.\n\n[[ ## answer ## ]]\nParis\n\n[[ ## completed ## ]]\n", msgs[4].Content)
}

func TestLoadRefusesMismatch(t *testing.T) {
	prog, err := predict.ReadProgram("testdata/program.json")
	require.NoError(t, err)
	p, err := predict.New[Question, Answer]() // no reasoning field: 2 fields, saved 3
	require.NoError(t, err)
	_, err = p.Load(prog, "generate_answer.predict")
	assert.ErrorContains(t, err, "was saved with 3 fields (question, reasoning, answer); the signature has 2 (question, answer)")
	_, err = p.Load(prog, "missing")
	assert.ErrorContains(t, err, `no predictor "missing"`)
}

func ExampleNew() {
	srv := lmtest.NewServer(lmtest.Text("[[ ## total ## ]]\n42"))
	defer srv.Close()
	p, _ := predict.New[Sum, Total]()
	out, _, err := p.Call(context.Background(), srv.Client(), Sum{A: 40, B: 2})
	fmt.Println(out.Total, err)
	// Output: 42 <nil>
}

// FuzzLoadProgram: a saved program file is untrusted input. LoadProgram and
// Load never panic, a loaded module keeps its field names, and its demos
// format (or fail with an error) without a panic; the same for a ReAct.
func FuzzLoadProgram(f *testing.F) {
	// Small seeds: the fuzzer minimises what it finds, which is slow on
	// large inputs. The shapes of the big real files are in the inline ones.
	for _, path := range []string{"testdata/program.json", "testdata/realworld/01-dspy-saved_program.json",
		"testdata/realworld/35-dspy-demo-MIPROv2_program.json"} {
		saved, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(saved)
	}
	f.Add([]byte(`{"p": {"demos": [{"question": 1, "answer": null, "augmented": true}], "signature": {"instructions": "x", "fields": [{"prefix": "Q:", "description": "d"}, {"prefix": "R:"}, {"prefix": "A:"}]}}}`))
	f.Add([]byte(`{"p": {"demos": [{"nope": "x"}], "signature": {"fields": []}}, "metadata": {}}`))
	f.Add([]byte(`{"react": {"demos": [{"next_tool_args": {"b": [1.5e3, {"a": null}]}, "question": ["x"]}], "signature": {"instructions": "", "fields": [{}, {}, {}, {}, {}]}, "lm": {"temperature": 1e400}}}`))
	f.Add([]byte(`{"classify.predict": {"traces": [], "train": [], "demos": [], "signature": {"instructions": "i", "fields": [{"prefix": "Q:", "description": "${question}"}, {"prefix": "A:", "description": "${answer}"}]}, "lm": null}, "module_src": "class X: pass", "retrieve": {"k": 3}, "metadata": {"dependency_versions": {"dspy": "3.3.0"}}}`))
	f.Add([]byte(`{"generate_answer": {"lm": null, "traces": [], "train": [], "demos": [{"augmented": true, "question": "q", "answer": "a", "dspy_uuid": "u"}]}}`))
	f.Add([]byte(`{"react.predict": {"demos": [{"question": "q", "trajectory": [{"reasoning": "r", "args": {"z": 1, "a": 2}}], "answer": 3.0}], "signature": {"instructions": "i", "fields": [{"prefix": "Q:", "description": "${question}"}, {"prefix": "R:", "description": "${reasoning}"}, {"prefix": "A:", "description": "${answer}"}]}, "extended_signature": {"instructions": "x", "fields": []}}}`))
	cot, err := predict.NewChainOfThought[Question, Answer]()
	if err != nil {
		f.Fatal(err)
	}
	sig, err := signature.Parse("question -> answer")
	if err != nil {
		f.Fatal(err)
	}
	agent, err := predict.NewReAct(sig, nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		prog, err := predict.LoadProgram(bytes.NewReader(data))
		if err != nil {
			return
		}
		for _, name := range prog.Names() {
			_ = prog.Predictors[name].Request()
			c, err := cot.Load(prog, name)
			if err != nil {
				continue
			}
			if got := c.Signature().Output(1).Name; got != "answer" {
				t.Fatalf("loaded module renamed a field: %q", got)
			}
			_, _ = adapter.Chat{}.Format(c.Signature(), c.Module().Demos(), adapter.Values{"question": "q"})
		}
		if r, err := agent.Load(prog); err == nil {
			_, _ = adapter.Chat{}.Format(r.React().Signature(), r.React().Demos(), adapter.Values{"question": "q", "trajectory": ""})
			_, _ = adapter.JSON{}.Format(r.Extract().Signature(), r.Extract().Demos(), adapter.Values{"question": "q", "trajectory": ""})
		}
	})
}
