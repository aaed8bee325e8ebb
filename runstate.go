package adapter

import "context"

// runState is what the package keeps on a context, in one value: what the
// caller set there (the adapter of [WithAdapter], the trace of
// [WithTrace], the module run of [StartModule]) and what a call shares
// with the middlewares of its LM requests (its callState, the identity of
// the LM beneath them, whether they are the call's own). A layer that
// changes a part puts a copy with that part changed on a new context
// ([runState.on]); a runState on a context is never written to, so calls
// that share a parent context never see each other's state.
type runState struct {
	adapter Adapter // set with WithAdapter
	// trace is the trace set with WithTrace; on the context a
	// CallingParser is handed, the call's own (see run.parserFor).
	trace  *Trace
	parent uint64 // the module run the context belongs to (0 for none)
	// call is the state of the call in progress (see callState), or of a
	// call in flight that callers share (see Cached).
	call *callState
	// ident is the identity of the LM beneath the middlewares that run
	// with the context: set by the pipeline for its LM, and by a
	// WithMiddleware wrapper called directly for the LM it wraps, so that
	// the innermost, the LM that answers, wins.
	ident *lmIdent
	// callLevel marks the context of a call's own middlewares
	// (UseMiddleware): true above the call's retries and trace, false
	// beneath them. A Cached there does not share calls in flight: the
	// call would carry one caller's retries and report to its trace, from
	// another goroutine and maybe after that caller's call ended.
	callLevel bool
}

type runKey struct{}

// runFrom returns the run state of ctx (the zero state for none, or for
// a nil context).
func runFrom(ctx context.Context) runState {
	if ctx == nil {
		return runState{}
	}
	if s, ok := ctx.Value(runKey{}).(*runState); ok {
		return *s
	}
	return runState{}
}

// on returns a context whose run state is s.
func (s runState) on(ctx context.Context) context.Context {
	c := &ownRunContext{state: s}
	c.Context, c.rs = ctx, &c.state
	return &c.runContext
}

// ownRunContext is a runContext with its run state: the context and the
// state in one allocation.
type ownRunContext struct {
	runContext
	state runState
}

// runContext is a context carrying a run state, allocated with what
// holds the state (a call's runShared) rather than on its own.
type runContext struct {
	context.Context
	rs *runState
}

// Value returns the run state for runKey, and the parent's values
// otherwise.
func (c *runContext) Value(key any) any {
	if _, ok := key.(runKey); ok {
		return c.rs
	}
	return c.Context.Value(key)
}

// stateFrom returns the state of the call ctx is for, nil outside a call.
func stateFrom(ctx context.Context) *callState { return runFrom(ctx).call }
