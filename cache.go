package adapter

import (
	"container/list"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"
	"weak"

	openai "github.com/sashabaranov/go-openai"

	"github.com/sigwire/adapter/internal/wire"
)

// Cache stores LM replies by key. Implementations must be safe for
// concurrent use; plug in a disk or Redis store behind this interface
// (a CacheEntry marshals to JSON and back).
type Cache interface {
	Get(ctx context.Context, key string) (CacheEntry, bool)
	Put(ctx context.Context, key string, entry CacheEntry)
}

// FallibleCache is implemented by a [Cache] that can fail: a store across
// the network (Redis) or on disk. When the cache implements it, [Cached]
// calls Lookup and Store instead of Get and Put, and a failure is counted
// in Result.CacheErrors and reported to [Trace].CacheError with the call
// it happened in; the call goes on as after a miss (fail open). Lookup
// reports a miss with a nil error; an entry it cannot read (corrupt, of
// another format) is a miss with an error, never a hit.
type FallibleCache interface {
	Lookup(ctx context.Context, key string) (CacheEntry, bool, error)
	Store(ctx context.Context, key string, entry CacheEntry) error
}

// CacheReleaser is implemented by a [Cache] that holds something for a key
// from a miss until the entry is stored: a lease that makes other replicas
// wait for the entry instead of calling the LM themselves (rediscache's
// Lease). When no entry will be stored after a miss — the call failed, its
// reply did not finish normally or the pipeline refused it, or every
// caller waiting for it left — [Cached] calls Release with the key, once,
// so that the others stop waiting at once. Release is called with a
// context that is never cancelled; bound it within. A miss that is stored
// is released by the store (Put or Store), not by Release.
type CacheReleaser interface {
	Release(ctx context.Context, key string)
}

// CacheEntry is one stored reply: the response and what its wire carried
// beyond go-openai's types (provider citations, see [WireReader]), so that
// a hit gives the call what the LM gave.
type CacheEntry struct {
	Response openai.ChatCompletionResponse `json:"response"`
	Extras   WireExtras                    `json:"extras,omitzero"`
}

// Identifier is implemented by LMs that name what answers them: the
// endpoint, the credentials, and anything else that changes a reply (a
// tenant, a deployment). Two LMs with the same identity answer the same
// request the same way, in any process: a cache shared by replicas (Redis,
// disk) shares their entries. Two LMs that may answer differently must
// have different identities.
//
// A [Cached] middleware keys every entry by the identity of the LM
// directly beneath the cache, the one that answers; an entry belongs to
// that LM and is never served to another. The identity of an LM is, first
// match wins:
//
//   - its LMIdentity, or that of an LM it wraps, found through [Unwrapper]
//     (a wrapper that changes requests or replies must therefore have an
//     LMIdentity of its own);
//   - for an *openai.Client (inside the library's wrappers): its base URL,
//     API type and version, organization and a SHA-256 of its API key
//     (for Azure, the deployment the request's model maps to), stable
//     across processes, provided its HTTP client is nil, an *http.Client
//     with the default transport and no cookie jar, or one of those inside
//     [HTTPDoer]: another transport may add credentials of its own, so such
//     a client is identified as a value, as below, unless [WithIdentity]
//     declares it;
//   - for any other LM that is a pointer: an identity of its own, random,
//     given to the value the first time a cache sees it and never to
//     another value, so that its entries live no longer than the LM and
//     are never served to an LM that later gets its address (nor to
//     another process). Its keys say so ([LocalCacheKey]): a store shared
//     by processes counts the entries it stores under them and logs the
//     first (DiskCache, rediscache), since no other process will read
//     them;
//   - none for an LM that is not a pointer (a func type, a struct value):
//     calls through it are not cached.
type Identifier interface {
	LMIdentity() string
}

// lmIdent is the identity of one LM, worked out when a cache first asks.
type lmIdent struct {
	lm    LM
	once  sync.Once
	ok    bool // beside once, in its padding: runShared stays in its size class
	id    identity
	azure *openai.ClientConfig // an Azure client: its deployment depends on the model
}

// identity is what identifies an LM, and whether it is this process's
// alone (a value's own, see [Identifier]).
type identity struct {
	id    string
	local bool
}

// key returns the cache key of req sent to the LM, false when the LM has
// no identity or req cannot be marshalled.
func (i *lmIdent) key(req openai.ChatCompletionRequest) (string, bool) {
	i.once.Do(func() { i.id, i.azure, i.ok = lmIdentity(i.lm) })
	if !i.ok {
		return "", false
	}
	id := i.id
	if i.azure != nil {
		id.id += "\x00deployment " + i.azure.GetAzureDeploymentByModel(req.Model)
	}
	key, err := cacheKey(id, req)
	return key, err == nil
}

// lmIdentity returns what identifies lm (see [Identifier]).
func lmIdentity(lm LM) (id identity, azure *openai.ClientConfig, ok bool) {
	for w := lm; w != nil; {
		if d, ok := w.(identified); ok {
			return d.identity()
		}
		if i, ok := w.(Identifier); ok {
			return identity{id: "id\x00" + i.LMIdentity()}, nil, true
		}
		u, ok := w.(Unwrapper)
		if !ok {
			break
		}
		w = u.Unwrap()
	}
	lm, _ = peel(lm)
	if c, ok := lm.(*openai.Client); ok && c != nil {
		if id, azure, ok := clientIdentity(c, false); ok {
			return identity{id: id}, azure, true
		}
	}
	v, ok := valueIdentity(lm)
	return identity{id: v, local: true}, nil, ok
}

// WithIdentity returns lm with the identity id (see [Identifier]): a
// [Cached] beneath which it is keys its entries by id, the same in every
// process, so that replicas sharing a store (Redis, disk) share their
// entries. It is the one call to make for a go-openai client whose HTTP
// client has a transport of its own (tuned pools, otelhttp, a proxy),
// which the library otherwise identifies per process, since a transport
// may add credentials of its own:
//
//	lm := adapter.WithMiddleware(adapter.WithIdentity(client, "prod"), adapter.Cached(store))
//
// For an *openai.Client beneath (inside the library's wrappers), the
// identity is id and what identifies the client itself (its base URL, API
// type and version, organization and a SHA-256 of its API key), so that
// one id never mixes tenants or endpoints; id then says what the
// transport changes (any constant when it changes nothing about who
// answers). For any other LM the identity is id alone: it must name
// everything that changes a reply (the endpoint, the credentials, the
// tenant). The result streams when lm does and keeps lm's declared
// capabilities; put the cache over it, not beneath.
func WithIdentity(lm LM, id string) StreamingLM {
	return identified{lm: lm, id: id}
}

type identified struct {
	lm LM
	id string
}

func (d identified) CreateChatCompletion(ctx context.Context, req openai.ChatCompletionRequest) (openai.ChatCompletionResponse, error) {
	return d.lm.CreateChatCompletion(ctx, req)
}

// CreateChatCompletionStream streams from the wrapped LM.
func (d identified) CreateChatCompletionStream(ctx context.Context, req openai.ChatCompletionRequest) (*openai.ChatCompletionStream, error) {
	s, ok := d.lm.(StreamingLM)
	if !ok {
		return nil, cannotStream(d.lm)
	}
	return s.CreateChatCompletionStream(ctx, req)
}

// Unwrap returns the wrapped LM.
func (d identified) Unwrap() LM { return d.lm }

// LMIdentity returns the declared identity (the client's beside it: see
// WithIdentity).
func (d identified) LMIdentity() string {
	id, _, _ := d.identity()
	return id.id
}

// identity is id, and for a go-openai client beneath, the client's.
func (d identified) identity() (identity, *openai.ClientConfig, bool) {
	inner, _ := peel(d.lm)
	if c, ok := inner.(*openai.Client); ok && c != nil {
		if cid, azure, ok := clientIdentity(c, true); ok {
			return identity{id: "declared\x00" + d.id + "\x00" + cid}, azure, true
		}
	}
	return identity{id: "id\x00" + d.id}, nil, true
}

// clientIdentity reads the endpoint and credentials of a go-openai client,
// which keeps its configuration unexported; false when its HTTP client
// may change who it calls as (see [Identifier]) and anyDoer is not set
// (WithIdentity vouches for it), or when the client's layout is not the
// one this reads.
func clientIdentity(c *openai.Client, anyDoer bool) (id string, azure *openai.ClientConfig, ok bool) {
	f := reflect.ValueOf(c).Elem().FieldByName("config")
	if !f.IsValid() || f.Type() != reflect.TypeFor[openai.ClientConfig]() {
		return "", nil, false
	}
	cfg := (*openai.ClientConfig)(unsafe.Pointer(f.UnsafeAddr()))
	token := reflect.ValueOf(cfg).Elem().FieldByName("authToken")
	if !token.IsValid() || token.Kind() != reflect.String || !anyDoer && !plainDoer(cfg.HTTPClient) {
		return "", nil, false
	}
	key := sha256.Sum256([]byte(token.String()))
	id = fmt.Sprintf("openai\x00%q %q %q %q %x", strings.TrimRight(cfg.BaseURL, "/"), cfg.APIType, cfg.APIVersion, cfg.OrgID, key)
	if cfg.APIType == openai.APITypeAzure || cfg.APIType == openai.APITypeAzureAD {
		azure = cfg
	}
	return id, azure, true
}

// plainDoer reports an HTTP client that sends a request as go-openai made
// it: nil, an *http.Client with the default transport and no cookie jar,
// or one of those inside [HTTPDoer].
func plainDoer(d openai.HTTPDoer) bool {
	switch d := d.(type) {
	case nil:
		return true
	case wire.Doer:
		return plainDoer(d.Next)
	case *http.Client:
		return d != nil && d.Jar == nil && (d.Transport == nil || d.Transport == http.DefaultTransport)
	}
	return false
}

// values gives each LM without a stable identity one of its own for as
// long as it lives. An LM is found by a weak pointer, which never equals
// one made for an object allocated later at the same address, so that a
// freed LM's identity is never given to another even before the cleanup
// that deletes it has run; the type is part of the key because values of
// zero size may share one address.
var values = struct {
	sync.Mutex
	ids map[valueKey]string
}{ids: map[valueKey]string{}}

type valueKey struct {
	t reflect.Type
	p weak.Pointer[byte]
}

// valueIdentity returns lm's own identity, false when lm is not a
// pointer.
func valueIdentity(lm LM) (string, bool) {
	v := reflect.ValueOf(lm)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return "", false
	}
	p := (*byte)(v.UnsafePointer())
	k := valueKey{v.Type(), weak.Make(p)}
	values.Lock()
	defer values.Unlock()
	if id, ok := values.ids[k]; ok {
		return id, true
	}
	id := "value\x00" + v.Type().String() + " " + rand.Text()
	values.ids[k] = id
	runtime.AddCleanup(p, func(k valueKey) {
		values.Lock()
		delete(values.ids, k)
		values.Unlock()
	}, k)
	return id, true
}

// Cached is the cache middleware: a request identical to an earlier one
// (model, messages, every option) to the same LM is answered from c
// without an LM call, and counted in Result.CacheHits. A hit spends no
// tokens: its response reports no usage, and so do Result.Usage and the
// [Trace] (LMCallDoneInfo.Cached). A [Stream] and a [Call] with the same
// request share entries: a hit is replayed to the stream as deltas.
//
// Identical requests in flight at once share one LM call, as [Coalesced]
// describes: a request that comes while an identical one is being looked
// up or sent waits for that one's answer instead of looking up or sending
// its own — a hit (counted in its Result.CacheHits), or the reply of the
// call (Result.Coalesced) — so that N goroutines asking one prompt make
// one call and one lookup (through a Cached given to [WithMiddleware];
// one given to [UseMiddleware] only caches). A nil c stores nothing:
// Cached(nil) is Coalesced().
//
// An entry belongs to the LM directly beneath the cache, the one that
// answers: the LM given to [WithMiddleware] with the cache, or for a cache
// given to [UseMiddleware] the LM given to Call (inside the library's
// wrappers). The key is that LM's identity (see [Identifier]) and the
// request, so that a cache shared by tenants, endpoints or keys never
// serves one's reply to another. An LM of the caller's own that picks
// another LM per request (a router reading the tenant from the context)
// answers differently for the same request: put the cache beneath it, on
// each LM it picks, not above it. Calls through an LM without an identity,
// or through an Invoker built outside the pipeline and [WithMiddleware],
// are not cached.
//
// Keys begin with a format version ("v2:"), so that a store shared across
// processes and upgrades never mixes formats.
//
// Only replies the pipeline accepts are stored: not a reply cut by the
// token limit, refused, filtered, empty, or one that failed to parse.
// Used outside the pipeline, a reply is stored when every choice finished
// normally. Within the pipeline an entry keeps what the reply carried
// beyond go-openai's types (citations), and a hit gives it back. A cache
// that holds a key from its miss until the entry is stored (a lease other
// replicas wait on) is told when nothing will be: see [CacheReleaser].
func Cached(c Cache) Middleware {
	g := &flights{c: c, m: map[string]*flight{}}
	return func(next Invoker) Invoker {
		return func(ctx context.Context, req openai.ChatCompletionRequest) (openai.ChatCompletionResponse, error) {
			ident := runFrom(ctx).ident
			if ident == nil {
				return next(ctx, req)
			}
			key, ok := ident.key(req)
			if !ok {
				return next(ctx, req)
			}
			return g.do(ctx, key, next, req)
		}
	}
}

// Coalesced is the middleware that shares calls in flight, without a
// cache: identical requests (the key of [Cached]: the same LM, model,
// messages and options; a Stream's and a Call's alike) in flight at once
// make one LM call, whose reply each of them gets. [Cached] does the same
// and stores the reply; use Coalesced where no reply may be kept. Requests
// share a call only through one middleware value given to
// [WithMiddleware] (beneath the call's retries and [Trace], which so
// report each caller's request on its own goroutine), or called outside
// the pipeline; build it once, with the LM. Among a call's own middlewares
// ([UseMiddleware]) it shares nothing, and a Cached there only caches:
// its call would carry one caller's retries and report to that caller's
// trace. Requests through an LM without an identity (see [Identifier]) are
// neither cached nor coalesced.
//
// The first request sends the call; the others join it while it runs,
// and until the pipeline that takes its reply over has accepted (and
// stored) or refused it. The call is sent as the first request's call
// sends it (its [Limits], say): what the others get is what a cache hit
// would give them. A [Call] that joins gets the
// whole reply; a [Stream] that joins gets the deltas so far at once, then
// the rest as they arrive, the same chunks as the stream that sent it (a
// stream that joins a Call's request gets the reply replayed as deltas, as
// a cache hit is). Each parses the reply itself, so its Result is what
// its own request would have given, except that it spent nothing: a
// request that joined another's reports no usage (its response neither)
// and is counted in Result.Coalesced and LMCallDoneInfo.Coalesced. The
// tokens are counted once, in the Result of the request that sent the
// call. Callers that join share its outcome whatever it is: its error,
// or a reply their parse refuses; their own retries then coalesce again.
//
// The call runs on its own goroutine, with the context values of the
// request that sent it and none of its cancellation: a caller whose
// context ends, or a stream whose consumer breaks out, stops waiting at
// once (with its context's error) and the call goes on for the others;
// should the request that sent it leave, the first caller left takes the
// reply over, with its tokens, and stores it. The call is cancelled when
// every caller waiting for it has gone. A panic beneath the middleware is
// raised again in every caller waiting.
//
// Calls are coalesced within a process; replicas share replies through a
// cache they share (Redis, disk), not their calls in flight.
func Coalesced() Middleware { return Cached(nil) }

// joinHook, when set (by tests), runs each time a request joins another's
// call in flight.
var joinHook atomic.Pointer[func()]

// flights are the calls in flight through one Cached middleware, by key.
// Its mutex guards the flights too.
type flights struct {
	c  Cache // nil: nothing is stored
	mu sync.Mutex
	m  map[string]*flight
}

// flight is one request that callers asked at once (its waiters): looked
// up in the cache by the first, then, on a miss, sent on a goroutine of
// its own (call). Its fields are guarded by flights.mu, except what the
// goroutine counts in the call's state until the outcome.
type flight struct {
	g       *flights
	key     string
	waiters []waiter // attached, in the order they came
	first   [4]waiter
	n       waiter // the last waiter's number
	call    *flightCall

	// wake is closed at the stream's next piece and at the end, finished
	// at the end; each is made when someone waits on it.
	wake, finished chan struct{}

	// The outcome: owner is the waiter that takes the reply over (the
	// tokens, the cache write); kept that the flight stays joinable until
	// the owner's pipeline settles.
	done  bool
	o     outcome
	owner waiter // 0: none
	kept  bool
}

// waiter numbers a caller of a flight, from 1.
type waiter uint32

// flightCall is a flight's LM call, once sent.
type flightCall struct {
	cancel context.CancelFunc // ends the call
	state  callState          // what the call counted; out is the flight
	retry  wire.RetrySlot     // the Retry-After the call's reply carried

	// The stream so far: choice 0's pieces as they arrived.
	log   []wire.Delta
	sent  bool // a piece of text went out
	whole bool // the reply streamed to its end
	msg   openai.ChatCompletionMessage
}

// outcome is what a flight's request got.
type outcome struct {
	resp     openai.ChatCompletionResponse
	err      error
	hit      bool // answered by the cache
	extras   WireExtras
	panicked any
}

// errFlightExited is the outcome of a call whose goroutine exited without
// returning (runtime.Goexit beneath the cache).
var errFlightExited = errors.New("adapter: the shared LM call's goroutine exited without a reply")

// do answers req: a hit, the reply of an identical request in flight, or
// its own call's.
func (g *flights) do(ctx context.Context, key string, next Invoker, req openai.ChatCompletionRequest) (openai.ChatCompletionResponse, error) {
	if runFrom(ctx).callLevel {
		return g.alone(ctx, key, next, req)
	}
	f, w, first := g.join(key)
	if !first {
		if h := joinHook.Load(); h != nil {
			(*h)()
		}
		return g.wait(ctx, f, w, req)
	}
	if g.c != nil {
		if e, ok := g.get(ctx, f); ok {
			g.finish(ctx, f, outcome{resp: hitResponse(e), hit: true, extras: e.Extras})
			return g.wait(ctx, f, w, req)
		}
	}
	fctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	c := &flightCall{cancel: cancel}
	c.state.out = f
	c.retry.Retry.Store(int64(retryOf(ctx)))
	g.mu.Lock()
	f.call = c
	g.mu.Unlock()
	go f.run(flightContext(fctx, c), c, next, req)
	return g.wait(ctx, f, w, req)
}

// alone answers a request on its own: from the cache, or by its call,
// whose reply is stored once the pipeline accepted it.
func (g *flights) alone(ctx context.Context, key string, next Invoker, req openai.ChatCompletionRequest) (openai.ChatCompletionResponse, error) {
	if g.c == nil {
		return next(ctx, req)
	}
	st := stateFrom(ctx)
	if e, ok := g.lookup(ctx, st, key); ok {
		if st != nil {
			st.count(Counts{CacheHits: 1})
			st.setExtras(e.Extras)
		}
		return hitResponse(e), nil
	}
	handed := false // to store, which stores or releases
	defer func() {
		if !handed {
			g.release(ctx, key)
		}
	}()
	resp, err := next(ctx, req)
	if err == nil && finishedNormally(resp) {
		entry := CacheEntry{Response: resp}
		if st != nil {
			entry.Extras = st.replyExtras()
		}
		handed = true
		g.store(ctx, st, key, entry, nil)
	}
	return resp, err
}

// hitResponse is the response of a hit: it spent no tokens.
func hitResponse(e CacheEntry) openai.ChatCompletionResponse {
	resp := e.Response
	resp.Usage = openai.Usage{}
	return resp
}

// store puts entry in the cache once the pipeline accepted its reply (at
// once outside the pipeline, st nil), or releases the key's miss when it
// refused it; then runs done whatever the verdict.
func (g *flights) store(ctx context.Context, st *callState, key string, entry CacheEntry, done func()) {
	settle := func(accepted bool) {
		switch {
		case g.c == nil:
		case accepted:
			g.put(context.WithoutCancel(ctx), st, key, entry)
		default:
			g.release(ctx, key)
		}
		if done != nil {
			done()
		}
	}
	if st != nil {
		st.onSettle(settle)
	} else {
		settle(true)
	}
}

// get looks the flight's key up; a panic in the cache is the outcome of
// the callers waiting too.
func (g *flights) get(ctx context.Context, f *flight) (e CacheEntry, ok bool) {
	defer func() {
		if p := recover(); p != nil {
			g.finish(ctx, f, outcome{panicked: p})
			panic(p)
		}
	}()
	return g.lookup(ctx, stateFrom(ctx), f.key)
}

// lookup reads key from the cache; a FallibleCache's failure is counted
// and traced in st (the call's state; nil outside the pipeline) and is a
// miss.
func (g *flights) lookup(ctx context.Context, st *callState, key string) (CacheEntry, bool) {
	fc, ok := g.c.(FallibleCache)
	if !ok {
		return g.c.Get(ctx, key)
	}
	e, hit, err := fc.Lookup(ctx, key)
	if err != nil {
		st.cacheError(ctx, CacheLookup, key, err)
		return CacheEntry{}, false
	}
	return e, hit
}

// put stores entry under key; a FallibleCache's failure is counted and
// traced in st, as lookup's.
func (g *flights) put(ctx context.Context, st *callState, key string, entry CacheEntry) {
	fc, ok := g.c.(FallibleCache)
	if !ok {
		g.c.Put(ctx, key, entry)
		return
	}
	if err := fc.Store(ctx, key, entry); err != nil {
		st.cacheError(ctx, CacheStore, key, err)
	}
}

// release tells a [CacheReleaser] that no entry will be stored under key
// after its miss.
func (g *flights) release(ctx context.Context, key string) {
	if r, ok := g.c.(CacheReleaser); ok {
		r.Release(context.WithoutCancel(ctx), key)
	}
}

// join attaches a caller to the flight of key, starting one if there is
// none (first).
func (g *flights) join(key string) (f *flight, w waiter, first bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if f = g.m[key]; f == nil {
		f = &flight{g: g, key: key}
		f.waiters = f.first[:0]
		g.m[key] = f
		first = true
	}
	f.n++
	f.waiters = append(f.waiters, f.n)
	return f, f.n, first
}

// flightContext is the context of a flight's call: the values of the
// request that sent it, with the call's own state and retry slot.
func flightContext(ctx context.Context, c *flightCall) context.Context {
	s := runFrom(ctx)
	if s.call != nil {
		c.state.budget = s.call.budget // the request is the caller's: its budget pays
	}
	s.call = &c.state
	return context.WithValue(s.on(ctx), wire.RetryKey{}, &c.retry)
}

// run makes the flight's call.
func (f *flight) run(ctx context.Context, c *flightCall, next Invoker, req openai.ChatCompletionRequest) {
	o := outcome{err: errFlightExited}
	defer func() { f.g.finish(ctx, f, o) }()
	defer func() {
		if p := recover(); p != nil {
			o = outcome{panicked: p}
		}
	}()
	resp, err := next(ctx, req)
	o = outcome{resp: resp, err: err, extras: c.state.replyExtras()}
}

// finish records the flight's outcome and wakes its waiters. The first
// waiter still attached (the one that sent the call, unless it left) takes
// the reply over; a reply to be stored keeps the flight joinable until
// that waiter's pipeline settles, so that no identical request in between
// sends its own. A call's outcome that will not be stored releases the
// key's miss.
func (g *flights) finish(ctx context.Context, f *flight, o outcome) {
	g.mu.Lock()
	f.o, f.done = o, true
	if len(f.waiters) > 0 {
		f.owner = f.waiters[0]
	}
	f.kept = o.err == nil && o.panicked == nil && !o.hit && f.owner != 0 && finishedNormally(o.resp)
	if !f.kept {
		g.forget(f)
	}
	f.wakeAll()
	c, owned, kept := f.call, f.owner != 0, f.kept
	g.mu.Unlock()
	if c != nil {
		c.cancel()
		if !owned {
			c.state.settle(false) // no one takes it over
		}
		if !kept {
			g.release(ctx, f.key)
		}
	}
}

// wakeAll wakes the waiters (g.mu held).
func (f *flight) wakeAll() {
	if f.wake != nil {
		close(f.wake)
		f.wake = nil
	}
	if f.done && f.finished != nil {
		close(f.finished)
		f.finished = nil
	}
}

// forget removes f from the flights that requests join (g.mu held).
func (g *flights) forget(f *flight) {
	if g.m[f.key] == f {
		delete(g.m, f.key)
	}
}

// detach removes w from f's waiters (g.mu held).
func (f *flight) detach(w waiter) {
	if i := slices.Index(f.waiters, w); i >= 0 {
		f.waiters = slices.Delete(f.waiters, i, i+1)
	}
}

// wait waits for the flight's outcome, passing the stream so far and then
// the rest to a stream's output as it arrives.
func (g *flights) wait(ctx context.Context, f *flight, w waiter, req openai.ChatCompletionRequest) (openai.ChatCompletionResponse, error) {
	var out streamOut
	if st := stateFrom(ctx); st != nil && req.Stream {
		out = st.out
	}
	next, started := 0, false
	for {
		g.mu.Lock()
		var log []wire.Delta
		if out != nil && f.call != nil {
			log = f.call.log[next:]
		}
		done := f.done
		var wake <-chan struct{}
		switch {
		case len(log) > 0 || done:
		case out != nil:
			if f.wake == nil {
				f.wake = make(chan struct{})
			}
			wake = f.wake
		default:
			if f.finished == nil {
				f.finished = make(chan struct{})
			}
			wake = f.finished
		}
		g.mu.Unlock()

		if len(log) > 0 {
			if !started {
				if err := out.start(); err != nil {
					g.leave(ctx, f, w)
					return openai.ChatCompletionResponse{}, err
				}
				started = true
			}
			for _, d := range log {
				d.ToolCalls = slices.Clone(d.ToolCalls) // each caller's own
				if !out.delta(d) {
					g.leave(ctx, f, w)
					return openai.ChatCompletionResponse{}, errStopped
				}
			}
			next += len(log)
			continue
		}
		if done {
			return g.take(ctx, f, w, out, started)
		}
		select {
		case <-wake:
		case <-ctx.Done():
			if g.leaveUnlessDone(f, w) {
				err := ctx.Err()
				if out != nil {
					if sent, _ := out.status(); sent {
						err = &deliveredError{err}
					}
				}
				return openai.ChatCompletionResponse{}, err
			}
		}
	}
}

// leaveUnlessDone detaches a waiter whose context ended, unless the
// outcome is in: then it takes it. The last waiter to leave a call in
// flight cancels it.
func (g *flights) leaveUnlessDone(f *flight, w waiter) bool {
	g.mu.Lock()
	if f.done {
		g.mu.Unlock()
		return false
	}
	f.detach(w)
	var c *flightCall
	if len(f.waiters) == 0 {
		g.forget(f) // a new request sends its own
		c = f.call
	}
	g.mu.Unlock()
	if c != nil {
		c.cancel()
	}
	return true
}

// leave detaches a waiter that stopped before it took the outcome (a
// stream whose consumer broke out): before the outcome, as a cancelled
// waiter; after it, the next waiter takes the reply over if it was the
// owner, and if none is left the key's miss is released.
func (g *flights) leave(ctx context.Context, f *flight, w waiter) {
	if g.leaveUnlessDone(f, w) {
		return
	}
	g.mu.Lock()
	f.detach(w)
	var orphan *flightCall
	if f.owner == w {
		f.owner = 0
		if len(f.waiters) > 0 {
			f.owner = f.waiters[0]
		} else {
			g.forget(f)
			orphan = f.call
		}
	}
	g.mu.Unlock()
	if orphan != nil {
		orphan.state.settle(false)
		g.release(ctx, f.key)
	}
}

// take gives a waiter the flight's outcome: the owner adopts what the call
// counted and settles the cache write; the others spent nothing.
func (g *flights) take(ctx context.Context, f *flight, w waiter, out streamOut, started bool) (openai.ChatCompletionResponse, error) {
	g.mu.Lock()
	f.detach(w)
	owner := f.owner == w
	o, c, kept := f.o, f.call, f.kept
	var whole bool
	var msg openai.ChatCompletionMessage
	if c != nil {
		whole, msg = c.whole, c.msg
	}
	g.mu.Unlock()
	if o.panicked != nil {
		panic(o.panicked)
	}
	resp, err := o.resp, o.err
	st := stateFrom(ctx)
	if st != nil {
		switch {
		case o.hit:
			st.count(Counts{CacheHits: 1})
		case owner:
			if c != nil {
				st.adopt(&c.state)
			}
		default:
			st.count(Counts{Coalesced: 1})
		}
		st.setExtras(o.extras)
		if c != nil {
			if after := c.retry.After.Load(); after > 0 {
				if slot, ok := ctx.Value(wire.RetryKey{}).(*wire.RetrySlot); ok {
					slot.After.Store(after)
				}
			}
		}
	}
	if !owner {
		resp.Usage = openai.Usage{} // no tokens were spent
	}
	switch {
	case out != nil && whole && err == nil:
		if !started {
			if err := out.start(); err != nil {
				return openai.ChatCompletionResponse{}, err
			}
		}
		out.streamedWhole(msg)
	case err != nil && out != nil && sentOf(out):
		if !errors.Is(err, ErrDelivered) {
			err = &deliveredError{err}
		}
	case err != nil:
		if d, ok := err.(*deliveredError); ok {
			err = d.err // this caller has seen nothing of it: it may retry
		}
	}
	if owner && kept {
		g.store(ctx, st, f.key, CacheEntry{Response: o.resp, Extras: o.extras}, func() {
			g.mu.Lock()
			g.forget(f)
			g.mu.Unlock()
		})
	}
	return resp, err
}

// sentOf reports whether text went out through out.
func sentOf(out streamOut) bool {
	sent, _ := out.status()
	return sent
}

// start begins a sending of the flight's request (see streamOut).
func (f *flight) start() error {
	f.g.mu.Lock()
	defer f.g.mu.Unlock()
	if f.call.sent {
		return errSentAgain
	}
	f.call.whole = false
	return nil
}

// delta records a piece of the stream and wakes the waiters.
func (f *flight) delta(d wire.Delta) bool {
	f.g.mu.Lock()
	c := f.call
	c.log = append(c.log, d)
	c.sent = c.sent || !d.End
	f.wakeAll()
	f.g.mu.Unlock()
	return true
}

func (f *flight) status() (sent, stopped bool) {
	f.g.mu.Lock()
	defer f.g.mu.Unlock()
	return f.call.sent, false
}

func (f *flight) streamedWhole(msg openai.ChatCompletionMessage) {
	msg.ToolCalls = slices.Clone(msg.ToolCalls)
	f.g.mu.Lock()
	f.call.whole, f.call.msg = true, msg
	f.g.mu.Unlock()
}

// finishedNormally reports a reply whose every choice ended as the model
// meant it to: stopped or calling tools, with no refusal.
func finishedNormally(resp openai.ChatCompletionResponse) bool {
	if len(resp.Choices) == 0 {
		return false
	}
	for _, ch := range resp.Choices {
		switch ch.FinishReason {
		case openai.FinishReasonStop, openai.FinishReasonToolCalls, openai.FinishReasonFunctionCall:
		default:
			return false
		}
		if ch.Message.Refusal != "" {
			return false
		}
	}
	return true
}

// cacheKeyVersion names the format of the keys [Cached] computes: what
// goes into them and how. It starts every key, so that a store shared by
// processes of different versions (Redis, disk) never serves an entry
// written under another format; change it whenever a key would read
// differently.
const cacheKeyVersion = "v2"

// cacheKey is the version, then the SHA-256 of the version, the LM's
// identity (length-prefixed) and the request's JSON, without the fields
// that only say how the reply travels (stream, stream_options), so that
// Call and Stream share entries: "v2:" and 64 hex digits, or
// "v2:local:" and 64 hex digits under an identity of this process alone.
func cacheKey(id identity, req openai.ChatCompletionRequest) (string, error) {
	req.Stream, req.StreamOptions = false, nil
	b, err := json.Marshal(req)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	h.Write([]byte("sigwire/adapter cache key " + cacheKeyVersion + "\x00"))
	h.Write(binary.BigEndian.AppendUint64(nil, uint64(len(id.id))))
	h.Write([]byte(id.id))
	h.Write(b)
	prefix := cacheKeyVersion + ":"
	if id.local {
		prefix = localKeyPrefix
	}
	return prefix + hex.EncodeToString(h.Sum(nil)), nil
}

// localKeyPrefix starts the keys of LMs identified per process.
const localKeyPrefix = cacheKeyVersion + ":local:"

// LocalCacheKey reports whether key, as [Cached] computes it, is under an
// LM identity of this process alone (an LM identified as a value: see
// [Identifier]): no other process computes it, so a store shared by
// processes (Redis, disk) will never serve its entry to another. Such a
// store counts the entries it stores under these keys and says so once
// (DiskCacheStats.Local; rediscache's Stats.Local); declare the LM's
// identity with [WithIdentity] to share them.
func LocalCacheKey(key string) bool { return strings.HasPrefix(key, localKeyPrefix) }

// LRU is an in-memory least-recently-used Cache.
type LRU struct {
	mu    sync.Mutex
	max   int
	order *list.List // front: most recent
	items map[string]*list.Element
}

type lruEntry struct {
	key   string
	entry CacheEntry
}

// NewLRU returns an LRU holding at most n responses (n < 1 means 1000).
func NewLRU(n int) *LRU {
	if n < 1 {
		n = 1000
	}
	return &LRU{max: n, order: list.New(), items: map[string]*list.Element{}}
}

// Get returns a stored reply.
func (l *LRU) Get(_ context.Context, key string) (CacheEntry, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e, ok := l.items[key]
	if !ok {
		return CacheEntry{}, false
	}
	l.order.MoveToFront(e)
	return e.Value.(*lruEntry).entry, true
}

// Put stores a reply, evicting the least recently used beyond the size.
func (l *LRU) Put(_ context.Context, key string, entry CacheEntry) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if e, ok := l.items[key]; ok {
		e.Value.(*lruEntry).entry = entry
		l.order.MoveToFront(e)
		return
	}
	l.items[key] = l.order.PushFront(&lruEntry{key, entry})
	for l.order.Len() > l.max {
		last := l.order.Back()
		l.order.Remove(last)
		delete(l.items, last.Value.(*lruEntry).key)
	}
}
