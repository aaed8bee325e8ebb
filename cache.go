package adapter

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"

	openai "github.com/sashabaranov/go-openai"
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
			ident := scopeOf(ctx).ident
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
