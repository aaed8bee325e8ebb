package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/lmtest"
	"github.com/sigwire/adapter/predict"
	"github.com/sigwire/adapter/signature"
)

// testdata/program.json is a real saved program (origin in
// testdata/program.meta.json): DSPy 3.1.3's RAG tutorial ChainOfThought,
// optimised by MIPROv2, one predictor "respond.predict".
const (
	programPath = "testdata/program.json"
	programSig  = "context, question -> response"
	// instructions is the start of the program's optimised instructions,
	// which a request shows when the program was loaded.
	instructions = "You are a technical support specialist"
)

// syncBuffer is a bytes.Buffer safe for the server's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// reply is a ChainOfThought reply in the Chat adapter's format.
func reply(response string) lmtest.Reply {
	return lmtest.Text("[[ ## reasoning ## ]]\nThe context says so.\n\n[[ ## response ## ]]\n"+response+"\n\n[[ ## completed ## ]]").WithUsage(120, 20)
}

// lmFlags point the command at srv.
func lmFlags(srv *lmtest.Server) []string {
	return []string{"-base-url", srv.URL(), "-api-key", "test-key", "-model", "test-model"}
}

func programArgs(cmd string, srv *lmtest.Server, extra ...string) []string {
	args := []string{cmd, programPath, "-module", "cot", "-signature", programSig}
	return append(append(args, lmFlags(srv)...), extra...)
}

// TestServe runs "sigwire serve" on the real program on a free port and
// answers a predict and a stream request over HTTP, as curl would send
// them: the LM (lmtest) gets the program's optimised instructions and its
// demo, the answers carry the outputs, and the stream's field deltas add
// up to the done event's outputs.
func TestServe(t *testing.T) {
	srv := lmtest.NewServer()
	defer srv.Close()
	srv.Handle(func(lmtest.Request) lmtest.Reply { return reply("Run cd - to go back.").ChunkSize(5) })

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr syncBuffer
	code := make(chan int, 1)
	go func() {
		code <- run(ctx, programArgs("serve", srv, "-addr", "127.0.0.1:0", "-no-cache"), &stdout, &stderr)
	}()
	base := waitAddr(t, &stderr, code)

	body := `{"context": "cd - goes back to the previous directory.", "question": "how to go to the previous working directory?"}`
	resp, err := http.Post(base+"/predict", "application/json", strings.NewReader(body))
	require.NoError(t, err)
	var pr struct {
		Outputs map[string]any `json:"outputs"`
		Model   string         `json:"model"`
	}
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&pr))
	resp.Body.Close()
	assert.Equal(t, "Run cd - to go back.", pr.Outputs["response"])
	assert.Equal(t, "The context says so.", pr.Outputs["reasoning"])

	reqs := srv.Requests()
	require.Len(t, reqs, 1)
	msgs := reqs[0].Chat.Messages
	require.Len(t, msgs, 4, "system, the saved demo as a user and an assistant turn, the question")
	assert.Contains(t, msgs[0].Content, instructions)
	assert.Contains(t, msgs[1].Content, "how to go to the previous working directory in terminal?")
	assert.Equal(t, "test-model", reqs[0].Chat.Model)
	assert.Equal(t, "Bearer test-key", reqs[0].Header.Get("Authorization"))

	resp, err = http.Post(base+"/stream", "application/json", strings.NewReader(body))
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	deltas := map[string]string{}
	var done map[string]any
	var fields int
	sc := bufio.NewScanner(resp.Body)
	var event string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			data := []byte(strings.TrimPrefix(line, "data: "))
			switch event {
			case "field":
				var ev struct{ Field, Delta string }
				require.NoError(t, json.Unmarshal(data, &ev))
				deltas[ev.Field] += ev.Delta
				fields++
			case "done":
				var d struct {
					Outputs map[string]any `json:"outputs"`
				}
				require.NoError(t, json.Unmarshal(data, &d))
				done = d.Outputs
			case "error":
				t.Fatalf("error event: %s", data)
			}
		}
	}
	resp.Body.Close()
	require.NotNil(t, done, "no done event")
	assert.Greater(t, fields, 2, "the reply came in 5-byte chunks: several field events")
	assert.Equal(t, "Run cd - to go back.", done["response"])
	assert.Equal(t, done["response"], strings.TrimSpace(deltas["response"]))
	assert.Len(t, srv.Requests(), 2)
	assert.True(t, srv.Requests()[1].Chat.Stream)

	cancel()
	select {
	case c := <-code:
		assert.Equal(t, 0, c, "stderr: %s", stderr.String())
	case <-time.After(15 * time.Second):
		t.Fatal("serve did not stop")
	}
	assert.Contains(t, stderr.String(), "path=/predict status=200")
	assert.Contains(t, stderr.String(), "path=/stream status=200")
}

var addrLine = regexp.MustCompile(`msg=listening addr=(\S+)`)

// waitAddr waits for serve's "listening" line and returns its base URL.
func waitAddr(t *testing.T, stderr *syncBuffer, code chan int) string {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		if m := addrLine.FindStringSubmatch(stderr.String()); m != nil {
			return "http://" + m[1]
		}
		select {
		case c := <-code:
			t.Fatalf("serve exited %d: %s", c, stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatalf("serve did not listen: %s", stderr.String())
	return ""
}

// loadProgram is the module the command builds for the test program, built
// here with the library directly.
func loadProgram(t *testing.T) *predict.Module {
	t.Helper()
	sig, err := signature.Parse(programSig)
	require.NoError(t, err)
	m, err := predict.NewChainOfThoughtModule(sig)
	require.NoError(t, err)
	prog, err := predict.ReadProgram(programPath)
	require.NoError(t, err)
	m, err = m.Load(prog, "respond.predict")
	require.NoError(t, err)
	return m
}

// TestPrompt: "sigwire prompt" prints the request Prepare gives for the
// same program, model and inputs, byte for byte, and sends nothing; the
// -input pairs and the -inputs object give the same request.
func TestPrompt(t *testing.T) {
	srv := lmtest.NewServer()
	defer srv.Close()
	in := adapter.Values{"context": "cd - goes back.", "question": "How do I go back?"}
	want, err := loadProgram(t).Prepare(context.Background(), srv.Client(), in, adapter.WithRequest(openai.ChatCompletionRequest{Model: "test-model"}))
	require.NoError(t, err)
	wantJSON, err := json.Marshal(want)
	require.NoError(t, err)

	for name, extra := range map[string][]string{
		"-inputs": {"-inputs", `{"context": "cd - goes back.", "question": "How do I go back?"}`},
		"-input":  {"-input", "context=cd - goes back.", "-input", "question=How do I go back?"},
	} {
		t.Run(name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			c := run(context.Background(), programArgs("prompt", srv, extra...), &stdout, &stderr)
			require.Equal(t, 0, c, stderr.String())
			assert.Equal(t, string(wantJSON)+"\n", stdout.String())
			assert.Contains(t, stdout.String(), instructions)
		})
	}
	assert.Empty(t, srv.Requests(), "prompt calls no LM")

	var stdout, stderr bytes.Buffer
	c := run(context.Background(), programArgs("prompt", srv, "-inputs", `{"question": "q", "colour": "red"}`), &stdout, &stderr)
	assert.Equal(t, 1, c)
	assert.Contains(t, stderr.String(), "colour", "an unknown input is named")
}

// TestEval runs "sigwire eval" over a 5-line devset with Python's outputs
// for the same examples (keyed by id, in another order) and two of
// Python's prompts: the table on stdout and the JSON report count 3
// agree and 2 differ, score each side with exact match, and find the one
// prompt that differs from Go's.
func TestEval(t *testing.T) {
	answers := map[string]string{ // what the LM answers each question
		"q1": "Paris", "q2": "The Eiffel Tower", "q3": "1889", "q4": "Gustave Eiffel", "q5": "blue",
	}
	srv := lmtest.NewServer()
	defer srv.Close()
	srv.Handle(func(r lmtest.Request) lmtest.Reply {
		last := r.Chat.Messages[len(r.Chat.Messages)-1].Content
		for q, a := range answers {
			if strings.Contains(last, "[[ ## question ## ]]\n"+q+"\n") {
				return reply(a)
			}
		}
		return lmtest.Error(http.StatusBadRequest, `{"error":{"message":"unknown question"}}`)
	})

	dir := t.TempDir()
	devset := filepath.Join(dir, "devset.jsonl")
	writeLines(t, devset,
		`{"id": "a", "context": "c", "question": "q1", "response": "paris"}`,         // Go 1 (normalised), Python 1
		`{"id": "b", "context": "c", "question": "q2", "response": "Eiffel Tower"}`,  // Go 1 (article), Python 0
		`{"id": "c", "context": "c", "question": "q3", "response": "1889"}`,          // Go 1, Python 1
		`{"id": "d", "context": "c", "question": "q4", "response": "Eiffel"}`,        // Go 0, Python 0
		`{"id": "e", "context": "c", "question": "q5", "response": ["red", "blue"]}`, // Go 1 (one of the answers), Python 0
	)
	m := loadProgram(t)
	goPrompt := func(q string) string {
		req, err := m.Prepare(context.Background(), srv.Client(), adapter.Values{"context": "c", "question": q})
		require.NoError(t, err)
		b, err := json.Marshal(req.Messages)
		require.NoError(t, err)
		return string(b)
	}
	samePrompt := goPrompt("q1")
	otherPrompt := strings.Replace(goPrompt("q3"), "technical support specialist", "helpful assistant", 1)
	python := filepath.Join(dir, "python.jsonl")
	writeLines(t, python,
		`{"id": "c", "response": "1889", "reasoning": "x"}`,                          // agree
		`{"id": "a", "outputs": {"response": "Paris."}, "messages": `+samePrompt+`}`, // agree (normalised), prompt same
		`{"id": "e", "response": "green"}`,                                           // differ
		`{"id": "b", "response": "A tower"}`,                                         // differ
		`{"id": "d", "response": "gustave eiffel", "messages": `+otherPrompt+`}`,     // agree, prompt differs
	)
	report := filepath.Join(dir, "report.json")

	var stdout, stderr bytes.Buffer
	c := run(context.Background(), programArgs("eval", srv, devset, "-python", python, "-report", report, "-concurrency", "3", "-metric", "exact"), &stdout, &stderr)
	require.Equal(t, 0, c, stderr.String())
	out := stdout.String()
	t.Log("\n" + out)
	for _, s := range []string{"GO EXACT", "PYTHON EXACT", "AGREE", "differs (message 0)", "same", "0.800", "0.400", "1 of 2"} {
		assert.Contains(t, out, s)
	}
	assert.Regexp(t, `│\s+5\s+│\s+0\s+│\s+0\.800\s+│\s+0\.400\s+│\s+3\s+│\s+2\s+│\s+1 of 2\s+│\s+5\s+│\s+0\s+│`, out, "the summary row")

	b, err := os.ReadFile(report)
	require.NoError(t, err)
	var rep Report
	require.NoError(t, json.Unmarshal(b, &rep))
	assert.Equal(t, 5, rep.Examples)
	assert.Equal(t, 0, rep.Errors)
	assert.Equal(t, 3, rep.Agree)
	assert.Equal(t, 2, rep.Differ)
	assert.InDelta(t, 0.8, rep.Score, 1e-9)
	require.NotNil(t, rep.PythonScore)
	assert.InDelta(t, 0.4, *rep.PythonScore, 1e-9)
	assert.Equal(t, 2, rep.PromptsCompared)
	assert.Equal(t, 1, rep.PromptsDiffer)
	assert.Equal(t, 5, rep.Requests)
	assert.Equal(t, []string{"response"}, rep.Fields)
	require.Len(t, rep.Results, 5)
	agree := []bool{true, false, true, true, false}
	for i, r := range rep.Results {
		assert.Equal(t, i, r.Index)
		assert.Equal(t, string(rune('a'+i)), r.ID)
		require.NotNil(t, r.Agree, "example %d", i)
		assert.Equal(t, agree[i], *r.Agree, "example %d", i)
	}
	assert.Equal(t, "Paris", rep.Results[0].Go["response"])
	require.NotNil(t, rep.Results[0].Prompt)
	assert.True(t, rep.Results[0].Prompt.Same)
	require.NotNil(t, rep.Results[3].Prompt)
	assert.False(t, rep.Results[3].Prompt.Same)
	assert.Equal(t, 0, rep.Results[3].Prompt.Message)
	assert.True(t, strings.HasPrefix(rep.Results[3].Prompt.Go, "technical support specialist"), rep.Results[3].Prompt.Go)
	assert.True(t, strings.HasPrefix(rep.Results[3].Prompt.Python, "helpful assistant"), rep.Results[3].Prompt.Python)

	// With F1 and a disk cache, twice: the second run sends no request
	// and scores the same.
	cache := filepath.Join(dir, "cache")
	var reps [2]Report
	for i := range reps {
		stdout.Reset()
		stderr.Reset()
		c = run(context.Background(), programArgs("eval", srv, devset, "-metric", "f1", "-cache-dir", cache, "-report", report, "-progress", "on"), &stdout, &stderr)
		require.Equal(t, 0, c, stderr.String())
		assert.Contains(t, stderr.String(), "(4/5)", "the progress bar, asked for (cleared when done)")
		b, err := os.ReadFile(report)
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(b, &reps[i]))
	}
	assert.Equal(t, 5, reps[0].Requests)
	assert.Equal(t, 0, reps[1].Requests)
	assert.Equal(t, 5, reps[1].CacheHits)
	assert.InDelta(t, reps[0].Score, reps[1].Score, 1e-9)
	// F1: paris 1, "the eiffel tower" vs "eiffel tower" 1, 1889 1, "gustave eiffel" vs "eiffel" 2/3, blue 1.
	assert.InDelta(t, (4+2.0/3)/5, reps[1].Score, 1e-9)
}

func writeLines(t *testing.T, path string, lines ...string) {
	t.Helper()
	require.NoError(t, os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644))
}

// TestMetrics: DSPy's EM and F1 (SQuAD's) on normalised text.
func TestMetrics(t *testing.T) {
	cases := []struct {
		pred, gold string
		em, f1     float64
	}{
		{"Paris", "paris", 1, 1},
		{"The Eiffel Tower.", "eiffel tower", 1, 1},
		{"the cat sat", "a cat sat down", 0, 2 * (2.0 / 2) * (2.0 / 3) / ((2.0 / 2) + (2.0 / 3))},
		{"", "", 1, 0}, // DSPy's F1 gives 0 when both are empty
		{"red red blue", "red blue blue", 0, 2.0 / 3},
		{"yes", "no", 0, 0},
	}
	for _, c := range cases {
		assert.Equal(t, c.em, exactMatch(c.pred, c.gold), "EM %q %q", c.pred, c.gold)
		assert.InDelta(t, c.f1, tokenF1(c.pred, c.gold), 1e-9, "F1 %q %q", c.pred, c.gold)
	}
	assert.Equal(t, "hello world", normalize("  Hello,\tWORLD!  "))
	assert.Equal(t, 1.0, score(exactMatch, "Blue", []any{"red", "blue"}, false), "a list of gold answers: the best")
	assert.Equal(t, 0.0, score(exactMatch, []string{"red"}, []any{"red", "blue"}, true), "a list field: the list is the value")
}

// TestArgs: flags stand before or after the positional arguments; bad
// usage exits 2.
func TestArgs(t *testing.T) {
	var stdout, stderr bytes.Buffer
	assert.Equal(t, 2, run(context.Background(), nil, &stdout, &stderr))
	assert.Equal(t, 2, run(context.Background(), []string{"frobnicate"}, &stdout, &stderr))
	assert.Equal(t, 2, run(context.Background(), []string{"prompt"}, &stdout, &stderr))
	stderr.Reset()
	assert.Equal(t, 1, run(context.Background(), []string{"prompt", programPath}, &stdout, &stderr))
	assert.Contains(t, stderr.String(), "-signature is required")

	in, err := readInputs(`{"n": 3, "q": "a"}`, []string{"q=b", "xs:=[1, 2]"})
	require.NoError(t, err)
	assert.Equal(t, adapter.Values{"n": 3, "q": "b", "xs": []any{1, 2}}, in)
	_, err = readInputs("", []string{"novalue"})
	assert.Error(t, err)
}
