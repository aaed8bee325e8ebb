package predict

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"

	adapter "github.com/sigwire/adapter"
)

// search is what BestOfN and Refine share: the attempts.
type search[In, Out any] struct {
	kind         string // BestOfN or Refine
	program      Runner[In, Out]
	info         programInfo
	n            int
	reward       Reward[In, Out]
	threshold    float64
	failCount    int
	firstRollout int

	// Refine's feedback step; feedback is nil for BestOfN.
	feedback    *Module
	programCode string
	rewardCode  string
	modulesDefn string
}

func newSearch[In, Out any](kind string, program Runner[In, Out], n int, reward Reward[In, Out], threshold float64, opts []AttemptOption) (*search[In, Out], error) {
	var cfg attemptConfig
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	switch {
	case program == nil:
		return nil, fmt.Errorf("predict: %s: nil program", kind)
	case n < 1:
		return nil, fmt.Errorf("predict: %s: N is %d: at least one attempt is needed", kind, n)
	case reward == nil:
		return nil, fmt.Errorf("predict: %s: nil reward", kind)
	case math.IsNaN(threshold):
		return nil, fmt.Errorf("predict: %s: the threshold is NaN", kind)
	case cfg.failCount != nil && *cfg.failCount < 0:
		return nil, fmt.Errorf("predict: %s: WithFailCount(%d) is negative", kind, *cfg.failCount)
	case kind != "Refine" && len(cfg.refineOnly) > 0:
		return nil, fmt.Errorf("predict: %s: %s applies to Refine's feedback step only", kind, cfg.refineOnly[0])
	}
	info, err := program.describe()
	if err != nil {
		return nil, fmt.Errorf("predict: %s: %w", kind, err)
	}
	s := &search[In, Out]{kind: kind, program: program, info: info, n: n, reward: reward, threshold: threshold,
		failCount: n, firstRollout: cfg.firstRollout}
	if cfg.failCount != nil {
		s.failCount = *cfg.failCount
	}
	if kind != "Refine" {
		return s, nil
	}
	s.programCode = fmt.Sprintf("%T", program)
	if t, ok := program.(interface{ goType() string }); ok {
		s.programCode = t.goType()
	}
	if cfg.programCode != nil {
		s.programCode = *cfg.programCode
	}
	s.rewardCode = funcName(reward)
	if cfg.rewardCode != nil {
		s.rewardCode = *cfg.rewardCode
	}
	if s.modulesDefn, err = inspectModules(info.predictors); err != nil {
		return nil, fmt.Errorf("predict: %s: %w", kind, err)
	}
	s.feedback = NewModule(offerFeedback, cfg.feedback...)
	return s, nil
}

// funcName is the name the Go runtime gives f's code.
func funcName(f any) string {
	if fn := runtime.FuncForPC(reflect.ValueOf(f).Pointer()); fn != nil {
		return fn.Name()
	}
	return fmt.Sprintf("%T", f)
}

// outcome is a successful attempt.
type outcome[Out any] struct {
	out     Out
	res     *adapter.Result
	reward  float64
	trace   []traceEntry
	attempt int        // its number, from 1
	texts   fieldTexts // in a Stream, the text its chunks gave each field
}

func (s *search[In, Out]) call(ctx context.Context, lm adapter.LM, in In, opts []adapter.CallOption) (Out, *adapter.Result, error) {
	var zero Out
	if ctx == nil {
		return zero, nil, fmt.Errorf("predict: %s: nil context", s.kind)
	}
	vals, err := valuesOf(in)
	if err != nil {
		return zero, nil, fmt.Errorf("predict: %s: %w", s.kind, err)
	}
	ctx, done := adapter.StartModule(ctx, s.kind, vals, opts...)
	out, res, _, err := s.run(ctx, lm, in, vals, opts, nil)
	done(res, err)
	return out, res, err
}

// valuesOf is the inputs as Values: a typed program's In struct, or the
// Values of an untyped one.
func valuesOf(in any) (adapter.Values, error) {
	if v, ok := in.(adapter.Values); ok {
		return v, nil
	}
	return adapter.ValuesOf(in)
}

// run makes the attempts and returns the chosen one's outputs, the run's
// Result and the chosen attempt's number (from 1). With a relay (a
// Stream), each attempt streams through it.
func (s *search[In, Out]) run(ctx context.Context, lm adapter.LM, in In, vals adapter.Values, opts []adapter.CallOption, rl *relay) (Out, *adapter.Result, int, error) {
	var zero Out
	total := &adapter.Result{}
	names := s.info.names()
	var (
		best     *outcome[Out]
		failures []error
		hints    map[*Module]string // the advice for the next attempt (Refine)
		made     int
		// stop is the error of a run its budget stopped after an attempt
		// succeeded: the run returns the best attempt with it.
		stop error
	)
	// fail records a failure and returns the error that ends the call, if
	// it must end: errBudgetStop when the budget refused a request and an
	// attempt succeeded before (the call returns it with stop).
	fail := func(idx, rollout int, err error) error {
		if rl.end(idx+1, s.n, 0, err) {
			return errStopped
		}
		if ctx.Err() != nil {
			return fmt.Errorf("predict: %s: attempt %d: %w", s.kind, idx+1, err)
		}
		failures = append(failures, fmt.Errorf("attempt %d (rollout %d): %w", idx+1, rollout, err))
		if errors.Is(err, adapter.ErrBudget) && best != nil {
			stop = fmt.Errorf("predict: %s: stopped by its budget after %d of %d attempts: %w", s.kind, made, s.n, failures[len(failures)-1])
			return errBudgetStop
		}
		if len(failures) > s.failCount || errors.Is(err, adapter.ErrBudget) {
			return &AttemptsError{Module: s.kind, Attempts: made, N: s.n, Errs: failures}
		}
		return nil
	}
	for idx := range s.n {
		made = idx + 1
		rollout := s.firstRollout + idx
		st, actx, aopts := beginAttempt(ctx, opts, rollout, names, hints)
		var out Out
		var res *adapter.Result
		var err error
		if rl == nil {
			out, res, err = s.program.attempt(actx, lm, in, aopts)
		} else if !rl.begin(idx+1, s.n) {
			return zero, total, 0, errStopped
		} else {
			out, res, err = s.program.streamAttempt(actx, rl.lm, in, aopts, rl.forward)
		}
		total.Add(res)
		if errors.Is(err, errStopped) {
			return zero, total, 0, err
		}
		var reward float64
		if err == nil {
			if reward, err = s.score(ctx, in, out); err == nil && math.IsNaN(reward) {
				err = errors.New("the reward is NaN")
			} else if err != nil {
				err = fmt.Errorf("reward: %w", err)
			}
		}
		if err != nil {
			if err := fail(idx, rollout, err); err == errBudgetStop {
				break
			} else if err != nil {
				return zero, total, 0, err
			}
			continue
		}
		if rl.end(idx+1, s.n, reward, nil) {
			return zero, total, 0, errStopped
		}
		if best == nil || reward > best.reward {
			best = &outcome[Out]{out: out, res: res, reward: reward, trace: st.entries(), attempt: idx + 1, texts: rl.attemptTexts()}
		}
		if reward >= s.threshold {
			break
		}
		if s.feedback == nil || idx == s.n-1 {
			continue
		}
		if rl.advising(idx + 1) {
			return zero, total, 0, errStopped
		}
		advice, fres, err := s.advise(ctx, lm, vals, res, st, reward, opts)
		total.Add(fres)
		if err != nil {
			if err := fail(idx, rollout, fmt.Errorf("feedback: %w", err)); err == errBudgetStop {
				break
			} else if err != nil {
				return zero, total, 0, err
			}
			continue
		}
		hints = nil
		if len(advice) > 0 { // DSPy hints only when the advice is not empty
			hints = make(map[*Module]string, len(names))
			for m, name := range names {
				h, ok := advice[name]
				if !ok {
					h = "N/A"
				}
				hints[m] = h
			}
			if note := unusedAdvice(idx, advice, names); note != "" {
				total.Notes = append(total.Notes, note)
			}
		}
	}
	if best == nil {
		return zero, total, 0, &AttemptsError{Module: s.kind, Attempts: made, N: s.n, Errs: failures}
	}
	if parent := attemptFrom(ctx); parent != nil {
		parent.add(best.trace...) // DSPy extends the caller's trace with the best attempt's
	}
	if !rl.settle(best.attempt, best.texts) {
		return zero, total, 0, errStopped
	}
	return best.out, runResult(total, best.res), best.attempt, stop
}

// errBudgetStop ends the attempts of a run its budget stopped after an
// attempt succeeded.
var errBudgetStop = errors.New("predict: stopped by the budget")

// runResult is a module run's Result: the counters of every call of the
// run (total, see adapter.Result.Add) and the rest from last, the call
// whose reply gave the run's outputs.
func runResult(total, last *adapter.Result) *adapter.Result {
	out := *total
	out.Outputs, out.Adapter, out.FallbackCause, out.Mode = last.Outputs, last.Adapter, last.FallbackCause, last.Mode
	out.Completions, out.Logprobs = last.Completions, last.Logprobs
	out.Model, out.SystemFingerprint = last.Model, last.SystemFingerprint
	return &out
}

// score runs the reward on an attempt; its panic is the attempt's error,
// an *adapter.PanicError, as a tool's is (adapter.Trace.RunTool).
func (s *search[In, Out]) score(ctx context.Context, in In, out Out) (reward float64, err error) {
	defer func() {
		if p := recover(); p != nil {
			reward, err = 0, &adapter.PanicError{Value: p, Stack: debug.Stack()}
		}
	}()
	return s.reward(ctx, in, out)
}

// unusedAdvice is the note for advice keyed by a name that is none of the
// program's predictors (DSPy drops it without a word; the attempt's
// predictors get "N/A" for theirs): "" when every key names one.
func unusedAdvice(idx int, advice map[string]string, names map[*Module]string) string {
	known := make(map[string]bool, len(names))
	var predictors []string
	for _, n := range names {
		known[n] = true
		predictors = append(predictors, strconv.Quote(n))
	}
	var unknown []string
	for k := range advice {
		if !known[k] {
			unknown = append(unknown, strconv.Quote(k))
		}
	}
	if len(unknown) == 0 {
		return ""
	}
	slices.Sort(unknown)
	slices.Sort(predictors)
	return fmt.Sprintf("attempt %d: the feedback's advice for %s names no predictor of the program (%s) and was dropped, as DSPy drops it",
		idx+1, strings.Join(unknown, ", "), strings.Join(predictors, ", "))
}
