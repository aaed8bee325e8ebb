package adapter

import (
	"container/list"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"unsafe"
	"weak"

	openai "github.com/sashabaranov/go-openai"
)

// Cache stores LM replies by key. Implementations must be safe for
// concurrent use; plug in a disk or Redis store behind this interface
// (a CacheEntry marshals to JSON and back).
type Cache interface {
	Get(ctx context.Context, key string) (CacheEntry, bool)
	Put(ctx context.Context, key string, entry CacheEntry)
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
//     a client is identified as a value, as below (embed the client in a
//     type with an LMIdentity method to share its entries across
//     processes);
//   - for any other LM that is a pointer: an identity of its own, random,
//     given to the value the first time a cache sees it and never to
//     another value, so that its entries live no longer than the LM and
//     are never served to an LM that later gets its address (nor to
//     another process);
//   - none for an LM that is not a pointer (a func type, a struct value):
//     calls through it are not cached.
type Identifier interface {
	LMIdentity() string
}

// identityKey carries the *lmIdent of the LM beneath the middlewares that
// run with the context: set by the pipeline for its LM, and by a
// [WithMiddleware] wrapper called directly for the LM it wraps, so that
// the innermost, the LM that answers, wins.
type identityKey struct{}

// lmIdent is the identity of one LM, worked out when a cache first asks.
type lmIdent struct {
	lm    LM
	once  sync.Once
	id    string
	azure *openai.ClientConfig // an Azure client: its deployment depends on the model
	ok    bool
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
		id += "\x00deployment " + i.azure.GetAzureDeploymentByModel(req.Model)
	}
	key, err := cacheKey(id, req)
	return key, err == nil
}

// lmIdentity returns what identifies lm (see [Identifier]).
func lmIdentity(lm LM) (id string, azure *openai.ClientConfig, ok bool) {
	for w := lm; w != nil; {
		if i, ok := w.(Identifier); ok {
			return "id\x00" + i.LMIdentity(), nil, true
		}
		u, ok := w.(Unwrapper)
		if !ok {
			break
		}
		w = u.Unwrap()
	}
	lm, _ = peel(lm)
	if c, ok := lm.(*openai.Client); ok && c != nil {
		if id, azure, ok := clientIdentity(c); ok {
			return id, azure, true
		}
	}
	id, ok = valueIdentity(lm)
	return id, nil, ok
}

// clientIdentity reads the endpoint and credentials of a go-openai client,
// which keeps its configuration unexported; false when its HTTP client
// may change who it calls as (see [Identifier]), or when the client's
// layout is not the one this reads.
func clientIdentity(c *openai.Client) (id string, azure *openai.ClientConfig, ok bool) {
	f := reflect.ValueOf(c).Elem().FieldByName("config")
	if !f.IsValid() || f.Type() != reflect.TypeFor[openai.ClientConfig]() {
		return "", nil, false
	}
	cfg := (*openai.ClientConfig)(unsafe.Pointer(f.UnsafeAddr()))
	token := reflect.ValueOf(cfg).Elem().FieldByName("authToken")
	if !token.IsValid() || token.Kind() != reflect.String || !plainDoer(cfg.HTTPClient) {
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
	case wireDoer:
		return plainDoer(d.next)
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
// beyond go-openai's types (citations), and a hit gives it back.
func Cached(c Cache) Middleware {
	return func(next Invoker) Invoker {
		return func(ctx context.Context, req openai.ChatCompletionRequest) (openai.ChatCompletionResponse, error) {
			ident, _ := ctx.Value(identityKey{}).(*lmIdent)
			if ident == nil {
				return next(ctx, req)
			}
			key, ok := ident.key(req)
			if !ok {
				return next(ctx, req)
			}
			st := stateFrom(ctx)
			if e, ok := c.Get(ctx, key); ok {
				if st != nil {
					st.cacheHits.Add(1)
					st.setExtras(e.Extras)
				}
				resp := e.Response
				resp.Usage = openai.Usage{} // no tokens were spent
				return resp, nil
			}
			resp, err := next(ctx, req)
			if err != nil || !finishedNormally(resp) {
				return resp, err
			}
			entry := CacheEntry{Response: resp}
			if st != nil {
				entry.Extras = st.replyExtras()
			}
			put := func() { c.Put(context.WithoutCancel(ctx), key, entry) }
			if st != nil {
				st.onAccept(put)
			} else {
				put()
			}
			return resp, err
		}
	}
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
// Call and Stream share entries: "v2:" and 64 hex digits.
func cacheKey(id string, req openai.ChatCompletionRequest) (string, error) {
	req.Stream, req.StreamOptions = false, nil
	b, err := json.Marshal(req)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	h.Write([]byte("sigwire/adapter cache key " + cacheKeyVersion + "\x00"))
	h.Write(binary.BigEndian.AppendUint64(nil, uint64(len(id))))
	h.Write([]byte(id))
	h.Write(b)
	return cacheKeyVersion + ":" + hex.EncodeToString(h.Sum(nil)), nil
}

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
