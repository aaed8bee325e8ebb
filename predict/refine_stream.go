package predict

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strings"

	adapter "github.com/sigwire/adapter"
)

// Stream runs the attempts as Call does and streams them: each attempt's
// chunks as its program streams them, each tagged with Attempt (its
// number, from 1), then a Done chunk whose Result and Out are what Call
// returns for the same replies and whose Attempt is the chosen attempt's;
// over a ChainOfThought, its Rationale is the chosen attempt's reasoning.
//
// Between them, Status chunks (Attempt set, nothing else): "Attempt k of
// N" when an attempt starts; when it ends, "Attempt k of N: reward R" or
// "Attempt k of N failed: <error>" (the attempt's error or the reward's;
// the stream goes on while WithFailCount allows, as the call does).
//
// A run its budget stopped (see BestOfN.Call) ends, after the texts are
// settled on the best attempt, with a chunk that is not Done but carries
// what Call returns with the error: Result, Out, Attempt (the best
// attempt's), and the error.
//
// A field's text follows adapter.Chunk's rule across the attempts: the
// first delta an attempt sends of a field a consumer holds text for has
// Replace set; when an attempt ends, a field it sent nothing of (an empty
// value) is emptied (Replace set, no Delta), so that the consumer holds
// the attempt's outputs; and before the Done chunk, every field whose
// text is not the chosen attempt's is replaced by it (Replace set,
// Attempt the chosen one's), so that a consumer that joins deltas, anew
// at a Replace, ends with the chosen outputs. Fields are told apart by Field
// and Step (a ReAct program's thoughts). An error ends the sequence;
// breaking out of the loop stops the run: no further attempt and no
// further LM call.
func (b *BestOfN[In, Out]) Stream(ctx context.Context, lm adapter.StreamingLM, in In, opts ...adapter.CallOption) iter.Seq2[Chunk[Out], error] {
	if b == nil || b.s == nil {
		return errSeq[Chunk[Out]](zeroError{"BestOfN", "predict.NewBestOfN"})
	}
	return b.s.stream(ctx, lm, in, opts)
}

// Stream runs the attempts and the feedback calls as Call does and
// streams them as BestOfN.Stream does; before each feedback call, a
// Status chunk "Asking for advice after attempt k" (Attempt k). The
// feedback call's own text is not streamed: its advice reaches the next
// attempt, not the caller.
func (r *Refine[In, Out]) Stream(ctx context.Context, lm adapter.StreamingLM, in In, opts ...adapter.CallOption) iter.Seq2[Chunk[Out], error] {
	if r == nil || r.s == nil {
		return errSeq[Chunk[Out]](zeroError{"Refine", "predict.NewRefine"})
	}
	return r.s.stream(ctx, lm, in, opts)
}

func (s *search[In, Out]) stream(ctx context.Context, lm adapter.StreamingLM, in In, opts []adapter.CallOption) iter.Seq2[Chunk[Out], error] {
	return func(yield func(Chunk[Out], error) bool) {
		if ctx == nil {
			yield(Chunk[Out]{}, fmt.Errorf("predict: %s: nil context", s.kind))
			return
		}
		vals, err := valuesOf(in)
		if err != nil {
			yield(Chunk[Out]{}, fmt.Errorf("predict: %s: %w", s.kind, err))
			return
		}
		var llm adapter.LM
		if lm != nil {
			llm = lm
		}
		rl := &relay{lm: lm, yield: func(c adapter.Chunk) bool { return yield(Chunk[Out]{Chunk: c}, nil) }}
		ctx, done := adapter.StartModule(ctx, s.kind, vals, opts...)
		out, res, attempt, err := s.run(ctx, llm, in, vals, opts, rl)
		done(res, err)
		switch {
		case errors.Is(err, errStopped):
		case err != nil && attempt == 0:
			yield(Chunk[Out]{Chunk: adapter.Chunk{Result: res}}, err)
		default: // the chosen attempt; with err, the run its budget stopped
			last := Chunk[Out]{Chunk: adapter.Chunk{Adapter: res.Adapter, Attempt: attempt, Done: err == nil, Result: res}, Out: out}
			if s.info.reasons {
				last.Rationale = reasoningText(res.Outputs[0]["reasoning"])
			}
			yield(last, err)
		}
	}
}

// textKey names a text a consumer of a stream holds: a field's, of a
// step (a ReAct's thoughts) or of none.
type textKey struct {
	step  int
	field string
}

// fieldTexts is what chunks gave each text, joined as a consumer joins
// them (anew at a Replace), with the keys in the order they came.
type fieldTexts struct {
	keys  []textKey
	texts map[textKey]*strings.Builder
}

// add applies a chunk of key to the texts.
func (t *fieldTexts) add(k textKey, delta string, replace bool) {
	b := t.texts[k]
	if b == nil {
		if t.texts == nil {
			t.texts = map[textKey]*strings.Builder{}
		}
		b = &strings.Builder{}
		t.texts[k] = b
		t.keys = append(t.keys, k)
	}
	if replace {
		b.Reset()
	}
	b.WriteString(delta)
}

// text returns key's text ("" for none).
func (t *fieldTexts) text(k textKey) string {
	if b := t.texts[k]; b != nil {
		return b.String()
	}
	return ""
}

// relay passes the attempts' chunks of a BestOfN or Refine stream to its
// caller: it tags them with their attempt, sets Replace on an attempt's
// first chunk of a text the caller holds, and at the end brings every
// text to the chosen attempt's. A nil relay (a Call) does nothing.
type relay struct {
	lm    adapter.StreamingLM
	yield func(adapter.Chunk) bool

	attempt int
	held    fieldTexts       // what the caller holds
	mine    fieldTexts       // what this attempt's chunks gave
	sent    map[textKey]bool // the texts this attempt has sent
}

// begin starts attempt k of n; false when the caller stopped.
func (r *relay) begin(k, n int) bool {
	r.attempt, r.mine, r.sent = k, fieldTexts{}, map[textKey]bool{}
	return r.yield(adapter.Chunk{Attempt: k, Status: fmt.Sprintf("Attempt %d of %d", k, n)})
}

// forward passes a chunk of the attempt.
func (r *relay) forward(c adapter.Chunk) bool {
	c.Attempt = r.attempt
	if c.Field != "" {
		k := textKey{c.Step, c.Field}
		if !r.sent[k] {
			r.sent[k] = true
			c.Replace = c.Replace || r.held.text(k) != ""
		}
		r.held.add(k, c.Delta, c.Replace)
		r.mine.add(k, c.Delta, c.Replace)
	}
	return r.yield(c)
}

// end reports how attempt k of n ended, first emptying the texts the
// caller holds of earlier attempts that this one did not send (an empty
// value sends no delta; a ReAct's step that this attempt did not take);
// true when the caller stopped.
func (r *relay) end(k, n int, reward float64, err error) (stopped bool) {
	if r == nil {
		return false
	}
	for _, key := range r.held.keys {
		if r.sent[key] || r.held.text(key) == "" {
			continue
		}
		r.held.add(key, "", true)
		if !r.yield(adapter.Chunk{Field: key.field, Step: key.step, Replace: true, Attempt: k}) {
			return true
		}
	}
	status := fmt.Sprintf("Attempt %d of %d: reward %v", k, n, reward)
	if err != nil {
		status = fmt.Sprintf("Attempt %d of %d failed: %v", k, n, err)
	}
	return !r.yield(adapter.Chunk{Attempt: k, Status: status})
}

// advising reports Refine's feedback call after attempt k; true when the
// caller stopped.
func (r *relay) advising(k int) (stopped bool) {
	if r == nil {
		return false
	}
	return !r.yield(adapter.Chunk{Attempt: k, Status: fmt.Sprintf("Asking for advice after attempt %d", k)})
}

// attemptTexts is what the attempt's chunks gave each text.
func (r *relay) attemptTexts() fieldTexts {
	if r == nil {
		return fieldTexts{}
	}
	return r.mine
}

// settle replaces every text the caller holds that is not the chosen
// attempt's (k) with that attempt's; false when the caller stopped.
func (r *relay) settle(k int, chosen fieldTexts) bool {
	if r == nil {
		return true
	}
	keys := append(r.held.keys[:len(r.held.keys):len(r.held.keys)], chosen.keys...)
	done := make(map[textKey]bool, len(keys))
	for _, key := range keys {
		if done[key] {
			continue
		}
		done[key] = true
		want := chosen.text(key)
		if r.held.text(key) == want {
			continue
		}
		r.held.add(key, want, true)
		if !r.yield(adapter.Chunk{Field: key.field, Step: key.step, Delta: want, Replace: true, Attempt: k}) {
			return false
		}
	}
	return true
}

// streamOf runs a stream to its end, passing each chunk but the Done
// chunk to yield, and returns the Done chunk's Result and the outputs got
// from it.
func streamOf[C any, Out any](seq iter.Seq2[C, error], chunk func(C) adapter.Chunk, out func(C) Out, yield func(adapter.Chunk) bool) (Out, *adapter.Result, error) {
	var zero Out
	for c, err := range seq {
		ch := chunk(c)
		switch {
		case err != nil:
			return zero, ch.Result, err
		case ch.Done:
			return out(c), ch.Result, nil
		}
		if !yield(ch) {
			return zero, nil, errStopped
		}
	}
	return zero, nil, errors.New("predict: a stream ended without a result")
}

// untyped reads an untyped module's stream.
func untyped(seq iter.Seq2[adapter.Chunk, error], yield func(adapter.Chunk) bool) (adapter.Values, *adapter.Result, error) {
	return streamOf(seq, func(c adapter.Chunk) adapter.Chunk { return c },
		func(c adapter.Chunk) adapter.Values { return c.Result.Outputs[0] }, yield)
}

// typed reads a typed module's stream.
func typed[Out any](seq iter.Seq2[Chunk[Out], error], yield func(adapter.Chunk) bool) (Out, *adapter.Result, error) {
	return streamOf(seq, func(c Chunk[Out]) adapter.Chunk { return c.Chunk },
		func(c Chunk[Out]) Out { return c.Out }, yield)
}

func (m *Module) streamAttempt(ctx context.Context, lm adapter.StreamingLM, in adapter.Values, opts []adapter.CallOption, yield func(adapter.Chunk) bool) (adapter.Values, *adapter.Result, error) {
	return untyped(m.Stream(ctx, lm, in, opts...), yield)
}

func (p *Predict[In, Out]) streamAttempt(ctx context.Context, lm adapter.StreamingLM, in In, opts []adapter.CallOption, yield func(adapter.Chunk) bool) (Out, *adapter.Result, error) {
	return typed(p.Stream(ctx, lm, in, opts...), yield)
}

func (c *ChainOfThought[In, Out]) streamAttempt(ctx context.Context, lm adapter.StreamingLM, in In, opts []adapter.CallOption, yield func(adapter.Chunk) bool) (Out, *adapter.Result, error) {
	return typed(c.Stream(ctx, lm, in, opts...), yield)
}

func (r *ReAct) streamAttempt(ctx context.Context, lm adapter.StreamingLM, in adapter.Values, opts []adapter.CallOption, yield func(adapter.Chunk) bool) (adapter.Values, *adapter.Result, error) {
	return untyped(r.Stream(ctx, lm, in, opts...), yield)
}

func (b *BestOfN[In, Out]) streamAttempt(ctx context.Context, lm adapter.StreamingLM, in In, opts []adapter.CallOption, yield func(adapter.Chunk) bool) (Out, *adapter.Result, error) {
	return typed(b.Stream(ctx, lm, in, opts...), yield)
}

func (r *Refine[In, Out]) streamAttempt(ctx context.Context, lm adapter.StreamingLM, in In, opts []adapter.CallOption, yield func(adapter.Chunk) bool) (Out, *adapter.Result, error) {
	return typed(r.Stream(ctx, lm, in, opts...), yield)
}
