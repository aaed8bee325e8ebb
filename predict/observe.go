package predict

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	openai "github.com/sashabaranov/go-openai"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/signature"
)

// Logger returns a Trace that logs every LM call, parse and tool run to l.
// An LM call's line has the call's id, the adapter, the attempt (1 for a
// request's first send, n+1 for its n-th retry), the model, whether it
// streamed, whether a cache answered it (cached) or it shared the reply of
// an identical call in flight (coalesced), then with no tokens, the
// duration, the tokens it spent (prompt_tokens and completion_tokens,
// as Result.Usage counts them) and the error. Parse failures are logged at
// Warn, and so is a cache's failure (see adapter.FallibleCache: the call
// went on to the LM); each tool run with its name, arguments, duration
// and error; and at the end of a call, each of its Result's Notes (what
// the call did other than asked: tool calls asked for in the text, say)
// at Warn.
// Requests never carry the API key, so neither do the logs.
func Logger(l *slog.Logger) *adapter.Trace {
	return &adapter.Trace{
		CallDone: func(i adapter.CallDoneInfo) {
			if i.Result == nil {
				return
			}
			for _, n := range i.Result.Notes {
				l.LogAttrs(context.Background(), slog.LevelWarn, "note", slog.Uint64("call", i.CallID), slog.String("note", n))
			}
		},
		LMCallDone: func(i adapter.LMCallDoneInfo) {
			level := slog.LevelInfo
			if i.Err != nil {
				level = slog.LevelError
			}
			l.LogAttrs(context.Background(), level, "lm call", slog.Uint64("call", i.CallID),
				slog.String("adapter", i.Adapter), slog.Int("attempt", i.Retry+1), slog.String("model", i.Request.Model),
				slog.Bool("stream", i.Stream), slog.Bool("cached", i.Cached), slog.Bool("coalesced", i.Coalesced), slog.Duration("duration", i.Duration),
				slog.Int("prompt_tokens", i.Usage.PromptTokens), slog.Int("completion_tokens", i.Usage.CompletionTokens),
				slog.Any("error", i.Err))
		},
		ParseDone: func(i adapter.ParseInfo) {
			if i.Err != nil {
				l.LogAttrs(context.Background(), slog.LevelWarn, "parse failed", slog.Uint64("call", i.CallID),
					slog.String("adapter", i.Adapter), slog.Any("error", i.Err))
			}
		},
		CacheError: func(i adapter.CacheErrorInfo) {
			l.LogAttrs(context.Background(), slog.LevelWarn, "cache failed", slog.Uint64("call", i.CallID),
				slog.String("op", string(i.Op)), slog.Any("error", i.Err))
		},
		ToolDone: func(i adapter.ToolDoneInfo) {
			level := slog.LevelInfo
			if i.Err != nil {
				level = slog.LevelWarn
			}
			l.LogAttrs(context.Background(), level, "tool", slog.Uint64("call", i.CallID), slog.String("tool", i.Tool),
				slog.String("id", i.ToolCallID), slog.String("args", string(i.Args)), slog.Duration("duration", i.Duration), slog.Any("error", i.Err))
		},
	}
}

// Record is one LM call as the Recorder saw it.
type Record struct {
	// CallID is the adapter.Call or Stream the LM call belongs to (see
	// adapter.Trace); the parse that follows is matched to it by this id.
	CallID  uint64
	Time    time.Time
	Adapter string
	// Attempt is the adapter's (2 for the fallback adapter); Retry is 0
	// for a request's first send and n for its n-th retry.
	Attempt, Retry int
	Model          string
	Messages       []openai.ChatCompletionMessage
	Completion     string
	Outputs        adapter.Values
	// Usage is what the call spent: zero when a cache answered (Cached)
	// or the call shared an identical one's reply (Coalesced, see
	// adapter.Coalesced).
	Usage             openai.Usage
	Cached, Coalesced bool
	Err               error
}

// Recorder keeps the last N LM calls, in the spirit of
// dspy.inspect_history. Install its Trace on a context or call; it is
// safe for concurrent use.
type Recorder struct {
	mu      sync.Mutex
	max     int
	records []Record
}

// NewRecorder keeps the last n calls (n < 1 means 10).
func NewRecorder(n int) *Recorder {
	if n < 1 {
		n = 10
	}
	return &Recorder{max: n}
}

// Trace returns the hooks that feed the recorder.
func (r *Recorder) Trace() *adapter.Trace {
	return &adapter.Trace{
		LMCallDone: func(i adapter.LMCallDoneInfo) {
			rec := Record{CallID: i.CallID, Time: time.Now(), Adapter: i.Adapter, Attempt: i.Attempt, Retry: i.Retry, Model: i.Request.Model,
				Messages: i.Request.Messages, Usage: i.Usage, Cached: i.Cached, Coalesced: i.Coalesced, Err: i.Err}
			if len(i.Response.Choices) > 0 {
				rec.Completion = i.Response.Choices[0].Message.Content
			} else if len(i.Completions) > 0 {
				rec.Completion = i.Completions[0]
			}
			r.mu.Lock()
			defer r.mu.Unlock()
			r.records = append(r.records, rec)
			if len(r.records) > r.max {
				r.records = r.records[len(r.records)-r.max:]
			}
		},
		ParseDone: func(i adapter.ParseInfo) {
			r.mu.Lock()
			defer r.mu.Unlock()
			for j := len(r.records) - 1; j >= 0; j-- {
				if rec := &r.records[j]; rec.CallID == i.CallID && rec.Attempt == i.Attempt && rec.Outputs == nil && rec.Err == nil {
					rec.Outputs, rec.Err = i.Outputs, i.Err
					break
				}
			}
		},
	}
}

// Last returns up to n recorded calls, oldest first.
func (r *Recorder) Last(n int) []Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	n = min(n, len(r.records))
	return append([]Record(nil), r.records[len(r.records)-n:]...)
}

// Inspect writes the last n calls readably: each message by role, then
// the reply and the parsed outputs or the error.
func (r *Recorder) Inspect(w io.Writer, n int) error {
	var b strings.Builder
	for _, rec := range r.Last(n) {
		fmt.Fprintf(&b, "\n[%s] %s attempt %d", rec.Time.Format(time.RFC3339), rec.Adapter, rec.Attempt)
		if rec.Retry > 0 {
			fmt.Fprintf(&b, " (retry %d)", rec.Retry)
		}
		fmt.Fprintf(&b, ", model %q, ", rec.Model)
		if rec.Cached {
			b.WriteString("from the cache, no tokens\n\n")
		} else if rec.Coalesced {
			b.WriteString("shared an identical call's reply, no tokens\n\n")
		} else {
			fmt.Fprintf(&b, "%d+%d tokens\n\n", rec.Usage.PromptTokens, rec.Usage.CompletionTokens)
		}
		for _, m := range rec.Messages {
			role := m.Role
			if role == "" {
				role = "(no role)"
			}
			fmt.Fprintf(&b, "%s message:\n\n", strings.ToUpper(role[:1])+role[1:])
			if m.Content != "" {
				b.WriteString(m.Content)
			}
			for _, p := range m.MultiContent {
				if p.ImageURL != nil {
					fmt.Fprintf(&b, "<image_url: %s>", p.ImageURL.URL)
				} else {
					b.WriteString(p.Text)
				}
			}
			b.WriteString("\n\n")
		}
		b.WriteString("Response:\n\n")
		b.WriteString(rec.Completion)
		b.WriteString("\n\n")
		if rec.Err != nil {
			fmt.Fprintf(&b, "Error: %v\n", rec.Err)
		} else if rec.Outputs != nil {
			fmt.Fprintf(&b, "Outputs: %v\n", rec.Outputs)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// FinetuneFormatter is implemented by adapters that can write a training
// example for chat fine-tuning (Chat).
type FinetuneFormatter interface {
	FormatFinetune(sig *signature.Signature, demos []adapter.Values, inputs, outputs adapter.Values) ([]openai.ChatCompletionMessage, error)
}

// FinetuneLine returns the OpenAI chat fine-tuning JSONL line
// ({"messages": [...]}, no trailing newline) for inputs and the wanted
// outputs, as DSPy's ChatAdapter.format_finetune_data writes it. Adapters
// other than Chat do not support it and say so.
func FinetuneLine(a adapter.Adapter, sig *signature.Signature, demos []adapter.Values, inputs, outputs adapter.Values) ([]byte, error) {
	f, ok := a.(FinetuneFormatter)
	if !ok {
		return nil, fmt.Errorf("predict: the %s adapter does not support fine-tuning data (use Chat)", a.Name())
	}
	msgs, err := f.FormatFinetune(sig, demos, inputs, outputs)
	if err != nil {
		return nil, err
	}
	type msg struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	}
	out := struct {
		Messages []msg `json:"messages"`
	}{}
	for _, m := range msgs {
		if len(m.MultiContent) > 0 {
			return nil, fmt.Errorf("predict: fine-tuning data cannot hold content parts (images)")
		}
		out.Messages = append(out.Messages, msg{m.Role, m.Content})
	}
	return json.Marshal(out)
}
