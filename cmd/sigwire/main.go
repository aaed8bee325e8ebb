// Command sigwire serves, shows and evaluates a program DSPy saved
// (program.save("program.json")), through the library's modules:
//
//	sigwire serve  program.json -signature "question -> answer" [-module predict|cot|react|reactv2] [-addr :8080]
//	sigwire prompt program.json -signature "question -> answer" -inputs '{"question": "…"}'
//	sigwire eval   program.json devset.jsonl -signature "question -> answer" [-metric exact|f1] [-python outputs.jsonl] [-report report.json]
//
// serve answers the routes of package serve (POST /predict, /stream,
// /prepare; GET /schema, /openapi.json, /healthz, /readyz). prompt prints
// the chat completion request the module would send for the inputs,
// without calling the LM. eval runs the program over a devset, scores it,
// and, given Python's outputs for the same examples, reports where Go and
// Python differ. The model, endpoint and key come from -model, -base-url
// and -api-key or from OPENAI_MODEL, OPENAI_BASE_URL and OPENAI_API_KEY.
// docs/serve.md has the details.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

const usage = `usage:
  sigwire serve  program.json -signature SIG [flags]   serve the program over HTTP
  sigwire prompt program.json -signature SIG [flags]   print the request the program would send
  sigwire eval   program.json devset.jsonl -signature SIG [flags]   run and score it over a devset
Run "sigwire COMMAND -h" for a command's flags.
`

// run is the command: it returns the exit status (0 ok, 1 failed, 2 bad
// usage). It stops when ctx is done (serve stops serving).
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "serve":
		return runServe(ctx, args[1:], stdout, stderr)
	case "prompt":
		return runPrompt(ctx, args[1:], stdout, stderr)
	case "eval":
		return runEval(ctx, args[1:], stdout, stderr)
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "sigwire: unknown command %q\n%s", args[0], usage)
	return 2
}

// fail prints err and returns 1.
func fail(stderr io.Writer, cmd string, err error) int {
	fmt.Fprintf(stderr, "sigwire %s: %v\n", cmd, err)
	return 1
}
