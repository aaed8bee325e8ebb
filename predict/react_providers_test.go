package predict_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/lmtest"
	"github.com/sigwire/adapter/predict"
	"github.com/sigwire/adapter/signature"
	"github.com/sigwire/adapter/types"
)

// providerRecording is a real response body from ../testdata/providers
// (origins in each .meta.json there), with what it says, read here with
// generic JSON, independently of the library.
type providerRecording struct {
	id      string
	header  http.Header
	body    []byte
	stream  bool
	content string // choice 0's text
	// reasoning is choice 0's reasoning_content (go-openai's field), or
	// its raw "reasoning" where a provider sends that instead.
	reasoning string
	calls     []recordedCall // choice 0's tool calls, by index
}

type recordedCall struct{ id, name, args string }

func loadProviderRecording(t *testing.T, id string) providerRecording {
	t.Helper()
	dir := filepath.Join("..", "testdata", "providers")
	metaBytes, err := os.ReadFile(filepath.Join(dir, id+".meta.json"))
	require.NoError(t, err)
	var meta struct {
		Streaming bool              `json:"streaming"`
		Headers   map[string]string `json:"headers"`
		BodyFile  string            `json:"body_file"`
	}
	require.NoError(t, json.Unmarshal(metaBytes, &meta))
	r := providerRecording{id: id, header: http.Header{}, stream: meta.Streaming}
	for k, v := range meta.Headers {
		r.header.Set(k, v)
	}
	r.body, err = os.ReadFile(filepath.Join(dir, meta.BodyFile))
	require.NoError(t, err)
	docs := [][]byte{r.body}
	if r.stream {
		docs = nil
		for _, line := range bytes.Split(r.body, []byte("\n")) {
			if data, ok := bytes.CutPrefix(bytes.TrimSpace(line), []byte("data:")); ok {
				if data = bytes.TrimSpace(data); string(data) != "[DONE]" {
					docs = append(docs, data)
				}
			}
		}
	}
	byIndex := map[int]*recordedCall{}
	maxIndex := -1
	for _, d := range docs {
		var m struct {
			Choices []struct {
				Index   int             `json:"index"`
				Delta   json.RawMessage `json:"delta"`
				Message json.RawMessage `json:"message"`
			} `json:"choices"`
		}
		require.NoError(t, json.Unmarshal(d, &m), string(d))
		for _, c := range m.Choices {
			if c.Index != 0 {
				continue
			}
			msg := c.Delta
			if msg == nil {
				msg = c.Message
			}
			var body struct {
				Content   *string `json:"content"`
				Reasoning *string `json:"reasoning_content"`
				Raw       *string `json:"reasoning"` // Groq, OpenRouter, vLLM
				ToolCalls []struct {
					Index    *int   `json:"index"`
					ID       string `json:"id"`
					Function struct {
						Name      string `json:"name"`
						Arguments string `json:"arguments"`
					} `json:"function"`
				} `json:"tool_calls"`
			}
			require.NoError(t, json.Unmarshal(msg, &body))
			if body.Content != nil {
				r.content += *body.Content
			}
			if body.Reasoning != nil {
				r.reasoning += *body.Reasoning
			} else if body.Raw != nil {
				r.reasoning += *body.Raw
			}
			for k, tc := range body.ToolCalls {
				if tc.Index != nil {
					k = *tc.Index
				}
				call := byIndex[k]
				if call == nil {
					call = &recordedCall{}
					byIndex[k] = call
					maxIndex = max(maxIndex, k)
				}
				if tc.ID != "" {
					call.id = tc.ID
				}
				call.name += tc.Function.Name
				call.args += tc.Function.Arguments
			}
		}
	}
	for k := 0; k <= maxIndex; k++ {
		if c := byIndex[k]; c != nil {
			r.calls = append(r.calls, *c)
		}
	}
	return r
}

// recordedArgs holds every argument the recorded calls pass: a tool
// decodes exactly its arguments' names, so one struct serves them all.
type recordedArgs struct {
	Location string `json:"location,omitempty"`
	City     string `json:"city,omitempty"`
	Country  string `json:"country,omitempty"`
	Units    string `json:"units,omitempty"`
	Unit     string `json:"unit,omitempty"`
	Path     string `json:"path,omitempty"`
	A        int    `json:"a,omitempty"`
	B        int    `json:"b,omitempty"`
	Ticker   string `json:"ticker,omitempty"`
	Exchange string `json:"exchange,omitempty"`
	OrderID  string `json:"order_id,omitempty"`
	Query    string `json:"query,omitempty"`
	Response []int  `json:"response,omitempty"`
	Name     string `json:"name,omitempty"`
	Age      int    `json:"age,omitempty"`
}

func jsonEqual(t *testing.T, want, got string, msg ...any) {
	t.Helper()
	var w, g any
	require.NoError(t, json.Unmarshal([]byte(want), &w), want)
	require.NoError(t, json.Unmarshal([]byte(got), &g), got)
	assert.Equal(t, w, g, msg...)
}

// TestReActV2ProviderRecordings replays the tool-call replies of real
// providers (Groq, DeepSeek, llama.cpp, Avian, Alibaba, an Anthropic
// gateway, OpenAI with n=2 and parallel calls, Vercel's gateway, Gemini
// without ids, xAI, Ollama) as a native ReActV2's first step, byte for
// byte through the real go-openai client against lmtest: streams through
// Stream, blocking bodies through Call. Each recorded call runs with its
// recorded arguments, in the recorded order, under its id (or one made up
// where the provider gave none); the reply's plain text beside its calls
// is not the thought (DSPy reads it only in the adapter's format; the
// Result's Notes say it was left out, a stream's thought is replaced by
// none); the next request replays the calls and their results natively;
// the stream shows the chosen calls and the reasoning as the wire carried
// it.
func TestReActV2ProviderRecordings(t *testing.T) {
	for _, id := range []string{
		"groq-stream-tool-call", "groq-stream-parallel-tool-calls-hf-router", "deepseek-stream-tool-call-reasoning",
		"llamacpp-stream-tool-call", "avian-stream-parallel-tool-calls", "alibaba-stream-tool-call",
		"anthropic-gateway-stream-tool-index-1", "openai-stream-n2-tool-calls", "openai-stream-tool-call",
		"openai-stream-tool-calls-parallel", "vercel-gateway-stream-reasoning-tool-call",
		"openai-json-tool-calls", "gemini-json-tool-call-no-id", "xai-json-tool-call-reasoning", "ollama-json-tool-call-reasoning",
		// The third set: a Kimi-style id ("functions.weather:0"), a call
		// with no index, a continuation repeating "type" and an empty name,
		// deltas of encrypted reasoning only, finish_reason sent twice, a
		// seed above int64, content "" beside a call, role on every delta.
		"groq-kimi-stream-tool-call-functions-id", "mistral-stream-incremental-tool-call", "mistral-stream-tool-call-no-index",
		"openrouter-gemini-stream-tool-call-encrypted-reasoning", "openrouter-grok-stream-parallel-tool-calls",
		"openrouter-kimi-stream-reasoning-tool-call", "together-json-tool-call-huge-seed", "vercel-gateway-gemini3-stream-tool-call",
		"vercel-gateway-gpt5-stream-tool-call-encrypted", "xai-stream-grok3-thinking-tool-call", "xai-stream-parallel-tool-calls",
		"xai-stream-tool-call-reasoning-230", "zai-json-tool-call-content-empty", "zai-stream-tool-call-role-every-delta",
	} {
		t.Run(id, func(t *testing.T) {
			rec := loadProviderRecording(t, id)
			require.NotEmpty(t, rec.calls)
			var mu sync.Mutex
			var ran []string
			var tools []types.Tool
			seen := map[string]bool{}
			for _, c := range rec.calls {
				if seen[c.name] {
					continue
				}
				seen[c.name] = true
				name := c.name
				tool, err := types.NewTool(name, "", func(_ context.Context, a recordedArgs) (string, error) {
					b, _ := json.Marshal(a)
					mu.Lock()
					defer mu.Unlock()
					ran = append(ran, name+" "+string(b))
					return string(b), nil
				})
				require.NoError(t, err)
				tools = append(tools, tool)
			}
			sig, err := signature.Parse("question -> answer")
			require.NoError(t, err)
			agent, err := predict.NewReActV2(sig, tools, nativeChat, predict.WithToolConcurrency(1))
			require.NoError(t, err)
			srv := lmtest.NewServer(lmtest.Raw(http.StatusOK, rec.header, rec.body), nativeStep("", fcall("fin", "submit", `{"answer": "done"}`)))
			defer srv.Close()
			in := adapter.Values{"question": "Do what the recording did."}

			var res *adapter.Result
			var tr transcript
			if rec.stream {
				tr = readStream(agent.Stream(t.Context(), toolsLM(srv), in))
				require.NoError(t, tr.err)
				res = tr.res
			} else {
				res, err = agent.Call(t.Context(), toolsLM(srv), in)
				require.NoError(t, err)
			}
			require.NotNil(t, res)
			assert.Equal(t, "done", res.Outputs[0]["answer"])

			calls := v2Calls(t, res)
			require.Len(t, calls, len(rec.calls)+1, "each recorded call, then submit")
			require.Len(t, ran, len(rec.calls))
			var chosen []string
			for i, c := range rec.calls {
				s := calls[i]
				wantID := c.id
				if wantID == "" {
					wantID = fmt.Sprintf("call_0_%d", i)
				}
				assert.Equal(t, c.name, s.Name)
				assert.Equal(t, wantID, s.ID)
				assert.Equal(t, 0, s.Turn)
				require.NoError(t, s.Err)
				args := c.args
				if strings.TrimSpace(args) == "" {
					args = "{}"
				}
				jsonEqual(t, args, s.Args, "call %d: the recorded arguments", i)
				name, got, _ := strings.Cut(ran[i], " ")
				assert.Equal(t, c.name, name, "the calls ran in the recorded order")
				jsonEqual(t, args, got, "call %d ran with the recorded arguments", i)
				assert.Equal(t, got, s.Value)
				chosen = append(chosen, fmt.Sprintf("1 call: %s %s %s", wantID, c.name, s.Args))
			}
			assert.False(t, calls[0].ThoughtStated, "plain text beside the calls is no thought, as DSPy reads it")
			if strings.TrimSpace(rec.content) != "" {
				require.NotEmpty(t, res.Notes)
				assert.Contains(t, res.Notes[0], "step 1: the reply's text beside its tool calls is not in the adapter's format for next_thought")
			}
			assert.Equal(t, "submit", calls[len(calls)-1].Name)

			if rec.stream {
				var streamed, thought, reasoning []string
				for _, l := range tr.lines {
					switch {
					case strings.HasPrefix(l, "1 call: "):
						streamed = append(streamed, l)
					case strings.HasPrefix(l, "1 next_thought: "):
						thought = append(thought, strings.TrimPrefix(l, "1 next_thought: "))
					case strings.HasPrefix(l, "1 reasoning~: "):
						reasoning = append(reasoning, strings.TrimPrefix(l, "1 reasoning~: "))
					}
				}
				assert.Equal(t, chosen, streamed, "the chosen calls, once, with their ids")
				if len(thought) > 0 {
					assert.Equal(t, "", thought[len(thought)-1], "the thought's deltas end replaced by none")
				}
				if rec.reasoning != "" {
					assert.Equal(t, []string{rec.reasoning}, reasoning, "the step's reasoning, as the wire carried it")
				}
			}

			// The next step replays the calls and their results natively.
			reqs := srv.Requests()
			require.Len(t, reqs, 2)
			msgs := reqs[1].Chat.Messages
			require.Len(t, msgs, 3+2*0+len(rec.calls)+1)
			asst := msgs[2]
			assert.Equal(t, "assistant", asst.Role)
			require.Len(t, asst.ToolCalls, len(rec.calls))
			for i, c := range asst.ToolCalls {
				assert.Equal(t, calls[i].ID, c.ID)
				assert.Equal(t, calls[i].Name, c.Function.Name)
				jsonEqual(t, calls[i].Args, c.Function.Arguments)
				tool := msgs[3+i]
				assert.Equal(t, "tool", tool.Role)
				assert.Equal(t, calls[i].ID, tool.ToolCallID)
				assert.Equal(t, calls[i].Value, tool.Content)
			}
		})
	}
}

// TestReActV2ToolCallAsText: a recorded Ollama that was given tools but
// wrote the call as text in its reply (<tool_call>{…}</tool_call>), with
// no tool_calls: nothing runs — a call is what the provider returns as
// one — the steps end (no tool called) and the forced submit follows.
func TestReActV2ToolCallAsText(t *testing.T) {
	rec := loadProviderRecording(t, "ollama-stream-tools-as-text")
	require.Empty(t, rec.calls)
	require.Contains(t, rec.content, "<tool_call>")
	ran := 0
	tool, err := types.NewTool("get_delivery_date", "", func(context.Context, recordedArgs) (string, error) { ran++; return "", nil })
	require.NoError(t, err)
	sig, _ := signature.Parse("question -> answer")
	agent, err := predict.NewReActV2(sig, []types.Tool{tool}, nativeChat)
	require.NoError(t, err)
	srv := lmtest.NewServer(lmtest.Raw(http.StatusOK, rec.header, rec.body), nativeStep("", fcall("s", "submit", `{"answer": "unknown"}`)))
	defer srv.Close()
	tr := readStream(agent.Stream(t.Context(), toolsLM(srv), adapter.Values{"question": "When is order_12345 delivered?"}))
	require.NoError(t, tr.err)
	assert.Zero(t, ran)
	assert.Equal(t, predict.TerminatedByForcedSubmit, predict.TerminationOf(tr.res))
	calls := v2Calls(t, tr.res)
	require.Len(t, calls, 1)
	assert.Equal(t, "submit", calls[0].Name)
	reqs := srv.Requests()
	require.Len(t, reqs, 2)
	assert.Equal(t, reqs[0].Chat.Messages, reqs[1].Chat.Messages, "the forced submit: the same history, no turn for a reply without calls")
	assert.Equal(t, "unknown", tr.res.Outputs[0]["answer"])
}
