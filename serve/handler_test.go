package serve_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
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
	"github.com/sigwire/adapter/serve"
	"github.com/sigwire/adapter/signature"
)

func mustSig(t testing.TB, spec string) *signature.Signature {
	t.Helper()
	sig, err := signature.Parse(spec)
	require.NoError(t, err)
	return sig
}

// service serves a Predict of sig over an lmtest LM through the real
// go-openai client; it returns the service's URL and the LM server.
func service(t *testing.T, sig *signature.Signature, h *serve.Handler, replies ...lmtest.Reply) (string, *lmtest.Server) {
	t.Helper()
	lm := lmtest.NewServer(replies...)
	t.Cleanup(lm.Close)
	if h == nil {
		h = &serve.Handler{}
	}
	// A Handler of its own: one is not changed once it served.
	h = &serve.Handler{Module: h.Module, Options: h.Options, Timeout: h.Timeout, MaxBodyBytes: h.MaxBodyBytes,
		MaxConcurrent: h.MaxConcurrent, Logger: h.Logger, Title: h.Title, Ready: h.Ready}
	if h.Module == nil {
		h.Module = predict.NewModule(sig)
	}
	h.LM = lm.Client()
	if h.Logger == nil {
		h.Logger = slog.New(slog.DiscardHandler)
	}
	h.Options = append(slices.Clip(h.Options), adapter.NoRetry())
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL, lm
}

func post(t *testing.T, url, body string) (int, http.Header, map[string]any) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m), "%s", b)
	return resp.StatusCode, resp.Header, m
}

// TestPredict: POST /predict runs the module on the body's inputs and
// answers its outputs, typed as the signature says, with usage and
// counts; integers in the body stay integers in the prompt, as Python's
// json.loads reads them.
func TestPredict(t *testing.T) {
	sig := mustSig(t, "question: str, n: int -> answer: str, score: float")
	url, lm := service(t, sig, nil, lmtest.Text("[[ ## answer ## ]]\nParis\n\n[[ ## score ## ]]\n0.9\n\n[[ ## completed ## ]]").WithUsage(30, 7))
	status, _, body := post(t, url+"/predict", `{"question": "Capital of France?", "n": 3}`)
	require.Equal(t, http.StatusOK, status, "%v", body)
	assert.Equal(t, map[string]any{"answer": "Paris", "score": 0.9}, body["outputs"])
	assert.Equal(t, 37.0, body["usage"].(map[string]any)["total_tokens"])
	assert.Equal(t, 1.0, body["counts"].(map[string]any)["Requests"])
	require.Len(t, lm.Requests(), 1)
	assert.Contains(t, lm.Requests()[0].Chat.Messages[1].Content, "[[ ## n ## ]]\n3\n", "3, not 3.0")
}

// TestStatusTable: each class of failure is answered with its status and
// a JSON body naming it, the field and the reply where there is one.
func TestStatusTable(t *testing.T) {
	sig := mustSig(t, "question -> answer: int")
	cases := []struct {
		name   string
		body   string
		reply  *lmtest.Reply
		h      *serve.Handler
		status int
		typ    string
		check  func(t *testing.T, e map[string]any, hdr http.Header)
	}{
		{name: "unknown input", body: `{"questoin": "q"}`, status: 400, typ: "input", check: func(t *testing.T, e map[string]any, _ http.Header) {
			assert.Equal(t, "questoin", e["field"])
		}},
		{name: "missing input", body: `{}`, status: 400, typ: "input", check: func(t *testing.T, e map[string]any, _ http.Header) {
			assert.Equal(t, "question", e["field"])
		}},
		{name: "not JSON", body: `{"question": `, status: 400, typ: "bad_json"},
		{name: "not an object", body: `["q"]`, status: 400, typ: "bad_json"},
		{name: "too large", body: `{"question": "` + strings.Repeat("x", 2000) + `"}`, h: &serve.Handler{MaxBodyBytes: 1000}, status: 413, typ: "body_too_large"},
		{name: "parse", body: `{"question": "q"}`, reply: ptr(lmtest.Text("[[ ## answer ## ]]\na great many")), h: &serve.Handler{Options: []adapter.CallOption{adapter.NoFallback()}}, status: 422, typ: "parse", check: func(t *testing.T, e map[string]any, _ http.Header) {
			assert.Equal(t, "answer", e["field"])
			assert.Contains(t, e["completion"], "a great many")
		}},
		{name: "truncated", body: `{"question": "q"}`, reply: ptr(lmtest.Text("[[ ## answer ## ]]\n4").WithFinish("length")), status: 422, typ: "truncated"},
		{name: "refusal", body: `{"question": "q"}`, reply: ptr(lmtest.Text("").WithRefusal("I can't.")), status: 422, typ: "refusal"},
		{name: "rate limit", body: `{"question": "q"}`, reply: ptr(lmtest.Error(429, `{"error":{"message":"slow down"}}`)), status: 429, typ: "rate_limited", check: func(t *testing.T, _ map[string]any, hdr http.Header) {
			assert.NotEmpty(t, hdr.Get("Retry-After"))
		}},
		{name: "LM failure", body: `{"question": "q"}`, reply: ptr(lmtest.Error(500, `{"error":{"message":"boom"}}`)), status: 502, typ: "lm_error"},
		{name: "timeout", body: `{"question": "q"}`, reply: ptr(lmtest.Text("[[ ## answer ## ]]\n1").Delay(2 * time.Second)), h: &serve.Handler{Timeout: 50 * time.Millisecond}, status: 504, typ: "timeout"},
		{name: "budget", body: `{"question": "q"}`, h: &serve.Handler{Options: []adapter.CallOption{adapter.WithBudget(mustBudget(t, 10))}}, status: 402, typ: "budget"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var replies []lmtest.Reply
			if c.reply != nil {
				replies = append(replies, *c.reply)
			}
			url, _ := service(t, sig, c.h, replies...)
			status, hdr, body := post(t, url+"/predict", c.body)
			assert.Equal(t, c.status, status, "%v", body)
			e, ok := body["error"].(map[string]any)
			require.True(t, ok, "%v", body)
			assert.Equal(t, c.typ, e["type"])
			assert.NotEmpty(t, e["message"])
			if c.check != nil {
				c.check(t, e, hdr)
			}
			// The stream reports the same class in its error event.
			if status != 400 && status != 413 {
				if c.reply != nil {
					replies = []lmtest.Reply{*c.reply}
				}
				url, _ := service(t, sig, c.h, replies...)
				events := streamEvents(t, url, c.body)
				require.NotEmpty(t, events)
				last := events[len(events)-1]
				require.Equal(t, "error", last.name, "%v", events)
				assert.Equal(t, float64(c.status), last.data["status"])
				assert.Equal(t, c.typ, last.data["error"].(map[string]any)["type"])

				// StatusOf gives the same status for the error the module's
				// own Call returns.
				lm := lmtest.NewServer()
				defer lm.Close()
				if c.reply != nil {
					lm.Handle(func(lmtest.Request) lmtest.Reply { return *c.reply })
				}
				ctx := t.Context()
				var opts []adapter.CallOption
				if c.h != nil {
					opts = c.h.Options
					if c.h.Timeout > 0 {
						var cancel context.CancelFunc
						ctx, cancel = context.WithTimeout(ctx, c.h.Timeout)
						defer cancel()
					}
				}
				_, err := predict.NewModule(sig).Call(ctx, lm.Client(), adapter.Values{"question": "q"}, opts...)
				require.Error(t, err)
				assert.Equal(t, c.status, serve.StatusOf(err), "%v", err)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

func mustBudget(t *testing.T, tokens int64) *adapter.LocalBudget {
	b, err := adapter.NewBudget(adapter.Limit{Tokens: tokens})
	require.NoError(t, err)
	return b
}

type event struct {
	name string
	data map[string]any
}

// streamEvents posts body to /stream and reads its events.
func streamEvents(t *testing.T, url, body string) []event {
	t.Helper()
	resp, err := http.Post(url+"/stream", "application/json", strings.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		var m map[string]any
		require.NoError(t, json.Unmarshal(b, &m))
		return []event{{name: "error", data: map[string]any{"status": float64(resp.StatusCode), "error": m["error"]}}}
	}
	assert.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	var events []event
	sc := bufio.NewScanner(resp.Body)
	var name string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			var m map[string]any
			require.NoError(t, json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &m))
			events = append(events, event{name, m})
		}
	}
	return events
}

// TestStreamAgreesWithPredict: the stream's field events add up to the
// outputs, and its done event is the body POST /predict answers for the
// same reply.
func TestStreamAgreesWithPredict(t *testing.T) {
	sig := mustSig(t, "question -> reasoning, answer")
	reply := lmtest.Text("[[ ## reasoning ## ]]\nIt is the capital.\n\n[[ ## answer ## ]]\nParis, on the Seine\n\n[[ ## completed ## ]]").ChunkSize(5).WithUsage(10, 5)
	url, _ := service(t, sig, nil, reply, reply)
	status, _, predicted := post(t, url+"/predict", `{"question": "q"}`)
	require.Equal(t, 200, status)
	events := streamEvents(t, url, `{"question": "q"}`)
	fields := map[string]string{}
	n := 0
	for _, e := range events[:len(events)-1] {
		require.Equal(t, "field", e.name)
		if e.data["replace"] == true {
			fields[e.data["field"].(string)] = ""
		}
		fields[e.data["field"].(string)] += e.data["delta"].(string)
		n++
	}
	assert.Greater(t, n, 4, "fields arrive in pieces")
	done := events[len(events)-1]
	require.Equal(t, "done", done.name)
	assert.Equal(t, predicted["outputs"], done.data["outputs"])
	assert.Equal(t, predicted["usage"], done.data["usage"])
	for k, v := range done.data["outputs"].(map[string]any) {
		assert.Equal(t, v, fields[k], k)
	}
}

// TestStreamClientDisconnects: a client that goes away ends the call:
// the module's context is canceled and the LM's stream closed.
func TestStreamClientDisconnects(t *testing.T) {
	sig := mustSig(t, "question -> answer")
	ended := make(chan error, 1)
	trace := &adapter.Trace{CallDone: func(i adapter.CallDoneInfo) { ended <- i.Err }}
	h := &serve.Handler{Options: []adapter.CallOption{adapter.UseTrace(trace)}}
	url, _ := service(t, sig, h, lmtest.Text("[[ ## answer ## ]]\n"+strings.Repeat("word ", 400)).ChunkSize(5).ChunkDelay(5*time.Millisecond))
	ctx, cancel := context.WithCancel(t.Context())
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/stream", strings.NewReader(`{"question": "q"}`))
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	rd := bufio.NewReader(resp.Body)
	_, err = rd.ReadString('\n')
	require.NoError(t, err, "the first event arrives")
	start := time.Now()
	cancel()
	resp.Body.Close()
	select {
	case err := <-ended:
		assert.ErrorIs(t, err, context.Canceled)
		assert.Less(t, time.Since(start), 2*time.Second, "the call ended long before the reply would have")
	case <-time.After(5 * time.Second):
		t.Fatal("the call did not end when its client went away")
	}
}

// TestConcurrencyLimit: with every call slot taken, a request is answered
// 429 at once with Retry-After, and the LM is not called for it.
func TestConcurrencyLimit(t *testing.T) {
	sig := mustSig(t, "question -> answer")
	slow := lmtest.Text("[[ ## answer ## ]]\nok").Delay(500 * time.Millisecond)
	url, lm := service(t, sig, &serve.Handler{MaxConcurrent: 1}, slow, slow)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		status, _, _ := post(t, url+"/predict", `{"question": "q"}`)
		assert.Equal(t, 200, status)
	}()
	require.Eventually(t, func() bool { return len(lm.Requests()) == 1 }, 2*time.Second, 5*time.Millisecond)
	for _, path := range []string{"/predict", "/stream"} {
		start := time.Now()
		status, hdr, body := post(t, url+path, `{"question": "q"}`)
		assert.Equal(t, 429, status, path)
		assert.Equal(t, "busy", body["error"].(map[string]any)["type"])
		assert.Equal(t, "1", hdr.Get("Retry-After"))
		assert.Less(t, time.Since(start), 400*time.Millisecond, "answered at once")
	}
	wg.Wait()
	assert.Len(t, lm.Requests(), 1)
}

// TestPrepareSchemaOpenAPI: POST /prepare shows the request Prepare
// gives, nothing sent; GET /schema and /openapi.json describe the
// signature; health and readiness answer.
func TestPrepareSchemaOpenAPI(t *testing.T) {
	sig, err := mustSig(t, "question: str -> answer: int, tags: list[str]").Update("question", func(f *signature.Field) { f.Desc = "the question" })
	require.NoError(t, err)
	ready := fmt.Errorf("warming up")
	h := &serve.Handler{Title: "qa", Ready: func(context.Context) error { return ready }}
	url, lm := service(t, sig, h)

	status, _, body := post(t, url+"/prepare", `{"question": "q"}`)
	require.Equal(t, 200, status, "%v", body)
	want, err := predict.NewModule(sig).Prepare(t.Context(), lm.Client(), adapter.Values{"question": "q"})
	require.NoError(t, err)
	got, err := json.Marshal(body["request"])
	require.NoError(t, err)
	var gotReq openai.ChatCompletionRequest
	require.NoError(t, json.Unmarshal(got, &gotReq))
	assert.Equal(t, want.Messages, gotReq.Messages)
	assert.Empty(t, lm.Requests(), "nothing sent")

	var schema map[string]any
	getJSON(t, url+"/schema", 200, &schema)
	in := schema["inputs"].(map[string]any)
	assert.Equal(t, []any{"question"}, in["required"])
	assert.Equal(t, "the question", in["properties"].(map[string]any)["question"].(map[string]any)["description"])
	out := schema["outputs"].(map[string]any)["properties"].(map[string]any)
	assert.Equal(t, "integer", out["answer"].(map[string]any)["type"])
	assert.Equal(t, "array", out["tags"].(map[string]any)["type"])

	var doc map[string]any
	getJSON(t, url+"/openapi.json", 200, &doc)
	assert.Equal(t, "3.1.0", doc["openapi"])
	assert.Equal(t, "qa", doc["info"].(map[string]any)["title"])
	for _, p := range []string{"/predict", "/stream", "/prepare", "/schema", "/healthz", "/readyz"} {
		assert.Contains(t, doc["paths"], p)
	}
	assert.Equal(t, in, doc["components"].(map[string]any)["schemas"].(map[string]any)["Inputs"])

	var m map[string]any
	getJSON(t, url+"/healthz", 200, &m)
	getJSON(t, url+"/readyz", 503, &m)
	ready = nil
	getJSON(t, url+"/readyz", 200, &m)
}

func getJSON(t *testing.T, url string, status int, v any) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	assert.Equal(t, status, resp.StatusCode, url)
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, json.NewDecoder(bytes.NewReader(b)).Decode(v), "%s", b)
}

type qaIn struct {
	Question string `json:"question"`
}

type qaOut struct {
	Answer string `json:"answer"`
}

// TestTypedBestOfN: a typed module (a BestOfN over a Predict) is served
// through Typed: its inputs are read into In, its chosen Out answered.
func TestTypedBestOfN(t *testing.T) {
	p, err := predict.New[qaIn, qaOut]()
	require.NoError(t, err)
	reward := func(_ context.Context, _ qaIn, out qaOut) (float64, error) { return float64(len(out.Answer)), nil }
	best, err := predict.NewBestOfN(p, 2, reward, 100)
	require.NoError(t, err)
	h := &serve.Handler{Module: serve.Typed(p.Signature(), best)}
	url, _ := service(t, p.Signature(), h, lmtest.Text("[[ ## answer ## ]]\nshort"), lmtest.Text("[[ ## answer ## ]]\nthe longer one"))
	status, _, body := post(t, url+"/predict", `{"question": "q"}`)
	require.Equal(t, 200, status, "%v", body)
	assert.Equal(t, map[string]any{"answer": "the longer one"}, body["outputs"])
	assert.Equal(t, 2.0, body["counts"].(map[string]any)["Requests"])

	status, _, body = post(t, url+"/predict", `{"question": 3}`)
	assert.Equal(t, 400, status)
	assert.Equal(t, "question", body["error"].(map[string]any)["field"])
}

// TestPredictStructuredInputs: list and dict inputs in the body reach the
// prompt as the signature's types, integers as integers; a dict's keys
// are shown sorted (Go maps have no order; docs/serve.md).
func TestPredictStructuredInputs(t *testing.T) {
	sig := mustSig(t, "d: dict[str, int], xs: list[int], o: dict -> a")
	url, lm := service(t, sig, nil, lmtest.Text("[[ ## a ## ]]\nok"))
	status, _, body := post(t, url+"/predict", `{"d": {"b": 1, "a": 2}, "xs": [3, 1], "o": {"z": [1, 2.5, "x"], "y": null}}`)
	require.Equal(t, 200, status, "%v", body)
	user := lm.Requests()[0].Chat.Messages[1].Content
	assert.Contains(t, user, "[[ ## d ## ]]\n{\"a\": 2, \"b\": 1}\n")
	assert.Contains(t, user, "[[ ## xs ## ]]\n[3, 1]\n")
	assert.Contains(t, user, "[[ ## o ## ]]\n{\"y\": null, \"z\": [1, 2.5, \"x\"]}\n")

	status, _, body = post(t, url+"/predict", `{"d": {"a": "two"}, "xs": [], "o": {}}`)
	assert.Equal(t, 400, status)
	assert.Equal(t, "d", body["error"].(map[string]any)["field"])
}
