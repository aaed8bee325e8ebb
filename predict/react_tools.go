package predict

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	adapter "github.com/sigwire/adapter"
)

// runCalls runs a step's calls, at most st.concurrency at once, and returns
// their steps in the model's order. A Stream's caller gets a chunk as each
// starts (in the model's order) and as each ends; once it stops, no
// further call starts, those running get a cancelled context and are
// waited for, and the error is errStopped. A tool's panic is its error
// (adapter.Trace.RunTool recovers it); a panic in a trace hook, which runs
// on the tools' goroutines, reaches the caller's goroutine once the other
// runs ended, where the caller may recover it.
func (st *run) runCalls(tr *adapter.Trace, callID uint64, turn int, thought string, noThought bool, calls []toolCall) ([]Step, error) {
	steps := make([]Step, len(calls))
	for i, c := range calls {
		steps[i] = Step{Index: st.next, Turn: turn, Tool: c.name, Args: c.args, CallID: c.id, unread: c.err != nil, rawArgs: c.raw}
		if i == 0 {
			steps[i].Thought, steps[i].noThought = thought, noThought
		}
		st.next++
	}
	step := turn + 1
	share := st.resultShare(len(calls))
	start := func(i int) bool {
		c := calls[i]
		return st.send(adapter.Chunk{Step: step, Status: toolStartStatus(c.name), Tool: &adapter.ToolRun{ID: c.id, Name: c.name, Args: c.argsJSON()}})
	}
	end := func(i int, obs any, err error) bool {
		s := &steps[i]
		var unknown *unknownToolError
		switch {
		case st.r.v2 && errors.As(err, &unknown):
			s.Observation, s.Err = "Unknown tool: "+s.Tool, err // DSPy's ReActV2 text
		case err != nil:
			s.Observation, s.Err = st.errorText(s.Tool, err), err
		default:
			s.Observation = obs
		}
		if n := calls[i].dropped; n > 0 {
			text, ferr := observationText(s.Observation)
			if ferr != nil { // runTool made such a result an error
				text = fmt.Sprint(s.Observation)
			}
			s.Observation = text + droppedNote(n)
		}
		return st.send(adapter.Chunk{Step: step, Status: toolEndStatus, Tool: &adapter.ToolRun{ID: s.CallID, Name: s.Tool,
			Args: calls[i].argsJSON(), Done: true, Observation: s.Observation, Err: s.Err}})
	}
	n := min(st.concurrency, len(calls))
	if n <= 1 {
		for i := range calls {
			if !start(i) {
				return nil, errStopped
			}
			obs, err := st.runTool(st.ctx, tr, callID, calls[i], share)
			if !end(i, obs, err) {
				return nil, errStopped
			}
		}
		return steps, nil
	}

	ctx, cancel := context.WithCancel(st.ctx)
	defer cancel()
	tr = lockedTrace(tr)
	type outcome struct {
		i        int
		obs      any
		err      error
		panicked bool
		p        any
	}
	out := make(chan outcome, len(calls))
	running, started := 0, 0
	stopped := false
	var panicked *outcome
	for {
		if !stopped && panicked == nil && started < len(calls) && running < n {
			i := started
			started++
			if !start(i) {
				stopped = true
				cancel()
				continue
			}
			running++
			go func() {
				o := outcome{i: i}
				defer func() {
					if p := recover(); p != nil {
						o.panicked, o.p = true, p
					}
					out <- o
				}()
				o.obs, o.err = st.runTool(ctx, tr, callID, calls[i], share)
			}()
			continue
		}
		if running == 0 {
			break
		}
		o := <-out
		running--
		switch {
		case o.panicked:
			if panicked == nil {
				panicked = &o
				cancel()
			}
		case !stopped && panicked == nil:
			if !end(o.i, o.obs, o.err) {
				stopped = true
				cancel()
			}
		}
	}
	if panicked != nil {
		panic(panicked.p)
	}
	if stopped {
		return nil, errStopped
	}
	return steps, nil
}

// argsJSON is the call's arguments as the trace and a stream show them:
// the object, or the unreadable text as a JSON string.
func (c toolCall) argsJSON() json.RawMessage {
	if c.err != nil {
		b, _ := json.Marshal(c.raw)
		return b
	}
	b, _ := c.args.MarshalJSON()
	return b
}

// resultShare is how much of each of a step's n results the model is
// shown: the call's bound on one result, and an equal share of what the
// results already in the trajectory left of the bound on a request's,
// never less than adapter.MinToolResultShare.
func (st *run) resultShare(n int) int {
	left := st.limits.RequestToolBytes
	for _, s := range st.traj {
		if s.Tool == "" {
			continue
		}
		text, err := observationText(s.Observation)
		if err != nil {
			continue
		}
		left -= len(text)
	}
	return min(max(left/max(n, 1), adapter.MinToolResultShare), st.limits.ToolResultBytes)
}

// runTool runs one call, reported to tr: the tool of its name with its
// arguments, unless they could not be read; a result the model cannot be
// shown is an error. Of a longer result the model is shown share bytes
// (adapter.Trace.RunTool cuts it).
func (st *run) runTool(ctx context.Context, tr *adapter.Trace, callID uint64, c toolCall, share int) (any, error) {
	args := c.argsJSON()
	info := adapter.ToolStartInfo{CallID: callID, Tool: c.name, ToolCallID: c.id, Args: args, ResultBytes: share}
	obs, err := tr.RunTool(ctx, info, func(ctx context.Context) (any, error) {
		if c.err != nil {
			return nil, c.err
		}
		tool, ok := st.r.byName[c.name]
		if !ok {
			return nil, &unknownToolError{c.name}
		}
		return tool.Call(ctx, args)
	})
	if err == nil {
		if _, ferr := observationText(obs); ferr != nil {
			err = fmt.Errorf("its result cannot be shown to the model: %w", ferr)
		}
	}
	return obs, err
}

// lockedTrace returns tr with its tool hooks made never to run at once
// (the tools of a step run concurrently).
func lockedTrace(tr *adapter.Trace) *adapter.Trace {
	if tr == nil || tr.ToolStart == nil && tr.ToolDone == nil {
		return tr
	}
	var mu sync.Mutex
	c := *tr
	if f := tr.ToolStart; f != nil {
		c.ToolStart = func(i adapter.ToolStartInfo) {
			mu.Lock()
			defer mu.Unlock()
			f(i)
		}
	}
	if f := tr.ToolDone; f != nil {
		c.ToolDone = func(i adapter.ToolDoneInfo) {
			mu.Lock()
			defer mu.Unlock()
			f(i)
		}
	}
	return &c
}

// unknownToolError: a call names no tool the agent has.
type unknownToolError struct{ name string }

func (e *unknownToolError) Error() string { return fmt.Sprintf("no tool named %q", e.name) }
