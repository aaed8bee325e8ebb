package adapter_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/lmtest"
)

// The tests of coalesced calls hold the LM's reply until every follower
// has joined the call in flight (adapter.OnJoin counts them), so that what
// they assert does not depend on timing: the reply is held in lmtest's
// handler (a blocking call), or in the client's transport after the first
// events of a stream (a stream in mid-reply).

// joins counts the requests that joined another's call in flight.
func joins(t *testing.T) *atomic.Int64 {
	var n atomic.Int64
	t.Cleanup(adapter.OnJoin(func() { n.Add(1) }))
	return &n
}

// eventually waits until cond holds: a guard against a test that would
// hang, never a timing assertion (10 s is far beyond any correct run).
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("never happened: %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// gate is closed once to let held replies go.
type gate struct {
	ch   chan struct{}
	once sync.Once
}

func newGate(t *testing.T) *gate {
	g := &gate{ch: make(chan struct{})}
	t.Cleanup(g.open) // a failing test must not leave a handler blocked
	return g
}

func (g *gate) open() { g.once.Do(func() { close(g.ch) }) }

// heldServer is an lmtest server whose handler holds every request until
// the gate opens, then answers it with reply.
func heldServer(t *testing.T, g *gate, reply lmtest.Reply) *lmtest.Server {
	srv := lmtest.NewServer()
	srv.Handle(func(lmtest.Request) lmtest.Reply { <-g.ch; return reply })
	t.Cleanup(srv.Close)
	t.Cleanup(g.open) // runs before srv.Close
	return srv
}

// holdTransport lets through the first n data lines of each streamed
// reply, then holds the rest until the gate opens (a reply that is not a
// stream is held whole); it records each request's context.
type holdTransport struct {
	n    int
	g    *gate
	mu   sync.Mutex
	ctxs []context.Context
}

func (h *holdTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	h.mu.Lock()
	h.ctxs = append(h.ctxs, req.Context())
	h.mu.Unlock()
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	n := h.n
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		n = 0 // a whole reply is held whole
	}
	resp.Body = &heldBody{r: bufio.NewReader(resp.Body), c: resp.Body, n: n, g: h.g, done: req.Context().Done()}
	return resp, nil
}

// requests returns the contexts of the requests sent so far.
func (h *holdTransport) requests() []context.Context {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]context.Context(nil), h.ctxs...)
}

type heldBody struct {
	r       *bufio.Reader
	c       io.Closer
	n       int // data lines still to let through; then hold
	g       *gate
	done    <-chan struct{}
	pending []byte
}

func (b *heldBody) Read(p []byte) (int, error) {
	for len(b.pending) == 0 {
		if b.n == 0 {
			select {
			case <-b.g.ch:
			case <-b.done:
				return 0, context.Canceled
			}
			b.n = -1
		}
		line, err := b.r.ReadBytes('\n')
		if len(line) == 0 {
			return 0, err
		}
		if b.n > 0 && bytes.HasPrefix(line, []byte("data:")) {
			b.n--
		}
		b.pending = line
	}
	n := copy(p, b.pending)
	b.pending = b.pending[n:]
	return n, nil
}

func (b *heldBody) Close() error { return b.c.Close() }

// heldClient is a go-openai client of srv whose replies stop after n data
// lines until the gate opens.
func heldClient(srv *lmtest.Server, n int, g *gate) (*openai.Client, *holdTransport) {
	h := &holdTransport{n: n, g: g}
	cfg := srv.Config()
	cfg.HTTPClient = &http.Client{Transport: h}
	return openai.NewClientWithConfig(cfg), h
}

// streamed is what a stream gave: its chunks (without the Done chunk's
// Result), the Result and the error.
type streamed struct {
	chunks []adapter.Chunk
	res    *adapter.Result
	err    error
}

// deltas concatenates the stream's deltas of field.
func (s streamed) deltas(field string) string {
	var b strings.Builder
	for _, c := range s.chunks {
		if c.Field == field {
			b.WriteString(c.Delta)
		}
	}
	return b.String()
}

// consume runs a stream to its end, sending each chunk to seen (if not
// nil) as it arrives.
func consume(seq func(func(adapter.Chunk, error) bool), seen chan<- adapter.Chunk) streamed {
	var s streamed
	for c, err := range seq {
		if err != nil {
			s.err = err
			break
		}
		if c.Done {
			s.res = c.Result
			c.Result = nil
		}
		s.chunks = append(s.chunks, c)
		if seen != nil {
			seen <- c
		}
	}
	if seen != nil {
		close(seen)
	}
	return s
}

// firstDelta waits for a chunk of field on seen.
func firstDelta(t *testing.T, seen <-chan adapter.Chunk, field string) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case c, ok := <-seen:
			require.True(t, ok, "the stream ended before a delta of %s", field)
			if c.Field == field && c.Delta != "" {
				go func() {
					for range seen { // keep the stream going
					}
				}()
				return
			}
		case <-timeout:
			t.Fatalf("no delta of %s", field)
		}
	}
}

// TestCoalescedCalls: N goroutines asking one prompt at once make one LM
// call: the first sends it, the others join it and get its reply, spend
// no tokens and are counted as coalesced, in the Result and the trace.
func TestCoalescedCalls(t *testing.T) {
	const n = 50
	sig := mustParse(t, "q -> a")
	g := newGate(t)
	srv := heldServer(t, g, lmtest.Text("[[ ## a ## ]]\nParis").WithUsage(100, 5))
	joined := joins(t)
	lm := adapter.WithMiddleware(srv.Client(), adapter.Cached(adapter.NewLRU(10)))

	results, errs := make([]*adapter.Result, n), make([]error, n)
	events := make([][]adapter.LMCallDoneInfo, n)
	var wg sync.WaitGroup
	t.Cleanup(func() { g.open(); wg.Wait() }) // a failing test leaves no caller behind
	for i := range n {
		wg.Go(func() {
			tr := &adapter.Trace{LMCallDone: func(e adapter.LMCallDoneInfo) { events[i] = append(events[i], e) }}
			results[i], errs[i] = adapter.Call(t.Context(), lm, sig, nil, adapter.Values{"q": "capital of France?"}, adapter.UseTrace(tr))
		})
	}
	eventually(t, "every follower joined", func() bool { return joined.Load() == n-1 })
	g.open()
	wg.Wait()

	calls := len(srv.Requests())
	t.Logf("%d goroutines asking one prompt: %d LM call(s)", n, calls)
	assert.Equal(t, 1, calls)
	coalesced, tokens := 0, 0
	for i := range n {
		require.NoError(t, errs[i])
		res := results[i]
		assert.Equal(t, "Paris", res.Outputs[0]["a"])
		assert.Equal(t, 1, res.Calls)
		assert.Zero(t, res.CacheHits)
		coalesced += res.Coalesced
		tokens += res.Usage.TotalTokens
		require.Len(t, events[i], 1)
		e := events[i][0]
		assert.Equal(t, res.Coalesced == 1, e.Coalesced)
		assert.False(t, e.Cached)
		assert.Equal(t, res.Usage, e.Usage, "the trace reports what the Result counts")
		if res.Coalesced == 1 {
			assert.Zero(t, res.Usage, "a coalesced call spends no tokens")
			assert.Zero(t, e.Response.Usage)
		} else {
			assert.Equal(t, 105, res.Usage.TotalTokens, "the call that was sent")
		}
	}
	assert.Equal(t, n-1, coalesced)
	assert.Equal(t, 105, tokens, "the tokens spent, counted once")

	res, err := adapter.Call(t.Context(), lm, sig, nil, adapter.Values{"q": "capital of France?"})
	require.NoError(t, err)
	assert.Equal(t, 1, res.CacheHits, "the shared reply was stored once")
	assert.Equal(t, 1, len(srv.Requests()))
}

// TestCoalescedStreams: N streams asking one prompt make one LM call;
// each gets every delta, and its deltas are its value.
func TestCoalescedStreams(t *testing.T) {
	const n = 20
	sig := mustParse(t, "q -> a")
	g := newGate(t)
	srv := lmtest.NewServer(lmtest.Text("[[ ## a ## ]]\nParis is the capital of France.").ChunkSize(4))
	defer srv.Close()
	client, _ := heldClient(srv, 3, g)
	joined := joins(t)
	lm := adapter.WithMiddleware(client, adapter.Cached(adapter.NewLRU(10)))
	out := make([]streamed, n)
	var wg sync.WaitGroup
	t.Cleanup(func() { g.open(); wg.Wait() }) // a failing test leaves no caller behind
	for i := range n {
		wg.Go(func() { out[i] = consume(adapter.Stream(t.Context(), lm, sig, nil, adapter.Values{"q": "x"}), nil) })
	}
	eventually(t, "every follower joined", func() bool { return joined.Load() == n-1 })
	g.open()
	wg.Wait()
	assert.Equal(t, 1, len(srv.Requests()))
	coalesced := 0
	for i := range n {
		require.NoError(t, out[i].err)
		assert.Equal(t, "Paris is the capital of France.", out[i].deltas("a"))
		assert.Equal(t, "Paris is the capital of France.", out[i].res.Outputs[0]["a"])
		assert.Equal(t, out[0].chunks, out[i].chunks, "every stream got the same chunks")
		coalesced += out[i].res.Coalesced
	}
	assert.Equal(t, n-1, coalesced)
}

// TestCoalescedLateJoiner: a stream that joins a streaming call in
// mid-reply gets the deltas so far, then the rest, each once: the same
// chunks as the stream that sent the request.
func TestCoalescedLateJoiner(t *testing.T) {
	for _, mw := range map[string]adapter.Middleware{"cached": adapter.Cached(adapter.NewLRU(10)), "coalesced": adapter.Coalesced()} {
		sig := mustParse(t, "q -> a")
		g := newGate(t)
		srv := lmtest.NewServer(lmtest.Text("[[ ## a ## ]]\nParis is the capital of France.").ChunkSize(4).WithUsage(50, 9))
		defer srv.Close()
		client, _ := heldClient(srv, 8, g) // the role, then 28 bytes of the reply
		lm := adapter.WithMiddleware(client, mw)
		in := adapter.Values{"q": "x"}

		leaderSeen := make(chan adapter.Chunk, 100)
		var leader, follower streamed
		var wg sync.WaitGroup
		t.Cleanup(func() { g.open(); wg.Wait() }) // a failing test leaves no caller behind
		wg.Go(func() { leader = consume(adapter.Stream(t.Context(), lm, sig, nil, in), leaderSeen) })
		firstDelta(t, leaderSeen, "a")

		followerSeen := make(chan adapter.Chunk, 100)
		wg.Go(func() { follower = consume(adapter.Stream(t.Context(), lm, sig, nil, in), followerSeen) })
		firstDelta(t, followerSeen, "a") // the reply is held: this delta is one of the leader's so far
		assert.Equal(t, 1, len(srv.Requests()))
		g.open()
		wg.Wait()

		require.NoError(t, leader.err)
		require.NoError(t, follower.err)
		assert.Equal(t, leader.chunks, follower.chunks, "the late joiner got every chunk, once")
		assert.Equal(t, "Paris is the capital of France.", follower.deltas("a"))
		assert.Equal(t, leader.res.Outputs, follower.res.Outputs)
		assert.Equal(t, 59, leader.res.Usage.TotalTokens)
		assert.Zero(t, follower.res.Usage)
		assert.Equal(t, [2]int{0, 1}, [2]int{leader.res.Coalesced, follower.res.Coalesced})
		assert.Equal(t, 1, len(srv.Requests()))
	}
}

// TestCoalescedJoinAnywhere: whenever a stream joins another's, whatever
// the adapter, it gets the same chunks (reasoning, field deltas) as the
// stream that sent the request.
func TestCoalescedJoinAnywhere(t *testing.T) {
	sig := mustParse(t, "q -> a, b: int")
	replies := map[adapter.Adapter]string{
		adapter.Chat{}: "[[ ## a ## ]]\nParis is the capital of France.\n\n[[ ## b ## ]]\n42\n\n[[ ## completed ## ]]",
		adapter.JSON{}: `{"a": "Paris is the capital of France.", "b": 42}`,
		adapter.XML{}:  "<a>Paris is the capital of France.</a>\n<b>42</b>",
	}
	for a, text := range replies {
		for k := 1; k <= 16; k += 3 {
			g := newGate(t)
			srv := lmtest.NewServer(lmtest.Text(text).WithReasoning("Think of France.").ChunkSize(5))
			client, h := heldClient(srv, k, g)
			joined := joins(t)
			lm := adapter.WithMiddleware(client, adapter.Coalesced())
			in := adapter.Values{"q": "x"}
			var leader, follower streamed
			var wg sync.WaitGroup
			wg.Go(func() { leader = consume(adapter.Stream(t.Context(), lm, sig, nil, in, adapter.UseAdapter(a)), nil) })
			eventually(t, "the leader's request", func() bool { return len(h.requests()) == 1 })
			wg.Go(func() { follower = consume(adapter.Stream(t.Context(), lm, sig, nil, in, adapter.UseAdapter(a)), nil) })
			eventually(t, "the follower joined", func() bool { return joined.Load() == 1 })
			g.open()
			wg.Wait()
			srv.Close()
			name := fmt.Sprintf("%s, held after %d lines", a.Name(), k)
			require.NoError(t, leader.err, name)
			require.NoError(t, follower.err, name)
			assert.Equal(t, leader.chunks, follower.chunks, name)
			assert.Equal(t, "Paris is the capital of France.", follower.deltas("a"), name)
			assert.Equal(t, 42, follower.res.Outputs[0]["b"], name)
			assert.Equal(t, 1, follower.res.Coalesced, name)
			var reasoning string
			for _, c := range follower.chunks {
				reasoning += c.Reasoning
			}
			assert.Equal(t, "Think of France.", reasoning, name)
		}
	}
}

// TestCoalescedMixed: Calls and Streams share one call in flight, whichever
// sent it: a stream that joins a blocking call gets its reply replayed as
// deltas (as a cache hit is); a Call that joins a stream gets the whole
// reply. Each Result is what its own call would have given, without the
// tokens.
func TestCoalescedMixed(t *testing.T) {
	const text = "[[ ## a ## ]]\nParis is the capital of France."
	sig := mustParse(t, "q -> a")
	in := adapter.Values{"q": "x"}
	for _, leaderStreams := range []bool{false, true} {
		t.Run(fmt.Sprintf("leader streams %v", leaderStreams), func(t *testing.T) {
			g := newGate(t)
			var lm adapter.StreamingLM
			var srv *lmtest.Server
			if leaderStreams {
				srv = lmtest.NewServer(lmtest.Text(text).ChunkSize(4).WithUsage(40, 8))
				defer srv.Close()
				client, _ := heldClient(srv, 6, g)
				lm = adapter.WithMiddleware(client, adapter.Cached(adapter.NewLRU(10)))
			} else {
				srv = heldServer(t, g, lmtest.Text(text).WithUsage(40, 8))
				lm = adapter.WithMiddleware(srv.Client(), adapter.Cached(adapter.NewLRU(10)))
			}
			joined := joins(t)
			var leaderRes *adapter.Result
			var leaderErr error
			var wg sync.WaitGroup
			t.Cleanup(func() { g.open(); wg.Wait() }) // a failing test leaves no caller behind
			if leaderStreams {
				seen := make(chan adapter.Chunk, 100)
				wg.Go(func() {
					s := consume(adapter.Stream(t.Context(), lm, sig, nil, in), seen)
					leaderRes, leaderErr = s.res, s.err
				})
				firstDelta(t, seen, "a")
			} else {
				wg.Go(func() { leaderRes, leaderErr = adapter.Call(t.Context(), lm, sig, nil, in) })
				eventually(t, "the leader's request", func() bool { return len(srv.Requests()) == 1 })
			}
			calls := make([]*adapter.Result, 3)
			streams := make([]streamed, 3)
			errs := make([]error, 3)
			for i := range 3 {
				wg.Go(func() { calls[i], errs[i] = adapter.Call(t.Context(), lm, sig, nil, in) })
				wg.Go(func() { streams[i] = consume(adapter.Stream(t.Context(), lm, sig, nil, in), nil) })
			}
			eventually(t, "every follower joined", func() bool { return joined.Load() == 6 })
			g.open()
			wg.Wait()

			require.NoError(t, leaderErr)
			assert.Zero(t, leaderRes.Coalesced)
			assert.Equal(t, 48, leaderRes.Usage.TotalTokens)
			for i := range 3 {
				require.NoError(t, errs[i])
				require.NoError(t, streams[i].err)
				for _, res := range []*adapter.Result{calls[i], streams[i].res} {
					assert.Equal(t, leaderRes.Outputs, res.Outputs)
					assert.Equal(t, 1, res.Coalesced)
					assert.Equal(t, 1, res.Calls)
					assert.Zero(t, res.Usage)
					assert.Equal(t, leaderRes.Model, res.Model)
				}
				assert.Equal(t, "Paris is the capital of France.", streams[i].deltas("a"))
				assert.Equal(t, *calls[i], *streams[i].res, "a Call and a Stream that joined get the same Result")
				want := *leaderRes                                                                       // what its own request gave, without the tokens
				want.Usage, want.UsageByModel, want.Coalesced, want.Requests = openai.Usage{}, nil, 1, 0 // it sent no request
				assert.Equal(t, want, *calls[i])
			}
			assert.Equal(t, 1, len(srv.Requests()))
		})
	}
}

// TestCoalescedFollowerCancelled: a follower whose context ends stops
// waiting, with its context's error; the call goes on for the others.
func TestCoalescedFollowerCancelled(t *testing.T) {
	sig := mustParse(t, "q -> a")
	in := adapter.Values{"q": "x"}
	g := newGate(t)
	srv := heldServer(t, g, lmtest.Text("[[ ## a ## ]]\nParis").WithUsage(10, 2))
	joined := joins(t)
	lm := adapter.WithMiddleware(srv.Client(), adapter.Cached(adapter.NewLRU(10)))
	var leader *adapter.Result
	var leaderErr error
	var wg sync.WaitGroup
	t.Cleanup(func() { g.open(); wg.Wait() }) // a failing test leaves no caller behind
	wg.Go(func() { leader, leaderErr = adapter.Call(t.Context(), lm, sig, nil, in) })
	eventually(t, "the leader's request", func() bool { return len(srv.Requests()) == 1 })

	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error)
	go func() {
		_, err := adapter.Call(ctx, lm, sig, nil, in)
		done <- err
	}()
	eventually(t, "the follower joined", func() bool { return joined.Load() == 1 })
	cancel()
	err := <-done // returns while the reply is still held
	assert.ErrorIs(t, err, context.Canceled)
	var le *adapter.LMError
	assert.ErrorAs(t, err, &le)

	g.open()
	wg.Wait()
	require.NoError(t, leaderErr)
	assert.Equal(t, "Paris", leader.Outputs[0]["a"])
	assert.Equal(t, 12, leader.Usage.TotalTokens)
	assert.Equal(t, 1, len(srv.Requests()))
}

// TestCoalescedLeaderCancelled: the caller that sent the request leaving
// does not end it for those that joined it: one of them takes the reply
// over, with its tokens, and stores it; the call ends only when every
// caller waiting for it has gone.
func TestCoalescedLeaderCancelled(t *testing.T) {
	sig := mustParse(t, "q -> a")
	in := adapter.Values{"q": "x"}

	t.Run("call", func(t *testing.T) {
		g := newGate(t)
		srv := heldServer(t, g, lmtest.Text("[[ ## a ## ]]\nParis").WithUsage(10, 2))
		joined := joins(t)
		lm := adapter.WithMiddleware(srv.Client(), adapter.Cached(adapter.NewLRU(10)))
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		go func() {
			_, err := adapter.Call(ctx, lm, sig, nil, in)
			done <- err
		}()
		eventually(t, "the leader's request", func() bool { return len(srv.Requests()) == 1 })
		var follower *adapter.Result
		var followerErr error
		var wg sync.WaitGroup
		t.Cleanup(func() { g.open(); wg.Wait() }) // a failing test leaves no caller behind
		wg.Go(func() { follower, followerErr = adapter.Call(t.Context(), lm, sig, nil, in) })
		eventually(t, "the follower joined", func() bool { return joined.Load() == 1 })
		cancel()
		assert.ErrorIs(t, <-done, context.Canceled)
		g.open()
		wg.Wait()
		require.NoError(t, followerErr, "the leader's cancellation did not end the call")
		assert.Equal(t, "Paris", follower.Outputs[0]["a"])
		assert.Equal(t, 12, follower.Usage.TotalTokens, "the follower took the reply over, with its tokens")
		assert.Zero(t, follower.Coalesced)

		res, err := adapter.Call(t.Context(), lm, sig, nil, in)
		require.NoError(t, err)
		assert.Equal(t, 1, res.CacheHits, "the reply was stored")
		assert.Equal(t, 1, len(srv.Requests()))
	})

	t.Run("stream", func(t *testing.T) {
		g := newGate(t)
		srv := lmtest.NewServer(lmtest.Text("[[ ## a ## ]]\nParis is the capital of France.").ChunkSize(4))
		defer srv.Close()
		client, _ := heldClient(srv, 6, g)
		joined := joins(t)
		lm := adapter.WithMiddleware(client, adapter.Cached(adapter.NewLRU(10)))
		leaderDone := make(chan struct{})
		leaderSeen := make(chan adapter.Chunk)
		go func() {
			defer close(leaderDone)
			for c, err := range adapter.Stream(t.Context(), lm, sig, nil, in) {
				if err != nil || c.Field == "a" {
					leaderSeen <- c
					<-leaderSeen // the test says when to break
					break
				}
			}
		}()
		<-leaderSeen
		var follower streamed
		var wg sync.WaitGroup
		t.Cleanup(func() { g.open(); wg.Wait() }) // a failing test leaves no caller behind
		wg.Go(func() { follower = consume(adapter.Stream(t.Context(), lm, sig, nil, in), nil) })
		eventually(t, "the follower joined", func() bool { return joined.Load() == 1 })
		leaderSeen <- adapter.Chunk{}
		<-leaderDone // the leader broke out of its loop
		g.open()
		wg.Wait()
		require.NoError(t, follower.err)
		assert.Equal(t, "Paris is the capital of France.", follower.deltas("a"))
		assert.Equal(t, 1, len(srv.Requests()))
	})

	t.Run("everyone left", func(t *testing.T) {
		g := newGate(t)
		srv := lmtest.NewServer(lmtest.Text("[[ ## a ## ]]\nParis is the capital of France.").ChunkSize(4))
		defer srv.Close()
		client, h := heldClient(srv, 6, g)
		joined := joins(t)
		lm := adapter.WithMiddleware(client, adapter.Cached(adapter.NewLRU(10)))
		ctx, cancel := context.WithCancel(t.Context())
		var wg sync.WaitGroup
		t.Cleanup(func() { g.open(); wg.Wait() }) // a failing test leaves no caller behind
		errs := make([]error, 3)
		for i := range 3 {
			wg.Go(func() { errs[i] = consume(adapter.Stream(ctx, lm, sig, nil, in), nil).err })
		}
		eventually(t, "every follower joined", func() bool { return joined.Load() == 2 })
		eventually(t, "the request was sent", func() bool { return len(h.requests()) == 1 })
		cancel()
		wg.Wait()
		for _, err := range errs {
			assert.ErrorIs(t, err, context.Canceled)
		}
		reqs := h.requests()
		require.Len(t, reqs, 1)
		select {
		case <-reqs[0].Done():
		case <-time.After(10 * time.Second):
			t.Fatal("the LM request goes on after every caller left")
		}
	})
}

// TestCoalescedError: callers that joined a call get its error, as they
// would have got it themselves: one request, one error each.
func TestCoalescedError(t *testing.T) {
	sig := mustParse(t, "q -> a")
	in := adapter.Values{"q": "x"}
	g := newGate(t)
	srv := heldServer(t, g, lmtest.Error(http.StatusBadRequest, `{"error":{"message":"no such model","type":"invalid_request_error"}}`))
	joined := joins(t)
	lm := adapter.WithMiddleware(srv.Client(), adapter.Cached(adapter.NewLRU(10)))
	errs := make([]error, 6)
	var wg sync.WaitGroup
	t.Cleanup(func() { g.open(); wg.Wait() }) // a failing test leaves no caller behind
	for i := range 6 {
		wg.Go(func() {
			if i%2 == 0 {
				_, errs[i] = adapter.Call(t.Context(), lm, sig, nil, in)
			} else {
				errs[i] = consume(adapter.Stream(t.Context(), lm, sig, nil, in), nil).err
			}
		})
	}
	eventually(t, "every follower joined", func() bool { return joined.Load() == 5 })
	g.open()
	wg.Wait()
	for _, err := range errs {
		var le *adapter.LMError
		require.ErrorAs(t, err, &le)
		var api *openai.APIError
		require.ErrorAs(t, err, &api)
		assert.Equal(t, http.StatusBadRequest, api.HTTPStatusCode)
		assert.ErrorContains(t, err, "no such model")
	}
	assert.Equal(t, 1, len(srv.Requests()))
}

// TestCoalescedOnlyIdentical: requests to different LMs, or different
// requests, never share a call, even through one Cached middleware.
func TestCoalescedOnlyIdentical(t *testing.T) {
	sig := mustParse(t, "q -> a")
	mw := adapter.Cached(adapter.NewLRU(10))

	t.Run("two LMs", func(t *testing.T) {
		handler := bothArrive(2)
		s1, s2 := lmtest.NewServer(), lmtest.NewServer()
		defer s1.Close()
		defer s2.Close()
		s1.Handle(handler)
		s2.Handle(handler)
		var wg sync.WaitGroup
		for _, srv := range []*lmtest.Server{s1, s2} {
			lm := adapter.WithMiddleware(srv.Client(), mw)
			wg.Go(func() {
				res, err := adapter.Call(t.Context(), lm, sig, nil, adapter.Values{"q": "x"})
				if assert.NoError(t, err) {
					assert.Zero(t, res.Coalesced)
				}
			})
		}
		wg.Wait()
		assert.Equal(t, 1, len(s1.Requests()))
		assert.Equal(t, 1, len(s2.Requests()))
	})

	t.Run("two requests", func(t *testing.T) {
		srv := lmtest.NewServer()
		defer srv.Close()
		srv.Handle(bothArrive(2))
		// A cache of its own: this server may have the address, and so the
		// identity, of one above, whose replies the shared one keeps.
		lm := adapter.WithMiddleware(srv.Client(), adapter.Cached(adapter.NewLRU(10)))
		var wg sync.WaitGroup
		for _, q := range []string{"x", "y"} {
			wg.Go(func() {
				res, err := adapter.Call(t.Context(), lm, sig, nil, adapter.Values{"q": q})
				if assert.NoError(t, err) {
					assert.Zero(t, res.Coalesced)
				}
			})
		}
		wg.Wait()
		assert.Equal(t, 2, len(srv.Requests()))
	})
}

// TestCachedCallMiddlewareNotCoalesced: a Cached among a call's own
// middlewares (UseMiddleware) runs above the call's retries and trace,
// whose events belong to that call, on its goroutine: it caches, and does
// not share calls in flight.
func TestCachedCallMiddlewareNotCoalesced(t *testing.T) {
	sig := mustParse(t, "q -> a")
	srv := lmtest.NewServer()
	defer srv.Close()
	srv.Handle(bothArrive(2))
	mw := adapter.UseMiddleware(adapter.Cached(adapter.NewLRU(10)))
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			var events []adapter.LMCallDoneInfo
			tr := adapter.UseTrace(&adapter.Trace{LMCallDone: func(e adapter.LMCallDoneInfo) { events = append(events, e) }})
			res, err := adapter.Call(t.Context(), srv.Client(), sig, nil, adapter.Values{"q": "x"}, mw, tr)
			if assert.NoError(t, err) {
				assert.Zero(t, res.Coalesced)
				assert.Len(t, events, 1)
				assert.Equal(t, res.Usage, events[0].Usage)
			}
		})
	}
	wg.Wait()
	assert.Equal(t, 2, len(srv.Requests()))
	res, err := adapter.Call(t.Context(), srv.Client(), sig, nil, adapter.Values{"q": "x"}, mw)
	require.NoError(t, err)
	assert.Equal(t, 1, res.CacheHits)
	assert.Equal(t, 2, len(srv.Requests()))
}

// bothArrive is a handler that answers once n requests have arrived: were
// two of them coalesced, the last would never come.
func bothArrive(n int) func(lmtest.Request) lmtest.Reply {
	var arrived sync.WaitGroup
	arrived.Add(n)
	all := make(chan struct{})
	go func() { arrived.Wait(); close(all) }()
	return func(lmtest.Request) lmtest.Reply {
		arrived.Done()
		select {
		case <-all:
		case <-time.After(10 * time.Second):
			return lmtest.Error(http.StatusGone, `{"error":{"message":"the other request never came"}}`)
		}
		return lmtest.Text("[[ ## a ## ]]\nok")
	}
}

// TestCoalescedRejectedNotStored: a shared reply the pipeline does not
// accept (cut by the token limit) reaches every caller, as their own
// request's would, and is not stored: the next call asks the LM again.
func TestCoalescedRejectedNotStored(t *testing.T) {
	sig := mustParse(t, "q -> a: int")
	in := adapter.Values{"q": "x"}
	g := newGate(t)
	srv := heldServer(t, g, lmtest.Text("[[ ## a ## ]]\n4").WithFinish("length"))
	joined := joins(t)
	lm := adapter.WithMiddleware(srv.Client(), adapter.Cached(adapter.NewLRU(10)))
	errs := make([]error, 4)
	var wg sync.WaitGroup
	t.Cleanup(func() { g.open(); wg.Wait() }) // a failing test leaves no caller behind
	for i := range 4 {
		wg.Go(func() { _, errs[i] = adapter.Call(t.Context(), lm, sig, nil, in) })
	}
	eventually(t, "every follower joined", func() bool { return joined.Load() == 3 })
	g.open()
	wg.Wait()
	for _, err := range errs {
		assert.ErrorIs(t, err, adapter.ErrTruncated)
	}
	assert.Equal(t, 1, len(srv.Requests()))
	_, err := adapter.Call(t.Context(), lm, sig, nil, in)
	assert.ErrorIs(t, err, adapter.ErrTruncated)
	assert.Equal(t, 2, len(srv.Requests()), "not stored: asked again")
}

// TestCoalescedWithoutCache: Coalesced shares calls in flight and stores
// nothing: once the call is over, the same request asks the LM again.
func TestCoalescedWithoutCache(t *testing.T) {
	sig := mustParse(t, "q -> a")
	in := adapter.Values{"q": "x"}
	g := newGate(t)
	srv := heldServer(t, g, lmtest.Text("[[ ## a ## ]]\nParis"))
	joined := joins(t)
	lm := adapter.WithMiddleware(srv.Client(), adapter.Coalesced())
	var wg sync.WaitGroup
	t.Cleanup(func() { g.open(); wg.Wait() }) // a failing test leaves no caller behind
	coalesced := make([]int, 5)
	for i := range 5 {
		wg.Go(func() {
			res, err := adapter.Call(t.Context(), lm, sig, nil, in)
			if assert.NoError(t, err) {
				coalesced[i] = res.Coalesced
			}
		})
	}
	eventually(t, "every follower joined", func() bool { return joined.Load() == 4 })
	g.open()
	wg.Wait()
	assert.ElementsMatch(t, []int{0, 1, 1, 1, 1}, coalesced)
	assert.Equal(t, 1, len(srv.Requests()))
	res, err := adapter.Call(t.Context(), lm, sig, nil, in)
	require.NoError(t, err)
	assert.Zero(t, res.Coalesced+res.CacheHits)
	assert.Equal(t, 2, len(srv.Requests()))
}

// panicLM panics on every request.
type panicLM struct{}

func (*panicLM) CreateChatCompletion(context.Context, openai.ChatCompletionRequest) (openai.ChatCompletionResponse, error) {
	panic("the LM broke")
}

// TestCoalescedPanic: a panic beneath the cache reaches the caller, as it
// would without one.
func TestCoalescedPanic(t *testing.T) {
	sig := mustParse(t, "q -> a")
	lm := adapter.WithMiddleware(&panicLM{}, adapter.Cached(adapter.NewLRU(10)))
	assert.PanicsWithValue(t, "the LM broke", func() {
		_, _ = adapter.Call(t.Context(), lm, sig, nil, adapter.Values{"q": "x"})
	})
}

// TestCoalescedNoGoroutineLeft: followers and leaders that leave, calls
// that end after everyone left, and streams broken off leave no goroutine
// behind.
func TestCoalescedNoGoroutineLeft(t *testing.T) {
	before := runtime.NumGoroutine()
	func() {
		sig := mustParse(t, "q -> a")
		in := adapter.Values{"q": "x"}
		g := newGate(t)
		srv := lmtest.NewServer()
		defer srv.Close()
		srv.Handle(func(lmtest.Request) lmtest.Reply {
			return lmtest.Text("[[ ## a ## ]]\nParis is the capital of France.").ChunkSize(4)
		})
		client, _ := heldClient(srv, 5, g)
		joined := joins(t)
		lm := adapter.WithMiddleware(client, adapter.Cached(adapter.NewLRU(10)))

		ctx, cancel := context.WithCancel(t.Context())
		var wg sync.WaitGroup
		t.Cleanup(func() { g.open(); wg.Wait() }) // a failing test leaves no caller behind
		for i := range 4 {
			wg.Go(func() {
				if i%2 == 0 {
					_, _ = adapter.Call(ctx, lm, sig, nil, in)
				} else {
					_ = consume(adapter.Stream(ctx, lm, sig, nil, in), nil)
				}
			})
		}
		eventually(t, "every follower joined", func() bool { return joined.Load() == 3 })
		cancel()
		wg.Wait()

		for range adapter.Stream(t.Context(), lm, sig, nil, adapter.Values{"q": "y"}) {
			break
		}
		g.open()
		_, err := adapter.Call(t.Context(), lm, sig, nil, in)
		assert.NoError(t, err)
	}()
	assert.Eventually(t, func() bool { return runtime.NumGoroutine() <= before+1 }, 5*time.Second, 20*time.Millisecond,
		"goroutines: %d before, %d after", before, runtime.NumGoroutine())
}

// TestCoalescedLeaderCancelledMixed: the security review's probe (review
// 4, "checked and found sound"), kept as a test: twelve callers of one
// request, six Call and six Stream; the one that sent the call gives up
// while the reply is held. It gets its context's error, the eleven others
// the answer, from one LM request (run under -race in CI).
func TestCoalescedLeaderCancelledMixed(t *testing.T) {
	const text = "[[ ## a ## ]]\nParis is the capital of France."
	sig := mustParse(t, "q -> a")
	in := adapter.Values{"q": "x"}
	g := newGate(t)
	srv := heldServer(t, g, lmtest.Text(text).WithUsage(40, 8))
	lm := adapter.WithMiddleware(srv.Client(), adapter.Cached(adapter.NewLRU(10)))
	joined := joins(t)
	ctx, cancel := context.WithCancel(t.Context())
	leader := make(chan error, 1)
	go func() {
		_, err := adapter.Call(ctx, lm, sig, nil, in)
		leader <- err
	}()
	eventually(t, "the leader's request", func() bool { return len(srv.Requests()) == 1 })
	var wg sync.WaitGroup
	t.Cleanup(func() { g.open(); wg.Wait() }) // a failing test leaves no caller behind
	calls := make([]*adapter.Result, 5)
	callErrs := make([]error, 5)
	streams := make([]streamed, 6)
	for i := range 5 {
		wg.Go(func() { calls[i], callErrs[i] = adapter.Call(t.Context(), lm, sig, nil, in) })
	}
	for i := range 6 {
		wg.Go(func() { streams[i] = consume(adapter.Stream(t.Context(), lm, sig, nil, in), nil) })
	}
	eventually(t, "every follower joined", func() bool { return joined.Load() == 11 })
	cancel()
	assert.ErrorIs(t, <-leader, context.Canceled)
	g.open()
	wg.Wait()
	for i := range 5 {
		require.NoError(t, callErrs[i])
		assert.Equal(t, "Paris is the capital of France.", calls[i].Outputs[0]["a"])
	}
	for i := range 6 {
		require.NoError(t, streams[i].err)
		assert.Equal(t, "Paris is the capital of France.", streams[i].deltas("a"))
	}
	assert.Equal(t, 1, len(srv.Requests()))
}
