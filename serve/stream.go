package serve

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	openai "github.com/sashabaranov/go-openai"

	adapter "github.com/sigwire/adapter"
)

// The stream's events, one per chunk of the module's Stream, each a JSON
// object (docs/serve.md):
//
//	event      data
//	field      {"field", "delta", "replace"}: text of an output field as it arrives; replace: start it anew
//	reasoning  {"delta"}: native reasoning as it arrives
//	tool_calls {"tool_calls"}: native tool calls of the reply in hand
//	tool       {"step", "id", "name", "args", "done", "observation", "error"}: an agent's tool starts, then ends
//	status     {"status"}: what a module is doing
//	reask      {"reask"}: the model is asked again (adapter.WithReask)
//	attempt    {"attempt"}: a BestOfN's or Refine's attempt starts
//	done       a Response: the outputs, usage, counts, notes
//	error      an Error (its "status" the HTTP status a predict would have had)
//
// Every event but done and error carries "step" (an agent's step, 0
// otherwise) and "attempt" when they are set.

// streamEvent is the data of one non-final event.
type streamEvent struct {
	Field       string            `json:"field,omitempty"`
	Delta       string            `json:"delta,omitempty"`
	Replace     bool              `json:"replace,omitempty"`
	ToolCalls   []openai.ToolCall `json:"tool_calls,omitempty"`
	Status      string            `json:"status,omitempty"`
	Reask       int               `json:"reask,omitempty"`
	Attempt     int               `json:"attempt,omitempty"`
	Step        int               `json:"step,omitempty"`
	ID          string            `json:"id,omitempty"`
	Name        string            `json:"name,omitempty"`
	Args        json.RawMessage   `json:"args,omitempty"`
	Done        bool              `json:"done,omitempty"`
	Observation any               `json:"observation,omitempty"`
	Error       string            `json:"error,omitempty"`
}

// eventOf names a chunk's event and its data.
func eventOf(c adapter.Chunk) (string, streamEvent) {
	ev := streamEvent{Step: c.Step, Attempt: c.Attempt}
	switch {
	case c.Tool != nil:
		t := c.Tool
		ev.ID, ev.Name, ev.Args, ev.Done, ev.Observation = t.ID, t.Name, t.Args, t.Done, t.Observation
		if t.Err != nil {
			ev.Error = t.Err.Error()
		}
		return "tool", ev
	case c.Field != "" || c.Replace:
		ev.Field, ev.Delta, ev.Replace = c.Field, c.Delta, c.Replace
		return "field", ev
	case c.Reasoning != "":
		ev.Delta = c.Reasoning
		return "reasoning", ev
	case len(c.ToolCalls) > 0:
		ev.ToolCalls = c.ToolCalls
		return "tool_calls", ev
	case c.Status != "":
		ev.Status = c.Status
		return "status", ev
	case c.Reask > 0:
		ev.Reask = c.Reask
		return "reask", ev
	case c.Attempt > 0:
		return "attempt", ev
	}
	return "", ev
}

// stream answers POST /stream with Server-Sent Events.
func (h *Handler) stream(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	ctx, in, done, ok := h.begin(w, r, start)
	if !ok {
		return
	}
	defer done()
	rc := http.NewResponseController(w)
	hdr := w.Header()
	hdr.Set("Content-Type", "text/event-stream")
	hdr.Set("Cache-Control", "no-cache")
	hdr.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	_ = rc.Flush()
	sent := true
	send := func(event string, v any) bool {
		data, err := json.Marshal(v)
		if err != nil {
			data, _ = json.Marshal(map[string]any{"error": &Error{Type: "internal", Message: "writing the event as JSON: " + err.Error()}})
			event = "error"
		}
		if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, data); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	var res *adapter.Result
	status := http.StatusOK
	for c, err := range h.Module.Stream(ctx, h.LM, in, h.Options...) {
		if err != nil {
			ee := errorOf(err)
			status = ee.Status
			sent = send("error", errorEvent{Error: ee, Status: ee.Status})
			break
		}
		if c.Done {
			res = c.Result
			if res != nil {
				sent = send("done", responseOf(res))
			}
			break
		}
		if name, ev := eventOf(c); name != "" {
			if sent = send(name, ev); !sent {
				break // the client went away: breaking out cancels the call
			}
		}
	}
	if !sent && r.Context().Err() != nil {
		status = 499
	}
	h.log(r, start, status, res)
}

// errorEvent is the data of a stream's error event.
type errorEvent struct {
	Error  *Error `json:"error"`
	Status int    `json:"status"`
}
