package main

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sigwire/adapter/internal/browsertest"
	"github.com/sigwire/adapter/lmtest"
)

// TestServeWeb runs "sigwire serve -web" on the real program and opens its
// page in headless Chromium (Debian's; .ci/run installs it) with the
// inputs in the URL: the page builds its form from GET /schema, runs it
// through POST /stream, and shows the outputs as they arrive, then marks
// the run done. Without chromium the browser part skips, except in CI,
// where it fails.
func TestServeWeb(t *testing.T) {
	srv := lmtest.NewServer()
	defer srv.Close()
	srv.Handle(func(lmtest.Request) lmtest.Reply {
		return reply("Run cd - to go back.").ChunkSize(4).ChunkDelay(5 * time.Millisecond)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var stdout, stderr syncBuffer
	code := make(chan int, 1)
	go func() {
		code <- run(ctx, programArgs("serve", srv, "-addr", "127.0.0.1:0", "-web"), &stdout, &stderr)
	}()
	base := waitAddr(t, &stderr, code)
	defer func() {
		cancel()
		<-code
	}()

	resp, err := http.Get(base + "/")
	require.NoError(t, err)
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, string(page), `fetch("stream"`)
	resp, err = http.Get(base + "/healthz")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode, "the handler's routes beside the page")

	b, err := browsertest.Start(ctx, browsertest.Path(t), t.TempDir())
	require.NoError(t, err)
	defer b.Close()
	q := url.Values{"context": {"cd - goes back to the previous directory."}, "question": {"How do I go back?"}}
	p, err := b.Open(base + "/?" + q.Encode())
	require.NoError(t, err)
	var state string
	for state != "true" && state != "error" {
		if ctx.Err() != nil {
			t.Fatalf("the page never finished (data-done=%q)", state)
		}
		time.Sleep(20 * time.Millisecond)
		state, err = p.Eval(`document.body ? document.body.dataset.done : ""`)
		require.NoError(t, err)
	}
	dom, err := p.DOM()
	require.NoError(t, err)
	require.Equal(t, "true", state, "the page shows an error: %s", dom)
	for _, want := range []string{
		`data-done="true"`,
		`<dd data-field="reasoning">The context says so.</dd>`,
		`<dd data-field="response">Run cd - to go back.</dd>`,
		`1 requests, 140 tokens, model test-model`,
	} {
		assert.Contains(t, dom, want)
	}
	v, err := p.Eval(`document.getElementById("in-context").value`)
	require.NoError(t, err)
	assert.Equal(t, "cd - goes back to the previous directory.", v, "the form filled from the URL")
	assert.Less(t, strings.Index(dom, `id="in-context"`), strings.Index(dom, `id="in-question"`), "the inputs in the signature's order")
	reqs := srv.Requests()
	require.Len(t, reqs, 1)
	assert.True(t, reqs[0].Chat.Stream)
	assert.Contains(t, reqs[0].Chat.Messages[0].Content, instructions)
}
