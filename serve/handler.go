package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	openai "github.com/sashabaranov/go-openai"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/internal/pyjson"
	"github.com/sigwire/adapter/signature"
)

// Module is what a Handler serves: *predict.Module, *predict.ReAct and
// *predict.ReActV2 are Modules; a typed module (a Predict, a
// ChainOfThought's Module(), a BestOfN, a Refine) is served through
// [Typed].
type Module interface {
	Signature() *signature.Signature
	Call(ctx context.Context, lm adapter.LM, inputs adapter.Values, opts ...adapter.CallOption) (*adapter.Result, error)
	Stream(ctx context.Context, lm adapter.StreamingLM, inputs adapter.Values, opts ...adapter.CallOption) iter.Seq2[adapter.Chunk, error]
}

// Preparer is a Module that can show the request it would send
// (POST /prepare); the modules of package predict are Preparers.
type Preparer interface {
	Prepare(ctx context.Context, lm adapter.LM, inputs adapter.Values, opts ...adapter.CallOption) (openai.ChatCompletionRequest, error)
}

// Handler serves one Module over HTTP (see the package doc for its
// routes). Set its fields before the first request and do not change
// them after; it is safe for concurrent use.
type Handler struct {
	// Module is the module served; LM the model it calls.
	Module Module
	LM     adapter.StreamingLM
	// Options are given to every call, before a request's own.
	Options []adapter.CallOption
	// Timeout bounds each request's call (0: 2 minutes; negative: none
	// beyond the client's).
	Timeout time.Duration
	// MaxBodyBytes bounds a request body (0: 1 MiB); a larger one is 413.
	MaxBodyBytes int64
	// MaxConcurrent bounds the calls running at once, predict and stream
	// together (0: 64; negative: no bound); a request that finds them all
	// taken is answered 429 at once, with Retry-After: 1.
	MaxConcurrent int
	// Logger receives a line per request (nil: slog.Default()).
	Logger *slog.Logger
	// Title names the service in the OpenAPI document ("" : "sigwire").
	Title string
	// Ready reports readiness for GET /readyz (nil: ready).
	Ready func(context.Context) error

	once sync.Once
	mux  *http.ServeMux
	sem  chan struct{}
}

const (
	defaultTimeout       = 2 * time.Minute
	defaultMaxBodyBytes  = 1 << 20
	defaultMaxConcurrent = 64
)

// ServeHTTP answers one request.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.once.Do(h.init)
	h.mux.ServeHTTP(w, r)
}

func (h *Handler) init() {
	n := h.MaxConcurrent
	if n == 0 {
		n = defaultMaxConcurrent
	}
	if n > 0 {
		h.sem = make(chan struct{}, n)
	}
	m := http.NewServeMux()
	m.HandleFunc("POST /predict", h.predict)
	m.HandleFunc("POST /stream", h.stream)
	m.HandleFunc("POST /prepare", h.prepare)
	m.HandleFunc("GET /schema", h.schema)
	m.HandleFunc("GET /openapi.json", h.openAPI)
	m.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	m.HandleFunc("GET /readyz", h.ready)
	h.mux = m
}

func (h *Handler) logger() *slog.Logger {
	if h.Logger != nil {
		return h.Logger
	}
	return slog.Default()
}

// acquire takes a call slot; false when all are taken (answered 429).
func (h *Handler) acquire(w http.ResponseWriter) (release func(), ok bool) {
	if h.sem == nil {
		return func() {}, true
	}
	select {
	case h.sem <- struct{}{}:
		return func() { <-h.sem }, true
	default:
		w.Header().Set("Retry-After", "1")
		writeError(w, &Error{Status: http.StatusTooManyRequests, Type: "busy",
			Message: fmt.Sprintf("the handler runs %d calls at once and all are taken; retry later", cap(h.sem))})
		return nil, false
	}
}

// callContext is the request's context bounded by the Handler's Timeout.
func (h *Handler) callContext(r *http.Request) (context.Context, context.CancelFunc) {
	switch {
	case h.Timeout < 0:
		return context.WithCancel(r.Context())
	case h.Timeout == 0:
		return context.WithTimeout(r.Context(), defaultTimeout)
	}
	return context.WithTimeout(r.Context(), h.Timeout)
}

// inputs reads the request body (see DecodeInputs).
func (h *Handler) inputs(w http.ResponseWriter, r *http.Request) (adapter.Values, *Error) {
	max := h.MaxBodyBytes
	if max <= 0 {
		max = defaultMaxBodyBytes
	}
	body, err := readBody(w, r, max)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return nil, &Error{Status: http.StatusRequestEntityTooLarge, Type: "body_too_large", Message: fmt.Sprintf("the request body is larger than %d bytes", max)}
		}
		return nil, &Error{Status: http.StatusBadRequest, Type: "bad_body", Message: "reading the request body: " + err.Error()}
	}
	in, err := DecodeInputs(body)
	if err != nil {
		return nil, &Error{Status: http.StatusBadRequest, Type: "bad_json", Message: err.Error()}
	}
	return in, nil
}

// DecodeInputs reads inputs as the Handler reads a request body: a JSON
// object of the inputs, numbers read as Python's json.loads reads them
// (an integer is an int), objects as maps (a dict input is shown with
// its keys sorted, as Go maps are; DSPy keeps the JSON's order).
func DecodeInputs(body []byte) (adapter.Values, error) {
	v, err := pyjson.Decode(body)
	if err != nil {
		return nil, fmt.Errorf("the body is not JSON: %w", err)
	}
	obj, ok := v.(pyjson.Object)
	if !ok {
		return nil, errors.New(`the body must be a JSON object of the inputs, such as {"question": "…"}`)
	}
	in := make(adapter.Values, obj.Len())
	for _, m := range obj.Members() {
		in[m.Key] = pyjson.Plain(m.Value)
	}
	return in, nil
}

// begin reads a call's inputs, takes a call slot and bounds the call's
// context: what /predict and /stream do first. When it fails it has
// answered; otherwise done releases the slot and the context.
func (h *Handler) begin(w http.ResponseWriter, r *http.Request, start time.Time) (ctx context.Context, in adapter.Values, done func(), ok bool) {
	in, e := h.inputs(w, r)
	if e != nil {
		h.fail(w, r, start, e)
		return nil, nil, nil, false
	}
	release, ok := h.acquire(w)
	if !ok {
		h.log(r, start, http.StatusTooManyRequests, nil)
		return nil, nil, nil, false
	}
	ctx, cancel := h.callContext(r)
	return ctx, in, func() { cancel(); release() }, true
}

// predict answers POST /predict.
func (h *Handler) predict(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	ctx, in, done, ok := h.begin(w, r, start)
	if !ok {
		return
	}
	defer done()
	res, err := h.Module.Call(ctx, h.LM, in, h.Options...)
	if err != nil {
		h.fail(w, r, start, errorOf(err))
		return
	}
	body, err := json.Marshal(responseOf(res))
	if err != nil {
		h.fail(w, r, start, &Error{Status: http.StatusInternalServerError, Type: "internal", Message: "writing the outputs as JSON: " + err.Error()})
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
	h.log(r, start, http.StatusOK, res)
}

// prepare answers POST /prepare: the request the module would send.
func (h *Handler) prepare(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	p, ok := h.Module.(Preparer)
	if !ok {
		h.fail(w, r, start, &Error{Status: http.StatusNotImplemented, Type: "unsupported", Message: fmt.Sprintf("%T cannot show its request without calling the LM", h.Module)})
		return
	}
	in, e := h.inputs(w, r)
	if e != nil {
		h.fail(w, r, start, e)
		return
	}
	req, err := p.Prepare(r.Context(), h.LM, in, h.Options...)
	if err != nil {
		h.fail(w, r, start, errorOf(err))
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"request": req})
	h.log(r, start, http.StatusOK, nil)
}

// ready answers GET /readyz.
func (h *Handler) ready(w http.ResponseWriter, r *http.Request) {
	if h.Ready != nil {
		if err := h.Ready(r.Context()); err != nil {
			writeError(w, &Error{Status: http.StatusServiceUnavailable, Type: "not_ready", Message: err.Error()})
			return
		}
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}

// fail writes e and logs the request.
func (h *Handler) fail(w http.ResponseWriter, r *http.Request, start time.Time, e *Error) {
	if e.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int((e.RetryAfter+time.Second-1)/time.Second)))
	}
	writeError(w, e)
	h.log(r, start, e.Status, nil, slog.String("error_type", e.Type), slog.String("error", e.Message))
}

// log writes one line for a request.
func (h *Handler) log(r *http.Request, start time.Time, status int, res *adapter.Result, attrs ...slog.Attr) {
	level := slog.LevelInfo
	if status >= 500 {
		level = slog.LevelError
	} else if status >= 400 {
		level = slog.LevelWarn
	}
	attrs = append(attrs, slog.String("method", r.Method), slog.String("path", r.URL.Path), slog.Int("status", status),
		slog.Duration("duration", time.Since(start)))
	if res != nil {
		attrs = append(attrs, slog.String("model", res.Model), slog.Int("requests", res.Requests), slog.Int("tokens", res.Usage.TotalTokens))
	}
	h.logger().LogAttrs(r.Context(), level, "serve", attrs...)
}

// readBody reads at most max bytes of r's body.
func readBody(w http.ResponseWriter, r *http.Request, max int64) ([]byte, error) {
	rd := http.MaxBytesReader(w, r.Body, max)
	defer rd.Close()
	return io.ReadAll(rd)
}

// Response is the body of a successful POST /predict, and the data of a
// stream's done event.
type Response struct {
	// Outputs are the first choice's outputs; Choices every choice's, when
	// the request asked for more than one.
	Outputs adapter.Values   `json:"outputs"`
	Choices []adapter.Values `json:"choices,omitempty"`
	// Adapter, Model and Mode say who answered and how (see adapter.Result).
	Adapter string `json:"adapter,omitempty"`
	Model   string `json:"model,omitempty"`
	Mode    string `json:"mode,omitempty"`
	// Usage is the call's tokens; Counts its counters; Notes what it did
	// that DSPy does silently.
	Usage  openai.Usage   `json:"usage"`
	Counts adapter.Counts `json:"counts"`
	Notes  []string       `json:"notes,omitempty"`
}

func responseOf(res *adapter.Result) Response {
	out := Response{Adapter: res.Adapter, Model: res.Model, Mode: res.Mode, Usage: res.Usage, Counts: res.Counts, Notes: res.Notes}
	if len(res.Outputs) > 0 {
		out.Outputs = res.Outputs[0]
	}
	if len(res.Outputs) > 1 {
		out.Choices = res.Outputs
	}
	return out
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		status, body = http.StatusInternalServerError, []byte(`{"error":{"type":"internal","message":"writing the response as JSON failed"}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
}
