package adapter

import (
	"math"

	"github.com/sigwire/adapter/internal/wire"
)

// Limits bounds what the library reads of one LM reply, so that an
// endpoint — or a proxy before it — that is hostile or broken cannot make
// a call allocate without bound. A reply past a limit ends the call with
// an *LMError matching [ErrReplyTooLarge], never with a shortened reply
// passed off as whole; it is not retried and not sent to a fallback.
// It also bounds the tool results the library shows the model (a tool,
// an MCP server, is as untrusted as a reply), which ride along in every
// later request of an agent's run: those are cut, with a note saying so.
//
// Set them with [WithLimits]. A zero field keeps the default; a negative
// one turns that limit off. Whatever the limits, a reply or stream event
// with more than [MaxChoices] choices is refused (no request can ask for
// more), and every step that reads a reply does work linear in its bytes.
type Limits struct {
	// ReplyBytes bounds the bytes of one reply. For a stream it counts the
	// data of its events (every event's JSON), and through a client whose
	// HTTP client is wrapped with [HTTPDoer] every byte of the body
	// (comments and lines go-openai buffers before the library sees them
	// included). A blocking body is bounded only through the wrapper:
	// without it go-openai reads the whole body itself. Default
	// [DefaultReplyBytes].
	ReplyBytes int64
	// WireItems bounds the annotations and citations one choice may carry
	// ([ChoiceExtras]), each of which a [WireReader] decodes. Default
	// [DefaultWireItems].
	WireItems int
	// ToolResultBytes bounds the text of one tool result the model is
	// shown (see [Trace.RunTool]): past it the text is cut on a rune
	// boundary and a note says how many bytes were left out. Default
	// [DefaultToolResultBytes].
	ToolResultBytes int
	// RequestToolBytes bounds the tool results one request carries, all
	// together: an agent's run (predict.ReAct) gives each new result its
	// share of what the results already in its trajectory left, and never
	// less than [MinToolResultShare]. Default [DefaultRequestToolBytes].
	RequestToolBytes int
}

// The default limits and the fixed bound on choices.
const (
	// DefaultReplyBytes is the default bound on a reply's bytes: 64 MiB,
	// about 250 000 streamed tokens of OpenAI's framing (a token event is
	// 200 to 300 bytes; logprobs make it several times larger, so a long
	// reply with top_logprobs may need more).
	DefaultReplyBytes int64 = 64 << 20
	// DefaultWireItems is the default bound on the annotations and
	// citations of one choice (web search replies carry tens).
	DefaultWireItems = 1024
	// MaxChoices bounds the choices of a reply and of one stream event:
	// OpenAI's n is at most 128.
	MaxChoices = wire.MaxChoices
	// DefaultToolResultBytes is the default bound on one tool result's
	// text: 64 KiB, some 16 000 tokens.
	DefaultToolResultBytes = 64 << 10
	// DefaultRequestToolBytes is the default bound on the tool results one
	// request carries: 1 MiB, more than most context windows hold.
	DefaultRequestToolBytes = 1 << 20
	// MinToolResultShare is the least of a result an agent's run shows
	// once RequestToolBytes is spent: its first 256 bytes and the note.
	MinToolResultShare = 256
)

// WithLimits sets this call's (or, given to a module, its calls') limits
// on what a reply may hold. Its non-zero fields override earlier ones, so
// a call can raise one limit and keep its module's other.
func WithLimits(l Limits) CallOption {
	return optionFunc(func(c *callConfig) {
		if l.ReplyBytes != 0 {
			c.limits.ReplyBytes = l.ReplyBytes
		}
		if l.WireItems != 0 {
			c.limits.WireItems = l.WireItems
		}
		if l.ToolResultBytes != 0 {
			c.limits.ToolResultBytes = l.ToolResultBytes
		}
		if l.RequestToolBytes != 0 {
			c.limits.RequestToolBytes = l.RequestToolBytes
		}
	})
}

// CallLimits returns the limits in force for a call with opts: every
// field set, to the default where no [WithLimits] gave it and to the
// largest value where one turned it off. Code that works for a call
// outside the pipeline, such as running the tools a reply asked for,
// reads its bounds there.
func CallLimits(opts ...CallOption) Limits {
	var l Limits
	if len(opts) > 0 {
		c := traceConfigs.Get().(*callConfig)
		c.apply(opts)
		l = c.limits
		*c = callConfig{}
		traceConfigs.Put(c)
	}
	return Limits{
		ReplyBytes: l.replyBytes(), WireItems: l.wireItems(),
		ToolResultBytes:  inForce(l.ToolResultBytes, DefaultToolResultBytes, math.MaxInt),
		RequestToolBytes: inForce(l.RequestToolBytes, DefaultRequestToolBytes, math.MaxInt),
	}
}

// replyBytes is the bound on a reply's bytes in force.
func (l Limits) replyBytes() int64 { return inForce(l.ReplyBytes, DefaultReplyBytes, math.MaxInt64) }

// wireItems is the bound on a choice's annotations and citations in force.
func (l Limits) wireItems() int { return inForce(l.WireItems, DefaultWireItems, math.MaxInt) }

// inForce is a limit as set: 0 keeps the default, a negative value turns
// it off (none: the largest value).
func inForce[T int | int64](set, def, none T) T {
	switch {
	case set == 0:
		return def
	case set < 0:
		return none
	}
	return set
}
