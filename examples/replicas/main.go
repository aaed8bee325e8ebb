// Command replicas runs three replicas of a service (three processes: this
// program started again with REPLICA set) against one Redis and one LM —
// an lmtest server standing in for the provider, 20 ms a reply. Each
// replica asks the same 100 questions, starting at a different one, through
// a rediscache.Cache and a rediscache.Limiter on the same Redis, and
// prints the LM calls it made: together they pay for each question once,
// 100 LM calls rather than 300. It lives in its own module, as rediscache
// does, so that the library keeps its four dependencies.
//
//	redis-server --port 6390 --save '' --appendonly no --daemonize yes
//	SIGWIRE_REDIS_ADDR=127.0.0.1:6390 go run .
//
// Without SIGWIRE_REDIS_ADDR it uses localhost:6379. The keys it writes
// carry a prefix of their own per run and expire within ten minutes. With
// -lru each replica has its own in-memory cache instead, as without Redis:
// each pays for every question, 300 LM calls.
//
// Each replica's go-openai client has an HTTP client of its own (a
// timeout, a tuned transport), as a production service's does. The
// library cannot know what such a transport adds (credentials, say), so
// it identifies the client per process, and the replicas would share
// nothing: adapter.WithIdentity declares the identity, one call. With
// -identity=false the replicas run without it: each pays for every
// question, and the Redis cache says so (Stats.Local, and one warning).
//
// A replica that catches up with another may ask a question the other is
// still waiting on. The cache's lease (rediscache.WithLease, -lease, 5 s by
// default) makes it wait for the other's reply rather than pay for the
// question too: 100 calls exactly, unless Redis failed or a wait ran out
// (both counted in the report). With -lease 0 both pay, and a run makes a
// few more than 100. On a machine so loaded that Redis commands pass the
// cache's 100 ms timeout, each timeout sends a second of lookups to the LM;
// -redis-timeout raises the bound.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	openai "github.com/sashabaranov/go-openai"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/lmtest"
	"github.com/sigwire/adapter/rediscache"
	"github.com/sigwire/adapter/signature"
)

const (
	replicas  = 3
	questions = 100
)

// report is what a replica tells the parent, as one JSON line.
type report struct {
	Replica   int
	Calls     int // LM requests sent (Result.Requests)
	CacheHits int
	Wrong     int // replies that do not answer the question asked
	Cache     rediscache.Stats
	Limiter   rediscache.LimiterStats
}

var (
	lru   = flag.Bool("lru", false, "give each replica its own in-memory LRU cache instead of the shared Redis cache")
	lease = flag.Duration("lease", 5*time.Second, "how long a replica waits for another's call to the same question (rediscache.WithLease; 0: it calls the LM too)")
	ident = flag.Bool("identity", true, "declare the client's identity with adapter.WithIdentity (false: each replica's entries are its own)")
	rto   = flag.Duration("redis-timeout", 0, "bound on each Redis command (rediscache.WithTimeout; 0: its default, 100 ms); past it a lookup is a miss and Redis is left alone for a second")
)

func main() {
	log.SetFlags(0)
	flag.Parse()
	if r := os.Getenv("REPLICA"); r != "" {
		n, _ := strconv.Atoi(r)
		replica(n)
		return
	}
	addr := os.Getenv("SIGWIRE_REDIS_ADDR")
	if addr == "" {
		addr = "localhost:6379"
	}

	// The LM: answers "answer to N" for question N, after 20 ms.
	srv := lmtest.NewServer()
	defer srv.Close()
	srv.Handle(func(r lmtest.Request) lmtest.Reply {
		q := r.Chat.Messages[len(r.Chat.Messages)-1].Content
		q = q[strings.Index(q, "\nquestion ")+len("\nquestion "):]
		q = q[:strings.IndexByte(q, '\n')]
		return lmtest.Text("[[ ## answer ## ]]\nanswer to " + q).Delay(20 * time.Millisecond)
	})

	// Start the replicas, and let them go at once.
	env := append(os.Environ(), "SIGWIRE_REDIS_ADDR="+addr, "LM_URL="+srv.URL(),
		fmt.Sprintf("KEY_PREFIX=replicas-example:%d:", time.Now().UnixNano()))
	reports := make([]report, replicas)
	var wg sync.WaitGroup
	var starts []func()
	for i := range replicas {
		cmd := exec.Command(os.Args[0], os.Args[1:]...)
		cmd.Env = append(env, "REPLICA="+strconv.Itoa(i))
		cmd.Stderr = os.Stderr
		stdin, err := cmd.StdinPipe()
		check(err)
		stdout, err := cmd.StdoutPipe()
		check(err)
		check(cmd.Start())
		starts = append(starts, func() { _ = stdin.Close() })
		wg.Go(func() {
			check(json.NewDecoder(bufio.NewReader(stdout)).Decode(&reports[i]))
			check(cmd.Wait())
		})
	}
	for _, start := range starts {
		start()
	}
	wg.Wait()

	total, wrong, failed := 0, 0, int64(0)
	for _, r := range reports {
		fmt.Printf("replica %d: %d questions, %d LM calls, %d cache hits, %d waited for another's call (Redis errors %d, waits run out %d, limiter waits %d, entries no other replica reads %d)\n",
			r.Replica, questions, r.Calls, r.CacheHits, r.Cache.Waits, r.Cache.Errors, r.Cache.WaitTimeouts, r.Limiter.Waits, r.Cache.Local)
		total += r.Calls
		wrong += r.Wrong
		failed += r.Cache.Errors + r.Cache.Bypassed + r.Cache.WaitTimeouts
	}
	fmt.Printf("%d replicas asked %d questions each: %d LM calls in all (the LM server received %d), %d wrong replies\n",
		replicas, questions, total, len(srv.Requests()), wrong)
	if wrong > 0 || total != len(srv.Requests()) {
		os.Exit(1)
	}
	local := int64(0)
	for _, r := range reports {
		local += r.Cache.Local
	}
	if !*lru && *ident != (local == 0) {
		log.Fatalf("%d entries stored under a per-process identity, with -identity=%v", local, *ident)
	}
	if !*lru && *ident && *lease > 0 && failed == 0 && total != questions {
		// With the lease and nothing failing, a question is paid for once.
		log.Fatalf("%d LM calls for %d questions with the lease and no Redis failure", total, questions)
	}
}

// replica is one process of the service: it waits for the parent's go
// (its standard input closing), then asks every question, starting at its
// own, and prints its report.
func replica(n int) {
	rdb := redis.NewClient(&redis.Options{Addr: os.Getenv("SIGWIRE_REDIS_ADDR")})
	defer rdb.Close()
	check(rdb.Ping(context.Background()).Err())
	prefix := rediscache.WithPrefix(os.Getenv("KEY_PREFIX"))
	cache := rediscache.New(rdb, prefix, rediscache.WithTTL(10*time.Minute), rediscache.WithLease(*lease), rediscache.WithTimeout(*rto))
	limit := rediscache.NewLimiter(rdb, "lmtest", rediscache.RateLimit{RPM: 6000, TPM: 2_000_000}, prefix)

	cfg := openai.DefaultConfig("test-key")
	cfg.BaseURL = os.Getenv("LM_URL")
	// A service's own HTTP client, wrapped with HTTPDoer so that a 429's
	// Retry-After reaches the limiter.
	cfg.HTTPClient = adapter.HTTPDoer(&http.Client{Timeout: 30 * time.Second, Transport: http.DefaultTransport.(*http.Transport).Clone()})
	var client adapter.LM = openai.NewClientWithConfig(cfg)
	if *ident {
		// The same in every replica: the identity is "lmtest" and the
		// client's endpoint and key, whatever its transport.
		client = adapter.WithIdentity(client, "lmtest")
	}
	// The cache first, so that hits spend no rate; the limiter on the LM,
	// inside the retries, so that every attempt is admitted.
	var c adapter.Cache = cache
	if *lru {
		c = adapter.NewLRU(1000)
	}
	lm := adapter.WithMiddleware(client, adapter.Cached(c), limit.Middleware())
	sig, err := signature.Parse("question -> answer")
	check(err)

	_, _ = bufio.NewReader(os.Stdin).ReadString('\n') // wait for the go
	r := report{Replica: n}
	for i := range questions {
		q := (i + n*questions/replicas) % questions
		res, err := adapter.Call(context.Background(), lm, sig, nil, adapter.Values{"question": fmt.Sprintf("question %d", q)})
		check(err)
		r.CacheHits += res.CacheHits
		r.Calls += res.Requests
		if res.Outputs[0]["answer"] != fmt.Sprintf("answer to %d", q) {
			r.Wrong++
		}
	}
	r.Cache, r.Limiter = cache.Stats(), limit.Stats()
	check(json.NewEncoder(os.Stdout).Encode(r))
}

func check(err error) {
	if err != nil {
		log.Fatal(err)
	}
}
