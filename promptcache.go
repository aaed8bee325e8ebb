package adapter

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	openai "github.com/sashabaranov/go-openai"

	"github.com/sigwire/adapter/internal/wire"
)

// WithPromptCache asks the provider to cache the request's stable prefix,
// in the shape the route takes, for this call (or, under [Defaults], a
// module's calls; [NoPromptCache] turns that off for one call). The stable prefix is every message the adapter writes
// before the request's final user message: the system message, the demos
// and any History turns. A re-ask and the fallback adapter's request keep
// the prefix of the request they start from.
//
//   - A route with [Capabilities].CacheControl (Claude through an
//     Anthropic-compatible gateway: LiteLLM, OpenRouter, Vercel's,
//     Bedrock's) gets "cache_control": {"type": "ephemeral"} on the last
//     content part of the system message and of the prefix's last
//     message: two of the four breakpoints Anthropic allows. A text
//     message becomes one text part to carry it; its text is unchanged.
//   - A route with [Capabilities].PromptCacheKey (OpenAI's models) gets
//     key as the request's "prompt_cache_key"; key "" sends one derived
//     from the prefix ("sigwire-" and 32 hex digits of its SHA-256), so
//     calls that share a prefix share a key. The key is sent as a JSON
//     string, as encoding/json writes it (invalid UTF-8 as U+FFFD).
//   - Any other route gets nothing: the request is the one sent without
//     the option, and the Result's Notes say that nothing was marked.
//
// Which route a model is, [ModelCapabilities] guesses from its name and
// [WithCapabilities] declares. go-openai's types can express neither
// shape, so the marks are put on the wire by the [HTTPDoer] wrapper, from
// the request's context: a call whose route takes a shape fails before
// anything is sent, with an error matching [ErrNeedsHTTPDoer], when its
// LM is not an *openai.Client (found through [Unwrapper]s and
// middlewares) whose HTTP client is the wrapper. The request that
// middlewares, the trace and [Prepare] see is the one without the marks,
// and so is the key of a response cache ([Cached]): the marks change
// what the provider bills, not the reply. A mark a middleware beneath
// moved or changed the message of is left off, and the Notes say so.
// When the route was guessed, a provider that rejects the marked request
// (HTTP 400 or 422) fails the call with a *[CapabilityGuessError].
//
// Providers cache only long prefixes (Anthropic from 1024 tokens, 2048
// for Haiku models; OpenAI from 1024), for minutes: the cached prompt
// tokens a reply reports are in [Result].Usage and priced at
// [Price].CachedInput by [Result.Cost]. Anthropic bills writing the cache
// above the input price (cache_creation_input_tokens, priced as Input).
func WithPromptCache(key string) CallOption {
	return optionFunc(func(c *callConfig) { c.promptCache, c.promptCacheKey = true, key })
}

// NoPromptCache turns off, for one call, the [WithPromptCache] a module
// gives its calls (among its options, or under [Defaults]).
func NoPromptCache() CallOption {
	return optionFunc(func(c *callConfig) { c.promptCache, c.promptCacheKey = false, "" })
}

// promptCache returns ctx carrying the prompt cache marks for msgs, the
// adapter's messages, in the shape the route takes, and the marks (nil
// when nothing is marked). It fails when the route takes a shape the LM
// cannot put on the wire.
func (r *run) promptCache(ctx context.Context, msgs []openai.ChatCompletionMessage) (context.Context, *wire.PromptCache, error) {
	caps := r.caps.caps
	if !caps.CacheControl && !caps.PromptCacheKey {
		r.note(fmt.Sprintf("prompt cache: model %q takes neither cache_control nor prompt_cache_key (%s): nothing was marked", r.cfg.model(), r.capsSource()))
		return ctx, nil, nil
	}
	last := -1 // the final user message
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == openai.ChatMessageRoleUser {
			last = i
			break
		}
	}
	pc := new(wire.PromptCache)
	if caps.CacheControl && last > 0 {
		system := msgs[0].Role == openai.ChatMessageRoleSystem
		if m, ok := cacheMark(msgs, 0); ok && system {
			pc.Marks = append(pc.Marks, m)
		}
		if m, ok := cacheMark(msgs, last-1); ok && (last-1 > 0 || !system) {
			pc.Marks = append(pc.Marks, m)
		}
	}
	if caps.PromptCacheKey {
		switch {
		case r.cfg.promptCacheKey != "":
			pc.Key = r.cfg.promptCacheKey
		case last > 0:
			pc.Key = prefixKey(msgs[:last])
		}
	}
	if len(pc.Marks) == 0 && pc.Key == "" {
		r.note("prompt cache: the request has no stable prefix (no message with content before its final user message): nothing was marked")
		return ctx, nil, nil
	}
	if !wrapsHTTPDoer(r.lm) {
		shape := "cache_control"
		if len(pc.Marks) == 0 {
			shape = "prompt_cache_key"
		}
		return ctx, nil, fmt.Errorf("adapter: WithPromptCache: model %q takes %s (%s): %w", r.cfg.model(), shape, r.capsSource(), ErrNeedsHTTPDoer)
	}
	r.guessUsed = r.guessUsed || r.caps.guessed // a provider's rejection names the guess
	return wire.MarkPromptCache(ctx, pc), pc, nil
}

// cacheMark is the mark for msgs[i], false for a message without content.
func cacheMark(msgs []openai.ChatCompletionMessage, i int) (wire.CacheMark, bool) {
	m := msgs[i]
	if m.Content == "" && len(m.MultiContent) == 0 {
		return wire.CacheMark{}, false
	}
	return wire.CacheMark{Index: i, Role: m.Role, Content: m.Content, Parts: len(m.MultiContent)}, true
}

// prefixKey derives a prompt_cache_key from the stable prefix.
func prefixKey(prefix []openai.ChatCompletionMessage) string {
	h := sha256.New()
	enc := json.NewEncoder(h)
	for _, m := range prefix {
		if enc.Encode(m) != nil {
			fmt.Fprintf(h, "%s\x00%s\x00%d\n", m.Role, m.Content, len(m.MultiContent))
		}
	}
	return "sigwire-" + hex.EncodeToString(h.Sum(nil)[:16])
}

// capsSource says where the route's capabilities came from, for notes
// and errors.
func (r *run) capsSource() string {
	if r.caps.guessed {
		return "guessed from its name; declare the route with adapter.WithCapabilities"
	}
	return "as the LM declares it"
}

// note adds a note to the Result, once.
func (r *run) note(n string) {
	for _, have := range r.res.Notes {
		if have == n {
			return
		}
	}
	r.res.Notes = append(r.res.Notes, n)
}

// wrapsHTTPDoer reports whether lm, or the LM it wraps, is an
// *openai.Client whose HTTP client is the HTTPDoer wrapper.
func wrapsHTTPDoer(lm LM) bool {
	for w := lm; w != nil; {
		switch x := w.(type) {
		case *openai.Client:
			return wire.Wraps(x)
		case *middlewareLM:
			w = x.lm
		case Unwrapper:
			w = x.Unwrap()
		default:
			return false
		}
	}
	return false
}
