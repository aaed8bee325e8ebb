package adapter

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"net/http"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"weak"

	openai "github.com/sashabaranov/go-openai"

	"github.com/sigwire/adapter/internal/wire"
)

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
	ok    bool // beside once, in its padding: runHeap stays in its size class
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
	return streamFrom(ctx, d.lm, req)
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
// which keeps its configuration unexported (see wire.ClientConfig); false when its HTTP client
// may change who it calls as (see [Identifier]) and anyDoer is not set
// (WithIdentity vouches for it), or when the client's layout is not the
// one this reads.
func clientIdentity(c *openai.Client, anyDoer bool) (id string, azure *openai.ClientConfig, ok bool) {
	cfg, token, ok := wire.ClientConfig(c)
	if !ok || !anyDoer && !plainDoer(cfg.HTTPClient) {
		return "", nil, false
	}
	key := sha256.Sum256([]byte(token))
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
