package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/internal/pyjson"
	"github.com/sigwire/adapter/serve"
)

// inputFlags collects -input name=value (a string) and name:=JSON.
type inputFlags []string

func (f *inputFlags) String() string     { return strings.Join(*f, " ") }
func (f *inputFlags) Set(s string) error { *f = append(*f, s); return nil }

// runPrompt is "sigwire prompt program.json": the chat completion request
// the module would send first for the inputs, as JSON (what go-openai
// sends), without calling the LM.
func runPrompt(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("sigwire prompt", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var p programFlags
	p.register(fs)
	inputsJSON := fs.String("inputs", "", `the inputs as a JSON object, {"question": "…"} (numbers read as Python's json.loads reads them)`)
	var each inputFlags
	fs.Var(&each, "input", "an input, name=text (a string) or name:=JSON; repeat it for each field")
	indent := fs.Bool("indent", false, "indent the JSON")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return usageStatus(err)
	}
	if len(pos) != 1 {
		fs.Usage()
		return 2
	}
	in, err := readInputs(*inputsJSON, each)
	if err != nil {
		return fail(stderr, "prompt", err)
	}
	e, err := p.build(pos[0], slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})), false)
	if err != nil {
		return fail(stderr, "prompt", err)
	}
	defer e.Close()
	req, err := prepare(ctx, e, in)
	if err != nil {
		return fail(stderr, "prompt", err)
	}
	var b []byte
	if *indent {
		b, err = json.MarshalIndent(req, "", "  ")
	} else {
		b, err = json.Marshal(req)
	}
	if err != nil {
		return fail(stderr, "prompt", err)
	}
	fmt.Fprintf(stdout, "%s\n", b)
	return 0
}

// prepare is the request e's module would send first for in.
func prepare(ctx context.Context, e *env, in adapter.Values) (any, error) {
	p, ok := e.module.(serve.Preparer)
	if !ok {
		return nil, fmt.Errorf("%T cannot show its request", e.module)
	}
	return p.Prepare(ctx, e.lm, in, e.opts...)
}

// readInputs builds the inputs from a JSON object and name=value pairs
// (the pairs win).
func readInputs(obj string, pairs []string) (adapter.Values, error) {
	in := adapter.Values{}
	if obj != "" {
		v, err := serve.DecodeInputs([]byte(obj))
		if err != nil {
			return nil, fmt.Errorf("-inputs: %w", err)
		}
		in = v
	}
	for _, kv := range pairs {
		name, val, ok := strings.Cut(kv, "=")
		if !ok || name == "" || name == ":" {
			return nil, fmt.Errorf("-input %q: want name=text or name:=JSON", kv)
		}
		if n, isJSON := strings.CutSuffix(name, ":"); isJSON {
			v, err := pyjson.Decode([]byte(val))
			if err != nil {
				return nil, fmt.Errorf("-input %s: %w", n, err)
			}
			in[n] = pyjson.Plain(v) // as serve reads it
			continue
		}
		in[name] = val
	}
	return in, nil
}
