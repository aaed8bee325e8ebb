package adapter_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/lmtest"
	"github.com/sigwire/adapter/signature"
	"github.com/sigwire/adapter/types"
)

var sseHeader = http.Header{"Content-Type": {"text/event-stream"}}

// sseEvents is an SSE body of the given events' data.
func sseEvents(events ...string) []byte {
	var b strings.Builder
	for _, e := range events {
		b.WriteString("data: " + e + "\n\n")
	}
	return []byte(b.String())
}

// endCase is one way a reply can end: each choice's finish reason ("" for
// none, "-" for a finish_reason key left out) and, for a stream, whether
// it ends with [DONE] and carries a usage chunk.
type endCase struct {
	finish []string
	done   bool
	usage  bool
}

func (c endCase) String() string {
	return fmt.Sprintf("finish=%q done=%v usage=%v", c.finish, c.done, c.usage)
}

// stream is the case as an SSE body: every choice's content in two
// interleaved halves, then each choice's finish chunk, usage, [DONE].
func (c endCase) stream(answers []string) []byte {
	var ev []string
	for half := range 2 {
		for i, a := range answers {
			text := a[:len(a)/2]
			if half == 1 {
				text = a[len(a)/2:]
			}
			b, _ := json.Marshal(text)
			ev = append(ev, fmt.Sprintf(`{"id":"x","model":"m","choices":[{"index":%d,"delta":{"content":%s}}]}`, i, b))
		}
	}
	for i, f := range c.finish {
		switch f {
		case "-":
		case "":
			ev = append(ev, fmt.Sprintf(`{"id":"x","model":"m","choices":[{"index":%d,"delta":{},"finish_reason":null}]}`, i))
		default:
			ev = append(ev, fmt.Sprintf(`{"id":"x","model":"m","choices":[{"index":%d,"delta":{},"finish_reason":%q}]}`, i, f))
		}
	}
	if c.usage {
		ev = append(ev, `{"id":"x","model":"m","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7}}`)
	}
	if c.done {
		ev = append(ev, "[DONE]")
	}
	return sseEvents(ev...)
}

// body is the case as a blocking body (which always arrived whole).
func (c endCase) body(answers []string) []byte {
	var choices []string
	for i, a := range answers {
		b, _ := json.Marshal(a)
		fin := ""
		switch f := c.finish[i]; f {
		case "-":
		case "":
			fin = `,"finish_reason":null`
		default:
			fin = fmt.Sprintf(`,"finish_reason":%q`, f)
		}
		choices = append(choices, fmt.Sprintf(`{"index":%d,"message":{"role":"assistant","content":%s}%s}`, i, b, fin))
	}
	return []byte(`{"id":"x","object":"chat.completion","model":"m","choices":[` + strings.Join(choices, ",") + `],"usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7}}`)
}

// TestEndOfReply is the rule for the end of a reply, over every
// combination of finish reasons (given, null, key absent, "length") for
// one and two choices, a stream with and without [DONE] and usage, and the
// same reply sent whole: a choice that hit the token limit is truncated;
// a stream that ended with [DONE], or a body that arrived whole, is
// otherwise finished; a stream cut off before [DONE] is truncated unless
// every choice got its finish reason. Call and Stream give the same result
// for the same reply, whether or not the client has HTTPDoer.
func TestEndOfReply(t *testing.T) {
	sig := mustParse(t, "question -> answer")
	in := adapter.Values{"question": "q"}
	reasons := []string{"stop", "length", "", "-"}
	var cases []endCase
	for _, n := range []int{1, 2} {
		var fins [][]string
		for _, a := range reasons {
			if n == 1 {
				fins = append(fins, []string{a})
				continue
			}
			for _, b := range reasons {
				fins = append(fins, []string{a, b})
			}
		}
		for _, f := range fins {
			for _, done := range []bool{true, false} {
				for _, usage := range []bool{true, false} {
					cases = append(cases, endCase{f, done, usage})
				}
			}
		}
	}
	for _, c := range cases {
		answers := make([]string, len(c.finish))
		for i := range answers {
			answers[i] = fmt.Sprintf("[[ ## answer ## ]]\nanswer number %d\n\n[[ ## completed ## ]]", i)
		}
		length, unfinished := false, false
		for _, f := range c.finish {
			length = length || f == "length"
			unfinished = unfinished || f == "" || f == "-"
		}
		opts := []adapter.CallOption{adapter.NoRetry(), adapter.NoFallback(), adapter.WithRequest(openai.ChatCompletionRequest{N: len(c.finish)})}
		for _, wrapped := range []bool{false, true} {
			srv := lmtest.NewServer(lmtest.Raw(200, sseHeader, c.stream(answers)), lmtest.Raw(200, http.Header{"Content-Type": {"application/json"}}, c.body(answers)))
			lm := client(srv, wrapped, adapter.Capabilities{})
			_, sres, serr := drain(adapter.Stream(t.Context(), lm, sig, nil, in, opts...))
			cres, cerr := adapter.Call(t.Context(), lm, sig, nil, in, opts...)
			srv.Close()
			name := fmt.Sprintf("%v wrapped=%v", c, wrapped)

			// The blocking body arrived whole.
			if length {
				require.ErrorIs(t, cerr, adapter.ErrTruncated, name)
			} else {
				require.NoError(t, cerr, name)
				require.Len(t, cres.Outputs, len(answers), name)
				for i, out := range cres.Outputs {
					assert.Equal(t, fmt.Sprintf("answer number %d", i), out["answer"], name)
				}
			}
			// The stream.
			switch {
			case length, !c.done && unfinished:
				require.ErrorIs(t, serr, adapter.ErrTruncated, name)
				var pe *adapter.ParseError
				require.ErrorAs(t, serr, &pe, name)
			default:
				require.NoError(t, serr, name)
				assert.Equal(t, cres.Outputs, sres.Outputs, "%s: Call and Stream differ", name)
				if c.usage {
					assert.Equal(t, 7, sres.Usage.TotalTokens, name)
				}
			}
		}
	}
}

// TestStreamErrorEvent: an error a server sends inside a 200 stream (an
// "event: error" line, then the error object as data, with or without
// comments before it, as Groq and OpenRouter do; or a bare JSON error
// line, as some proxies send) ends the stream with an
// *LMError that says what the server said, whether or not text was
// already streamed, and is not taken for a truncated reply. (An error
// line that is the body's last bytes, without its line end, never
// reaches the library: go-openai drops it, and the stream reads as cut.)
func TestStreamErrorEvent(t *testing.T) {
	sig := mustParse(t, "question -> answer")
	in := adapter.Values{"question": "q"}
	errEvent := "event: error\ndata: {\"error\":{\"message\":\"Tool choice is required, but model did not call a tool\",\"type\":\"invalid_request_error\",\"code\":\"tool_use_failed\",\"status_code\":400}}\n\n"
	content := string(sseEvents(`{"id":"x","model":"m","choices":[{"index":0,"delta":{"content":"[[ ## answer ## ]]\nmaybe"}}]}`))
	reasoning := string(sseEvents(`{"id":"x","model":"m","choices":[{"index":0,"delta":{"reasoning":"thinking"}}]}`))
	bodies := map[string]string{
		"after content":              content + errEvent,
		"after reasoning":            reasoning + errEvent,
		"after comments":             ": OPENROUTER PROCESSING\n\n: OPENROUTER PROCESSING\n\n" + content + errEvent,
		"data only":                  content + "data: {\"error\":{\"message\":\"Tool choice is required, but model did not call a tool\",\"code\":\"tool_use_failed\"}}\n\n",
		"then DONE":                  content + errEvent + "data: [DONE]\n\n",
		"a bare line after comments": ": keep-alive\n\n" + content + "{\"error\":{\"message\":\"Tool choice is required, but model did not call a tool\"}}\n\n",
	}
	for name, body := range bodies {
		for _, wrapped := range []bool{false, true} {
			srv := lmtest.NewServer(lmtest.Raw(200, sseHeader, []byte(body)), lmtest.Text("[[ ## answer ## ]]\nretried"))
			_, res, err := drain(adapter.Stream(t.Context(), client(srv, wrapped, adapter.Capabilities{}), sig, nil, in, fast))
			srv.Close()
			var lmErr *adapter.LMError
			require.ErrorAs(t, err, &lmErr, "%s wrapped=%v: %v", name, wrapped, err)
			assert.Nil(t, res, name)
			assert.NotErrorIs(t, err, adapter.ErrTruncated, name)
			assert.Contains(t, err.Error(), "Tool choice is required, but model did not call a tool", "%s wrapped=%v", name, wrapped)
		}
	}
}

// TestStreamToolCallAtIndexOne: a tool call streamed at tool_calls index
// 1 with none at index 0 (an Anthropic-to-OpenAI gateway) is one call,
// not an empty call followed by the real one, in the ToolCalls chunks and
// in the Result.
func TestStreamToolCallAtIndexOne(t *testing.T) {
	body := sseEvents(
		`{"id":"x","model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"Reading it."}}]}`,
		`{"id":"x","model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"toolu_1","type":"function","function":{"name":"lookup","arguments":""}}]}}]}`,
		`{"id":"x","model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"{\"query\": "}}]}}]}`,
		`{"id":"x","model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"\"a.txt\"}"}}]}}]}`,
		`{"id":"x","model":"m","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`,
		"[DONE]")
	srv := lmtest.NewServer(lmtest.Raw(200, sseHeader, body))
	defer srv.Close()
	sig, err := signature.Parse("question, tools: list[Tool] -> answer, calls: ToolCalls", signature.WithTypes(types.Names()))
	require.NoError(t, err)
	lm := client(srv, false, adapter.Capabilities{Tools: true})
	var last []openai.ToolCall
	var res *adapter.Result
	for ch, err := range adapter.Stream(t.Context(), lm, sig, nil, adapter.Values{"question": "q", "tools": []types.Tool{replayTool(t)}}, adapter.NoRetry(), adapter.UseAdapter(adapter.Chat{Options: adapter.Options{NativeTools: adapter.On}})) {
		require.NoError(t, err)
		if ch.ToolCalls != nil {
			for _, c := range ch.ToolCalls {
				assert.NotEmpty(t, c.ID, "a call that never came")
			}
			last = ch.ToolCalls
		}
		if ch.Done {
			res = ch.Result
		}
	}
	require.Len(t, last, 1)
	assert.Equal(t, `{"query": "a.txt"}`, last[0].Function.Arguments)
	require.NotNil(t, res)
	calls := fmt.Sprint(res.Outputs[0]["calls"])
	assert.Contains(t, calls, "a.txt")
}
