package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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

// The browser check runs Debian's chromium headless. .ci/run installs it
// and sets SIGWIRE_CHROMIUM=1; then (or with CI set) a missing chromium
// fails the test. Elsewhere it skips, saying how to run it.
const howToRun = "no chromium for the browser check: apt-get install chromium (Debian's package), " +
	"then go test ./examples/serve-web; bash .ci/run does it"

func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("SIGWIRE_CHROMIUM") != "" || os.Getenv("CI") != "" {
		t.Fatal("chromium is not on PATH (in CI the browser check must run: .ci/run installs Debian's chromium)")
	}
	t.Skip(howToRun)
	return ""
}

// TestBrowser opens the page in headless Chromium with a question in its
// URL, waits until the page marks the run done (data-done on its body),
// and reads the DOM the page built from the streamed events: the steps'
// thoughts, the tools' calls and results, and the answer; steps were on
// the page before the run ended. Chromium is
// driven through its DevTools protocol on a pipe (--remote-debugging-pipe:
// JSON messages on file descriptors 3 and 4), since --dump-dom with
// --virtual-time-budget dumps the DOM before a streamed fetch body has
// ended: virtual time does not wait for a body still arriving.
func TestBrowser(t *testing.T) {
	bin := chromiumPath(t)
	srv := newTestServer(t, 10*time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	b, err := startBrowser(ctx, bin, t.TempDir())
	require.NoError(t, err)
	defer b.close()

	page := srv.URL + "/?q=" + url.QueryEscape("I am in Bergen today and in Oslo tomorrow. Do I need an umbrella?")
	session, err := b.open(page)
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
		v, err := b.eval(session, `JSON.stringify({done: document.body ? document.body.dataset.done : "", steps: document.querySelectorAll("#steps li").length})`)
		require.NoError(t, err)
		var st struct {
			Done  string
			Steps int
		}
		require.NoError(t, json.Unmarshal([]byte(v), &st))
		state = st.Done
		partial = partial || state == "false" && st.Steps > 0
	}
	// The DOM the page built, without its script and style.
	dom, err := b.eval(session, `(() => { const c = document.documentElement.cloneNode(true); c.querySelectorAll("script, style").forEach((e) => e.remove()); return c.outerHTML; })()`)
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
		assert.Contains(t, dom, htmlText(want))
	}
	assert.Equal(t, 4, strings.Count(dom, `<li data-step=`), "four steps")
}

// htmlText is s as outerHTML writes text: &, < and > escaped, quotes not.
func htmlText(s string) string {
	if strings.HasPrefix(s, "<") || strings.HasPrefix(s, "data-") {
		return s // markup, written as is
	}
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// browser is a headless Chromium spoken to over --remote-debugging-pipe.
type browser struct {
	cmd  *exec.Cmd
	in   *os.File // commands to Chromium (its fd 3)
	out  *bufio.Reader
	outF *os.File // its replies and events (its fd 4)
	id   int
}

func startBrowser(ctx context.Context, bin, profile string) (*browser, error) {
	cmdR, cmdW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	resR, resW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, bin, "--headless", "--disable-gpu", "--no-sandbox", "--disable-dev-shm-usage",
		"--no-first-run", "--user-data-dir="+profile, "--remote-debugging-pipe", "about:blank")
	cmd.ExtraFiles = []*os.File{cmdR, resW} // fds 3 and 4
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	cmdR.Close()
	resW.Close()
	return &browser{cmd: cmd, in: cmdW, out: bufio.NewReader(resR), outF: resR}, nil
}

func (b *browser) close() {
	_, _ = b.call("", "Browser.close", nil)
	b.in.Close()
	done := make(chan error, 1)
	go func() { done <- b.cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = b.cmd.Process.Kill()
		<-done
	}
	b.outF.Close()
}

// call sends a DevTools command (to a page's session when session is not
// empty) and returns its result, skipping the events that come between.
func (b *browser) call(session, method string, params any) (json.RawMessage, error) {
	b.id++
	msg := map[string]any{"id": b.id, "method": method}
	if params != nil {
		msg["params"] = params
	}
	if session != "" {
		msg["sessionId"] = session
	}
	data, err := json.Marshal(msg)
	if err != nil {
		return nil, err
	}
	if _, err := b.in.Write(append(data, 0)); err != nil {
		return nil, err
	}
	for {
		line, err := b.out.ReadBytes(0)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", method, err)
		}
		var reply struct {
			ID     int             `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal(line[:len(line)-1], &reply); err != nil {
			return nil, err
		}
		if reply.ID != b.id {
			continue // an event
		}
		if reply.Error != nil {
			return nil, fmt.Errorf("%s: %s", method, reply.Error.Message)
		}
		return reply.Result, nil
	}
}

// open opens url in a new page and returns the page's session.
func (b *browser) open(url string) (string, error) {
	res, err := b.call("", "Target.createTarget", map[string]any{"url": url})
	if err != nil {
		return "", err
	}
	var target struct{ TargetID string }
	if err := json.Unmarshal(res, &target); err != nil {
		return "", err
	}
	res, err = b.call("", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true})
	if err != nil {
		return "", err
	}
	var attached struct{ SessionID string }
	if err := json.Unmarshal(res, &attached); err != nil {
		return "", err
	}
	return attached.SessionID, nil
}

// eval evaluates a JavaScript expression in the page and returns its
// value as text.
func (b *browser) eval(session, expr string) (string, error) {
	res, err := b.call(session, "Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true})
	if err != nil {
		return "", err
	}
	var r struct {
		Result struct {
			Value any `json:"value"`
		} `json:"result"`
		ExceptionDetails *struct {
			Text string `json:"text"`
		} `json:"exceptionDetails"`
	}
	if err := json.Unmarshal(res, &r); err != nil {
		return "", err
	}
	if r.ExceptionDetails != nil {
		return "", errors.New(r.ExceptionDetails.Text)
	}
	if r.Result.Value == nil {
		return "", nil
	}
	return fmt.Sprint(r.Result.Value), nil
}
