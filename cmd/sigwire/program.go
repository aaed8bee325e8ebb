package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	openai "github.com/sashabaranov/go-openai"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/predict"
	"github.com/sigwire/adapter/rediscache"
	"github.com/sigwire/adapter/serve"
	"github.com/sigwire/adapter/signature"
)

// programFlags are the flags every subcommand shares: which program, as
// which module, on which LM, with which adapter and cache.
type programFlags struct {
	signature   string
	module      string
	predictor   string
	allowDSPy   bool
	savedLM     bool
	model       string
	baseURL     string
	apiKey      string
	adapterName string
	temperature float64
	maxTokens   int
	cacheDir    string
	redisAddr   string
	redisPrefix string
	noCache     bool
	rpm, tpm    int
	maxRetries  int
	timeout     time.Duration
}

// register adds the shared flags to fs; the defaults of model, base URL
// and key come from OPENAI_MODEL, OPENAI_BASE_URL and OPENAI_API_KEY.
func (p *programFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&p.signature, "signature", "", `the program's signature, as DSPy's string ("question -> answer"; for -module cot without the reasoning field)`)
	fs.StringVar(&p.module, "module", "predict", "the module the program was saved from: predict, cot (ChainOfThought), react or reactv2 (no tools but the one that ends a run)")
	fs.StringVar(&p.predictor, "predictor", "", "the saved predictor to load (default: the program's only one); for react and reactv2 the path prefix of the agent's predictors")
	fs.BoolVar(&p.allowDSPy, "allow-dspy-version", false, "load a program saved by DSPy 3.5 or later (predict.WithAnyDSPyVersion)")
	fs.BoolVar(&p.savedLM, "saved-lm", false, "apply the generation options the program saved with its LM (temperature, max_tokens, n, …): only for a file you trust")
	fs.StringVar(&p.model, "model", os.Getenv("OPENAI_MODEL"), "the model (default $OPENAI_MODEL)")
	fs.StringVar(&p.baseURL, "base-url", os.Getenv("OPENAI_BASE_URL"), "an OpenAI-compatible endpoint (default $OPENAI_BASE_URL, else OpenAI's)")
	fs.StringVar(&p.apiKey, "api-key", "", "the API key (default $OPENAI_API_KEY; prefer the variable: a flag shows in ps)")
	fs.StringVar(&p.adapterName, "adapter", "", "chat, json or xml (default: the module's, chat with the JSON fallback)")
	fs.Float64Var(&p.temperature, "temperature", -1, "sampling temperature (negative: the endpoint's default)")
	fs.IntVar(&p.maxTokens, "max-tokens", 0, "max completion tokens (0: the endpoint's default)")
	fs.StringVar(&p.cacheDir, "cache-dir", "", "a disk cache of the LM's replies in this directory")
	fs.StringVar(&p.redisAddr, "redis", "", "a Redis address (host:port) for a cache shared by replicas, and for -tpm")
	fs.StringVar(&p.redisPrefix, "redis-prefix", "sigwire:", "the prefix of the keys written to Redis")
	fs.BoolVar(&p.noCache, "no-cache", false, "no cache (default without -cache-dir and -redis: an in-memory cache, as DSPy's)")
	fs.IntVar(&p.rpm, "rpm", 0, "requests per minute to the LM at most (0: no limit)")
	fs.IntVar(&p.tpm, "tpm", 0, "tokens per minute to the LM at most (needs -redis; 0: no limit)")
	fs.IntVar(&p.maxRetries, "retries", 0, "retries of a rate-limited or failed LM request (0: the library's 3; negative: none)")
	fs.DurationVar(&p.timeout, "timeout", 0, "bound on each call, retries included (0: none beyond the command's)")
}

// env is what the shared flags build: the module, the LM it calls and the
// options of every call, and what to close at the end.
type env struct {
	module  serve.Module
	lm      adapter.StreamingLM
	opts    []adapter.CallOption
	ignored []string // what loading left out (Module.Ignored)
	closers []func() error
}

func (e *env) Close() error {
	var errs []error
	for i := len(e.closers) - 1; i >= 0; i-- {
		errs = append(errs, e.closers[i]())
	}
	return errors.Join(errs...)
}

// build loads the program at path and sets up the LM and the call
// options; needModel: the command calls the LM, so a model must be named.
func (p *programFlags) build(path string, logger *slog.Logger, needModel bool) (*env, error) {
	if needModel && p.model == "" {
		return nil, errors.New("no model: set -model or OPENAI_MODEL")
	}
	if p.signature == "" {
		return nil, errors.New(`-signature is required: the program file holds the texts, not the fields' names and types ("question -> answer")`)
	}
	sig, err := signature.Parse(p.signature)
	if err != nil {
		return nil, err
	}
	prog, err := predict.ReadProgram(path)
	if err != nil {
		return nil, err
	}
	e := &env{}
	var loadOpts []predict.LoadOption
	if p.allowDSPy {
		loadOpts = append(loadOpts, predict.WithAnyDSPyVersion())
	}
	name := p.predictor
	var saved predict.SavedPredictor
	switch p.module {
	case "predict", "cot":
		if name == "" {
			names := prog.Names()
			if len(names) != 1 {
				return nil, fmt.Errorf("the program has %d predictors (%s): name one with -predictor", len(names), strings.Join(names, ", "))
			}
			name = names[0]
		}
		m := predict.NewModule(sig)
		if p.module == "cot" {
			if m, err = predict.NewChainOfThoughtModule(sig); err != nil {
				return nil, err
			}
		}
		if m, err = m.Load(prog, name, loadOpts...); err != nil {
			return nil, err
		}
		e.module, e.ignored, saved = m, m.Ignored(), prog.Predictors[name]
	case "react", "reactv2":
		logger.Warn("an agent's tools are Go functions: the command runs it with none but the one that ends a run; serve it from Go (serve.Handler) to give it tools")
		if name != "" {
			prog = prog.Sub(name)
		}
		if p.module == "react" {
			r, err := predict.NewReAct(sig, nil)
			if err != nil {
				return nil, err
			}
			if r, err = r.Load(prog, loadOpts...); err != nil {
				return nil, err
			}
			e.module, e.ignored, saved = r, r.Ignored(), prog.Predictors["react"]
		} else {
			r, err := predict.NewReActV2(sig, nil)
			if err != nil {
				return nil, err
			}
			if r, err = r.Load(prog, loadOpts...); err != nil {
				return nil, err
			}
			e.module, e.ignored, saved = r, r.Ignored(), prog.Predictors["react"]
		}
	default:
		return nil, fmt.Errorf("-module %q: want predict, cot, react or reactv2", p.module)
	}

	req := openai.ChatCompletionRequest{}
	if p.savedLM {
		req = saved.Request()
	}
	req.Model = p.model
	if p.temperature >= 0 {
		req.Temperature = float32(p.temperature)
		if p.temperature == 0 {
			req.Temperature = adapter.ZeroTemperature
		}
	}
	if p.maxTokens > 0 {
		req.MaxCompletionTokens = p.maxTokens
	}
	e.opts = append(e.opts, adapter.WithRequest(req))
	switch p.adapterName {
	case "":
	case "chat":
		e.opts = append(e.opts, adapter.UseAdapter(adapter.Chat{}))
	case "json":
		e.opts = append(e.opts, adapter.UseAdapter(adapter.JSON{}))
	case "xml":
		e.opts = append(e.opts, adapter.UseAdapter(adapter.XML{}))
	default:
		return nil, fmt.Errorf("-adapter %q: want chat, json or xml", p.adapterName)
	}
	if p.maxRetries != 0 {
		e.opts = append(e.opts, adapter.WithRetry(adapter.RetryPolicy{MaxRetries: p.maxRetries}))
	}
	if p.timeout > 0 {
		e.opts = append(e.opts, adapter.WithTimeout(p.timeout))
	}

	key := p.apiKey
	if key == "" {
		key = os.Getenv("OPENAI_API_KEY")
	}
	cfg := openai.DefaultConfig(key)
	if p.baseURL != "" {
		cfg.BaseURL = p.baseURL
	}
	cfg.HTTPClient = adapter.HTTPDoer(&http.Client{})
	client := openai.NewClientWithConfig(cfg)

	var rdb *redis.Client
	if p.redisAddr != "" {
		rdb = redis.NewClient(&redis.Options{Addr: p.redisAddr})
		e.closers = append(e.closers, rdb.Close)
	}
	var mw []adapter.Middleware
	switch {
	case p.tpm > 0 && rdb == nil:
		return nil, errors.New("-tpm needs -redis: the token limit is kept in Redis (rediscache.Limiter)")
	case rdb != nil && (p.rpm > 0 || p.tpm > 0):
		l := rediscache.NewLimiter(rdb, "sigwire", rediscache.RateLimit{RPM: p.rpm, TPM: p.tpm}, rediscache.WithPrefix(p.redisPrefix)) // a Limiter logs nothing: WithLogger is a Cache's option
		mw = append(mw, l.Middleware())
	case p.rpm > 0:
		mw = append(mw, pace(p.rpm))
	}
	e.lm = client
	if len(mw) > 0 {
		e.lm = adapter.WithMiddleware(client, mw...)
	}

	switch {
	case p.noCache:
	case rdb != nil:
		e.opts = append(e.opts, adapter.UseMiddleware(adapter.Cached(rediscache.New(rdb, rediscache.WithPrefix(p.redisPrefix), rediscache.WithLogger(logger)))))
	case p.cacheDir != "":
		dc, err := adapter.OpenDiskCache(p.cacheDir, adapter.WithDiskCacheLogger(logger))
		if err != nil {
			return nil, err
		}
		e.opts = append(e.opts, adapter.UseMiddleware(adapter.Cached(dc)))
	default:
		e.opts = append(e.opts, adapter.UseMiddleware(adapter.Cached(adapter.NewLRU(10000))))
	}
	return e, nil
}

// pace is a middleware that sends at most rpm requests a minute from this
// process, spaced evenly (across processes, use -redis).
func pace(rpm int) adapter.Middleware {
	every := time.Minute / time.Duration(rpm)
	var mu sync.Mutex
	var next time.Time
	return func(call adapter.Invoker) adapter.Invoker {
		return func(ctx context.Context, req openai.ChatCompletionRequest) (openai.ChatCompletionResponse, error) {
			mu.Lock()
			now := time.Now()
			at := now
			if next.After(now) {
				at = next
			}
			next = at.Add(every)
			mu.Unlock()
			if wait := at.Sub(now); wait > 0 {
				t := time.NewTimer(wait)
				select {
				case <-ctx.Done():
					t.Stop()
					return openai.ChatCompletionResponse{}, ctx.Err()
				case <-t.C:
				}
			}
			return call(ctx, req)
		}
	}
}
