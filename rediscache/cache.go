package rediscache

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"

	"github.com/redis/go-redis/v9"

	"github.com/sigwire/adapter"
)

// Cache is an adapter.Cache on Redis, shared by every process that uses
// the same Redis and [WithPrefix]: wrap it with adapter.Cached. Entries expire
// ([WithTTL]) and are bounded in size ([WithMaxEntryBytes]); each is stored under
// the key adapter.Cached made, which names the LM's identity, so entries
// never cross LMs (tenants, endpoints, API keys).
//
// A value is adapter.MarshalCacheEntry's: the format version and the
// whole key before the entry's JSON (and, with [WithSigningSecret], a
// MAC after it). A value of another version, stored under another key (a copy, a rename,
// another program writing under the prefix), that does not decode into a
// reply, or whose MAC does not match is ignored: a miss, counted in
// Stats.Corrupt and reported to [WithOnError] (an error matching
// adapter.ErrCorruptCacheEntry). Redis failures and timeouts are misses
// too (see the package documentation): a Cache never returns a wrong
// entry and never fails a call.
//
// Replicas asking the same new prompt at the same moment each pay for it,
// unless their Caches take a [WithLease]: then one calls the LM and the others
// wait, within a bound, for its entry.
//
// A Cache is safe for concurrent use.
type Cache struct {
	s                               store
	token                           string // names this Cache's leases ([WithLease])
	hits, misses, corrupt, oversize atomic.Int64
	leases, waits, waitTimeouts     atomic.Int64
	local                           atomic.Int64
}

// Stats counts what a [Cache] did since [New].
type Stats struct {
	Hits, Misses int64
	// Errors counts Redis commands that failed or timed out; Bypassed the
	// lookups and stores skipped during a cooldown after one (each a miss
	// or a dropped store).
	Errors, Bypassed int64
	// Corrupt counts entries ignored: of another format version, stored
	// under another key, not a reply, or without a valid MAC.
	Corrupt int64
	// Oversize counts replies not stored for passing WithMaxEntryBytes.
	Oversize int64
	// Local counts the entries stored under a key of an LM identified per
	// process (adapter.LocalCacheKey): no other replica will read them,
	// so the replicas each pay for every prompt. The first is logged at
	// Warn ([WithLogger]). Declare the LM's identity with adapter.WithIdentity
	// (a go-openai client whose HTTP client has a transport of its own
	// needs it) to share them.
	Local int64
	// With [WithLease]: Leases counts the misses on which this Cache took
	// the lease (its caller called the LM), Waits the lookups that waited
	// for another's lease, WaitTimeouts those of them that ran out of
	// time (a miss; the caller called the LM itself).
	Leases, Waits, WaitTimeouts int64
}

// New returns a Cache on rdb (a *redis.Client, a *redis.ClusterClient, a
// *redis.Ring or a failover client). The options: [WithTTL],
// [WithMaxEntryBytes], [WithSigningSecret], [WithLease], [WithLogger],
// and the [SharedOption]s [WithPrefix], [WithTimeout], [WithCooldown],
// [WithOnError].
//
// New panics if [WithSigningSecret] was given a secret shorter than
// [MinSecretBytes] (an empty one included), with an error matching
// [ErrShortSecret] that names the secret's length and the minimum: a Cache
// that was asked to sign never runs unsigned.
func New(rdb redis.UniversalClient, opts ...Option) *Cache {
	c := &Cache{s: newStore(rdb, newConfig(opts, Option.applyToCache))}
	if err := c.s.cfg.checkSecret(); err != nil {
		panic(err)
	}
	if c.s.cfg.lease > 0 {
		c.token = newToken()
	}
	return c
}

// formatVersion names the format of keys and values (the values are
// adapter.MarshalCacheEntry's, which names its own version too).
const formatVersion = "v1"

func (c *Cache) key(key string) string { return c.s.cfg.prefix + "cache:" + formatVersion + ":" + key }

// Get returns the entry stored for key; a miss when there is none, when
// it is not an entry for key, or when Redis fails or is slower than the
// timeout (see Lookup).
func (c *Cache) Get(ctx context.Context, key string) (adapter.CacheEntry, bool) {
	e, ok, _ := c.Lookup(ctx, key)
	return e, ok
}

// Lookup returns the entry stored for key, as Get does, and, for a miss
// that is not simply "no entry", why: an *[Error] wrapping Redis's
// failure or timeout, the cooldown after one, or an entry that is not one
// for key (matching adapter.ErrCorruptCacheEntry). Through
// adapter.Cached, such an error is counted in the call's
// Result.CacheErrors and reported to its Trace.CacheError; the call goes
// on to the LM. A caller that gave up (its context ended) gets a miss and
// no error.
//
// With [WithLease], a miss takes the key's lease, or waits for the entry while
// another Cache holds it (see WithLease).
func (c *Cache) Lookup(ctx context.Context, key string) (adapter.CacheEntry, bool, error) {
	rkey := c.key(key)
	if c.s.cfg.lease > 0 {
		return c.leasedLookup(ctx, key, rkey)
	}
	b, err := run(ctx, &c.s, "get", rkey, func(ctx context.Context) ([]byte, error) {
		return c.s.rdb.Get(ctx, rkey).Bytes()
	})
	if err != nil {
		c.misses.Add(1)
		if errors.Is(err, redis.Nil) || ctx.Err() != nil {
			return adapter.CacheEntry{}, false, nil
		}
		return adapter.CacheEntry{}, false, &Error{Op: "get", Key: rkey, Err: err}
	}
	return c.decode(ctx, key, rkey, b)
}

// decode returns the entry for key in the value b stored under rkey: a
// hit, or a miss counted as corrupt.
func (c *Cache) decode(ctx context.Context, key, rkey string, b []byte) (adapter.CacheEntry, bool, error) {
	b, err := c.verify(rkey, b)
	var e adapter.CacheEntry
	if err == nil {
		e, err = adapter.UnmarshalCacheEntry(key, b)
	}
	if err != nil {
		c.corrupt.Add(1)
		c.misses.Add(1)
		err = &Error{Op: "get", Key: rkey, Err: err}
		c.s.report(ctx, err)
		return adapter.CacheEntry{}, false, err
	}
	c.hits.Add(1)
	return e, true, nil
}

// Put stores entry under key for the TTL, unless it passes WithMaxEntryBytes.
// A Redis failure drops it (counted, reported; see Store). With [WithLease],
// it releases this Cache's lease on key.
func (c *Cache) Put(ctx context.Context, key string, entry adapter.CacheEntry) {
	_ = c.Store(ctx, key, entry)
}

// Store stores entry as Put does and returns why it was dropped: an
// *[Error] wrapping Redis's failure or timeout, or the cooldown after one.
// An entry past WithMaxEntryBytes is skipped without an error (counted in
// Stats.Oversize).
func (c *Cache) Store(ctx context.Context, key string, entry adapter.CacheEntry) error {
	rkey := c.key(key)
	b, err := adapter.MarshalCacheEntry(key, entry)
	if err != nil {
		c.release(ctx, rkey)
		return &Error{Op: "put", Key: rkey, Err: err} // a reply that does not marshal cannot be stored, nor served
	}
	b = c.sign(rkey, b)
	if len(b) > c.s.cfg.maxEntry {
		c.oversize.Add(1)
		c.release(ctx, rkey)
		return nil
	}
	if c.s.cfg.lease > 0 {
		err = c.leasedStore(ctx, rkey, b)
	} else {
		_, err = run(ctx, &c.s, "put", rkey, func(ctx context.Context) (string, error) {
			return c.s.rdb.Set(ctx, rkey, b, c.s.cfg.ttl).Result()
		})
	}
	if err != nil && ctx.Err() == nil {
		return &Error{Op: "put", Key: rkey, Err: err}
	}
	if err == nil && adapter.LocalCacheKey(key) && c.local.Add(1) == 1 {
		logger := c.s.cfg.logger
		if logger == nil {
			logger = slog.Default()
		}
		logger.WarnContext(ctx, "rediscache: an entry stored under an LM identity of this process alone: no other replica will read it; declare the LM's identity with adapter.WithIdentity (Stats.Local counts them)",
			slog.String("key", rkey))
	}
	return nil
}

// Release gives up this Cache's lease on key, taken by a Lookup that
// missed, when no entry will be stored for it (the call failed, or its
// reply was refused): the replicas waiting for the entry stop waiting at
// once, and the next of them to look takes the lease and calls the LM.
// Without [WithLease] it does nothing. adapter.Cached calls it.
func (c *Cache) Release(ctx context.Context, key string) {
	c.release(ctx, c.key(key))
}

// Lookup and Store make a Cache an adapter.FallibleCache; Release an
// adapter.CacheReleaser.
var (
	_ adapter.FallibleCache = (*Cache)(nil)
	_ adapter.CacheReleaser = (*Cache)(nil)
)

// Stats returns the cache's counters.
func (c *Cache) Stats() Stats {
	return Stats{
		Hits: c.hits.Load(), Misses: c.misses.Load(),
		Errors: c.s.errors.Load(), Bypassed: c.s.bypassed.Load(),
		Corrupt: c.corrupt.Load(), Oversize: c.oversize.Load(), Local: c.local.Load(),
		Leases: c.leases.Load(), Waits: c.waits.Load(), WaitTimeouts: c.waitTimeouts.Load(),
	}
}

// sign appends the value's MAC when the cache signs its entries.
func (c *Cache) sign(rkey string, b []byte) []byte {
	if !c.s.cfg.sign {
		return b
	}
	return append(b, c.mac(rkey, b)...)
}

// verify checks and removes the value's MAC when the cache signs its
// entries.
func (c *Cache) verify(rkey string, b []byte) ([]byte, error) {
	if !c.s.cfg.sign {
		return b, nil
	}
	if len(b) < sha256.Size {
		return nil, errUnsigned
	}
	body, sum := b[:len(b)-sha256.Size], b[len(b)-sha256.Size:]
	if !hmac.Equal(sum, c.mac(rkey, body)) {
		return nil, errUnsigned
	}
	return body, nil
}

// mac authenticates a value and the key it is stored under.
func (c *Cache) mac(rkey string, b []byte) []byte {
	h := hmac.New(sha256.New, c.s.cfg.secret)
	h.Write([]byte(rkey))
	h.Write([]byte{0})
	h.Write(b)
	return h.Sum(nil)
}

// errUnsigned: a signing cache found a value without a valid MAC.
var errUnsigned = fmt.Errorf("%w: no valid signature", adapter.ErrCorruptCacheEntry)
