package adapter_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/lmtest"
	"github.com/sigwire/adapter/signature"
)

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// The reference workload of DESIGN.md: question, context -> reasoning,
// answer with 3 demos.
var (
	benchSig   = must(signature.Parse("question, context -> reasoning, answer"))
	benchDemos = []adapter.Values{
		{"question": "What is the capital of France?", "context": "France is a country in Europe. Its capital is Paris.", "reasoning": "The context says the capital is Paris.", "answer": "Paris"},
		{"question": "Who wrote Hamlet?", "context": "Hamlet is a tragedy by William Shakespeare.", "reasoning": "The context names Shakespeare as the author.", "answer": "William Shakespeare"},
		{"question": "How many legs does a spider have?", "context": "Spiders are arachnids with eight legs.", "reasoning": "Arachnids have eight legs.", "answer": "8"},
	}
	benchInputs     = adapter.Values{"question": "What is the boiling point of water at sea level?", "context": "At sea level water boils at 100 degrees Celsius."}
	benchCompletion = "[[ ## reasoning ## ]]\nThe context states that water boils at 100 degrees Celsius at sea level.\n\n[[ ## answer ## ]]\n100 °C\n\n[[ ## completed ## ]]"
)

// benchFormat measures a's Format on the reference workload.
func benchFormat(b *testing.B, a adapter.Adapter) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := a.Format(benchSig, benchDemos, benchInputs); err != nil {
			b.Fatal(err)
		}
	}
}

// benchParse measures a's Parse of reply with the reference signature.
func benchParse(b *testing.B, a adapter.Parser, reply string) {
	b.SetBytes(int64(len(reply)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := a.Parse(benchSig, reply); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkChatFormat(b *testing.B) {
	benchFormat(b, adapter.Chat{})
}

// BenchmarkChatFormatNewDemos is BenchmarkChatFormat with demos that
// change on every call (two sets of the same size take turns), so Format
// never reuses the demos it rendered last: its cost when every call
// brings demos of its own.
func BenchmarkChatFormatNewDemos(b *testing.B) {
	other := make([]adapter.Values, len(benchDemos))
	for i, d := range benchDemos {
		other[i] = adapter.Values{}
		for k, v := range d {
			other[i][k] = v.(string) + "."
		}
	}
	sets := [2][]adapter.Values{benchDemos, other}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		if _, err := (adapter.Chat{}).Format(benchSig, sets[i%2], benchInputs); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkChatParse(b *testing.B) {
	benchParse(b, adapter.Chat{}, benchCompletion)
}

// BenchmarkChatParse1MB parses a 1 MB multi-line completion.
func BenchmarkChatParse1MB(b *testing.B) {
	line := "The quick brown fox jumps over the lazy dog; reasoning continues at length, with [brackets] and # signs.\n"
	body := strings.Repeat(line, (1<<20)/len(line))
	completion := "[[ ## reasoning ## ]]\n" + body + "\n[[ ## answer ## ]]\n" + body + "\n[[ ## completed ## ]]"
	benchParse(b, adapter.Chat{}, completion)
}

// The JSON adapter's format and its repair path, with the reference
// workload.

func BenchmarkJSONFormat(b *testing.B) {
	benchFormat(b, adapter.JSON{})
}

// BenchmarkJSONParseFenced is the cross-peer workload of go-peers.md: a
// typical fenced JSON completion.
func BenchmarkJSONParseFenced(b *testing.B) {
	benchParse(b, adapter.JSON{}, "```json\n"+benchJSONReply+"\n```")
}

// BenchmarkJSONParseRepair parses a reply that needs repair: prose around
// it, single quotes and a trailing comma.
func BenchmarkJSONParseRepair(b *testing.B) {
	reply := "Sure! Here is the answer:\n{'reasoning': 'The context states that water boils at 100 degrees Celsius at sea level.', 'answer': '100 °C',}\nHope this helps."
	benchParse(b, adapter.JSON{}, reply)
}

func BenchmarkTwoStepFormat(b *testing.B) {
	benchFormat(b, adapter.TwoStep{Extractor: unusedLM{}})
}

// BenchmarkParseValue reads one typical raw value of each kind.
func BenchmarkParseValue(b *testing.B) {
	sig := must(signature.Parse(
		"q -> s: str, i: int, f: float, yes: bool, lit: Literal['billing', 'technical'], opt: Optional[int], ints: list[int], strs: list[str], d: dict[str, int], p: Person",
		signature.WithTypes(map[string]reflect.Type{"Person": reflect.TypeFor[Person]()})))
	raws := map[string][]string{
		"s":    {"Paris is the capital of France."},
		"i":    {"42", "1,234", "**42**", "forty-two"},
		"f":    {"0.75", "3/4", "approximately 0.75"},
		"yes":  {"true", "Yes."},
		"lit":  {"billing", "'Technical'"},
		"opt":  {"7", "None"},
		"ints": {"[1, 2, 3]", "- 1\n- 2\n- 3"},
		"strs": {`["a", "b", "c"]`, "['a', 'b', 'c']"},
		"d":    {`{"a": 1, "b": 2}`},
		"p":    {`{"name": "Ada", "age": 36}`, "```json\n{'name': 'Ada', 'age': 36,}\n```"},
	}
	for _, f := range sig.Outputs() {
		for i, raw := range raws[f.Name] {
			b.Run(fmt.Sprintf("%s/%d", f.Name, i), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := adapter.ParseValue(raw, f); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// fakeLM answers in process with canned replies, in turn: pipeline
// numbers against it are library overhead only, like the fake-LM figures
// of go-peers.md. Not safe for concurrent use.
type fakeLM struct {
	replies []string
	n       int
}

func (f *fakeLM) CreateChatCompletion(context.Context, openai.ChatCompletionRequest) (openai.ChatCompletionResponse, error) {
	reply := f.replies[f.n%len(f.replies)]
	f.n++
	return openai.ChatCompletionResponse{
		Object:  "chat.completion",
		Choices: []openai.ChatCompletionChoice{{Message: openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, Content: reply}, FinishReason: openai.FinishReasonStop}},
	}, nil
}

// pipelineCases are the reference workload through each adapter: the
// replies the LM gives, in turn.
var pipelineCases = []struct {
	name    string
	adapter func(extractor adapter.LM) adapter.Adapter
	replies []string
	caps    *adapter.Capabilities // the LM declares these, when set
}{
	{"chat", func(adapter.LM) adapter.Adapter { return adapter.Chat{} }, []string{benchCompletion}, nil},
	{"json", func(adapter.LM) adapter.Adapter { return adapter.JSON{} }, []string{benchJSONReply}, nil},
	// json-structured is json with an LM that has structured outputs:
	// the request carries the signature's strict json_schema, the path
	// most OpenAI users of the JSON adapter take.
	{"json-structured", func(adapter.LM) adapter.Adapter { return adapter.JSON{} }, []string{benchJSONReply},
		&adapter.Capabilities{StructuredOutputs: true, JSONMode: true}},
	{"xml", func(adapter.LM) adapter.Adapter { return adapter.XML{} }, []string{benchXMLReply}, nil},
	{"chat-fallback-json", func(adapter.LM) adapter.Adapter { return adapter.Chat{} }, []string{"I cannot follow the format.", benchJSONReply}, nil},
}

// BenchmarkCall runs Call (format, LM call, parse) over the reference
// workload with an in-process LM: the library's whole overhead per call.
func BenchmarkCall(b *testing.B) {
	for _, c := range pipelineCases {
		b.Run(c.name, func(b *testing.B) {
			var lm adapter.LM = &fakeLM{replies: c.replies}
			if c.caps != nil {
				lm = adapter.WithCapabilities(lm, *c.caps)
			}
			opts := []adapter.CallOption{adapter.UseAdapter(c.adapter(nil)), adapter.NoRetry()}
			b.ReportAllocs()
			for b.Loop() {
				res, err := adapter.Call(context.Background(), lm, benchSig, benchDemos, benchInputs, opts...)
				if err != nil {
					b.Fatal(err)
				}
				if c.caps != nil && res.Mode != adapter.ModeJSONSchema {
					b.Fatalf("mode %q, want %q", res.Mode, adapter.ModeJSONSchema)
				}
			}
		})
	}
	b.Run("twostep", func(b *testing.B) {
		lm := &fakeLM{replies: []string{"Water boils at 100 °C at sea level, so the answer is 100 °C."}}
		ext := &fakeLM{replies: []string{benchCompletion}}
		opt := adapter.UseAdapter(adapter.TwoStep{Extractor: ext})
		b.ReportAllocs()
		for b.Loop() {
			if _, err := adapter.Call(context.Background(), lm, benchSig, benchDemos, benchInputs, opt, adapter.NoRetry()); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// loopbackPath is one way of making the reference call over loopback.
type loopbackPath struct {
	name string
	run  func() error
}

// loopbackPaths are the calls BenchmarkCallLoopback and
// TestLoopbackCPUTime compare: go-openai alone ("baseline",
// "stream-baseline"; the stream baseline asks for usage too, as Stream
// does) and the library's Call and Stream, all sending the same Chat
// request to client and getting the same reply.
func loopbackPaths(client *openai.Client) []loopbackPath {
	msgs := must((adapter.Chat{}).Format(benchSig, benchDemos, benchInputs))
	ctx := context.Background()
	return []loopbackPath{
		{"baseline", func() error {
			_, err := client.CreateChatCompletion(ctx, openai.ChatCompletionRequest{Messages: msgs})
			return err
		}},
		{"chat", func() error {
			_, err := adapter.Call(ctx, client, benchSig, benchDemos, benchInputs)
			return err
		}},
		{"stream-baseline", func() error {
			s, err := client.CreateChatCompletionStream(ctx, openai.ChatCompletionRequest{Messages: msgs, Stream: true,
				StreamOptions: &openai.StreamOptions{IncludeUsage: true}})
			if err != nil {
				return err
			}
			defer s.Close()
			for {
				if _, err := s.Recv(); err != nil {
					if errors.Is(err, io.EOF) {
						return nil
					}
					return err
				}
			}
		}},
		{"stream", func() error {
			for _, err := range adapter.Stream(ctx, client, benchSig, benchDemos, benchInputs) {
				if err != nil {
					return err
				}
			}
			return nil
		}},
	}
}

// loopbackServer is lmtest answering every request with the reference
// completion.
func loopbackServer() *lmtest.Server {
	srv := lmtest.NewServer()
	srv.Handle(func(lmtest.Request) lmtest.Reply { return lmtest.Text(benchCompletion) })
	return srv
}

// BenchmarkCallLoopback runs Call and Stream with the real go-openai
// client against lmtest over loopback HTTP, beside go-openai alone
// sending the same request and getting the same reply (loopbackPaths):
// the difference is the library's overhead per call over the wire.
func BenchmarkCallLoopback(b *testing.B) {
	srv := loopbackServer()
	defer srv.Close()
	for _, p := range loopbackPaths(srv.Client()) {
		b.Run(p.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := p.run(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkAdversarial parses hostile replies of n and 2n repetitions:
// linear work shows as ns/op doubling with the input (quadratic would
// quadruple). TestAdversarialReplies bounds their allocations.
func BenchmarkAdversarial(b *testing.B) {
	sig := must(signature.Parse("q -> answer, items: list[str]"))
	patterns := []struct{ name, unit string }{
		{"bare-ampersands", "& "},
		{"unterminated-entities", "&amp"},
		{"markers", "[[ ## answer ## ]]\nx\n"},
		{"unclosed-tags", "<answer>"},
		{"brackets", "{["},
		{"list-items", "- item\n"},
		{"missing-commas", "1 "},
	}
	for _, p := range patterns {
		for _, n := range []int{1 << 15, 1 << 16} {
			text := strings.Repeat(p.unit, n)
			switch p.name {
			case "list-items":
				text = "[[ ## answer ## ]]\nx\n[[ ## items ## ]]\n" + text
			case "missing-commas":
				// JSON repair's quadratic pattern: 16 and 32 KiB, over the
				// repair cap (under the former 64 KiB one: 0.1 and 0.4 s).
				text = `{"answer": "x", "items": [` + text[:n/2] + `1]}`
			}
			for _, a := range []adapter.Parser{adapter.Chat{}, adapter.JSON{}, adapter.XML{}} {
				b.Run(fmt.Sprintf("%s/%T/n=%d", p.name, a, n), func(b *testing.B) {
					b.SetBytes(int64(len(text)))
					for b.Loop() {
						_, _ = a.Parse(sig, text)
					}
				})
			}
		}
	}
}

// BenchmarkRepairWorstCase measures JSON repair's worst case, the
// missing-comma pattern ([1 1 1 …], which kaptinlin/jsonrepair repairs by
// copying its whole output once per comma, O(n²)), at sizes up to and over
// the repair cap: in a list[int] field of four (each field's text is
// repaired on its own) for the Chat parser, and in native tool-call
// arguments.
func BenchmarkRepairWorstCase(b *testing.B) {
	sig := must(signature.Parse("question -> a: list[int], b: list[int], c: list[int], d: list[int]"))
	for _, size := range []int{8 << 10, 16 << 10, 64 << 10} {
		item := "[" + strings.Repeat("1 ", (size-4)/2) + "1]" // size-1 bytes
		var reply strings.Builder
		for _, f := range []string{"a", "b", "c", "d"} {
			reply.WriteString("[[ ## " + f + " ## ]]\n" + item + "\n\n")
		}
		reply.WriteString("[[ ## completed ## ]]")
		text := reply.String()
		b.Run(fmt.Sprintf("chat-4-fields/span=%dKiB", size>>10), func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			for b.Loop() {
				_, _ = adapter.Chat{}.Parse(sig, text)
			}
		})
	}
}

// replayTransport answers every request in memory with the response
// lmtest gave to the same kind of request (streamed or not), byte for
// byte: go-openai's and the library's client-side work, with no socket,
// kernel or scheduler time in between.
type replayTransport struct {
	header        map[bool]http.Header
	body          map[bool][]byte
	recordingFrom http.RoundTripper // set while recording
}

func (t *replayTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	body, err := io.ReadAll(req.Body)
	if err != nil {
		return nil, err
	}
	_ = req.Body.Close()
	stream := bytes.Contains(body, []byte(`"stream":true`))
	if t.recordingFrom != nil {
		req.Body = io.NopCloser(bytes.NewReader(body))
		resp, err := t.recordingFrom.RoundTrip(req)
		if err != nil {
			return nil, err
		}
		t.body[stream], err = io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		t.header[stream] = resp.Header
		resp.Body = io.NopCloser(bytes.NewReader(t.body[stream]))
		return resp, err
	}
	return &http.Response{StatusCode: http.StatusOK, Status: "200 OK", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: t.header[stream], Body: io.NopCloser(bytes.NewReader(t.body[stream])), Request: req}, nil
}

// BenchmarkCallInMemory runs loopbackPaths with the real go-openai client
// over replayTransport: the same requests and response bytes as
// BenchmarkCallLoopback without the network, so the difference between
// a path and its baseline is the library's overhead alone, measured
// without the tens of microseconds loopback timing varies by.
func BenchmarkCallInMemory(b *testing.B) {
	srv := loopbackServer()
	defer srv.Close()
	rt := &replayTransport{header: map[bool]http.Header{}, body: map[bool][]byte{}, recordingFrom: http.DefaultTransport}
	cfg := srv.Config()
	cfg.HTTPClient = &http.Client{Transport: rt}
	paths := loopbackPaths(openai.NewClientWithConfig(cfg))
	for _, p := range paths {
		if err := p.run(); err != nil {
			b.Fatal(err)
		}
	}
	rt.recordingFrom = nil
	for _, p := range paths {
		b.Run(p.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := p.run(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkChatParseFields parses a Chat reply holding n output fields
// (each a short sentence): linear work shows as ns/op growing with n at
// the same rate, per field constant (quadratic grows per field with n).
// The "double" pairs measure n and 2n side by side: their ns/field should
// match.
func BenchmarkChatParseFields(b *testing.B) {
	run := func(b *testing.B, n int) {
		names := make([]string, n)
		var reply strings.Builder
		for i := range names {
			names[i] = fmt.Sprintf("field_%d", i)
			fmt.Fprintf(&reply, "[[ ## %s ## ]]\nThe value of field number %d, a short sentence.\n\n", names[i], i)
		}
		reply.WriteString("[[ ## completed ## ]]")
		sig := must(signature.Parse("q -> " + strings.Join(names, ", ")))
		completion := reply.String()
		b.SetBytes(int64(len(completion)))
		b.ReportAllocs()
		for b.Loop() {
			v, err := (adapter.Chat{}).Parse(sig, completion)
			if err != nil || len(v) != n {
				b.Fatal(err, len(v))
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/field")
	}
	for _, n := range []int{2, 20, 200, 400} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) { run(b, n) })
	}
	for _, n := range []int{100, 200, 400, 800} {
		b.Run(fmt.Sprintf("double/n=%d", n), func(b *testing.B) { run(b, n) })
	}
}
