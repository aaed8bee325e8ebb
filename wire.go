package adapter

import (
	"encoding/json"
	"net/http"

	openai "github.com/sashabaranov/go-openai"

	"github.com/sigwire/adapter/internal/wire"
)

// What OpenAI-compatible servers put on the wire and go-openai's types
// drop is read in internal/wire; this file is its exported surface.

// HTTPDoer wraps the HTTP client of a go-openai configuration so that the
// library sees what go-openai's types leave out:
//
//   - a 429 or 503 response's Retry-After header, which the retry
//     middleware then waits for instead of its own backoff;
//   - content parts go-openai's types cannot express (audio, files,
//     documents: see [RawPart]), which it puts into the request body;
//   - the raw body of a (non-streamed) reply, from which the pipeline reads
//     what go-openai drops: a "reasoning" field (Groq, Cerebras, vLLM),
//     thinking parts of content sent as an array (Mistral), usage sent only
//     inside "x_groq", annotations and provider citations (see
//     [WireReader]). Streams need no wrapper: their raw lines are read;
//   - the prompt cache marks of [WithPromptCache] (cache_control on
//     content parts, a prompt_cache_key member), which it puts into the
//     request body;
//   - the size of every reply body, which it holds to the call's
//     [Limits].ReplyBytes: without it, a blocking body is bounded only by
//     go-openai, and a stream only by its events' data.
//
// Use it when building the client:
//
//	cfg := openai.DefaultConfig(key)
//	cfg.HTTPClient = adapter.HTTPDoer(cfg.HTTPClient)
//	client := openai.NewClientWithConfig(cfg)
//
// It also sends [ZeroTemperature] as a clean 0, which go-openai's types
// cannot. The wrapper keeps nothing after the call; it rewrites a request
// body only when the pipeline marked it as holding raw parts, asking for
// ZeroTemperature or for a prompt cache, and outside the pipeline it only
// passes requests through.
func HTTPDoer(next openai.HTTPDoer) openai.HTTPDoer {
	if next == nil {
		next = http.DefaultClient
	}
	return wire.Doer{Next: next}
}

// ChoiceExtras is what one choice of a reply carried on the wire beyond
// go-openai's types, for output types that read it ([WireReader]). Each
// item is a JSON object as the server sent it, compacted (as
// encoding/json writes a json.RawMessage, so that an entry read back from
// a cache that stores JSON is the same). A choice carries at most
// [Limits].WireItems of them: a reply with more is refused.
type ChoiceExtras struct {
	Index int `json:"index"` // the choice's index
	// Annotations are the message's "annotations" (OpenAI's url_citation
	// objects, also OpenRouter's), in order; a stream's come from its
	// deltas, exact repeats dropped.
	Annotations []json.RawMessage `json:"annotations,omitempty"`
	// Citations are provider citation blocks: Anthropic's citations as
	// LiteLLM relays them, "provider_specific_fields": {"citations":
	// [[…], …]} on a message (one list per text block, flattened here) and
	// {"citation": {…}} on a stream's deltas, in order.
	Citations []json.RawMessage `json:"citations,omitempty"`
}

// WireExtras is what a reply carried on the wire beyond go-openai's
// types: an entry for each choice that carried any, in index order. [Cached]
// stores it with the response.
type WireExtras struct {
	Choices []ChoiceExtras `json:"choices,omitempty"`
}

// IsZero reports extras that carry nothing (no choice's, whether the list
// is nil or empty), so that a cache entry's JSON omits them alike
// (encoding/json's omitzero).
func (e WireExtras) IsZero() bool { return len(e.Choices) == 0 }

// Choice returns the extras of the choice with the given index (none when
// it carried none).
func (e WireExtras) Choice(index int) ChoiceExtras {
	for _, c := range e.Choices {
		if c.Index == index {
			return c
		}
	}
	return ChoiceExtras{Index: index}
}

// extrasFrom converts what internal/wire read to the extras a Result and
// a cache entry carry.
func extrasFrom(xs []wire.ChoiceExtras) WireExtras {
	if len(xs) == 0 {
		return WireExtras{}
	}
	e := WireExtras{Choices: make([]ChoiceExtras, len(xs))}
	for i, x := range xs {
		e.Choices[i] = ChoiceExtras(x)
	}
	return e
}
