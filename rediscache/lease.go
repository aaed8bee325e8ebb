package rediscache

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	randv2 "math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sigwire/adapter"
)

// With [WithLease], a Cache that misses a key takes a lease on it in Redis
// (SET NX PX): its caller calls the LM, and storing the entry releases
// the lease (or Release does, when the call stores nothing). A Cache that misses while another holds the lease polls for
// the entry, backing off, until the entry is there, the lease is free to
// take (it lapsed), the wait bound passes or the caller gives up.

// leaseScript answers a lookup: the entry (a string) when there is one;
// else 1 when the caller holds the lease (took it now, or held it already,
// a retry of its own: renewed), else 0 (another holds it).
var leaseScript = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
if v then return v end
if redis.call('SET', KEYS[2], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 end
if redis.call('GET', KEYS[2]) == ARGV[1] then
	redis.call('PEXPIRE', KEYS[2], ARGV[2])
	return 1
end
return 0`)

// storeScript stores the entry (ARGV[2]: its TTL in milliseconds, 0 for
// none) and releases the lease if the caller holds it (compare and
// delete: a lease that lapsed and was taken by another is left alone).
var storeScript = redis.NewScript(`
if ARGV[2] == '0' then
	redis.call('SET', KEYS[1], ARGV[1])
else
	redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
end
if redis.call('GET', KEYS[2]) == ARGV[3] then redis.call('DEL', KEYS[2]) end
return 1`)

// releaseScript releases the lease if the caller holds it.
var releaseScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`)

// The waits between polls: from firstPoll, doubling up to maxPoll, each
// shortened by up to a quarter at random so that waiters spread out.
const (
	firstPoll = 5 * time.Millisecond
	maxPoll   = 100 * time.Millisecond
)

// newToken names a Cache's leases: random, so that replicas never take
// each other's for their own.
func newToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return hex.EncodeToString(b[:])
}

// leaseKey is the lease's key for an entry's key rkey:
// "<prefix>lease:v1:{<rkey>}", in the same Redis Cluster slot as the
// entry (the braces make rkey the hash tag). An rkey with braces of its
// own (from a WithPrefix with them) gets rkey + ":lease", in the entry's slot
// when rkey holds a whole hash tag; otherwise a Redis Cluster refuses the
// scripts (CROSSSLOT), and the lookups fail open.
func (c *Cache) leaseKey(rkey string) string {
	if strings.ContainsAny(rkey, "{}") {
		return rkey + ":lease"
	}
	return c.s.cfg.prefix + "lease:" + formatVersion + ":{" + rkey + "}"
}

// millis is d in whole milliseconds for Redis, at least 1.
func millis(d time.Duration) string { return strconv.FormatInt(max(d.Milliseconds(), 1), 10) }

// leasedLookup is Lookup with a lease: the entry, or a miss on which this
// Cache holds the lease, or, while another holds it, the entry it stores
// within the wait bound.
func (c *Cache) leasedLookup(ctx context.Context, key, rkey string) (adapter.CacheEntry, bool, error) {
	lkey := c.leaseKey(rkey)
	keys, ttl := []string{rkey, lkey}, millis(c.s.cfg.lease)
	deadline := time.Now().Add(c.s.cfg.lease)
	waited := false
	for delay := firstPoll; ; delay = min(2*delay, maxPoll) {
		v, err := run(ctx, &c.s, "get", rkey, func(ctx context.Context) (any, error) {
			return leaseScript.Run(ctx, c.s.rdb, keys, c.token, ttl).Result()
		})
		if err != nil {
			c.misses.Add(1)
			if ctx.Err() != nil {
				return adapter.CacheEntry{}, false, nil
			}
			return adapter.CacheEntry{}, false, &Error{Op: "get", Key: rkey, Err: err}
		}
		switch v := v.(type) {
		case string:
			return c.decode(ctx, key, rkey, []byte(v))
		case int64:
			if v == 1 {
				c.leases.Add(1)
				c.misses.Add(1)
				return adapter.CacheEntry{}, false, nil
			}
		}
		if !waited {
			waited = true
			c.waits.Add(1)
		}
		left := time.Until(deadline)
		if left <= 0 {
			c.waitTimeouts.Add(1)
			c.misses.Add(1)
			return adapter.CacheEntry{}, false, nil
		}
		pause := min(delay-time.Duration(randv2.Int64N(int64(delay/4)+1)), left)
		t := time.NewTimer(pause)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			c.misses.Add(1)
			return adapter.CacheEntry{}, false, nil
		}
	}
}

// leasedStore stores the value b under rkey and releases this Cache's
// lease on it.
func (c *Cache) leasedStore(ctx context.Context, rkey string, b []byte) error {
	ttl := "0"
	if c.s.cfg.ttl > 0 {
		ttl = millis(c.s.cfg.ttl)
	}
	_, err := run(ctx, &c.s, "put", rkey, func(ctx context.Context) (any, error) {
		return storeScript.Run(ctx, c.s.rdb, []string{rkey, c.leaseKey(rkey)}, b, ttl, c.token).Result()
	})
	return err
}

// release gives up this Cache's lease on rkey, when nothing is stored
// (an entry too large, one that does not marshal, or none at all: see
// Release), so that the replicas waiting stop waiting at once.
func (c *Cache) release(ctx context.Context, rkey string) {
	if c.s.cfg.lease <= 0 {
		return
	}
	_, _ = run(ctx, &c.s, "release", rkey, func(ctx context.Context) (any, error) {
		return releaseScript.Run(ctx, c.s.rdb, []string{c.leaseKey(rkey)}, c.token).Result()
	})
}
