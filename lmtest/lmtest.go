package lmtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	openai "github.com/sashabaranov/go-openai"
)

// Server is a scripted /v1/chat/completions endpoint. It is safe for
// concurrent use.
type Server struct {
	srv *httptest.Server

	mu      sync.Mutex
	queue   []Reply
	handler func(Request) Reply
	reqs    []Request
	n       int
	h2      bool // NewHTTP2Server's
}

// Request is one request the server received.
type Request struct {
	Path   string
	Header http.Header
	Body   []byte                       // the raw JSON body
	Chat   openai.ChatCompletionRequest // the decoded body
}

// NewServer starts a server that answers with replies, in order.
func NewServer(replies ...Reply) *Server {
	s := &Server{queue: append([]Reply(nil), replies...)}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// NewHTTP2Server is NewServer speaking HTTP/2 without TLS (h2c) as well
// as HTTP/1.1, for many streams at once over few connections; its
// Config and Client speak HTTP/2 to it. Up to 1,000 streams share a
// connection.
func NewHTTP2Server(replies ...Reply) *Server {
	s := &Server{queue: append([]Reply(nil), replies...), h2: true}
	s.srv = httptest.NewUnstartedServer(http.HandlerFunc(s.serve))
	p := new(http.Protocols)
	p.SetHTTP1(true)
	p.SetUnencryptedHTTP2(true)
	s.srv.Config.Protocols = p
	s.srv.Config.HTTP2 = &http.HTTP2Config{MaxConcurrentStreams: 1000}
	s.srv.Start()
	return s
}

// Close shuts the server down, dropping open connections.
func (s *Server) Close() {
	s.srv.CloseClientConnections()
	s.srv.Close()
}

// URL is the base URL for an OpenAI client, ending in /v1.
func (s *Server) URL() string { return s.srv.URL + "/v1" }

// Config is a go-openai client configuration pointing at the server.
func (s *Server) Config() openai.ClientConfig {
	cfg := openai.DefaultConfig("test-key")
	cfg.BaseURL = s.URL()
	if s.h2 {
		p := new(http.Protocols)
		p.SetUnencryptedHTTP2(true)
		cfg.HTTPClient = &http.Client{Transport: &http.Transport{Protocols: p, HTTP2: &http.HTTP2Config{MaxConcurrentStreams: 1000}}}
	}
	return cfg
}

// Client is a go-openai client for the server.
func (s *Server) Client() *openai.Client { return openai.NewClientWithConfig(s.Config()) }

// Push appends replies to the queue.
func (s *Server) Push(replies ...Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queue = append(s.queue, replies...)
}

// Handle sets a function that answers every request once the queue is
// empty.
func (s *Server) Handle(f func(Request) Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.handler = f
}

// Requests returns the requests received so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

// Reply is one scripted answer. Its methods return modified copies.
type Reply struct {
	status     int
	body       string
	contents   []string
	finish     string
	noFinish   bool
	reasoning  string
	header     http.Header
	reasonKey  string // "reasoning_content", or "reasoning" (vLLM, OpenRouter)
	toolCalls  []openai.ToolCall
	refusal    string
	usage      *openai.Usage
	delay      time.Duration
	chunkSize  int
	chunkDelay time.Duration
	cut        bool
	raw        []byte // sent as is, with status and header
}

// Text is a reply with one choice holding content, finish reason "stop".
func Text(content string) Reply { return Reply{contents: []string{content}, finish: "stop"} }

// Choices is a reply with one choice per content, in order.
func Choices(contents ...string) Reply {
	return Reply{contents: append([]string(nil), contents...), finish: "stop"}
}

// Error is an HTTP error reply with a JSON body.
func Error(status int, body string) Reply { return Reply{status: status, body: body} }

// Raw is a reply sent exactly as given: the status (200 when 0), the
// headers and the body, byte for byte, whatever the request asked. Use it
// to replay a recorded response; an SSE body ("data: …" events) is written
// one event at a time, flushed after each.
func Raw(status int, header http.Header, body []byte) Reply {
	if status == 0 {
		status = http.StatusOK
	}
	return Reply{status: status, header: header.Clone(), raw: append([]byte{}, body...)}
}

// ContextLengthExceeded is OpenAI's 400 error for a prompt over the
// model's context window.
func ContextLengthExceeded() Reply {
	return Error(http.StatusBadRequest, `{"error":{"message":"This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`)
}

// WithFinish sets the finish reason of every choice; "" leaves it out.
func (r Reply) WithFinish(reason string) Reply {
	r.finish, r.noFinish = reason, reason == ""
	return r
}

// WithReasoning sets the reasoning_content of the first choice.
func (r Reply) WithReasoning(text string) Reply { r.reasoning, r.reasonKey = text, ""; return r }

// WithReasoningField sets the first choice's reasoning under the key
// "reasoning", as vLLM and OpenRouter send it (go-openai's types drop it).
func (r Reply) WithReasoningField(text string) Reply {
	r.reasoning, r.reasonKey = text, "reasoning"
	return r
}

func (r Reply) reasoningKey() string {
	if r.reasonKey == "" {
		return "reasoning_content"
	}
	return r.reasonKey
}

// WithToolCalls sets the tool calls of the first choice. Streamed, each
// call's arguments arrive in two deltas.
func (r Reply) WithToolCalls(calls ...openai.ToolCall) Reply {
	r.toolCalls = append([]openai.ToolCall(nil), calls...)
	return r
}

// WithRefusal sets the first choice's refusal text and empties its
// content. Streamed, the refusal arrives as one delta.
func (r Reply) WithRefusal(text string) Reply {
	r.refusal = text
	r.contents = append([]string(nil), r.contents...)
	if len(r.contents) == 0 {
		r.contents = []string{""}
	}
	r.contents[0] = ""
	return r
}

// WithUsage sets the token usage. By default the prompt counts a token per
// four bytes of the request body and the completion one per four bytes of
// content, at least one each.
func (r Reply) WithUsage(prompt, completion int) Reply {
	r.usage = &openai.Usage{PromptTokens: prompt, CompletionTokens: completion, TotalTokens: prompt + completion}
	return r
}

// WithHeader adds a response header (Retry-After on a 429, say).
func (r Reply) WithHeader(key, value string) Reply {
	h := r.header.Clone()
	if h == nil {
		h = http.Header{}
	}
	h.Add(key, value)
	r.header = h
	return r
}

// Delay waits d before answering, or until the client gives up.
func (r Reply) Delay(d time.Duration) Reply { r.delay = d; return r }

// ChunkSize sets the bytes of content per streamed chunk (default 16),
// never splitting a UTF-8 character.
func (r Reply) ChunkSize(n int) Reply { r.chunkSize = n; return r }

// ChunkDelay waits d between streamed chunks.
func (r Reply) ChunkDelay(d time.Duration) Reply { r.chunkDelay = d; return r }

// Cut ends a streamed reply after its content, without a finish reason,
// usage or [DONE], as a dropped connection does.
func (r Reply) Cut() Reply { r.cut = true; return r }

func (s *Server) serve(w http.ResponseWriter, hr *http.Request) {
	body, _ := io.ReadAll(hr.Body)
	req := Request{Path: hr.URL.Path, Header: hr.Header.Clone(), Body: body}
	_ = json.Unmarshal(body, &req.Chat)
	s.mu.Lock()
	s.reqs = append(s.reqs, req)
	if !strings.HasSuffix(hr.URL.Path, "/chat/completions") || hr.Method != http.MethodPost {
		s.mu.Unlock()
		writeError(w, http.StatusNotFound, `{"error":{"message":"lmtest: only POST /chat/completions is served","type":"invalid_request_error"}}`)
		return
	}
	var reply Reply
	ok := true
	switch {
	case len(s.queue) > 0:
		reply, s.queue = s.queue[0], s.queue[1:]
	case s.handler != nil:
		h := s.handler
		s.mu.Unlock()
		reply = h(req)
		s.mu.Lock()
	default:
		ok = false
	}
	s.n++
	id := fmt.Sprintf("chatcmpl-lmtest-%d", s.n)
	s.mu.Unlock()

	if !ok {
		// 410, not a 5xx: a used-up script is a test bug, which retries
		// would only make slow.
		writeError(w, http.StatusGone, `{"error":{"message":"lmtest: no scripted reply left","type":"invalid_request_error","code":"lmtest_script_exhausted"}}`)
		return
	}
	if !sleep(hr, reply.delay) {
		return
	}
	for k, vs := range reply.header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	if reply.raw != nil {
		writeRaw(w, reply)
		return
	}
	if reply.status != 0 {
		writeError(w, reply.status, reply.body)
		return
	}
	model := req.Chat.Model
	if model == "" {
		model = "lmtest"
	}
	usage := reply.usage
	if usage == nil {
		c := 0
		for _, t := range reply.contents {
			c += len(t)
		}
		u := openai.Usage{PromptTokens: len(body)/4 + 1, CompletionTokens: c/4 + 1}
		u.TotalTokens = u.PromptTokens + u.CompletionTokens
		usage = &u
	}
	if req.Chat.Stream {
		s.stream(w, hr, reply, id, model, usage, req.Chat.StreamOptions != nil && req.Chat.StreamOptions.IncludeUsage)
		return
	}
	choices := make([]map[string]any, len(reply.contents))
	for i, c := range reply.contents {
		msg := map[string]any{"role": "assistant", "content": c}
		if i == 0 {
			if reply.reasoning != "" {
				msg[reply.reasoningKey()] = reply.reasoning
			}
			if len(reply.toolCalls) > 0 {
				msg["tool_calls"] = reply.toolCalls
			}
			if reply.refusal != "" {
				msg["refusal"] = reply.refusal
			}
		}
		ch := map[string]any{"index": i, "message": msg, "finish_reason": nil}
		if !reply.noFinish {
			ch["finish_reason"] = reply.finish
		}
		choices[i] = ch
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"id": id, "object": "chat.completion", "created": time.Now().Unix(), "model": model,
		"choices": choices, "usage": usage,
	})
}

func writeError(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
}

// writeRaw sends a Raw reply, flushing after each SSE event.
func writeRaw(w http.ResponseWriter, reply Reply) {
	w.WriteHeader(reply.status)
	flusher, _ := w.(http.Flusher)
	body := reply.raw
	for len(body) > 0 {
		n := len(body)
		if i := bytes.Index(body, []byte("\n\n")); i >= 0 {
			n = i + 2
		}
		if _, err := w.Write(body[:n]); err != nil {
			return
		}
		if flusher != nil {
			flusher.Flush()
		}
		body = body[n:]
	}
}

// sleep waits d unless the request is cancelled first; it reports whether
// the wait completed.
func sleep(hr *http.Request, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-hr.Context().Done():
		return false
	}
}

func (s *Server) stream(w http.ResponseWriter, hr *http.Request, reply Reply, id, model string, usage *openai.Usage, includeUsage bool) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	flusher, _ := w.(http.Flusher)
	send := func(choices []map[string]any, extra map[string]any) bool {
		ev := map[string]any{"id": id, "object": "chat.completion.chunk", "created": time.Now().Unix(), "model": model, "choices": choices}
		for k, v := range extra {
			ev[k] = v
		}
		b, _ := json.Marshal(ev)
		if _, err := fmt.Fprintf(w, "data: %s\n\n", b); err != nil {
			return false
		}
		if flusher != nil {
			flusher.Flush()
		}
		return hr.Context().Err() == nil
	}
	delta := func(i int, d map[string]any) []map[string]any {
		return []map[string]any{{"index": i, "delta": d, "finish_reason": nil}}
	}
	size := reply.chunkSize
	if size <= 0 {
		size = 16
	}
	for i := range reply.contents {
		if !send(delta(i, map[string]any{"role": "assistant"}), nil) {
			return
		}
	}
	for _, piece := range chunks(reply.reasoning, size) {
		if !send(delta(0, map[string]any{reply.reasoningKey(): piece}), nil) || !sleep(hr, reply.chunkDelay) {
			return
		}
	}
	for i, c := range reply.contents {
		for _, piece := range chunks(c, size) {
			if !send(delta(i, map[string]any{"content": piece}), nil) || !sleep(hr, reply.chunkDelay) {
				return
			}
		}
	}
	if reply.refusal != "" && !send(delta(0, map[string]any{"refusal": reply.refusal}), nil) {
		return
	}
	for k, tc := range reply.toolCalls {
		args := tc.Function.Arguments
		half := len(args) / 2
		for half > 0 && half < len(args) && !utf8.RuneStart(args[half]) {
			half++
		}
		first := map[string]any{"index": k, "id": tc.ID, "type": "function", "function": map[string]any{"name": tc.Function.Name, "arguments": args[:half]}}
		second := map[string]any{"index": k, "function": map[string]any{"arguments": args[half:]}}
		for _, d := range []map[string]any{first, second} {
			if !send(delta(0, map[string]any{"tool_calls": []any{d}}), nil) {
				return
			}
		}
	}
	if reply.cut {
		return
	}
	for i := range reply.contents {
		ch := map[string]any{"index": i, "delta": map[string]any{}, "finish_reason": nil}
		if !reply.noFinish {
			ch["finish_reason"] = reply.finish
		}
		if !send([]map[string]any{ch}, nil) {
			return
		}
	}
	if includeUsage && !send([]map[string]any{}, map[string]any{"usage": usage}) {
		return
	}
	_, _ = io.WriteString(w, "data: [DONE]\n\n")
	if flusher != nil {
		flusher.Flush()
	}
}

// chunks splits s into pieces of about n bytes, never inside a UTF-8
// character.
func chunks(s string, n int) []string {
	var out []string
	for len(s) > 0 {
		end := min(n, len(s))
		for end < len(s) && !utf8.RuneStart(s[end]) {
			end++
		}
		out = append(out, s[:end])
		s = s[end:]
	}
	return out
}
