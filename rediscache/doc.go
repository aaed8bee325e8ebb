// Package rediscache shares what the replicas of a service learn about
// their LM through one Redis: a response cache ([New], an adapter.Cache
// for adapter.Cached), so that a prompt is paid for once across replicas
// and deploys, and a rate limiter ([NewLimiter], an adapter.Middleware)
// that every replica obeys, so that a provider's 429 makes them all wait;
// and a spend budget per tenant ([NewBudget], an adapter.Budget for
// adapter.WithBudget), so that a tenant's spend never passes its limit
// whichever replicas make its calls. It is a module of its own (github.com/sigwire/adapter/rediscache), on
// github.com/redis/go-redis/v9, so that the library itself keeps its four
// dependencies.
//
// The cache and the limiter fail open: when Redis is down or slow, a
// cache lookup is a miss and the call goes to the LM, a limiter falls
// back to a limit kept in the process. A budget fails closed unless given
// [WithFailOpen]: a request it cannot check is not sent. Each Redis
// command is bounded by [WithTimeout]; after a failure
// Redis is left alone for [WithCooldown], so that a dead Redis costs one
// timeout per cooldown, not one per call. Failures are counted (Stats)
// and reported to [WithOnError]; nothing wrong is ever served: an entry that
// is corrupt, of another format version or stored under another key is
// ignored and counted. Whoever can write to the Redis can still forge an
// entry under its own key, unless the replicas sign their entries
// ([WithSigningSecret]) with a secret the Redis does not hold.
//
// Put the cache outside the limiter, on the LM, so that hits spend no
// rate and every attempt of a retried call is admitted:
//
//	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379"})
//	cache := rediscache.New(rdb, rediscache.WithTTL(24*time.Hour))
//	limit := rediscache.NewLimiter(rdb, "openai-prod", rediscache.RateLimit{RPM: 500, TPM: 200_000})
//	lm := adapter.WithMiddleware(client, adapter.Cached(cache), limit.Middleware())
//
// Replicas that ask the same new prompt at the same moment each miss, and
// each pays for it: adapter.Cached coalesces calls within a process only.
// With [WithLease], the first replica to miss takes a lease on the key in
// Redis and calls the LM; the others wait for its entry, within a bound,
// and fail open past it:
//
//	cache := rediscache.New(rdb, rediscache.WithLease(30*time.Second))
//
// A tenant's budget holds, before each request, what the request can
// cost at most, and settles it from the reply's usage; the request it
// cannot hold is not sent (adapter.ErrBudget):
//
//	budget, err := rediscache.NewBudget(rdb, "tenant-42", adapter.Limit{Tokens: 2_000_000}, rediscache.WithWindow(24*time.Hour))
//	res, err := adapter.Call(ctx, lm, sig, nil, inputs, adapter.WithBudget(budget))
//
// What Redis holds, under the prefix ([WithPrefix], "sigwire:" by default):
// cache entries at "<prefix>cache:v1:<key>", the key made by
// adapter.Cached from the LM's identity and the request; with [WithLease],
// leases at "<prefix>lease:v1:{<prefix>cache:v1:<key>}" (the braces keep a
// lease in its entry's Redis Cluster slot), each living at most the
// lease's bound; limiter state at
// "<prefix>limit:v1:{<hash>}:…", one hash per limiter name and model (the
// braces keep a limiter's keys in one Redis Cluster slot); a budget's
// account at "<prefix>budget:v1:{<hash>}:a" (a hash: spent, held, and
// each hold's amount) and its holds' deadlines at "…:h" (a sorted set),
// one hash per tenant, both living the budget's [WithWindow] when it has one.
// The "v1" is the format version: a later format uses other keys, and neither reads
// the other's entries.
package rediscache
