package adapter_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/lmtest"
	"github.com/sigwire/adapter/signature"
	"github.com/sigwire/adapter/types"
)

// The recordings in testdata/providers are real response bodies from 27
// providers and servers (origins in each .meta.json and in README.md there). Each is
// replayed through the real go-openai client against lmtest over loopback:
// the wire framing stays byte for byte, and only the text of the content
// tokens is swapped for a reply in the adapter's format, spread over the
// same tokens (a leading <think> block in the content is kept).

type recording struct {
	ID        string            `json:"id"`
	Provider  string            `json:"provider"`
	Streaming bool              `json:"streaming"`
	Status    int               `json:"status"`
	Headers   map[string]string `json:"headers"`
	BodyFile  string            `json:"body_file"`
	Expect    string            `json:"expect"`
	Request   struct {
		N        int  `json:"n"`
		Logprobs bool `json:"logprobs"`
	} `json:"request"`
	body []byte
}

func loadRecordings(t *testing.T) []recording {
	metas, err := filepath.Glob("testdata/providers/*.meta.json")
	require.NoError(t, err)
	require.Len(t, metas, 103)
	var recs []recording
	for _, m := range metas {
		b, err := os.ReadFile(m)
		require.NoError(t, err)
		var r recording
		require.NoError(t, json.Unmarshal(b, &r), m)
		r.body, err = os.ReadFile(filepath.Join("testdata/providers", r.BodyFile))
		require.NoError(t, err)
		recs = append(recs, r)
	}
	return recs
}

func (r recording) header() http.Header {
	h := http.Header{}
	for k, v := range r.Headers {
		h.Set(k, v)
	}
	return h
}

// payloads returns the JSON documents of a body with their offsets: each
// SSE event's data, or the whole body.
func (r recording) payloads() (docs [][]byte, offsets []int) {
	if !r.Streaming {
		return [][]byte{r.body}, []int{0}
	}
	pos := 0
	for _, line := range bytes.SplitAfter(r.body, []byte("\n")) {
		if rest, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			data := bytes.TrimLeft(rest, " ")
			start := pos + len(line) - len(data)
			data = bytes.TrimRight(data, "\r\n")
			if string(data) != "[DONE]" {
				docs, offsets = append(docs, data), append(offsets, start)
			}
		}
		pos += len(line)
	}
	return docs, offsets
}

// span is a content string literal in the body: a message's or delta's
// content, or the text of a content part of type text.
type span struct {
	choice     int
	start, end int // of the JSON string literal, quotes included
	text       string
}

// contentSpans finds the content string literals of one JSON document by
// walking its tokens with their offsets.
func contentSpans(doc []byte, base int) []span {
	var head struct {
		Choices []struct {
			Index int `json:"index"`
		} `json:"choices"`
	}
	if json.Unmarshal(doc, &head) != nil {
		return nil
	}
	type frame struct {
		obj, wantKey bool
		key, typ     string
		idx          int
	}
	var stack []*frame
	var spans []span
	done := func() {
		if len(stack) == 0 {
			return
		}
		if f := stack[len(stack)-1]; f.obj {
			f.wantKey = true
		} else {
			f.idx++
		}
	}
	dec := json.NewDecoder(bytes.NewReader(doc))
	for {
		off := int(dec.InputOffset())
		tok, err := dec.Token()
		if err != nil {
			return spans
		}
		switch v := tok.(type) {
		case json.Delim:
			switch v {
			case '{', '[':
				stack = append(stack, &frame{obj: v == '{', wantKey: v == '{'})
			default:
				stack = stack[:len(stack)-1]
				done()
			}
			continue
		case string:
			top := stack[len(stack)-1]
			if top.obj && top.wantKey {
				top.key, top.wantKey = v, false
				continue
			}
			if top.obj && top.key == "type" {
				top.typ = v
			}
			n := len(stack)
			content := n == 4 && stack[3].key == "content" && (stack[2].key == "delta" || stack[2].key == "message")
			part := n == 6 && stack[5].key == "text" && stack[5].typ == "text" && stack[3].key == "content" &&
				(stack[2].key == "delta" || stack[2].key == "message")
			if (content || part) && stack[0].key == "choices" && stack[1].idx < len(head.Choices) {
				start := off + bytes.IndexByte(doc[off:], '"')
				spans = append(spans, span{head.Choices[stack[1].idx].Index, base + start, base + int(dec.InputOffset()), v})
			}
		}
		done()
	}
}

// swapped returns the body with each choice's content replaced by
// reply(choice), spread over the same content tokens. A leading <think>
// block is kept. ok is false when the recording carries no content.
func (r recording) swapped(reply func(choice int) string) (body []byte, ok bool) {
	docs, offsets := r.payloads()
	var spans []span
	for i, d := range docs {
		spans = append(spans, contentSpans(d, offsets[i])...)
	}
	byChoice := map[int][]int{}
	for i, s := range spans {
		byChoice[s.choice] = append(byChoice[s.choice], i)
	}
	repl := make([]string, len(spans))
	for i, s := range spans {
		repl[i] = s.text
	}
	for choice, idx := range byChoice {
		var orig strings.Builder
		for _, i := range idx {
			orig.WriteString(spans[i].text)
		}
		keep := 0 // bytes of the original content kept: a leading think block
		if o := orig.String(); strings.HasPrefix(strings.TrimLeft(o, " \n"), "<think>") {
			if j := strings.Index(o, "</think>"); j >= 0 {
				keep = j + len("</think>")
			}
		}
		var slots []int
		pos := 0
		for _, i := range idx {
			text := spans[i].text
			switch {
			case pos+len(text) <= keep:
			case pos < keep:
				repl[i] = text[:keep-pos]
				slots = append(slots, i)
			case text != "":
				repl[i] = ""
				slots = append(slots, i)
			}
			pos += len(text)
		}
		if len(slots) == 0 {
			continue
		}
		ok = true
		for k, piece := range split(reply(choice), len(slots)) {
			repl[slots[k]] += piece
		}
	}
	var out bytes.Buffer
	last := 0
	for i, s := range spans {
		out.Write(r.body[last:s.start])
		enc := json.NewEncoder(&out)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(repl[i])
		out.Truncate(out.Len() - 1) // Encode's newline
		last = s.end
	}
	out.Write(r.body[last:])
	return out.Bytes(), ok
}

// split cuts s into n pieces of about equal size, never inside a UTF-8
// character.
func split(s string, n int) []string {
	out := make([]string, n)
	prev := 0
	for k := range n {
		end := len(s) * (k + 1) / n
		for end < len(s) && !utf8.RuneStart(s[end]) {
			end++
		}
		end = max(end, prev)
		out[k] = s[prev:end]
		prev = end
	}
	return out
}

// facts is what the original recording says, read independently of the
// library with generic JSON.
type facts struct {
	model, fingerprint string
	usage              map[string]any
	reasoning          map[int]string // reasoning_content, reasoning, thinking parts
	think              map[int]string // a leading <think> block in the content
	refusal            map[int]string
	tools              map[int]map[int]*openai.ToolCall
	logprobs           map[int]int
	streamError        string // the message of an error event inside the stream
}

func (r recording) facts(t *testing.T) facts {
	f := facts{reasoning: map[int]string{}, think: map[int]string{}, refusal: map[int]string{}, tools: map[int]map[int]*openai.ToolCall{}, logprobs: map[int]int{}}
	docs, _ := r.payloads()
	content := map[int]string{}
	for _, d := range docs {
		var m map[string]any
		require.NoError(t, json.Unmarshal(d, &m), string(d))
		if e, ok := m["error"].(map[string]any); ok && len(m) == 1 {
			f.streamError, _ = e["message"].(string)
			continue
		}
		if s, _ := m["model"].(string); s != "" {
			f.model = s
		}
		if s, _ := m["system_fingerprint"].(string); s != "" {
			f.fingerprint = s
		}
		if u, ok := m["usage"].(map[string]any); ok {
			f.usage = u
		} else if g, ok := m["x_groq"].(map[string]any); ok && f.usage == nil {
			if u, ok := g["usage"].(map[string]any); ok {
				f.usage = u
			}
		}
		choices, _ := m["choices"].([]any)
		for _, c := range choices {
			c := c.(map[string]any)
			i := int(c["index"].(float64))
			msg, _ := c["delta"].(map[string]any)
			if msg == nil {
				msg, _ = c["message"].(map[string]any)
			}
			for _, k := range []string{"reasoning_content", "reasoning"} {
				if s, _ := msg[k].(string); s != "" {
					f.reasoning[i] += s
					break
				}
			}
			switch ct := msg["content"].(type) {
			case string:
				content[i] += ct
			case []any:
				for _, p := range ct {
					p := p.(map[string]any)
					switch p["type"] {
					case "text":
						content[i] += p["text"].(string)
					case "thinking":
						for _, q := range p["thinking"].([]any) {
							f.reasoning[i] += q.(map[string]any)["text"].(string)
						}
					}
				}
			}
			if s, _ := msg["refusal"].(string); s != "" {
				f.refusal[i] += s
			}
			calls, _ := msg["tool_calls"].([]any)
			for k, tc := range calls {
				tc := tc.(map[string]any)
				if x, ok := tc["index"].(float64); ok {
					k = int(x)
				}
				if f.tools[i] == nil {
					f.tools[i] = map[int]*openai.ToolCall{}
				}
				call := f.tools[i][k]
				if call == nil {
					call = &openai.ToolCall{}
					f.tools[i][k] = call
				}
				if id, _ := tc["id"].(string); id != "" {
					call.ID = id
				}
				if fn, ok := tc["function"].(map[string]any); ok {
					name, _ := fn["name"].(string)
					args, _ := fn["arguments"].(string)
					call.Function.Name += name
					call.Function.Arguments += args
				}
			}
			if lp, ok := c["logprobs"].(map[string]any); ok {
				toks, _ := lp["content"].([]any)
				f.logprobs[i] += len(toks)
			}
		}
	}
	for i, c := range content {
		if t := strings.TrimLeft(c, " \n"); strings.HasPrefix(t, "<think>") {
			if j := strings.Index(t, "</think>"); j >= 0 {
				f.think[i] = t[len("<think>"):j]
			}
		}
	}
	return f
}

func (f facts) toolCalls(choice int) []openai.ToolCall {
	var keys []int
	for k := range f.tools[choice] {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	var out []openai.ToolCall
	for _, k := range keys {
		out = append(out, *f.tools[choice][k])
	}
	return out
}

// usageOf reads the recording's usage as the library reports it.
func (f facts) usageOf() openai.Usage {
	num := func(m map[string]any, k string) int { x, _ := m[k].(float64); return int(x) }
	u := openai.Usage{PromptTokens: num(f.usage, "prompt_tokens"), CompletionTokens: num(f.usage, "completion_tokens"), TotalTokens: num(f.usage, "total_tokens")}
	if d, ok := f.usage["prompt_tokens_details"].(map[string]any); ok {
		u.PromptTokensDetails = &openai.PromptTokensDetails{CachedTokens: num(d, "cached_tokens"), AudioTokens: num(d, "audio_tokens")}
	}
	if d, ok := f.usage["completion_tokens_details"].(map[string]any); ok {
		u.CompletionTokensDetails = &openai.CompletionTokensDetails{ReasoningTokens: num(d, "reasoning_tokens"), AudioTokens: num(d, "audio_tokens"),
			AcceptedPredictionTokens: num(d, "accepted_prediction_tokens"), RejectedPredictionTokens: num(d, "rejected_prediction_tokens")}
	}
	return u
}

// replaySetup is the signature, inputs, options and replies a recording is
// replayed with, for one adapter.
type replaySetup struct {
	sig     *signature.Signature
	inputs  adapter.Values
	opts    []adapter.CallOption
	caps    adapter.Capabilities
	answers []string // each choice's answer
	reply   func(choice int) string
}

var replayAdapters = []adapter.Adapter{adapter.Chat{Options: adapter.Options{NativeTools: adapter.On}}, adapter.JSON{}, adapter.XML{Options: adapter.Options{NativeTools: adapter.On}}}

func setupFor(t *testing.T, r recording, f facts, a adapter.Adapter) replaySetup {
	s := replaySetup{inputs: adapter.Values{"question": "What is 2 + 2?"}}
	spec := "question -> answer"
	if len(f.tools) > 0 {
		spec = "question, tools: list[Tool] -> answer, calls: ToolCalls"
		s.caps.Tools = true
		s.inputs["tools"] = []types.Tool{replayTool(t)}
	}
	if len(f.reasoning) > 0 {
		spec = strings.Replace(spec, "-> ", "-> reasoning: Reasoning, ", 1)
		s.caps.Reasoning = true
	}
	sig, err := signature.Parse(spec, signature.WithTypes(types.Names()))
	require.NoError(t, err)
	s.sig = sig
	n := max(r.Request.N, 1)
	for i := range n {
		s.answers = append(s.answers, fmt.Sprintf("Four, as 2 + 2 = 4 (choice %d).", i))
	}
	s.reply = func(choice int) string {
		ans := s.answers[choice]
		switch a.Name() {
		case "json":
			return `{"answer": "` + ans + `"}`
		case "xml":
			return "<answer>" + ans + "</answer>"
		}
		return "[[ ## answer ## ]]\n" + ans + "\n\n[[ ## completed ## ]]"
	}
	s.opts = []adapter.CallOption{adapter.UseAdapter(a), adapter.NoFallback(), fast,
		adapter.WithRequest(openai.ChatCompletionRequest{Model: f.model, N: r.Request.N, LogProbs: r.Request.Logprobs})}
	return s
}

// replayTool stands for whatever tools the recorded requests offered: the
// recordings' arguments are kept, so any name and arguments are accepted.
func replayTool(t *testing.T) types.Tool {
	tool, err := types.NewTool("lookup", "look something up", func(_ context.Context, a struct {
		Query string `json:"query"`
	}) (string, error) {
		return a.Query, nil
	})
	require.NoError(t, err)
	return tool
}

// client is a go-openai client for srv, with the library's HTTPDoer
// wrapper when wrapped is set, declaring caps.
func client(srv *lmtest.Server, wrapped bool, caps adapter.Capabilities) adapter.StreamingLM {
	cfg := srv.Config()
	if wrapped {
		cfg.HTTPClient = adapter.HTTPDoer(cfg.HTTPClient)
	}
	return adapter.WithCapabilities(openai.NewClientWithConfig(cfg), caps).(adapter.StreamingLM)
}

// TestProviderRecordings replays every recording and checks the outcome a
// careful user expects, with the values, deltas, reasoning, tool calls,
// usage with its details, model, fingerprint and logprobs the wire
// carried.
func TestProviderRecordings(t *testing.T) {
	before := runtime.NumGoroutine()
	for _, r := range loadRecordings(t) {
		t.Run(r.ID, func(t *testing.T) {
			switch {
			case r.Status != http.StatusOK:
				replayError(t, r)
			case r.Streaming:
				for _, a := range replayAdapters {
					for _, wrapped := range []bool{false, true} {
						t.Run(fmt.Sprintf("%s/wrapped=%v", a.Name(), wrapped), func(t *testing.T) { replayStream(t, r, a, wrapped) })
					}
				}
			default:
				for _, a := range replayAdapters {
					for _, wrapped := range []bool{false, true} {
						t.Run(fmt.Sprintf("%s/wrapped=%v", a.Name(), wrapped), func(t *testing.T) { replayBody(t, r, a, wrapped) })
					}
				}
			}
		})
	}
	assert.Eventually(t, func() bool { return runtime.NumGoroutine() <= before+2 }, 5*time.Second, 20*time.Millisecond,
		"goroutines: %d before, %d after", before, runtime.NumGoroutine())
}

func replayStream(t *testing.T, r recording, a adapter.Adapter, wrapped bool) {
	f := r.facts(t)
	s := setupFor(t, r, f, a)
	body, hasContent := r.swapped(s.reply)
	srv := lmtest.NewServer(lmtest.Raw(r.Status, r.header(), body), lmtest.Raw(r.Status, r.header(), body))
	defer srv.Close()
	lm := client(srv, wrapped, s.caps)

	fields := map[string]string{}
	var reasoning string
	var calls []openai.ToolCall
	var res *adapter.Result
	var err error
	for ch, e := range adapter.Stream(t.Context(), lm, s.sig, nil, s.inputs, s.opts...) {
		if e != nil {
			err = e
			break
		}
		fields[ch.Field] += ch.Delta
		reasoning += ch.Reasoning
		if ch.ToolCalls != nil {
			calls = ch.ToolCalls
		}
		if ch.Done {
			res = ch.Result
		}
	}
	assert.Equal(t, f.think[0]+f.reasoning[0], reasoning, "reasoning deltas")
	want := f.toolCalls(0)
	require.Len(t, calls, len(want), "tool calls")
	for k, c := range want {
		assert.Equal(t, c.ID, calls[k].ID, "tool call %d id", k)
		assert.Equal(t, c.Function, calls[k].Function, "tool call %d", k)
	}
	checkOutcome(t, r, f, s, hasContent, res, err)
	if err == nil && hasContent {
		assert.Equal(t, s.answers[0], fields["answer"], "answer deltas")
	}

	// Broken off at the first chunk: the request is cancelled and nothing
	// is left behind (checked at the end of the test).
	for range adapter.Stream(t.Context(), lm, s.sig, nil, s.inputs, s.opts...) {
		break
	}
}

func replayBody(t *testing.T, r recording, a adapter.Adapter, wrapped bool) {
	f := r.facts(t)
	s := setupFor(t, r, f, a)
	body, hasContent := r.swapped(s.reply)
	srv := lmtest.NewServer(lmtest.Raw(r.Status, r.header(), body))
	defer srv.Close()
	res, err := adapter.Call(t.Context(), client(srv, wrapped, s.caps), s.sig, nil, s.inputs, s.opts...)
	if !wrapped {
		// Without the wrapper, go-openai's types are all the library sees:
		// a raw "reasoning" field and thinking parts are out of reach.
		if _, ok := rawReasoning(r); ok {
			f.reasoning = map[int]string{}
		}
	}
	checkOutcome(t, r, f, s, hasContent, res, err)
}

// rawReasoning reports a blocking body whose reasoning go-openai drops.
func rawReasoning(r recording) (string, bool) {
	b := string(r.body)
	return "", strings.Contains(b, `"reasoning":`) || strings.Contains(b, `"thinking"`)
}

func checkOutcome(t *testing.T, r recording, f facts, s replaySetup, hasContent bool, res *adapter.Result, err error) {
	t.Helper()
	switch r.Expect {
	case "refusal":
		var re *adapter.RefusalError
		require.ErrorAs(t, err, &re)
		assert.Equal(t, f.refusal[0], re.Refusal)
		return
	case "truncated":
		require.ErrorIs(t, err, adapter.ErrTruncated)
		var pe *adapter.ParseError
		require.ErrorAs(t, err, &pe)
		return
	case "lm_error":
		// An error event inside a 200 stream: the server's error, not a
		// truncated reply, and the message it sent.
		var lmErr *adapter.LMError
		require.ErrorAs(t, err, &lmErr)
		assert.NotErrorIs(t, err, adapter.ErrTruncated)
		assert.Nil(t, res)
		if msg := f.streamError; msg != "" {
			assert.Contains(t, err.Error(), msg)
		}
		return
	}
	require.Equal(t, "ok", r.Expect)
	require.NoError(t, err)
	require.NotNil(t, res)
	require.Len(t, res.Outputs, len(s.answers))
	for i, out := range res.Outputs {
		want := ""
		if hasContent {
			want = s.answers[i]
		}
		assert.Equal(t, want, out["answer"], "choice %d answer", i)
		if len(f.reasoning) > 0 {
			assert.Equal(t, types.Reasoning(f.reasoning[i]), out["reasoning"], "choice %d reasoning", i)
		}
		if len(f.tools) > 0 {
			tc, ok := out["calls"].(types.ToolCalls)
			require.True(t, ok, "calls is %T", out["calls"])
			want := f.toolCalls(i)
			require.Len(t, tc.Calls, len(want))
			for k, c := range want {
				assert.Equal(t, c.Function.Name, tc.Calls[k].Name)
				assert.Equal(t, c.ID, tc.Calls[k].ID)
				got, err := json.Marshal(tc.Calls[k].Args)
				require.NoError(t, err)
				assert.JSONEq(t, c.Function.Arguments, string(got))
			}
		}
	}
	assert.Equal(t, f.model, res.Model, "model")
	assert.Equal(t, f.fingerprint, res.SystemFingerprint, "fingerprint")
	wantUsage := f.usageOf()
	if n, ok := spotCached[r.ID]; ok {
		d := openai.PromptTokensDetails{}
		if wantUsage.PromptTokensDetails != nil {
			d = *wantUsage.PromptTokensDetails
		}
		d.CachedTokens = n
		wantUsage.PromptTokensDetails = &d
	}
	assert.Equal(t, wantUsage, res.Usage, "usage")
	if n := cachedOf(res.Usage); n > 0 {
		// Cached prompt tokens are priced as such: 1 a token uncached, 0.25 cached, 2 out.
		prices := adapter.Prices{}
		for m := range res.UsageByModel {
			prices[m] = adapter.Price{Input: 1e6, CachedInput: 0.25e6, Output: 2e6}
		}
		cost, err := res.Cost(prices)
		require.NoError(t, err)
		assert.InDelta(t, float64(res.Usage.PromptTokens-n)+0.25*float64(n)+2*float64(res.Usage.CompletionTokens), cost, 1e-6, "cost")
	}
	if want, ok := spotUsage[r.ID]; ok {
		assert.Equal(t, want, [3]int{res.Usage.PromptTokens, res.Usage.CompletionTokens, res.Usage.TotalTokens}, "usage as the provider reported it")
	}
	for i := range res.Outputs {
		got := 0
		if res.Logprobs != nil && res.Logprobs[i] != nil {
			got = len(res.Logprobs[i].Content)
		}
		assert.Equal(t, f.logprobs[i], got, "choice %d logprobs", i)
	}
}

// spotUsage is usage read off the recordings by hand, where a provider
// sends it unusually: running totals on every chunk (Perplexity: summing
// them would give 88/1321/1409), only inside x_groq (Groq).
var spotUsage = map[string][3]int{
	"perplexity-stream-cumulative-usage": {11, 434, 445},
	"groq-stream-think-tags":             {21, 988, 1009},
	"openrouter-stream-reasoning":        {43, 36, 79},
}

// spotCached is the prompt tokens a provider's cache served, read off the
// recordings by hand where the provider counts them outside
// prompt_tokens_details.cached_tokens: llama.cpp's timings.cache_n (its
// usage has no details). DeepSeek sends its prompt_cache_hit_tokens beside
// the same count in the details; xAI and OpenAI only the details.
var spotCached = map[string]int{
	"llamacpp-stream-reasoning-timings": 83,
	"llamacpp-stream-tool-call":         138,
}

func cachedOf(u openai.Usage) int {
	if u.PromptTokensDetails == nil {
		return 0
	}
	return u.PromptTokensDetails.CachedTokens
}

func replayError(t *testing.T, r recording) {
	s := setupFor(t, r, facts{}, adapter.Chat{})
	ok := lmtest.Text(s.reply(0))
	for _, stream := range []bool{false, true} {
		for _, wrapped := range []bool{false, true} {
			t.Run(fmt.Sprintf("stream=%v/wrapped=%v", stream, wrapped), func(t *testing.T) {
				srv := lmtest.NewServer(lmtest.Raw(r.Status, r.header(), r.body), ok)
				defer srv.Close()
				lm := client(srv, wrapped, s.caps)
				var res *adapter.Result
				var err error
				if stream {
					_, res, err = drain(adapter.Stream(t.Context(), lm, s.sig, nil, s.inputs, s.opts...))
				} else {
					res, err = adapter.Call(t.Context(), lm, s.sig, nil, s.inputs, s.opts...)
				}
				var lmErr *adapter.LMError
				switch r.Expect {
				case "retry":
					if wrapped && r.Headers["Retry-After"] != "" {
						// A wait far beyond any retry cap: given up at once,
						// with the wait stated.
						require.ErrorAs(t, err, &lmErr)
						assert.Contains(t, err.Error(), "the server asks to retry after")
						assert.Len(t, srv.Requests(), 1)
						return
					}
					require.NoError(t, err)
					assert.Equal(t, s.answers[0], res.Outputs[0]["answer"])
					assert.Equal(t, 1, res.Retries)
					assert.Len(t, srv.Requests(), 2)
				case "lm_error":
					require.ErrorAs(t, err, &lmErr)
					assert.NotErrorIs(t, err, adapter.ErrContextWindow)
					assert.NotErrorIs(t, err, adapter.ErrRefusal)
					assert.Len(t, srv.Requests(), 1, "a 4xx is not retried")
				case "context_window":
					require.ErrorIs(t, err, adapter.ErrContextWindow)
					assert.Len(t, srv.Requests(), 1)
				case "refusal_error":
					var re *adapter.RefusalError
					require.ErrorAs(t, err, &re)
					assert.ErrorIs(t, err, adapter.ErrRefusal)
					assert.Contains(t, err.Error(), "content filter")
					assert.Len(t, srv.Requests(), 1, "a refused prompt is neither retried nor sent to a fallback")
				default:
					t.Fatalf("unknown expectation %q", r.Expect)
				}
			})
		}
	}
}

// TestReplaySwapKeepsFraming: the swap changes nothing but the content
// strings.
func TestReplaySwapKeepsFraming(t *testing.T) {
	for _, r := range loadRecordings(t) {
		if r.Status != http.StatusOK {
			continue
		}
		body, _ := r.swapped(func(int) string { return "" })
		same, _ := r.swapped(func(int) string { return "x" })
		// With an empty reply, only content literals shrink; everything
		// outside them is byte for byte the recording's.
		strip := func(b []byte) string {
			rr := r
			rr.body = b
			docs, offs := rr.payloads()
			var out strings.Builder
			last := 0
			for i, d := range docs {
				for _, sp := range contentSpans(d, offs[i]) {
					out.Write(b[last:sp.start])
					last = sp.end
				}
			}
			out.Write(b[last:])
			return out.String()
		}
		assert.Equal(t, strip(r.body), strip(body), r.ID)
		assert.Equal(t, strip(r.body), strip(same), r.ID)
	}
}

// TestStructuredOutputRecordings replays the recordings whose content is
// a JSON object the provider wrote for a response_format (json_schema or
// JSON mode: OpenAI's blocking and streamed, DeepSeek's pretty-printed,
// Groq's compact and Ollama's spaced objects, beside raw reasoning), byte
// for byte, content included, through the JSON adapter with a signature of
// the object's members: Call and Stream read each member as encoding/json
// reads it, and the stream's field deltas add up to the values.
func TestStructuredOutputRecordings(t *testing.T) {
	for id, spec := range map[string]string{
		"openai-json-json-schema-object":          "q -> author: dict[str, str], genres: list[str], published_year: int, title: str",
		"openai-stream-json-schema-object":        "q -> age: int, city: str, name: str",
		"deepseek-json-json-mode":                 "q -> location: str, condition: str, temperature: int",
		"groq-json-structured-output-reasoning":   "q -> city: str, country: str",
		"ollama-json-structured-output-reasoning": "q -> city: str, country: str",
	} {
		t.Run(id, func(t *testing.T) {
			var r recording
			for _, rr := range loadRecordings(t) {
				if rr.ID == id {
					r = rr
				}
			}
			require.Equal(t, id, r.ID)
			content := ""
			docs, _ := r.payloads()
			for _, d := range docs {
				var m struct {
					Choices []struct {
						Delta, Message struct{ Content string }
					}
				}
				require.NoError(t, json.Unmarshal(d, &m))
				for _, c := range m.Choices {
					content += c.Delta.Content + c.Message.Content
				}
			}
			var want map[string]any
			require.NoError(t, json.Unmarshal([]byte(content), &want), content)
			want["published_year"], want["age"], want["temperature"] = intOf(want["published_year"]), intOf(want["age"]), intOf(want["temperature"])
			for k, v := range want {
				if v == nil {
					delete(want, k)
				}
			}

			sig, err := signature.Parse(spec)
			require.NoError(t, err)
			srv := lmtest.NewServer(lmtest.Raw(r.Status, r.header(), r.body), lmtest.Raw(r.Status, r.header(), r.body))
			defer srv.Close()
			lm := client(srv, true, adapter.Capabilities{StructuredOutputs: true, JSONMode: true})
			opts := []adapter.CallOption{adapter.UseAdapter(adapter.JSON{}), adapter.NoFallback(), fast}
			in := adapter.Values{"q": "?"}

			var res *adapter.Result
			if r.Streaming {
				deltas := map[string]string{}
				for ch, err := range adapter.Stream(t.Context(), lm, sig, nil, in, opts...) {
					require.NoError(t, err)
					if ch.Replace {
						deltas[ch.Field] = ""
					}
					deltas[ch.Field] += ch.Delta
					if ch.Done {
						res = ch.Result
					}
				}
				for _, k := range []string{"city", "name"} {
					assert.Equal(t, want[k], deltas[k], "%s deltas", k)
				}
			} else {
				res, err = adapter.Call(t.Context(), lm, sig, nil, in, opts...)
				require.NoError(t, err)
			}
			require.NotNil(t, res)
			got := map[string]any{}
			for k, v := range res.Outputs[0] {
				got[k] = v
			}
			normalized, err := json.Marshal(got)
			require.NoError(t, err)
			var back map[string]any
			require.NoError(t, json.Unmarshal(normalized, &back))
			for k := range back {
				back[k] = intOf(back[k])
			}
			assert.Equal(t, want, back)
			rf := srv.Requests()[0].Chat.ResponseFormat
			require.NotNil(t, rf, "the request asked for JSON")
			assert.Contains(t, []string{adapter.ModeJSONSchema, adapter.ModeJSONObject}, string(rf.Type))
		})
	}
}

// intOf turns a JSON number that is a whole number into an int, leaving
// anything else as it is.
func intOf(v any) any {
	if f, ok := v.(float64); ok && f == float64(int(f)) {
		return int(f)
	}
	return v
}
