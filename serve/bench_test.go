package serve_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/lmtest"
	"github.com/sigwire/adapter/predict"
	"github.com/sigwire/adapter/serve"
	"github.com/sigwire/adapter/signature"
)

const benchReply = "[[ ## reasoning ## ]]\nParis is the capital and largest city of France.\n\n[[ ## answer ## ]]\nParis\n\n[[ ## completed ## ]]"

func benchSetup(b *testing.B, reply lmtest.Reply) (*serve.Handler, *lmtest.Server) {
	b.Helper()
	lm := lmtest.NewServer()
	b.Cleanup(lm.Close)
	lm.Handle(func(lmtest.Request) lmtest.Reply { return reply })
	sig, err := signature.Parse("question, context -> reasoning, answer")
	if err != nil {
		b.Fatal(err)
	}
	h := &serve.Handler{Module: predict.NewModule(sig), LM: lm.Client(), Logger: slog.New(slog.DiscardHandler), MaxConcurrent: -1}
	return h, lm
}

var benchInputs = adapter.Values{"question": "What is the capital of France?", "context": "France is a country in Western Europe."}

const benchBody = `{"question": "What is the capital of France?", "context": "France is a country in Western Europe."}`

// BenchmarkServePredict: a predict call made directly (the module's Call,
// lmtest over loopback) against the same call through the Handler, in
// the process (ServeHTTP with a recorder: what the handler adds) and
// over loopback HTTP (what a client sees, one more hop). BENCHMARKS.md
// records the ratios.
func BenchmarkServePredict(b *testing.B) {
	h, _ := benchSetup(b, lmtest.Text(benchReply))
	b.Run("direct", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := h.Module.Call(context.Background(), h.LM, benchInputs); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("handler", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			w := httptest.NewRecorder()
			h.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/predict", strings.NewReader(benchBody)))
			if w.Code != http.StatusOK {
				b.Fatal(w.Code, w.Body.String())
			}
		}
	})
	// What the handler itself costs: the same request to a module that
	// answers at once with the Result the LM call gave (decoding the
	// body, the call slot, the timeout, writing the outputs, the log).
	res, err := h.Module.Call(context.Background(), h.LM, benchInputs)
	if err != nil {
		b.Fatal(err)
	}
	instant := &serve.Handler{Module: instantModule{h.Module, res}, LM: h.LM, Logger: h.Logger, MaxConcurrent: h.MaxConcurrent}
	b.Run("handler-alone", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			w := httptest.NewRecorder()
			instant.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/predict", strings.NewReader(benchBody)))
			if w.Code != http.StatusOK {
				b.Fatal(w.Code, w.Body.String())
			}
		}
	})
	b.Run("http", func(b *testing.B) {
		srv := httptest.NewServer(h)
		defer srv.Close()
		b.ReportAllocs()
		for b.Loop() {
			resp, err := http.Post(srv.URL+"/predict", "application/json", strings.NewReader(benchBody))
			if err != nil {
				b.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				b.Fatal(resp.Status)
			}
		}
	})
}

// instantModule answers every call with res, at once.
type instantModule struct {
	serve.Module
	res *adapter.Result
}

func (m instantModule) Call(context.Context, adapter.LM, adapter.Values, ...adapter.CallOption) (*adapter.Result, error) {
	return m.res, nil
}

// BenchmarkServeFirstDelta: the time from sending a request to its first
// token, as go-openai's own stream receives it from lmtest, against the
// time to the first field event of the Handler's stream over loopback;
// the difference (reported as ns-after-first-token) is what the library
// and the handler add before the caller sees the first field text.
func BenchmarkServeFirstDelta(b *testing.B) {
	reply := lmtest.Text(benchReply).ChunkSize(4)
	h, lm := benchSetup(b, reply)
	srv := httptest.NewServer(h)
	defer srv.Close()
	client := lm.Client()
	var direct, served time.Duration
	b.ReportAllocs()
	for b.Loop() {
		start := time.Now()
		s, err := client.CreateChatCompletionStream(context.Background(), openai.ChatCompletionRequest{Messages: []openai.ChatCompletionMessage{{Role: "user", Content: "q"}}, Stream: true})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := s.Recv(); err != nil {
			b.Fatal(err)
		}
		direct += time.Since(start)
		s.Close()

		start = time.Now()
		resp, err := http.Post(srv.URL+"/stream", "application/json", strings.NewReader(benchBody))
		if err != nil {
			b.Fatal(err)
		}
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if sc.Text() == "event: field" {
				break
			}
		}
		served += time.Since(start)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	n := float64(b.N)
	b.ReportMetric(float64(direct.Nanoseconds())/n, "ns-to-first-token")
	b.ReportMetric(float64(served.Nanoseconds())/n, "ns-to-first-field")
	b.ReportMetric(float64((served-direct).Nanoseconds())/n, "ns-after-first-token")
}

// TestServeConcurrentStreams holds N streams open at once through the
// Handler over loopback and reports what each holds (goroutines, heap),
// then checks that both go back to where they were once the streams end:
// no leak. N is SERVE_STREAMS (100 by default, to keep the suite quick;
// BENCHMARKS.md records 1,000).
func TestServeConcurrentStreams(t *testing.T) {
	n := 100
	if s := os.Getenv("SERVE_STREAMS"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	lm := lmtest.NewServer()
	defer lm.Close()
	release := make(chan struct{})
	lm.Handle(func(lmtest.Request) lmtest.Reply {
		<-release // every stream in flight at once, holding its first chunk back
		return lmtest.Text(benchReply).ChunkSize(16)
	})
	sig, err := signature.Parse("question, context -> reasoning, answer")
	if err != nil {
		t.Fatal(err)
	}
	h := &serve.Handler{Module: predict.NewModule(sig), LM: lm.Client(), Logger: slog.New(slog.DiscardHandler), MaxConcurrent: -1}
	srv := httptest.NewServer(h)
	tr := &http.Transport{MaxIdleConnsPerHost: n, MaxConnsPerHost: 0}
	client := &http.Client{Transport: tr}

	settle := func() (int, uint64) {
		for range 20 {
			runtime.GC()
			time.Sleep(10 * time.Millisecond)
		}
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return runtime.NumGoroutine(), ms.HeapAlloc
	}
	g0, h0 := settle()

	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := client.Post(srv.URL+"/stream", "application/json", strings.NewReader(benchBody))
			if err != nil {
				errs <- err
				return
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			if err != nil {
				errs <- err
				return
			}
			if !strings.Contains(string(b), "event: done") {
				errs <- fmt.Errorf("no done event: %s", b)
			}
		}()
	}
	deadline := time.Now().Add(60 * time.Second)
	for len(lm.Requests()) < n && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := len(lm.Requests()); got < n {
		t.Fatalf("%d of %d streams reached the LM", got, n)
	}
	g1, h1 := settle()
	close(release)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	t.Logf("%d streams in flight: %.1f goroutines and %.1f KiB of heap each (the client's, the handler's and lmtest's, all in this process)",
		n, float64(g1-g0)/float64(n), float64(int64(h1)-int64(h0))/1024/float64(n))

	srv.Close()
	tr.CloseIdleConnections()
	lm.Close()
	http.DefaultTransport.(*http.Transport).CloseIdleConnections() // go-openai's client's
	deadline = time.Now().Add(10 * time.Second)
	var g2 int
	var h2 uint64
	for time.Now().Before(deadline) {
		g2, h2 = settle()
		if g2 <= g0+2 {
			break
		}
	}
	t.Logf("after: %d goroutines (%d before), %.0f KiB heap (%.0f KiB before)", g2, g0, float64(h2)/1024, float64(h0)/1024)
	if g2 > g0+2 {
		buf := make([]byte, 1<<20)
		t.Fatalf("goroutines leaked: %d before, %d after the streams ended\n%s", g0, g2, buf[:runtime.Stack(buf, true)])
	}
	// lmtest keeps every request it served (a few KiB each), and the HTTP
	// packages keep pooled buffers: a stream's own state left behind would
	// be its in-flight share, tens of KiB, well above this bound.
	if h2 > h0+uint64(n)*16*1024 {
		t.Errorf("heap grew: %d KiB before, %d KiB after", h0/1024, h2/1024)
	}
}
