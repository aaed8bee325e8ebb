package predict

import (
	"context"
	"errors"
	"fmt"

	adapter "github.com/sigwire/adapter"
)

// Reward scores an attempt: the program's inputs and outputs in, a number
// out, higher is better (DSPy's reward_fn(args, pred)). Over a
// ChainOfThought, give NewBestOfN or NewRefine its Reasoned() for the
// reward to see the reasoning too (Reasoned[Out]). An error, or NaN,
// is the attempt's failure (see WithFailCount), and so is a panic, recovered
// as an *adapter.PanicError (its value and stack). ctx is the call's, for
// a reward that calls an LM itself.
type Reward[In, Out any] func(ctx context.Context, in In, out Out) (float64, error)

// AttemptsError is the error of a BestOfN or Refine call whose attempts
// failed more often than WithFailCount allows, or that had no attempt that
// succeeded. errors.Is and errors.As see every attempt's error.
type AttemptsError struct {
	// Module is "BestOfN" or "Refine".
	Module string
	// Attempts is the number of attempts made, N is the number allowed.
	Attempts, N int
	// Errs holds each failure, in order, naming its attempt.
	Errs []error
}

// Error says how many attempts failed and the last failure.
func (e *AttemptsError) Error() string {
	last := e.Errs[len(e.Errs)-1]
	if errors.Is(last, adapter.ErrBudget) {
		return fmt.Sprintf("predict: %s: stopped by its budget after %d of %d attempts, none of which succeeded; the last: %v", e.Module, e.Attempts, e.N, last)
	}
	if len(e.Errs) == e.Attempts {
		return fmt.Sprintf("predict: %s: every attempt failed (%d of %d); the last: %v", e.Module, e.Attempts, e.N, last)
	}
	return fmt.Sprintf("predict: %s: %d of %d attempts failed, more than WithFailCount allows; the last: %v", e.Module, len(e.Errs), e.Attempts, last)
}

// Unwrap returns the attempts' errors.
func (e *AttemptsError) Unwrap() []error { return e.Errs }

// BestOfN is DSPy's dspy.BestOfN: it runs a program up to N times, each
// attempt a distinct rollout at temperature 1.0, scores each prediction
// with the reward, and returns the first whose reward reaches the
// threshold, or else the best. It is safe for concurrent use.
type BestOfN[In, Out any] struct {
	s *search[In, Out]
}

// Refine is DSPy's dspy.Refine: BestOfN that, after an attempt below the
// threshold, asks the LM for advice to each of the program's predictors
// (DSPy's OfferFeedback prompt, byte for byte) and gives the next attempt
// each predictor's advice as an extra input, hint_ ("A hint to the module
// from an earlier run"). It is safe for concurrent use.
type Refine[In, Out any] struct {
	s *search[In, Out]
}

// NewBestOfN returns a BestOfN that runs program up to n times and keeps
// the first prediction whose reward reaches threshold, else the one with
// the highest reward (the first of equals). A threshold of +Inf is never
// reached by a finite reward: all n attempts run.
//
// Each attempt's requests carry temperature 1.0 and the attempt's rollout
// number as their seed (see WithFirstRollout), over the call's request
// template: the attempts are distinct requests, so a Cached middleware
// does not answer n attempts with one reply (DSPy's rollout_id), and a
// provider that honours seeds samples each differently.
func NewBestOfN[In, Out any](program Runner[In, Out], n int, reward Reward[In, Out], threshold float64, opts ...AttemptOption) (*BestOfN[In, Out], error) {
	s, err := newSearch("BestOfN", program, n, reward, threshold, opts)
	if err != nil {
		return nil, err
	}
	return &BestOfN[In, Out]{s: s}, nil
}

// NewRefine returns a Refine: NewBestOfN's attempts, with a feedback call
// between an attempt below the threshold and the next. Its options may
// also set the feedback call's defaults (WithFeedbackOptions) and the texts it
// shows for the program's and the reward's code (WithProgramCode,
// WithRewardCode).
func NewRefine[In, Out any](program Runner[In, Out], n int, reward Reward[In, Out], threshold float64, opts ...AttemptOption) (*Refine[In, Out], error) {
	s, err := newSearch("Refine", program, n, reward, threshold, opts)
	if err != nil {
		return nil, err
	}
	return &Refine[In, Out]{s: s}, nil
}

// Call runs the attempts on in and returns the prediction chosen, with a
// Result whose Outputs, Adapter, Completions and Model are the chosen
// attempt's and whose counters (Calls, Reasks, Usage, UsageByModel,
// Retries, CacheHits, Coalesced, RetryWait: see adapter.Result.Add) count
// every attempt's LM calls and the advice calls, failed ones included. opts
// apply to every attempt, below the attempt's temperature and seed.
//
// The run is reported to the call's trace as a module run "BestOfN", each
// attempt as the program's own run inside it. When an attempt fails and
// WithFailCount allows no more failures, or when no attempt succeeded, the
// error is an *AttemptsError. When ctx is done, the call ends at once with
// ctx's error.
//
// A budget in opts (adapter.WithBudget) spans the run: every attempt's
// requests (and Refine's advice calls, and a reward's own calls given it)
// spend from it. When it refuses a request (an error matching
// adapter.ErrBudget), the run ends at once: the refusal is not one more
// failure counted against WithFailCount, and no further attempt starts. The
// call returns the best attempt so far, as at the end (its outputs, the
// Result of every attempt's calls), with an error that matches
// adapter.ErrBudget and says after how many attempts the run stopped; when
// no attempt had succeeded, an *AttemptsError that matches it too.
func (b *BestOfN[In, Out]) Call(ctx context.Context, lm adapter.LM, in In, opts ...adapter.CallOption) (Out, *adapter.Result, error) {
	if b == nil || b.s == nil {
		var zero Out
		return zero, nil, zeroError{"BestOfN", "predict.NewBestOfN"}
	}
	return b.s.call(ctx, lm, in, opts)
}

// Call runs the attempts as BestOfN.Call does, with the feedback call
// between them: its LM calls count in the Result, and it is reported to
// the trace as a Predict run inside the "Refine" run. The feedback call
// uses lm and opts (not an attempt's temperature and seed) over the
// WithFeedbackOptions; its failure counts as a failed attempt (WithFailCount), as
// in DSPy, and the next attempt keeps the previous advice. A budget
// stops it as it stops BestOfN, the advice calls' requests included: a
// refused advice call ends the run with the best attempt so far.
func (r *Refine[In, Out]) Call(ctx context.Context, lm adapter.LM, in In, opts ...adapter.CallOption) (Out, *adapter.Result, error) {
	if r == nil || r.s == nil {
		var zero Out
		return zero, nil, zeroError{"Refine", "predict.NewRefine"}
	}
	return r.s.call(ctx, lm, in, opts)
}

func (b *BestOfN[In, Out]) attempt(ctx context.Context, lm adapter.LM, in In, opts []adapter.CallOption) (Out, *adapter.Result, error) {
	return b.Call(ctx, lm, in, opts...)
}

func (b *BestOfN[In, Out]) describe() (programInfo, error) {
	if b == nil || b.s == nil {
		return programInfo{}, zeroError{"BestOfN", "predict.NewBestOfN"}
	}
	return b.s.info.nested(), nil
}

func (r *Refine[In, Out]) attempt(ctx context.Context, lm adapter.LM, in In, opts []adapter.CallOption) (Out, *adapter.Result, error) {
	return r.Call(ctx, lm, in, opts...)
}

func (r *Refine[In, Out]) describe() (programInfo, error) {
	if r == nil || r.s == nil {
		return programInfo{}, zeroError{"Refine", "predict.NewRefine"}
	}
	return r.s.info.nested(), nil
}
