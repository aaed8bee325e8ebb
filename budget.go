package adapter

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"

	openai "github.com/sashabaranov/go-openai"
)

// Budgets stop a call or a run before it spends more than its caller
// allows. Before each request the sender reserves what the request can
// cost at most (its prompt's bound and its max tokens, see [Spend]); a
// reservation the budget cannot hold fails the request before it is sent
// with an error matching [ErrBudget]; after the reply the reservation is
// settled from the usage the reply reported. Cache hits and joined calls
// send no request and spend nothing.

// Spend is what one request may spend or spent: its model and its
// tokens.
type Spend struct {
	// Model is the model asked (a reservation) or the model that answered
	// (a settlement), as [Prices] names it.
	Model string
	// PromptTokens counts the prompt, CachedTokens the part of it a
	// provider's cache served; CompletionTokens the reply, reasoning
	// included.
	PromptTokens, CachedTokens, CompletionTokens int
}

// Limit is a budget's limit: Tokens (prompt and completion tokens, cached
// ones included) or Cost (at Prices, per million tokens as [Price] says).
// Give one of the two.
type Limit struct {
	Tokens int64
	Cost   float64
	Prices Prices
}

// Unit names what l counts: "tokens" or "cost".
func (l Limit) Unit() string {
	if l.Cost > 0 {
		return "cost"
	}
	return "tokens"
}

// Max is the limit in its unit.
func (l Limit) Max() float64 {
	if l.Cost > 0 {
		return l.Cost
	}
	return float64(l.Tokens)
}

// check reports a limit that counts nothing.
func (l Limit) check() error {
	switch {
	case l.Cost < 0 || l.Tokens < 0 || math.IsNaN(l.Cost) || math.IsInf(l.Cost, 0):
		return fmt.Errorf("adapter: budget limit %+v: a negative or non-finite limit", l)
	case l.Cost > 0 && l.Tokens > 0:
		return errors.New("adapter: a budget limit counts tokens or cost, not both")
	case l.Cost == 0 && l.Tokens == 0:
		return errors.New("adapter: a budget limit of nothing: give Tokens or Cost")
	case l.Cost > 0 && len(l.Prices) == 0:
		return errors.New("adapter: a budget limit in cost needs Prices")
	}
	return nil
}

// Amount is what s comes to in l's unit: its tokens, or their cost at
// l.Prices (cached prompt tokens at CachedInput, or Input when that is
// 0). A model l has no price for is an error naming it.
func (l Limit) Amount(s Spend) (float64, error) {
	if l.Cost <= 0 {
		return float64(s.PromptTokens) + float64(s.CompletionTokens), nil
	}
	pr, ok := l.Prices.price(s.Model)
	if !ok {
		return 0, fmt.Errorf("adapter: budget in cost: no price for model %q", s.Model)
	}
	cached := min(max(s.CachedTokens, 0), s.PromptTokens)
	ci := pr.CachedInput
	if ci == 0 {
		ci = pr.Input
	}
	return (float64(s.PromptTokens-cached)*pr.Input + float64(cached)*ci + float64(s.CompletionTokens)*pr.Output) / 1e6, nil
}

// Budget holds back, before each request, what it can cost at most, and
// settles it after. [LocalBudget] keeps its account in the process; the
// rediscache module's Budget shares one between processes.
type Budget interface {
	// Reserve holds what a request can spend at most (max). It returns
	// the function that settles it with what the request spent (a zero
	// Spend when it spent nothing), called exactly once; or an error
	// matching ErrBudget when the budget cannot hold max (another error
	// when the budget cannot tell: a store that failed closed).
	Reserve(ctx context.Context, max Spend) (settle func(spent Spend), err error)
}

// WithBudget makes every request of the call (retries, re-asks, an
// adapter's or a model's fallback, TwoStep's extraction included)
// reserve from b before it is sent (see [Budget]). Given to a module's
// options, b spans the module's run: a BestOfN's attempts, a ReAct's
// steps. A call whose request b cannot hold fails with an *[LMError]
// wrapping a *[BudgetError] (errors.Is(err, ErrBudget)); nothing was sent.
func WithBudget(b Budget) CallOption {
	return optionFunc(func(c *callConfig) { c.budget = b })
}

// BudgetError is the error of a request its budget could not hold.
type BudgetError struct {
	Unit     string  // "tokens" or "cost"
	Limit    float64 // the budget's limit
	Spent    float64 // settled so far
	Reserved float64 // held by requests in flight
	Need     float64 // what the refused request could cost at most
	Model    string  // the model it asked for
}

func (e *BudgetError) Error() string {
	return fmt.Sprintf("adapter: over budget: a request to %q could spend up to %s, and the budget of %s has %s left (%s spent, %s held by requests in flight)",
		e.Model, e.fmt(e.Need), e.fmt(e.Limit), e.fmt(max(e.Limit-e.Spent-e.Reserved, 0)), e.fmt(e.Spent), e.fmt(e.Reserved))
}

func (e *BudgetError) fmt(x float64) string {
	if e.Unit == "cost" {
		return fmt.Sprintf("%.6g", x)
	}
	return fmt.Sprintf("%.0f tokens", x)
}

// Is reports ErrBudget.
func (e *BudgetError) Is(target error) bool { return target == ErrBudget }

// LocalBudget is a [Budget] whose account is in the process: safe for
// concurrent use, shared by every call given it. Its zero value holds
// nothing; build one with [NewBudget].
type LocalBudget struct {
	limit Limit
	mu    sync.Mutex
	spent float64
	held  float64
}

// NewBudget returns a budget of l, or an error when l counts nothing, is
// negative, or counts cost without prices.
func NewBudget(l Limit) (*LocalBudget, error) {
	if err := l.check(); err != nil {
		return nil, err
	}
	return &LocalBudget{limit: l}, nil
}

// Reserve implements [Budget].
func (b *LocalBudget) Reserve(_ context.Context, max Spend) (func(Spend), error) {
	need, err := b.limit.Amount(max)
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.spent+b.held+need > b.limit.Max() {
		return nil, &BudgetError{Unit: b.limit.Unit(), Limit: b.limit.Max(), Spent: b.spent, Reserved: b.held, Need: need, Model: max.Model}
	}
	b.held += need
	var once sync.Once
	return func(spent Spend) {
		once.Do(func() {
			got, err := b.limit.Amount(spent)
			if err != nil {
				got = need // a model without a price answered: what was held
			}
			b.mu.Lock()
			b.held -= need
			b.spent += got
			b.mu.Unlock()
		})
	}, nil
}

// Spent returns what the requests settled so far spent, in the limit's
// unit.
func (b *LocalBudget) Spent() float64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.spent
}

// Remaining returns what is left: the limit less what was spent and what
// requests in flight hold.
func (b *LocalBudget) Remaining() float64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return max(b.limit.Max()-b.spent-b.held, 0)
}

// Limit returns the budget's limit.
func (b *LocalBudget) Limit() Limit { return b.limit }

// Bounds of a request's prompt in tokens, from its bytes: a token of
// every tokenizer in use covers at least one byte of text (a
// SentencePiece word marker at most one more per text), and a chat
// template adds a few tokens per message.
const (
	promptTokensPerMessage = 16
	promptTokensBase       = 64
	// promptTokensPerImageURL is what an image given by URL, whose size
	// is not known, is held at (a data: URL is held at its length).
	promptTokensPerImageURL = 2000
)

// DefaultReplyTokens is what a budget holds for the reply of a request
// that sets no max tokens: DSPy's default max_tokens (dspy.LM's 4000).
const DefaultReplyTokens = 4000

// MaxSpend is what req can spend at most, as [WithBudget] reserves it:
// the prompt's bound (each message's text, names, tool calls and image
// data in bytes, the tools' and the response format's definitions, and a
// few tokens per message) and the reply's max tokens (MaxCompletionTokens,
// else MaxTokens, times N). A request without max tokens is held at
// [DefaultReplyTokens] for its reply; since nothing then bounds the reply,
// a long one can pass the budget's limit, once: set max tokens for a hard
// bound.
func MaxSpend(req openai.ChatCompletionRequest) Spend {
	n := promptTokensBase
	for _, m := range req.Messages {
		n += promptTokensPerMessage + len(m.Role) + len(m.Content) + len(m.Name) + len(m.ToolCallID) + len(m.ReasoningContent)
		for _, p := range m.MultiContent {
			n += len(p.Text) + promptTokensPerMessage
			if p.ImageURL != nil {
				if strings.HasPrefix(p.ImageURL.URL, "data:") {
					n += len(p.ImageURL.URL)
				} else {
					n += promptTokensPerImageURL
				}
			}
		}
		for _, c := range m.ToolCalls {
			n += promptTokensPerMessage + len(c.ID) + len(c.Function.Name) + len(c.Function.Arguments)
		}
	}
	for _, t := range req.Tools {
		if t.Function != nil {
			n += promptTokensPerMessage + len(t.Function.Name) + len(t.Function.Description) + jsonLen(t.Function.Parameters)
		}
	}
	if req.ResponseFormat != nil {
		n += promptTokensPerMessage + jsonLen(req.ResponseFormat)
	}
	out := req.MaxCompletionTokens
	if out <= 0 {
		out = req.MaxTokens
	}
	if out <= 0 {
		out = DefaultReplyTokens
	}
	return Spend{Model: req.Model, PromptTokens: n, CompletionTokens: out * max(req.N, 1)}
}

// jsonLen is the length of v as JSON, 0 when it cannot be written.
func jsonLen(v any) int {
	if v == nil {
		return 0
	}
	b, err := json.Marshal(v)
	if err != nil {
		return 0
	}
	return len(b)
}

// reserve holds what req can spend from the call's budget b and returns
// what settles it from the reply.
func reserve(ctx context.Context, b Budget, req *openai.ChatCompletionRequest) (func(resp openai.ChatCompletionResponse, err error), error) {
	max := MaxSpend(*req)
	model := req.Model
	settle, err := b.Reserve(ctx, max)
	if err != nil {
		return nil, err
	}
	return func(resp openai.ChatCompletionResponse, err error) {
		if err != nil && statusOf(err) != 0 {
			settle(Spend{Model: model}) // refused with a status: nothing generated
			return
		}
		if err != nil {
			settle(max) // a transport failure or a broken stream: it may have spent all it could
			return
		}
		u := resp.Usage
		s := Spend{Model: cmp.Or(resp.Model, model), PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens}
		if u.PromptTokensDetails != nil {
			s.CachedTokens = u.PromptTokensDetails.CachedTokens
		}
		if u.PromptTokens == 0 && u.CompletionTokens == 0 {
			s = max // no usage reported: what was held
		}
		settle(s)
	}, nil
}
