package main

import (
	"context"
	"embed"
	"errors"
	"flag"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"time"

	"github.com/sigwire/adapter/serve"
)

// runServe is "sigwire serve program.json": the program behind a
// serve.Handler on -addr until ctx is done, then a graceful shutdown.
func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("sigwire serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var p programFlags
	p.register(fs)
	addr := fs.String("addr", ":8080", "the address to listen on (host:port; port 0 picks a free one, logged as addr=)")
	maxConcurrent := fs.Int("max-concurrent", 0, "calls at once, more are answered 429 (0: serve's 64; negative: no bound)")
	requestTimeout := fs.Duration("request-timeout", 0, "bound on each request's call (0: serve's 2 minutes)")
	jsonLogs := fs.Bool("json-logs", false, "log JSON lines instead of text")
	web := fs.Bool("web", false, "also serve a web page at / that runs the program from a form and shows its stream")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return usageStatus(err)
	}
	if len(pos) != 1 {
		fs.Usage()
		return 2
	}
	var logger *slog.Logger
	if *jsonLogs {
		logger = slog.New(slog.NewJSONHandler(stderr, nil))
	} else {
		logger = slog.New(slog.NewTextHandler(stderr, nil))
	}
	e, err := p.build(pos[0], logger, true)
	if err != nil {
		return fail(stderr, "serve", err)
	}
	defer e.Close()
	for _, line := range e.ignored {
		logger.Warn("load: left out", "what", line)
	}
	h := &serve.Handler{Module: e.module, LM: e.lm, Options: e.opts, Logger: logger,
		MaxConcurrent: *maxConcurrent, Timeout: *requestTimeout, Title: filepath.Base(pos[0])}
	if *web {
		return serveOn(ctx, *addr, withPage(h), logger, stderr)
	}
	return serveOn(ctx, *addr, h, logger, stderr)
}

//go:embed web.html
var webPage embed.FS

// withPage serves the web page at / and h's routes beside it: a form for
// the inputs (GET /schema) whose run reads POST /stream's events from the
// response body, field deltas and agent steps shown as they arrive.
func withPage(h http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/", h)
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		http.ServeFileFS(w, r, webPage, "web.html")
	})
	return mux
}

// serveOn serves h on addr until ctx is done.
func serveOn(ctx context.Context, addr string, h http.Handler, logger *slog.Logger, stderr io.Writer) int {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fail(stderr, "serve", err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn)}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	logger.Info("listening", "addr", ln.Addr().String())
	select {
	case err := <-done:
		return fail(stderr, "serve", err)
	case <-ctx.Done():
	}
	logger.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		_ = srv.Close()
	}
	if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fail(stderr, "serve", err)
	}
	return 0
}

// usageStatus is the exit status for a flag error: 0 for -h, else 2.
func usageStatus(err error) int {
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	return 2
}

// parseArgs parses flags wherever they stand among the positional
// arguments ("sigwire serve program.json -addr :8080" as well as
// "sigwire serve -addr :8080 program.json"); "--" ends the flags.
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		if args[0] == "--" { // flag.Parse leaves a "--" it met after a positional
			return append(pos, args[1:]...), nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}
