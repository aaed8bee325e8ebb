package adapter

import (
	"container/list"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"
	"sync"

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

// Identifier is implemented by LMs that name the endpoint and credentials
// they call. [Cached] keys every entry by the LM's identity as well as the
// request, so that a cache shared by several LMs (tenants with their own
// endpoint or key, a provider and a cheaper deployment serving the same
// model name) never serves one LM's reply to another.
//
// Without the method, an *openai.Client is identified by its base URL,
// organization, API type and version and a hash of its key; an LM of
// another pointer type by its type and address (entries then live no
// longer than the LM: give such an LM an LMIdentity to share entries
// across processes). Calls through an LM that has no identity (a value
// that is not a pointer) are not cached. Wrappers made by this package
// ([WithMiddleware], [WithCapabilities]) take the identity of the LM they
// wrap.
type Identifier interface {
	LMIdentity() string
}

type identityKey struct{}

// identityFrom returns the identity of the LM a call goes to: set by a
// WithMiddleware wrapper called directly, or computed once per pipeline
// call from its LM.
func identityFrom(ctx context.Context) (string, bool) {
	if id, ok := ctx.Value(identityKey{}).(string); ok {
		return id, true
	}
	if s := stateFrom(ctx); s != nil {
		return s.identity()
	}
	return "", false
}

// lmIdentity returns what identifies lm for a cache key: an Identifier
// (lm or an LM it wraps), else lm itself without the library's wrappers.
func lmIdentity(lm LM) (string, bool) {
	for w := lm; w != nil; {
		if id, ok := w.(Identifier); ok {
			return "id:" + id.LMIdentity(), true
		}
		u, ok := w.(Unwrapper)
		if !ok {
			break
		}
		w = u.Unwrap()
	}
	lm, _ = peel(lm)
	if c, ok := lm.(*openai.Client); ok && c != nil {
		return clientIdentity(c), true
	}
	v := reflect.ValueOf(lm)
	if v.Kind() == reflect.Pointer && !v.IsNil() {
		return fmt.Sprintf("ptr:%T@%p", lm, lm), true
	}
	return "", false
}

// clientIdentity reads the endpoint and credentials of a go-openai client,
// which keeps its configuration unexported.
func clientIdentity(c *openai.Client) string {
	cfg := reflect.ValueOf(c).Elem().FieldByName("config")
	str := func(name string) string {
		if f := cfg.FieldByName(name); f.IsValid() && f.Kind() == reflect.String {
			return f.String()
		}
		return ""
	}
	key := sha256.Sum256([]byte(str("authToken")))
	return fmt.Sprintf("openai:%q %q %q %q %x", str("BaseURL"), str("OrgID"), str("APIType"), str("APIVersion"), key[:8])
}

// Cached is the cache middleware: a request identical to an earlier one
// (model, messages, every option) to the same LM (see [Identifier]) is
// answered from c without an LM call, and counted in Result.CacheHits; a
// hit reports no usage, since no tokens were spent. A [Stream] and a
// [Call] with the same request share entries: a hit is replayed to the
// stream as deltas.
//
// Only replies the pipeline accepts are stored: not a reply cut by the
// token limit, refused, filtered, empty, or one that failed to parse.
// Used outside the pipeline, a reply is stored when every choice finished
// normally. Within the pipeline an entry keeps what the reply carried
// beyond go-openai's types (citations), and a hit gives it back.
func Cached(c Cache) Middleware {
	return func(next Invoker) Invoker {
		return func(ctx context.Context, req openai.ChatCompletionRequest) (openai.ChatCompletionResponse, error) {
			id, ok := identityFrom(ctx)
			if !ok {
				return next(ctx, req)
			}
			key, err := cacheKey(id, req)
			if err != nil {
				return next(ctx, req)
			}
			st := stateFrom(ctx)
			if e, ok := c.Get(ctx, key); ok {
				if st != nil {
					st.cacheHits.Add(1)
					st.setExtras(e.Extras)
				}
				return e.Response, nil
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

// cacheKey is the SHA-256 of the LM's identity and the request's JSON,
// without the fields that only say how the reply travels (stream,
// stream_options), so that Call and Stream share entries.
func cacheKey(id string, req openai.ChatCompletionRequest) (string, error) {
	req.Stream, req.StreamOptions = false, nil
	b, err := json.Marshal(req)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	h.Write([]byte(id))
	h.Write([]byte{0})
	h.Write(b)
	return hex.EncodeToString(h.Sum(nil)), nil
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
