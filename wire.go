package adapter

import (
	"encoding/json"

	"github.com/sigwire/adapter/internal/wire"
)

// What OpenAI-compatible servers put on the wire and go-openai's types
// drop is read in internal/wire; this file is its exported surface.

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

// wireExtras converts what internal/wire read to the extras a Result
// and a cache entry carry.
func wireExtras(xs []wire.ChoiceExtras) WireExtras {
	if len(xs) == 0 {
		return WireExtras{}
	}
	e := WireExtras{Choices: make([]ChoiceExtras, len(xs))}
	for i, x := range xs {
		e.Choices[i] = ChoiceExtras(x)
	}
	return e
}
