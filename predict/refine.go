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
	"sync"

	openai "github.com/sashabaranov/go-openai"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/internal/pyjson"
	"github.com/sigwire/adapter/signature"
	"github.com/sigwire/adapter/types"
)

// Runner is a module BestOfN and Refine run, once per attempt: a
// *Predict[In, Out] or *ChainOfThought[In, Out] (typed: the reward sees
// Out), a ChainOfThought's Reasoned() (the reward sees Out and the
// reasoning, Reasoned[Out]), a *Module or *ReAct (untyped: In and Out are
// adapter.Values, the first choice's outputs, a ChainOfThought's
// "reasoning" and a ReAct's "trajectory" included), or a *BestOfN or
// *Refine of one of them. The set is closed: Refine injects its hints
// into the predictors of the program, which it must know.
type Runner[In, Out any] interface {
	// attempt runs the program once with the attempt's options.
	attempt(ctx context.Context, lm adapter.LM, in In, opts []adapter.CallOption) (Out, *adapter.Result, error)
	// streamAttempt runs it once as a stream, passing each chunk but the
	// Done chunk to yield; when yield returns false it stops and returns
	// errStopped.
	streamAttempt(ctx context.Context, lm adapter.StreamingLM, in In, opts []adapter.CallOption, yield func(adapter.Chunk) bool) (Out, *adapter.Result, error)
	// describe lists the program's predictors as DSPy's named_predictors
	// names them, and the order of its input and output keys.
	describe() (programInfo, error)
}

// programInfo is what Refine's feedback step knows of a program.
type programInfo struct {
	predictors []namedModule
	inputs     []string // the inputs' keys in order (program_inputs)
	outputs    []string // the outputs' keys in order (program_outputs)
	reasons    bool     // a ChainOfThought: its outputs hold "reasoning" (Chunk.Rationale)
}

type namedModule struct {
	name string
	m    *Module
}

func fieldNames(fs []signature.Field) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = f.Name
	}
	return out
}

// moduleInfo describes one predictor named name.
func moduleInfo(name string, m *Module) programInfo {
	return programInfo{predictors: []namedModule{{name, m}}, inputs: fieldNames(m.sig.Inputs()), outputs: fieldNames(m.sig.Outputs())}
}

func (m *Module) attempt(ctx context.Context, lm adapter.LM, in adapter.Values, opts []adapter.CallOption) (adapter.Values, *adapter.Result, error) {
	res, err := m.Call(ctx, lm, in, opts...)
	if err != nil {
		return nil, res, err
	}
	return res.Outputs[0], res, nil
}

func (m *Module) describe() (programInfo, error) {
	if err := m.zero(); err != nil {
		return programInfo{}, err
	}
	if m.kind == "ChainOfThought" {
		info := moduleInfo("predict", m) // dspy.ChainOfThought holds its Predict as .predict
		info.reasons = true
		return info, nil
	}
	return moduleInfo(FlatName, m), nil // a bare dspy.Predict is its own predictor, "self"
}

func (p *Predict[In, Out]) attempt(ctx context.Context, lm adapter.LM, in In, opts []adapter.CallOption) (Out, *adapter.Result, error) {
	return p.Call(ctx, lm, in, opts...)
}

func (p *Predict[In, Out]) describe() (programInfo, error) {
	if err := p.zero(); err != nil {
		return programInfo{}, err
	}
	return moduleInfo(FlatName, p.m), nil
}

func (c *ChainOfThought[In, Out]) attempt(ctx context.Context, lm adapter.LM, in In, opts []adapter.CallOption) (Out, *adapter.Result, error) {
	out, _, res, err := c.Call(ctx, lm, in, opts...)
	return out, res, err
}

func (c *ChainOfThought[In, Out]) describe() (programInfo, error) {
	if err := c.zero(); err != nil {
		return programInfo{}, err
	}
	info := moduleInfo("predict", c.p.m)
	info.reasons = true
	return info, nil
}

func (r *ReAct) attempt(ctx context.Context, lm adapter.LM, in adapter.Values, opts []adapter.CallOption) (adapter.Values, *adapter.Result, error) {
	res, err := r.Call(ctx, lm, in, opts...)
	if err != nil {
		return nil, res, err
	}
	return res.Outputs[0], res, nil
}

func (r *ReAct) describe() (programInfo, error) {
	if r == nil || r.react == nil || r.extract == nil {
		return programInfo{}, zeroError{"ReAct", "predict.NewReAct"}
	}
	return programInfo{
		predictors: []namedModule{{"react", r.react}, {"extract.predict", r.extract}},
		inputs:     fieldNames(r.sig.Inputs()),
		// dspy.Prediction(trajectory=trajectory, **extract)
		outputs: append([]string{"trajectory"}, fieldNames(r.extract.sig.Outputs())...),
	}, nil
}

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

// nested is the info of a BestOfN or Refine holding this program as its
// module attribute: DSPy names a Predict held there "module", a predictor
// p of another module "module.p".
func (pi programInfo) nested() programInfo {
	out := pi
	out.predictors = make([]namedModule, len(pi.predictors))
	for i, p := range pi.predictors {
		name := "module." + p.name
		if p.name == FlatName {
			name = "module"
		}
		out.predictors[i] = namedModule{name, p.m}
	}
	return out
}

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

// names maps the program's predictors to their names.
func (pi programInfo) names() map[*Module]string {
	names := make(map[*Module]string, len(pi.predictors))
	for _, p := range pi.predictors {
		names[p.m] = p.name
	}
	return names
}

// beginAttempt returns the state, context and options of the attempt
// numbered rollout: its predictors by name, the advice each gets (hints,
// or an enclosing Refine's when there is none of its own), and
// temperature 1.0 with the rollout as seed over opts.
func beginAttempt(ctx context.Context, opts []adapter.CallOption, rollout int, names, hints map[*Module]string) (*attemptState, context.Context, []adapter.CallOption) {
	st := &attemptState{names: names, hints: hints}
	if parent := attemptFrom(ctx); st.hints == nil && parent != nil {
		st.hints = parent.hints // an enclosing Refine's advice still holds
	}
	seed := rollout
	aopts := append(slices.Clip(opts), adapter.WithRequest(openai.ChatCompletionRequest{Temperature: 1, Seed: &seed}))
	return st, context.WithValue(ctx, attemptKey{}, st), aopts
}

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

// An attempt's state, on the context of its calls: which predictors it
// runs (by name), the hint each gets, and the trace of their runs (DSPy's
// dspy.settings.trace within the attempt).
type attemptKey struct{}

type attemptState struct {
	names map[*Module]string
	hints map[*Module]string // nil: no hints in this attempt

	mu    sync.Mutex
	trace []traceEntry
}

// traceEntry is one predictor run: DSPy's (predictor, inputs, prediction).
type traceEntry struct {
	m               *Module
	inputs, outputs pyjson.Object
}

func attemptFrom(ctx context.Context) *attemptState {
	if ctx == nil {
		return nil
	}
	st, _ := ctx.Value(attemptKey{}).(*attemptState)
	return st
}

func (st *attemptState) add(e ...traceEntry) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.trace = append(st.trace, e...)
}

func (st *attemptState) entries() []traceEntry {
	st.mu.Lock()
	defer st.mu.Unlock()
	return slices.Clone(st.trace)
}

// Refine's hint input, as DSPy's WrapperAdapter appends it.
const (
	hintName = "hint_"
	hintDesc = "A hint to the module from an earlier run"
)

// inAttempt is what Module.Call does inside a BestOfN or Refine attempt
// that runs m: a Refine attempt after advice appends the hint_ input to
// the signature and gives it m's advice (DSPy's WrapperAdapter); record
// adds the run to the attempt's trace. Outside an attempt it changes
// nothing.
func (m *Module) inAttempt(ctx context.Context, sig *signature.Signature, inputs adapter.Values) (*signature.Signature, adapter.Values, func(*adapter.Result, error), error) {
	st := attemptFrom(ctx)
	if st == nil || sig == nil {
		return sig, inputs, func(*adapter.Result, error) {}, nil
	}
	name, ok := st.names[m]
	if !ok {
		return sig, inputs, func(*adapter.Result, error) {}, nil
	}
	if hint, ok := st.hints[m]; ok {
		hinted, err := sig.Append(signature.Input, signature.Field{Name: hintName, Desc: hintDesc})
		if err != nil {
			return nil, nil, nil, fmt.Errorf("predict: Refine: the hint to %s: %w", name, err)
		}
		sig, inputs = hinted, withInput(inputs, hintName, hint)
	}
	return sig, inputs, func(res *adapter.Result, err error) {
		if err != nil || res == nil || len(res.Outputs) == 0 {
			return // DSPy traces a predictor's run once it returned
		}
		st.add(traceEntry{m: m, inputs: ordered(inputs, fieldNames(sig.Inputs())), outputs: ordered(res.Outputs[0], fieldNames(sig.Outputs()))})
	}, nil
}

// ordered is vals as an object whose members come in the order of keys
// (the signature's fields, as DSPy's dicts keep them), then any others
// sorted.
func ordered(vals adapter.Values, keys []string) pyjson.Object {
	var o pyjson.Object
	for _, k := range keys {
		if v, ok := vals[k]; ok {
			o.Set(k, v)
		}
	}
	var rest []string
	for k := range vals {
		if !slices.Contains(keys, k) {
			rest = append(rest, k)
		}
	}
	slices.Sort(rest)
	for _, k := range rest {
		o.Set(k, vals[k])
	}
	return o
}

// advise is Refine's feedback step: DSPy's Predict(OfferFeedback) on the
// attempt that fell short, returning the advice to each predictor.
func (s *search[In, Out]) advise(ctx context.Context, lm adapter.LM, vals adapter.Values, res *adapter.Result, st *attemptState, reward float64, opts []adapter.CallOption) (map[string]string, *adapter.Result, error) {
	var outputs adapter.Values
	if res != nil && len(res.Outputs) > 0 {
		outputs = res.Outputs[0]
	}
	trajectory := []any{}
	for _, e := range st.entries() {
		name, ok := st.names[e.m]
		if !ok {
			continue
		}
		trajectory = append(trajectory, pyjson.NewObject(
			pyjson.Member{Key: "module_name", Value: name},
			pyjson.Member{Key: "inputs", Value: e.inputs},
			pyjson.Member{Key: "outputs", Value: e.outputs}))
	}
	names := make([]string, len(s.info.predictors))
	for i, p := range s.info.predictors {
		names[i] = p.name
	}
	// DSPy passes strings as they are and dumps everything else with
	// orjson (OPT_INDENT_2); the float and list[str] fields get that text.
	dump := map[string]any{
		"program_inputs":     ordered(vals, s.info.inputs),
		"program_trajectory": trajectory,
		"program_outputs":    ordered(outputs, s.info.outputs),
		"target_threshold":   s.threshold,
		"reward_value":       reward,
		"module_names":       names,
	}
	text := make(map[string]string, len(dump))
	for k, v := range dump {
		t, err := orjsonDump(v)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", k, err)
		}
		text[k] = t
	}
	inputs := adapter.Values{
		"program_code":       s.programCode,
		"modules_defn":       s.modulesDefn,
		"program_inputs":     text["program_inputs"],
		"program_trajectory": text["program_trajectory"],
		"program_outputs":    text["program_outputs"],
		"reward_code":        s.rewardCode,
		"target_threshold":   floatText(text["target_threshold"]),
		"reward_value":       floatText(text["reward_value"]),
		"module_names":       strListText(text["module_names"]),
	}
	fres, err := s.feedback.Call(ctx, lm, inputs, opts...)
	if err != nil {
		return nil, fres, err
	}
	advice, _ := fres.Outputs[0]["advice"].(map[string]string)
	return advice, fres, nil
}

// floatText is a float input given as text, as DSPy's Refine gives
// target_threshold and reward_value (orjson's dump of the number): the
// prompt shows the field as float and the value as the text.
type floatText string

// TypeName is "float".
func (floatText) TypeName() string { return "float" }

// strListText is a list[str] input given as text (orjson's dump of the
// list), as DSPy's Refine gives module_names.
type strListText string

// TypeName is "list[str]".
func (strListText) TypeName() string { return "list[str]" }

// offerFeedback is DSPy 3.3.1's OfferFeedback signature
// (dspy/predict/refine.py): its instructions (the class docstring, as
// inspect.cleandoc leaves it), its fields and their descriptions, byte for
// byte — "kind ofscenario" included.
var offerFeedback = func() *signature.Signature {
	str := reflect.TypeFor[string]()
	sig, err := signature.New(
		"In the discussion, assign blame to each module that contributed to the final reward being below the threshold, if\n"+
			"any. Then, prescribe concrete advice of how the module should act on its future input when we retry the process, if\n"+
			"it were to receive the same or similar inputs. If a module is not to blame, the advice should be N/A.\n"+
			"The module will not see its own history, so it needs to rely on entirely concrete and actionable advice from you\n"+
			"to avoid the same mistake on the same or similar inputs.",
		[]signature.Field{
			{Name: "program_code", Type: str, Desc: "The code of the program that we are analyzing"},
			{Name: "modules_defn", Type: str, Desc: "The definition of each module in the program, including its I/O"},
			{Name: "program_inputs", Type: str, Desc: "The inputs to the program that we are analyzing"},
			{Name: "program_trajectory", Type: str, Desc: "The trajectory of the program's execution, showing each module's I/O"},
			{Name: "program_outputs", Type: str, Desc: "The outputs of the program that we are analyzing"},
			{Name: "reward_code", Type: str, Desc: "The code of the reward function that we are analyzing"},
			{Name: "target_threshold", Type: reflect.TypeFor[floatText](), Desc: "The target threshold for the reward function"},
			{Name: "reward_value", Type: reflect.TypeFor[floatText](), Desc: "The reward value assigned to the program's outputs"},
			{Name: "module_names", Type: reflect.TypeFor[strListText](), Desc: "The names of the modules in the program, for which we seek advice"},
		},
		[]signature.Field{
			{Name: "discussion", Type: str, Desc: "Discussing blame of where each module went wrong, if it did"},
			{Name: "advice", Type: reflect.TypeFor[map[string]string](), Desc: "For each module, describe very concretely, in this order: the specific scenarios in which it has made " +
				"mistakes in the past and what each mistake was, followed by what it should do differently in that kind of" +
				"scenario in the future. If the module is not to blame, write N/A."},
		})
	if err != nil {
		panic(err)
	}
	return sig
}()

// inspectModules is DSPy's inspect_modules: for each predictor, its name,
// its input and output fields as the adapters describe them, and its
// instructions, between lines of 80 dashes.
func inspectModules(predictors []namedModule) (string, error) {
	sep := strings.Repeat("-", 80)
	out := []string{sep}
	for _, p := range predictors {
		in, outs, instr, err := describeSignature(p.m.sig)
		if err != nil {
			return "", fmt.Errorf("predictor %s: %w", p.name, err)
		}
		out = append(out,
			"Module "+p.name,
			"\n\tInput Fields:",
			tabbed(splitLines(in)),
			"\tOutput Fields:",
			tabbed(splitLines(outs)),
			"\tOriginal Instructions: "+tabbed(instr),
			sep)
	}
	for i, o := range out {
		out[i] = strings.Trim(o, "\n")
	}
	return strings.Join(out, "\n"), nil
}

// tabbed is ("\n" + "\t" * 2).join([""] + lines).
func tabbed(lines []string) string {
	var b strings.Builder
	for _, l := range lines {
		b.WriteString("\n\t\t")
		b.WriteString(l)
	}
	return b.String()
}

// splitLines splits s at line breaks (\n, \r\n, \r: the adapters' rule)
// as Python's splitlines does: no empty line after a final break.
func splitLines(s string) []string {
	var lines []string
	for len(s) > 0 {
		i := strings.IndexAny(s, "\r\n")
		if i < 0 {
			return append(lines, s)
		}
		lines = append(lines, s[:i])
		if s[i] == '\r' && i+1 < len(s) && s[i+1] == '\n' {
			i++
		}
		s = s[i+1:]
	}
	return lines
}

// describeSignature returns what the Chat adapter writes for sig (one
// rule for all): the description of its inputs and of its outputs
// (DSPy's get_field_description_string) and the lines of its dedented
// instructions.
func describeSignature(sig *signature.Signature) (in, out string, instructions []string, err error) {
	const (
		inHead    = "Your input fields are:\n"
		outHead   = "\nYour output fields are:\n"
		objective = "In adhering to this structure, your objective is: "
	)
	var desc, task string
	chat := adapter.Chat{Options: adapter.Options{Prompt: &adapter.Prompt{
		FieldDescription: func(_ *signature.Signature, text string) string { desc = text; return text },
		TaskDescription:  func(_ *signature.Signature, text string) string { task = text; return text },
	}}}
	onlyInputs, onlyOutputs := sig, sig
	for _, f := range sig.Outputs() {
		onlyInputs = onlyInputs.Delete(f.Name)
	}
	for _, f := range sig.Inputs() {
		onlyOutputs = onlyOutputs.Delete(f.Name)
	}
	if _, err := chat.Format(onlyInputs, nil, adapter.Values{}); err != nil {
		return "", "", nil, err
	}
	in, ok1 := strings.CutPrefix(desc, inHead)
	in, ok2 := strings.CutSuffix(in, outHead)
	if _, err := chat.Format(onlyOutputs, nil, adapter.Values{}); err != nil {
		return "", "", nil, err
	}
	out, ok3 := strings.CutPrefix(desc, inHead+outHead)
	rest, ok4 := strings.CutPrefix(task, objective)
	if !ok1 || !ok2 || !ok3 || !ok4 {
		return "", "", nil, errors.New("the Chat adapter's system message is not laid out as expected")
	}
	// rest is "\n" + 8 spaces before each line; lines hold no line break.
	for _, l := range strings.Split(rest, "\n")[1:] {
		instructions = append(instructions, strings.TrimPrefix(l, "        "))
	}
	return in, out, instructions, nil
}

// orjsonDump is DSPy's orjson.dumps(recursive_mask(v),
// option=orjson.OPT_INDENT_2) for the Go value v: two-space indentation,
// non-ASCII kept, floats as orjson writes them (1.0, 1e-7, 1e16; NaN and
// infinities as null), DSPy's custom types (Image, Audio, Tool, History …)
// as "<non-serializable: Image>". A struct is written as its JSON object,
// where DSPy writes a pydantic model as "<non-serializable: Model>".
func orjsonDump(v any) (string, error) {
	b, err := pyjson.MarshalIndentSubst(v, "", "  ", maskCustom)
	if err != nil {
		return "", err
	}
	return orjsonNumbers(b), nil
}

// customNames maps DSPy's custom types to their Python class names.
var customNames = func() map[reflect.Type]string {
	out := map[reflect.Type]string{}
	r := strings.NewReplacer("['", "_", "']", "")
	for name, t := range types.Names() {
		out[t] = r.Replace(name) // Code['python'] is class Code_python
	}
	return out
}()

// maskCustom is recursive_mask's placeholder for the values orjson cannot
// write: DSPy's custom types.
func maskCustom(v reflect.Value) (string, bool, error) {
	for v.IsValid() && (v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface) && !v.IsNil() {
		if name, ok := customNames[v.Type()]; ok {
			return "<non-serializable: " + name + ">", true, nil
		}
		v = v.Elem()
	}
	if !v.IsValid() {
		return "", false, nil
	}
	if name, ok := customNames[v.Type()]; ok {
		return "<non-serializable: " + name + ">", true, nil
	}
	return "", false, nil
}

// orjsonNumbers rewrites the numbers of JSON text written Python's way
// (repr of a float: 1e-05, 1e+16, NaN, Infinity) as orjson writes them.
func orjsonNumbers(b []byte) string {
	var out strings.Builder
	out.Grow(len(b))
	inStr := false
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch {
		case inStr:
			out.WriteByte(c)
			if c == '\\' && i+1 < len(b) {
				i++
				out.WriteByte(b[i])
			} else if c == '"' {
				inStr = false
			}
		case c == '"':
			inStr = true
			out.WriteByte(c)
		case c == '-' || c >= '0' && c <= '9' || c == 'N' || c == 'I':
			j := i
			for j < len(b) && (b[j] == '-' || b[j] == '+' || b[j] == '.' || b[j] >= '0' && b[j] <= '9' || b[j] >= 'a' && b[j] <= 'z' || b[j] >= 'A' && b[j] <= 'Z') {
				j++
			}
			out.WriteString(orjsonNumber(string(b[i:j])))
			i = j - 1
		default:
			out.WriteByte(c)
		}
	}
	return out.String()
}

func orjsonNumber(tok string) string {
	switch tok {
	case "NaN", "Infinity", "-Infinity":
		return "null"
	}
	if !strings.ContainsAny(tok, ".eE") {
		return tok // an int
	}
	f, err := strconv.ParseFloat(tok, 64)
	if err != nil {
		return tok
	}
	return orjsonFloat(f)
}

// orjsonFloat writes f as orjson does (the ryu crate's format): positional
// from 1e-5 up to 1e16 with ".0" on integral values, otherwise an
// exponent without "+" or leading zeros; NaN and infinities as null.
func orjsonFloat(f float64) string {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return "null"
	}
	if abs := math.Abs(f); abs == 0 || abs >= 1e-5 && abs < 1e16 {
		s := strconv.FormatFloat(f, 'f', -1, 64)
		if !strings.Contains(s, ".") {
			s += ".0"
		}
		return s
	}
	s := strconv.FormatFloat(f, 'e', -1, 64)
	mant, exp, _ := strings.Cut(s, "e")
	sign := ""
	if exp[0] == '-' {
		sign = "-"
	}
	return mant + "e" + sign + strings.TrimLeft(exp[1:], "0")
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
