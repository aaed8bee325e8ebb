package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sigwire/adapter/internal/browsertest"
	"github.com/sigwire/adapter/lmtest"
)

// newTestServer is the example's page and API on a loopback listener,
// backed by the stand-in model.
func newTestServer(t *testing.T, delay time.Duration) *httptest.Server {
	t.Helper()
	lm := lmtest.NewServer()
	t.Cleanup(lm.Close)
	lm.Handle(model(delay))
	mux, err := newMux(lm.Client(), slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// TestPageAndStream: the page is served, and the stream it reads carries
// the agent's steps (a tool's start and end per step) and a done event
// with the answer.
func TestPageAndStream(t *testing.T) {
	srv := newTestServer(t, 0)
	resp, err := http.Get(srv.URL + "/")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, string(body), `fetch("api/stream"`)
	assert.Contains(t, resp.Header.Get("Content-Type"), "text/html")

	resp, err = http.Post(srv.URL+"/api/stream", "application/json", strings.NewReader(`{"question": "Do I need an umbrella?"}`))
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	counts := map[string]int{}
	var done struct {
		Outputs map[string]any `json:"outputs"`
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	var event string
	for sc.Scan() {
		line := sc.Text()
		if e, ok := strings.CutPrefix(line, "event: "); ok {
			event = e
			counts[event]++
		}
		if d, ok := strings.CutPrefix(line, "data: "); ok && event == "done" {
			require.NoError(t, json.Unmarshal([]byte(d), &done))
		}
	}
	assert.Equal(t, 8, counts["tool"], "three tools and finish, each started and ended")
	assert.Equal(t, 1, counts["done"])
	assert.Zero(t, counts["error"])
	assert.Equal(t, Advice, done.Outputs["advice"])
	assert.Equal(t, true, done.Outputs["umbrella"])
}

// TestBrowser opens the page in headless Chromium (Debian's, which .ci/run
// installs) with a question in its URL, waits until the page marks the run
// done (data-done on its body), and reads the DOM the page built from the
// streamed events: the steps' thoughts, the tools' calls and results, and
// the answer; steps were on the page before the run ended. Without
// chromium it skips, except in CI, where it fails.
func TestBrowser(t *testing.T) {
	bin := browsertest.Path(t)
	srv := newTestServer(t, 10*time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	b, err := browsertest.Start(ctx, bin, t.TempDir())
	require.NoError(t, err)
	defer b.Close()

	page, err := b.Open(srv.URL + "/?q=" + url.QueryEscape("I am in Bergen today and in Oslo tomorrow. Do I need an umbrella?"))
	require.NoError(t, err)
	// Poll the page as it runs: the steps appear while the stream is
	// still going, before the done event.
	var state string
	partial := false
	for state != "true" && state != "error" {
		if ctx.Err() != nil {
			t.Fatalf("the page never finished (data-done=%q)", state)
		}
		time.Sleep(20 * time.Millisecond)
		v, err := page.Eval(`JSON.stringify({done: document.body ? document.body.dataset.done : "", steps: document.querySelectorAll("#steps li").length})`)
		require.NoError(t, err)
		var st struct {
			Done  string
			Steps int
		}
		require.NoError(t, json.Unmarshal([]byte(v), &st))
		state = st.Done
		partial = partial || state == "false" && st.Steps > 0
	}
	dom, err := page.DOM()
	require.NoError(t, err)
	require.Equal(t, "true", state, "the page shows an error: %s", dom)
	assert.True(t, partial, "no step was shown before the run ended")

	for _, want := range []string{
		`data-done="true"`,
		`<p class="thought">I need today's forecast for Bergen.</p>`,
		`<p class="thought">I know the weather and what to pack.</p>`,
		`→ weather {"city":"Bergen"}`,
		`← weather: {"city":"Oslo","celsius":19,"rain":false,"description":"sunny"}`,
		`← packing_list: ["umbrella","rain jacket","waterproof shoes"]`,
		`<dd data-field="advice">` + Advice + `</dd>`,
		`<dd data-field="umbrella">true</dd>`,
		`5 requests`,
	} {
		assert.Contains(t, dom, want)
	}
	assert.Equal(t, 4, strings.Count(dom, `<li data-step=`), "four steps")
}
