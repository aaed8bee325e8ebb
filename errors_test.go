package adapter_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sigwire/adapter"
	"github.com/sigwire/adapter/lmtest"
	"github.com/sigwire/adapter/signature"
)

// TestParseErrorText: an error says what happened in words a user
// reads once: a reply in plain prose is not reported as one forgotten
// field, and type names take their article.
func TestParseErrorText(t *testing.T) {
	sig, err := signature.Parse("question -> category: int, confidence: float")
	if err != nil {
		t.Fatal(err)
	}
	type parser interface {
		Parse(*signature.Signature, string) (adapter.Values, error)
	}
	cases := []struct {
		reply string
		want  string
		other string // must not appear
	}{
		{"I cannot decide between the two.", "none of the output fields", ""},
		{"[[ ## category ## ]]\n3\n", "output field missing", "none of the output fields"},
		{`{"category": "x", "confidence": 0.5}`, `"x" is not an int`, "a int"},
	}
	for _, a := range []parser{adapter.Chat{}, adapter.JSON{}, adapter.XML{}} {
		for _, c := range cases {
			_, err := a.Parse(sig, c.reply)
			if err == nil {
				t.Fatalf("%T %q: no error", a, c.reply)
			}
			msg := err.Error()
			if !strings.Contains(msg, c.want) || c.other != "" && strings.Contains(msg, c.other) {
				t.Errorf("%T %q: %s\nwant %q", a, c.reply, msg, c.want)
			}
			var pe *adapter.ParseError
			if !errors.As(err, &pe) || pe.Field == "" || pe.Completion != c.reply {
				t.Errorf("%T %q: %#v: want a ParseError naming the field and keeping the reply", a, c.reply, err)
			}
			if strings.Contains(c.want, "missing") || strings.Contains(c.want, "none") {
				if !errors.Is(err, adapter.ErrMissingField) {
					t.Errorf("%T %q: %v does not match ErrMissingField", a, c.reply, err)
				}
			}
		}
	}
}

// TestConstraintPartial: a ParseError for a violated constraint keeps the
// values that satisfy theirs and never one that violates its own, in Call
// and Stream alike.
func TestConstraintPartial(t *testing.T) {
	sig, err := signature.New("", []signature.Field{{Name: "q", Type: reflect.TypeFor[string]()}}, []signature.Field{
		{Name: "label", Type: reflect.TypeFor[string]()},
		{Name: "confidence", Type: reflect.TypeFor[float64](), Constraints: []signature.Constraint{{Op: "le", Value: 1.0}}},
		{Name: "score", Type: reflect.TypeFor[int](), Constraints: []signature.Constraint{{Op: "ge", Value: 0}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	reply := "[[ ## label ## ]]\nbilling\n\n[[ ## confidence ## ]]\n92\n\n[[ ## score ## ]]\n-5\n\n[[ ## completed ## ]]"
	srv := lmtest.NewServer()
	defer srv.Close()
	srv.Handle(func(lmtest.Request) lmtest.Reply { return lmtest.Text(reply).ChunkSize(7) })
	check := func(name string, err error) {
		var pe *adapter.ParseError
		if !errors.As(err, &pe) || !errors.Is(err, adapter.ErrConstraint) {
			t.Fatalf("%s: %v: want a ParseError matching ErrConstraint", name, err)
		}
		if pe.Field != "confidence" || pe.Completion != reply {
			t.Errorf("%s: field %q, completion %q", name, pe.Field, pe.Completion)
		}
		want := adapter.Values{"label": "billing"}
		if !reflect.DeepEqual(pe.Partial, want) {
			t.Errorf("%s: Partial = %v, want %v", name, pe.Partial, want)
		}
	}
	in := adapter.Values{"q": "x"}
	_, err = adapter.Call(t.Context(), srv.Client(), sig, nil, in)
	check("Call", err)
	var streamErr error
	for _, err := range adapter.Stream(t.Context(), srv.Client(), sig, nil, in) {
		if err != nil {
			streamErr = err
		}
	}
	check("Stream", streamErr)
}

// TestFallbackErrorClass: after a fallback, the error is of the class of
// what ended the call — the fallback's failure — and only that: an LM
// failure (a 503, a cancelled context) is an *LMError and never a
// *ParseError; a second parse failure is the fallback's *ParseError. The
// first adapter's *ParseError stays reachable as data, through
// *FallbackError, and is not in the chain. For Call and Stream alike.
func TestFallbackErrorClass(t *testing.T) {
	sig := mustParse(t, "question -> answer: int")
	in := adapter.Values{"question": "x"}
	const first = "I think it is forty-two." // Chat cannot read it: the JSON fallback runs
	cases := []struct {
		name string
		// second is the fallback's reply; cancel is called before it.
		second    func(cancel context.CancelFunc) lmtest.Reply
		lm, parse bool  // the error's class
		is        error // the error matches it
		adapter   string
	}{
		{"parse then parse", func(context.CancelFunc) lmtest.Reply { return lmtest.Text(`{"answer": "many"}`) },
			false, true, nil, "json"},
		{"parse then LM error", func(context.CancelFunc) lmtest.Reply {
			return lmtest.Error(http.StatusServiceUnavailable, `{"error":{"message":"overloaded","type":"server_error"}}`)
		}, true, false, nil, ""},
		{"parse then cancelled", func(cancel context.CancelFunc) lmtest.Reply {
			cancel()
			return lmtest.Text(`{"answer": 42}`).Delay(time.Minute)
		}, true, false, context.Canceled, ""},
		{"parse then truncated", func(context.CancelFunc) lmtest.Reply {
			return lmtest.Text(`{"answer": 4`).WithFinish("length")
		}, false, true, adapter.ErrTruncated, "json"},
	}
	for _, c := range cases {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", c.name, stream), func(t *testing.T) {
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				srv := lmtest.NewServer()
				defer srv.Close()
				var n atomic.Int32
				srv.Handle(func(lmtest.Request) lmtest.Reply {
					if n.Add(1) == 1 {
						return lmtest.Text(first)
					}
					return c.second(cancel)
				})
				var err error
				var res *adapter.Result
				if stream {
					_, _, err = drain(adapter.Stream(ctx, srv.Client(), sig, nil, in, adapter.NoRetry()))
				} else {
					res, err = adapter.Call(ctx, srv.Client(), sig, nil, in, adapter.NoRetry())
				}
				require.Error(t, err)
				require.EqualValues(t, 2, n.Load(), "the fallback ran")

				var le *adapter.LMError
				var pe *adapter.ParseError
				assert.Equal(t, c.lm, errors.As(err, &le), "an *LMError: %v", err)
				assert.Equal(t, c.parse, errors.As(err, &pe), "a *ParseError: %v", err)
				if c.is != nil {
					assert.ErrorIs(t, err, c.is)
				}
				if c.parse {
					assert.Equal(t, c.adapter, pe.Adapter, "errors.As gives the fallback's parse error, the last one")
				}
				assert.NotErrorIs(t, err, adapter.ErrMissingField, "the first adapter's cause is not in the chain")

				var fe *adapter.FallbackError
				require.ErrorAs(t, err, &fe, "the error says a fallback ran")
				var firstPE *adapter.ParseError
				require.ErrorAs(t, fe.First, &firstPE, "the first adapter's parse error is reachable as data")
				assert.Equal(t, "chat", firstPE.Adapter)
				assert.Equal(t, first, firstPE.Completion)
				assert.ErrorIs(t, fe.First, adapter.ErrMissingField)
				assert.Contains(t, err.Error(), "after chat", "the message still tells both")
				if res != nil {
					assert.Same(t, fe.First, res.FallbackCause, "the result says why the fallback ran")
				}
			})
		}
	}
}

// After a fallback that failed too, the error is of one class: here the
// JSON fallback's request failed, so it is an *LMError and not a
// *ParseError, and the Chat adapter's parse error is data in the
// *FallbackError.
func ExampleFallbackError() {
	srv := lmtest.NewServer(
		lmtest.Text("I think it is forty-two."), // Chat cannot read it: the JSON fallback runs
		lmtest.Error(http.StatusServiceUnavailable, `{"error":{"message":"overloaded","type":"server_error"}}`),
	)
	defer srv.Close()
	sig, err := signature.Parse("question -> answer: int")
	if err != nil {
		panic(err)
	}
	_, err = adapter.Call(context.Background(), srv.Client(), sig, nil, adapter.Values{"question": "6 times 7?"}, adapter.NoRetry())

	var le *adapter.LMError
	var pe *adapter.ParseError
	fmt.Println("LM error:", errors.As(err, &le), "parse error:", errors.As(err, &pe))
	var fe *adapter.FallbackError
	if errors.As(err, &fe) && errors.As(fe.First, &pe) {
		fmt.Printf("the fallback ran after %s could not read %q\n", pe.Adapter, pe.Completion)
	}
	// Output:
	// LM error: true parse error: false
	// the fallback ran after chat could not read "I think it is forty-two."
}

// TestTimeoutSaysItOnce: a call's own WithTimeout running out is named
// once in the error, for Call and Stream, and the error still matches
// context.DeadlineExceeded.
func TestTimeoutSaysItOnce(t *testing.T) {
	sig := mustParse(t, "q -> a")
	in := adapter.Values{"q": "x"}
	srv := lmtest.NewServer()
	defer srv.Close()
	srv.Handle(func(lmtest.Request) lmtest.Reply { return lmtest.Text("[[ ## a ## ]]\nlate").Delay(time.Minute) })
	timeout := adapter.WithTimeout(50 * time.Millisecond)
	_, err := adapter.Call(t.Context(), srv.Client(), sig, nil, in, timeout)
	_, _, serr := drain(adapter.Stream(t.Context(), srv.Client(), sig, nil, in, timeout))
	for _, err := range []error{err, serr} {
		require.ErrorIs(t, err, context.DeadlineExceeded)
		var le *adapter.LMError
		require.ErrorAs(t, err, &le)
		assert.Equal(t, 1, strings.Count(err.Error(), "WithTimeout"), "said once: %v", err)
		assert.Contains(t, err.Error(), "WithTimeout(50ms) ran out")
	}
}

// TestResultModeEveryAdapter: Result.Mode names how the format was asked
// for with every adapter: "prompt" for those that set no response format
// (Chat, XML), the tier for JSON; the same in Call and Stream.
func TestResultModeEveryAdapter(t *testing.T) {
	sig := mustParse(t, "q -> a")
	in := adapter.Values{"q": "x"}
	srv := lmtest.NewServer()
	defer srv.Close()
	srv.Handle(func(r lmtest.Request) lmtest.Reply {
		if r.Chat.ResponseFormat != nil {
			return lmtest.Text(`{"a": "ok"}`)
		}
		return lmtest.Text("[[ ## a ## ]]\nok\n\n<a>ok</a>")
	})
	gpt := adapter.WithRequest(openai.ChatCompletionRequest{Model: "gpt-4o"})
	for _, c := range []struct {
		a    adapter.Adapter
		want string
	}{
		{adapter.Chat{}, adapter.ModePrompt},
		{adapter.XML{}, adapter.ModePrompt},
		{adapter.JSON{}, adapter.ModeJSONSchema},
	} {
		res, err := adapter.Call(t.Context(), srv.Client(), sig, nil, in, adapter.UseAdapter(c.a), gpt)
		require.NoError(t, err)
		assert.Equal(t, c.want, res.Mode, "%s: Call", c.a.Name())
		_, sres, err := drain(adapter.Stream(t.Context(), srv.Client(), sig, nil, in, adapter.UseAdapter(c.a), gpt))
		require.NoError(t, err)
		assert.Equal(t, c.want, sres.Mode, "%s: Stream", c.a.Name())
	}
}
