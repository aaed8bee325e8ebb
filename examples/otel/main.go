// Command otel traces a ChainOfThought call and a ReAct agent with
// OpenTelemetry: an adapter.Trace that opens a span at every start event
// and closes it at the matching end event, with the attributes of the
// OpenTelemetry GenAI semantic conventions (gen_ai.operation.name,
// gen_ai.request.model, gen_ai.usage.input_tokens, finish reasons, tool
// names). A request answered by the cache is a span with
// dspy.cache_hit=true and no tokens, as Result counts it; a retry is a span
// of its own with dspy.retry set. The LM spans' dspy.requests and the call
// spans' dspy.lm_requests (Result.Requests) count the requests sent; the
// command checks that both sum to what the server answered. It lives in its own module so that the
// library keeps its four dependencies.
//
//	go run .          offline: an lmtest server answers, spans printed as a tree
//
// In a service, give the TracerProvider an OTLP exporter instead of the
// in-memory recorder used here, and install the trace once:
//
//	ctx = adapter.WithTrace(ctx, otelTrace(otel.Tracer("my-service")))
package main

import (
	"context"
	"fmt"
	"log"
	"slices"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	openai "github.com/sashabaranov/go-openai"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/lmtest"
	"github.com/sigwire/adapter/predict"
	"github.com/sigwire/adapter/signature"
	"github.com/sigwire/adapter/types"
)

type Question struct {
	Question string `json:"question"`
}

type Answer struct {
	Answer int `json:"answer"`
}

func main() {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	ctx := adapter.WithTrace(context.Background(), otelTrace(tp.Tracer("examples/otel")))

	srv := lmtest.NewServer(
		lmtest.Text("[[ ## reasoning ## ]]\nSix sevens are 42.\n\n[[ ## answer ## ]]\n42\n\n[[ ## completed ## ]]").WithUsage(120, 18),
		lmtest.Text("[[ ## next_thought ## ]]\nLook it up.\n\n[[ ## next_tool_name ## ]]\nsearch\n\n[[ ## next_tool_args ## ]]\n{\"query\": \"6*7\"}\n\n[[ ## completed ## ]]").WithUsage(300, 30),
		lmtest.Text("[[ ## next_thought ## ]]\nDone.\n\n[[ ## next_tool_name ## ]]\nfinish\n\n[[ ## next_tool_args ## ]]\n{}\n\n[[ ## completed ## ]]").WithUsage(340, 20),
		lmtest.Text("[[ ## reasoning ## ]]\nThe search said 42.\n\n[[ ## answer ## ]]\n42\n\n[[ ## completed ## ]]").WithUsage(380, 25),
	)
	defer srv.Close()
	model := adapter.WithRequest(openai.ChatCompletionRequest{Model: "gpt-4o-mini"})
	lm := adapter.WithMiddleware(srv.Client(), adapter.Cached(adapter.NewLRU(100)))

	cot, err := predict.NewChainOfThought[Question, Answer](model)
	if err != nil {
		log.Fatal(err)
	}
	for range 2 { // the second call is answered by the cache: no tokens
		if _, _, _, err := cot.Call(ctx, lm, Question{"What is 6 times 7?"}); err != nil {
			log.Fatal(err)
		}
	}

	search, err := types.NewTool("search", "Look something up.", func(_ context.Context, a struct {
		Query string `json:"query"`
	}) (string, error) {
		return "6*7 = 42", nil
	})
	if err != nil {
		log.Fatal(err)
	}
	sig, err := signature.Parse("question -> answer: int")
	if err != nil {
		log.Fatal(err)
	}
	agent, err := predict.NewReAct(sig, []types.Tool{search}, model)
	if err != nil {
		log.Fatal(err)
	}
	if _, err := agent.Call(ctx, lm, adapter.Values{"question": "What is 6 times 7?"}); err != nil {
		log.Fatal(err)
	}
	printTree(rec.Ended())
	if err := agree(rec.Ended(), len(srv.Requests())); err != nil {
		log.Fatal(err)
	}
}

// agree checks that the spans count the requests the server answered:
// the LM spans' dspy.requests and the call spans' dspy.lm_requests
// (Result.Requests) both sum to sent.
func agree(ended []sdktrace.ReadOnlySpan, sent int) error {
	sums := map[attribute.Key]int{}
	for _, s := range ended {
		for _, a := range s.Attributes() {
			if a.Key == "dspy.requests" || a.Key == "dspy.lm_requests" {
				sums[a.Key] += int(a.Value.AsInt64())
			}
		}
	}
	if sums["dspy.requests"] != sent || sums["dspy.lm_requests"] != sent {
		return fmt.Errorf("the server answered %d requests; the LM spans count %d, the call spans %d",
			sent, sums["dspy.requests"], sums["dspy.lm_requests"])
	}
	return nil
}

// spans holds the open spans of a Trace by the ids its events carry.
type spans struct {
	tracer trace.Tracer
	open   map[string]trace.Span
}

func (s *spans) key(kind string, id uint64) string { return fmt.Sprintf("%s/%d", kind, id) }

// start opens a span under the span of parent (a module run or call), or
// under ctx's when there is none.
func (s *spans) start(ctx context.Context, parent, key, name string, attrs ...attribute.KeyValue) {
	if p, ok := s.open[parent]; ok {
		ctx = trace.ContextWithSpan(ctx, p)
	}
	_, span := s.tracer.Start(ctx, name, trace.WithAttributes(attrs...))
	s.open[key] = span
}

func (s *spans) end(key string, err error, attrs ...attribute.KeyValue) {
	span, ok := s.open[key]
	if !ok {
		return
	}
	delete(s.open, key)
	span.SetAttributes(attrs...)
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// otelTrace maps the pipeline's start and end events to spans. The hooks
// run on the calling goroutine; a map suffices for one call at a time (a
// server tracing concurrent calls guards it with a mutex, or keys by
// CallID as here and uses a sync.Map).
func otelTrace(tracer trace.Tracer) *adapter.Trace {
	s := &spans{tracer: tracer, open: map[string]trace.Span{}}
	parentOf := func(id uint64) string {
		if _, ok := s.open[s.key("module", id)]; ok {
			return s.key("module", id)
		}
		return s.key("call", id)
	}
	return &adapter.Trace{
		ModuleStart: func(i adapter.ModuleStartInfo) {
			s.start(i.Context, s.key("module", i.ParentID), s.key("module", i.ID), "module "+i.Module,
				attribute.String("dspy.module", i.Module))
		},
		ModuleDone: func(i adapter.ModuleDoneInfo) { s.end(s.key("module", i.ID), i.Err) },
		CallStart: func(i adapter.CallStartInfo) {
			s.start(i.Context, s.key("module", i.ParentID), s.key("call", i.CallID), "adapter "+i.Adapter,
				attribute.String("dspy.adapter", i.Adapter), attribute.String("dspy.signature", i.Signature.String()))
		},
		CallDone: func(i adapter.CallDoneInfo) {
			var attrs []attribute.KeyValue
			if i.Result != nil {
				attrs = append(attrs, attribute.Int("dspy.lm_calls", i.Result.Calls),
					attribute.Int("dspy.lm_requests", i.Result.Requests),
					attribute.Int("dspy.cache_hits", i.Result.CacheHits),
					attribute.Int("gen_ai.usage.input_tokens", i.Result.Usage.PromptTokens),
					attribute.Int("gen_ai.usage.output_tokens", i.Result.Usage.CompletionTokens))
			}
			s.end(s.key("call", i.CallID), i.Err, attrs...)
		},
		FormatStart: func(i adapter.FormatStartInfo) {
			s.start(context.Background(), s.key("call", i.CallID), s.key("format", i.CallID), "format "+i.Adapter,
				attribute.Int("dspy.attempt", i.Attempt))
		},
		FormatDone: func(i adapter.FormatInfo) { s.end(s.key("format", i.CallID), i.Err) },
		LMCallStart: func(i adapter.LMCallStartInfo) {
			s.start(context.Background(), s.key("call", i.CallID), s.key("lm", i.CallID), "chat "+i.Request.Model,
				attribute.String("gen_ai.operation.name", "chat"),
				attribute.String("gen_ai.provider.name", "openai"),
				attribute.String("gen_ai.request.model", i.Request.Model),
				attribute.Bool("dspy.stream", i.Stream),
				attribute.Int("dspy.retry", i.Retry))
		},
		LMCallDone: func(i adapter.LMCallDoneInfo) {
			var finish []string
			for _, ch := range i.Response.Choices {
				finish = append(finish, string(ch.FinishReason))
			}
			s.end(s.key("lm", i.CallID), i.Err,
				attribute.String("gen_ai.response.model", i.Response.Model),
				attribute.String("gen_ai.response.id", i.Response.ID),
				attribute.StringSlice("gen_ai.response.finish_reasons", finish),
				// A cache hit spent nothing: its usage is zero, and it
				// sent no request.
				attribute.Bool("dspy.cache_hit", i.Cached),
				attribute.Int("dspy.requests", i.Requests),
				attribute.Int("gen_ai.usage.input_tokens", i.Usage.PromptTokens),
				attribute.Int("gen_ai.usage.output_tokens", i.Usage.CompletionTokens))
		},
		ParseStart: func(i adapter.ParseStartInfo) {
			s.start(context.Background(), s.key("call", i.CallID), s.key("parse", i.CallID), "parse "+i.Adapter)
		},
		ParseDone: func(i adapter.ParseInfo) { s.end(s.key("parse", i.CallID), i.Err) },
		ToolStart: func(i adapter.ToolStartInfo) {
			s.start(context.Background(), parentOf(i.ParentID), s.key("tool", i.CallID)+i.Tool, "execute_tool "+i.Tool,
				attribute.String("gen_ai.operation.name", "execute_tool"),
				attribute.String("gen_ai.tool.name", i.Tool),
				attribute.String("gen_ai.tool.call.id", i.ToolCallID))
		},
		ToolDone: func(i adapter.ToolDoneInfo) { s.end(s.key("tool", i.CallID)+i.Tool, i.Err) },
	}
}

// printTree prints the ended spans as a tree with their GenAI attributes
// (and dspy.cache_hit on a cache hit).
func printTree(ended []sdktrace.ReadOnlySpan) {
	children := map[trace.SpanID][]sdktrace.ReadOnlySpan{}
	var roots []sdktrace.ReadOnlySpan
	for _, s := range ended {
		if s.Parent().IsValid() {
			children[s.Parent().SpanID()] = append(children[s.Parent().SpanID()], s)
		} else {
			roots = append(roots, s)
		}
	}
	byStart := func(a, b sdktrace.ReadOnlySpan) int { return a.StartTime().Compare(b.StartTime()) }
	var walk func(s sdktrace.ReadOnlySpan, depth int)
	walk = func(s sdktrace.ReadOnlySpan, depth int) {
		var attrs []string
		for _, a := range s.Attributes() {
			k := string(a.Key)
			if strings.HasPrefix(k, "gen_ai.") && k != "gen_ai.response.id" || k == "dspy.cache_hit" && a.Value.AsBool() {
				attrs = append(attrs, k+"="+a.Value.Emit())
			}
		}
		fmt.Printf("%s%s %s\n", strings.Repeat("  ", depth), s.Name(), strings.Join(attrs, " "))
		kids := children[s.SpanContext().SpanID()]
		slices.SortFunc(kids, byStart)
		for _, k := range kids {
			walk(k, depth+1)
		}
	}
	slices.SortFunc(roots, byStart)
	for _, r := range roots {
		walk(r, 0)
	}
}
