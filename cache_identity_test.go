package adapter_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/lmtest"
)

// tenantLM is an LM of the caller's own, without an LMIdentity: it sends
// every request through a shared client as its tenant (the User field,
// set below the cache, so that the cache key does not tell tenants apart).
type tenantLM struct {
	client *openai.Client
	tenant string
	calls  int
}

func (l *tenantLM) CreateChatCompletion(ctx context.Context, req openai.ChatCompletionRequest) (openai.ChatCompletionResponse, error) {
	l.calls++
	req.User = l.tenant
	return l.client.CreateChatCompletion(ctx, req)
}

// secretServer answers every request with its tenant's secret.
func secretServer(t *testing.T) *lmtest.Server {
	srv := lmtest.NewServer()
	t.Cleanup(srv.Close)
	srv.Handle(func(r lmtest.Request) lmtest.Reply {
		who := r.Chat.User
		if who == "" {
			who = strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		}
		return lmtest.Text("[[ ## a ## ]]\nsecret of " + who)
	})
	return srv
}

// TestCachePerRequestLMs: a server that builds an LM per request, each
// with the shared cache, never serves one request's cached reply to
// another request's LM, though Go gives a new LM the address of a freed
// one (security review 3, N1: 197 of 200 were served another tenant's
// reply).
func TestCachePerRequestLMs(t *testing.T) {
	sig := mustParse(t, "q -> a")
	srv := secretServer(t)
	client := srv.Client()
	shared := adapter.NewLRU(1000)
	leaked := 0
	for i := range 200 {
		tenant := fmt.Sprintf("tenant-%d", i)
		lm := &tenantLM{client: client, tenant: tenant}
		res, err := adapter.Call(t.Context(), adapter.WithMiddleware(lm, adapter.Cached(shared)), sig, nil, adapter.Values{"q": "what is my secret?"})
		require.NoError(t, err)
		if got := res.Outputs[0]["a"]; got != "secret of "+tenant {
			leaked++
			if leaked <= 3 {
				t.Errorf("request %d (%s) got %q from the cache, its LM called %d times", i, tenant, got, lm.calls)
			}
		}
		runtime.GC() // the LM is gone: its address may be reused
	}
	assert.Zero(t, leaked, "replies served to another tenant's LM")
}

// TestCachePerRequestLMsConcurrent: the same with requests served at once
// (run with -race).
func TestCachePerRequestLMsConcurrent(t *testing.T) {
	sig := mustParse(t, "q -> a")
	srv := secretServer(t)
	client := srv.Client()
	shared := adapter.NewLRU(1000)
	var wg sync.WaitGroup
	var leaked atomic.Int32
	for g := range 8 {
		wg.Go(func() {
			for i := range 25 {
				tenant := fmt.Sprintf("tenant-%d-%d", g, i)
				lm := &tenantLM{client: client, tenant: tenant}
				res, err := adapter.Call(t.Context(), adapter.WithMiddleware(lm, adapter.Cached(shared)), sig, nil, adapter.Values{"q": "what is my secret?"})
				if err != nil || res.Outputs[0]["a"] != "secret of "+tenant {
					leaked.Add(1)
				}
				if i%5 == 0 {
					runtime.GC()
				}
			}
		})
	}
	wg.Wait()
	assert.Zero(t, leaked.Load())
}

// TestCachePerLMValueSharesWhileAlive: an LM without a stable identity
// still has its own entries while it lives: asking it again is a hit.
func TestCachePerLMValueSharesWhileAlive(t *testing.T) {
	sig := mustParse(t, "q -> a")
	srv := secretServer(t)
	lm := &tenantLM{client: srv.Client(), tenant: "A"}
	cached := adapter.WithMiddleware(lm, adapter.Cached(adapter.NewLRU(10)))
	for range 3 {
		res, err := adapter.Call(t.Context(), cached, sig, nil, adapter.Values{"q": "x"})
		require.NoError(t, err)
		assert.Equal(t, "secret of A", res.Outputs[0]["a"])
	}
	assert.Equal(t, 1, lm.calls)
	runtime.KeepAlive(lm)
}

// tenantKey carries the tenant a request is for.
type tenantKey struct{}

// router is a caller's LM that sends each request to its tenant's LM.
type router struct{ lms map[string]adapter.LM }

func (r *router) CreateChatCompletion(ctx context.Context, req openai.ChatCompletionRequest) (openai.ChatCompletionResponse, error) {
	return r.lms[ctx.Value(tenantKey{}).(string)].CreateChatCompletion(ctx, req)
}

// TestCacheBehindCallersRouter: a cached LM behind the caller's own router
// is keyed by the LM that answers (beneath the cache), not by the LM given
// to Call (security review 3, N2: tenant B got "secret of A").
func TestCacheBehindCallersRouter(t *testing.T) {
	sig := mustParse(t, "q -> a")
	srv := secretServer(t)
	shared := adapter.NewLRU(100)
	a := &tenantLM{client: srv.Client(), tenant: "A"}
	b := &tenantLM{client: srv.Client(), tenant: "B"}
	r := &router{map[string]adapter.LM{"A": adapter.WithMiddleware(a, adapter.Cached(shared)), "B": adapter.WithMiddleware(b, adapter.Cached(shared))}}
	for _, tenant := range []string{"A", "B", "A", "B"} {
		ctx := context.WithValue(t.Context(), tenantKey{}, tenant)
		res, err := adapter.Call(ctx, r, sig, nil, adapter.Values{"q": "x"})
		require.NoError(t, err)
		assert.Equal(t, "secret of "+tenant, res.Outputs[0]["a"], "tenant %s", tenant)
	}
	assert.Equal(t, 1, a.calls, "A's second request is a hit")
	assert.Equal(t, 1, b.calls, "B's second request is a hit")

	// The same holds for a router of go-openai clients with their own keys
	// (stable identities).
	clients := &router{map[string]adapter.LM{}}
	for _, key := range []string{"sk-A", "sk-B"} {
		cfg := openai.DefaultConfig(key)
		cfg.BaseURL = srv.URL()
		clients.lms[key] = adapter.WithMiddleware(openai.NewClientWithConfig(cfg), adapter.Cached(shared))
	}
	for _, key := range []string{"sk-B", "sk-A", "sk-B"} {
		ctx := context.WithValue(t.Context(), tenantKey{}, key)
		res, err := adapter.Call(ctx, clients, sig, nil, adapter.Values{"q": "x"})
		require.NoError(t, err)
		assert.Equal(t, "secret of "+key, res.Outputs[0]["a"], "tenant %s", key)
	}
}

// TestCacheClientIdentity: go-openai clients are identified by endpoint
// and credentials, the same across client values (and processes); a
// client whose HTTP client is one the library cannot see through (it may
// add credentials of its own) is identified as a value.
func TestCacheClientIdentity(t *testing.T) {
	sig := mustParse(t, "q -> a")
	srv := lmtest.NewServer()
	defer srv.Close()
	n := 0
	srv.Handle(func(r lmtest.Request) lmtest.Reply {
		n++
		return lmtest.Text(fmt.Sprintf("[[ ## a ## ]]\nreply %d for [%s]", n, r.Header.Get("X-Tenant")))
	})
	shared := adapter.NewLRU(100)
	call := func(cfg openai.ClientConfig) string {
		res, err := adapter.Call(t.Context(), adapter.WithMiddleware(openai.NewClientWithConfig(cfg), adapter.Cached(shared)), sig, nil, adapter.Values{"q": "x"})
		require.NoError(t, err)
		return res.Outputs[0]["a"].(string)
	}
	plain := srv.Config()
	assert.Equal(t, "reply 1 for []", call(plain))
	assert.Equal(t, "reply 1 for []", call(srv.Config()), "another client value, same endpoint and key: a hit")
	wrapped := srv.Config()
	wrapped.HTTPClient = adapter.HTTPDoer(wrapped.HTTPClient)
	assert.Equal(t, "reply 1 for []", call(wrapped), "the library's own HTTPDoer changes nothing")

	for _, tenant := range []string{"A", "B"} {
		cfg := srv.Config()
		cfg.HTTPClient = &http.Client{Transport: headerTransport{"X-Tenant", tenant}}
		assert.Equal(t, fmt.Sprintf("reply %d for [%s]", n+1, tenant), call(cfg), "a transport of the caller's own may carry credentials")
	}
}

// headerTransport sets a header on every request.
type headerTransport struct{ key, value string }

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set(h.key, h.value)
	return http.DefaultTransport.RoundTrip(r)
}

// TestCacheAzureDeployments: two Azure clients with one endpoint and key
// that map a model to different deployments are different LMs.
func TestCacheAzureDeployments(t *testing.T) {
	sig := mustParse(t, "q -> a")
	srv := lmtest.NewServer()
	defer srv.Close()
	srv.Handle(func(r lmtest.Request) lmtest.Reply {
		return lmtest.Text("[[ ## a ## ]]\nfrom " + r.Path)
	})
	shared := adapter.NewLRU(10)
	call := func(deployment string) any {
		cfg := openai.DefaultAzureConfig("azure-key", srv.URL())
		cfg.AzureModelMapperFunc = func(string) string { return deployment }
		lm := adapter.WithMiddleware(openai.NewClientWithConfig(cfg), adapter.Cached(shared))
		res, err := adapter.Call(t.Context(), lm, sig, nil, adapter.Values{"q": "x"}, adapter.WithRequest(openai.ChatCompletionRequest{Model: "gpt-4o"}))
		require.NoError(t, err)
		return res.Outputs[0]["a"]
	}
	assert.Equal(t, "from /v1/openai/deployments/eu/chat/completions", call("eu"))
	assert.Equal(t, "from /v1/openai/deployments/us/chat/completions", call("us"))
	assert.Equal(t, "from /v1/openai/deployments/eu/chat/completions", call("eu"))
	assert.Len(t, srv.Requests(), 2, "the same deployment again is a hit")
}

// Two LM types without state: values of zero size may share an address.
type (
	zeroA struct{}
	zeroB struct{}
)

func (*zeroA) CreateChatCompletion(context.Context, openai.ChatCompletionRequest) (openai.ChatCompletionResponse, error) {
	return openai.ChatCompletionResponse{Choices: []openai.ChatCompletionChoice{{FinishReason: "stop", Message: openai.ChatCompletionMessage{Content: "[[ ## a ## ]]\nA"}}}}, nil
}

func (*zeroB) CreateChatCompletion(context.Context, openai.ChatCompletionRequest) (openai.ChatCompletionResponse, error) {
	return openai.ChatCompletionResponse{Choices: []openai.ChatCompletionChoice{{FinishReason: "stop", Message: openai.ChatCompletionMessage{Content: "[[ ## a ## ]]\nB"}}}}, nil
}

// TestCacheZeroSizeLMs: LMs of two types at one address are two LMs.
func TestCacheZeroSizeLMs(t *testing.T) {
	sig := mustParse(t, "q -> a")
	shared := adapter.NewLRU(10)
	for _, c := range []struct {
		lm   adapter.LM
		want string
	}{{&zeroA{}, "A"}, {&zeroB{}, "B"}, {&zeroA{}, "A"}} {
		res, err := adapter.Call(t.Context(), c.lm, sig, nil, adapter.Values{"q": "x"}, adapter.UseMiddleware(adapter.Cached(shared)))
		require.NoError(t, err)
		assert.Equal(t, c.want, res.Outputs[0]["a"])
	}
}

// keySpy is a Cache that records the keys it is asked for and answers
// every Get.
type keySpy struct{ keys []string }

func (k *keySpy) Get(_ context.Context, key string) (adapter.CacheEntry, bool) {
	k.keys = append(k.keys, key)
	return adapter.CacheEntry{Response: openai.ChatCompletionResponse{Choices: []openai.ChatCompletionChoice{{FinishReason: "stop"}}}}, true
}

func (k *keySpy) Put(context.Context, string, adapter.CacheEntry) {}

// TestCacheKeyFormat: a go-openai client's keys are the same in every
// process (a shared store depends on it) and begin with the format
// version; changing what goes into a key must change the version, and
// this value.
func TestCacheKeyFormat(t *testing.T) {
	spy := &keySpy{}
	key := func(key, baseURL string, req openai.ChatCompletionRequest) string {
		cfg := openai.DefaultConfig(key)
		cfg.BaseURL = baseURL
		_, err := adapter.WithMiddleware(openai.NewClientWithConfig(cfg), adapter.Cached(spy)).CreateChatCompletion(t.Context(), req)
		require.NoError(t, err)
		return spy.keys[len(spy.keys)-1]
	}
	req := openai.ChatCompletionRequest{Model: "gpt-4o-mini", Messages: []openai.ChatCompletionMessage{{Role: "user", Content: "hi"}}}
	k := key("sk-test", "https://api.example.com/v1", req)
	assert.Equal(t, "v2:ddf858cb8c9df1107aa968d68564164a1142ec4288c4f811782777ae4326e2aa", k)
	assert.Equal(t, k, key("sk-test", "https://api.example.com/v1/", req), "go-openai trims the base URL's slash")
	assert.NotEqual(t, k, key("sk-other", "https://api.example.com/v1", req))
	assert.NotEqual(t, k, key("sk-test", "https://api.example.org/v1", req))
	streamed := req
	streamed.Stream, streamed.StreamOptions = true, &openai.StreamOptions{IncludeUsage: true}
	assert.Equal(t, k, key("sk-test", "https://api.example.com/v1", streamed), "Call and Stream share entries")
	other := req
	other.Temperature = 0.5
	assert.NotEqual(t, k, key("sk-test", "https://api.example.com/v1", other))
}

// globalLM is a package-level LM: its identity is a value's, held by a
// weak pointer to a variable that never dies.
var globalLM = &tenantLM{tenant: "G"}

// twoLMs holds two LMs inside one struct: pointers into one allocation.
type twoLMs struct{ x, y tenantLM }

// TestCacheIdentityGlobalAndInteriorLMs: the security review's probe
// (review 4, re-checked N1/N2), kept as a test: a package-level LM and two
// LMs that point inside one struct each get an identity of their own, so
// one shared LRU keeps their entries apart, and none of them panics (a
// cleanup cannot be attached to a global).
func TestCacheIdentityGlobalAndInteriorLMs(t *testing.T) {
	sig := mustParse(t, "q -> a")
	srv := secretServer(t)
	shared := adapter.NewLRU(10)
	pair := &twoLMs{x: tenantLM{tenant: "X"}, y: tenantLM{tenant: "Y"}}
	lms := map[string]*tenantLM{"G": globalLM, "X": &pair.x, "Y": &pair.y}
	for _, lm := range lms {
		lm.client = srv.Client()
	}
	for range 2 {
		for name, lm := range lms {
			var res *adapter.Result
			var err error
			require.NotPanics(t, func() {
				res, err = adapter.Call(t.Context(), lm, sig, nil, adapter.Values{"q": "x"}, adapter.UseMiddleware(adapter.Cached(shared)))
			})
			require.NoError(t, err)
			assert.Equal(t, "secret of "+name, res.Outputs[0]["a"], "%s got its own reply", name)
		}
	}
	for name, lm := range lms {
		assert.Equal(t, 1, lm.calls, "%s: the second call was its own cache hit", name)
	}
}

// TestWithIdentity: the keys of a go-openai client with a transport of its
// own are this process's alone (LocalCacheKey), and a DiskCache shared by
// processes counts the entries it stores under them and warns once;
// WithIdentity makes them the same for every client value (another
// process's) with the same endpoint and key, never for another key; over
// any other LM the identity is the id alone. The wrapper keeps streaming
// and declared capabilities.
func TestWithIdentity(t *testing.T) {
	spy := &keySpy{}
	req := openai.ChatCompletionRequest{Model: "gpt-4o-mini", Messages: []openai.ChatCompletionMessage{{Role: "user", Content: "hi"}}}
	custom := func(key string) *openai.Client {
		cfg := openai.DefaultConfig(key)
		cfg.BaseURL = "https://api.example.com/v1"
		cfg.HTTPClient = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
		return openai.NewClientWithConfig(cfg)
	}
	key := func(lm adapter.LM) string {
		_, err := adapter.WithMiddleware(lm, adapter.Cached(spy)).CreateChatCompletion(t.Context(), req)
		require.NoError(t, err)
		return spy.keys[len(spy.keys)-1]
	}
	local := key(custom("sk-A"))
	assert.True(t, adapter.LocalCacheKey(local), local)
	assert.NotEqual(t, local, key(custom("sk-A")), "two client values: two identities")
	plain := openai.DefaultConfig("sk-A")
	assert.False(t, adapter.LocalCacheKey(key(openai.NewClientWithConfig(plain))))

	a := key(adapter.WithIdentity(custom("sk-A"), "prod"))
	assert.False(t, adapter.LocalCacheKey(a), a)
	assert.Regexp(t, `^v2:[0-9a-f]{64}$`, a)
	assert.Equal(t, a, key(adapter.WithIdentity(custom("sk-A"), "prod")), "the same in every process")
	assert.NotEqual(t, a, key(adapter.WithIdentity(custom("sk-B"), "prod")), "never another tenant's")
	assert.NotEqual(t, a, key(adapter.WithIdentity(custom("sk-A"), "staging")))
	assert.Equal(t, a, key(adapter.WithCapabilities(adapter.WithIdentity(custom("sk-A"), "prod"), adapter.Capabilities{Tools: true})),
		"found through the library's wrappers")
	assert.Equal(t, key(adapter.WithIdentity(&tenantLM{tenant: "A"}, "tenant A")), key(adapter.WithIdentity(&tenantLM{tenant: "B"}, "tenant A")),
		"any other LM: the id alone")

	// Streams and capabilities pass through.
	srv := lmtest.NewServer(lmtest.Text("[[ ## a ## ]]\nParis"))
	defer srv.Close()
	lm := adapter.WithIdentity(adapter.WithCapabilities(srv.Client(), adapter.Capabilities{StructuredOutputs: true}), "test")
	fields, _, err := drain(adapter.Stream(t.Context(), lm, mustParse(t, "q -> a"), nil, adapter.Values{"q": "x"}, adapter.UseAdapter(adapter.JSON{})))
	require.NoError(t, err)
	assert.Equal(t, "Paris", fields["a"])
	assert.Contains(t, string(srv.Requests()[0].Body), `"json_schema"`, "the declared capabilities are found through WithIdentity")

	// A DiskCache counts what it stores under a local key, and warns once.
	var logs bytes.Buffer
	dc, err := adapter.OpenDiskCache(t.TempDir(), adapter.WithDiskCacheLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	require.NoError(t, err)
	for _, k := range []string{local, "v2:local:" + strings.Repeat("ab", 32), a} {
		dc.Put(t.Context(), k, adapter.CacheEntry{Response: openai.ChatCompletionResponse{Choices: []openai.ChatCompletionChoice{{FinishReason: "stop"}}}})
	}
	assert.Equal(t, int64(2), dc.Stats().Local)
	assert.Equal(t, 1, strings.Count(logs.String(), "level=WARN"))
	assert.Contains(t, logs.String(), "adapter.WithIdentity")
}
