// Package browsertest drives Debian's chromium, headless, for the tests of
// the web pages (examples/serve-web, sigwire serve -web): it opens a page
// and evaluates JavaScript in it through the DevTools protocol on a pipe
// (--remote-debugging-pipe: JSON messages ending in a NUL byte, commands
// on the browser's file descriptor 3, replies and events on 4), so that a
// test can wait for what a page does after it has loaded — a streamed
// fetch, say, which --dump-dom with --virtual-time-budget does not wait
// for.
package browsertest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"
)

// HowToRun says how to run a browser check that skipped.
const HowToRun = "no chromium for the browser check: apt-get install chromium (Debian's package) and run the test again; bash .ci/run does it"

// Path returns the chromium binary on PATH. Without one the test skips,
// saying how to run it, except in CI (SIGWIRE_CHROMIUM or CI set: .ci/run
// installs chromium and sets SIGWIRE_CHROMIUM=1), where it fails.
func Path(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("SIGWIRE_CHROMIUM") != "" || os.Getenv("CI") != "" {
		t.Fatal("chromium is not on PATH (in CI the browser check must run: .ci/run installs Debian's chromium)")
	}
	t.Skip(HowToRun)
	return ""
}

// Browser is a headless chromium. It is not safe for concurrent use.
type Browser struct {
	cmd  *exec.Cmd
	in   *os.File // commands (the browser's fd 3)
	outF *os.File // replies and events (its fd 4)
	out  *bufio.Reader
	id   int
}

// Start starts chromium (bin) headless with a profile in the directory
// profile; ctx ending kills it.
func Start(ctx context.Context, bin, profile string) (*Browser, error) {
	cmdR, cmdW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	resR, resW, err := os.Pipe()
	if err != nil {
		cmdR.Close()
		cmdW.Close()
		return nil, err
	}
	cmd := exec.CommandContext(ctx, bin, "--headless", "--disable-gpu", "--no-sandbox", "--disable-dev-shm-usage",
		"--no-first-run", "--user-data-dir="+profile, "--remote-debugging-pipe", "about:blank")
	cmd.ExtraFiles = []*os.File{cmdR, resW} // fds 3 and 4
	cmd.WaitDelay = 5 * time.Second
	err = cmd.Start()
	cmdR.Close()
	resW.Close()
	if err != nil {
		cmdW.Close()
		resR.Close()
		return nil, err
	}
	return &Browser{cmd: cmd, in: cmdW, outF: resR, out: bufio.NewReader(resR)}, nil
}

// Close closes the browser and waits for it to exit.
func (b *Browser) Close() {
	_, _ = b.call("", "Browser.close", nil)
	b.in.Close()
	done := make(chan struct{})
	go func() { _ = b.cmd.Wait(); close(done) }()
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
func (b *Browser) call(session, method string, params any) (json.RawMessage, error) {
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

// Page is a page open in a Browser.
type Page struct {
	b       *Browser
	session string
}

// Open opens url in a new page.
func (b *Browser) Open(url string) (*Page, error) {
	res, err := b.call("", "Target.createTarget", map[string]any{"url": url})
	if err != nil {
		return nil, err
	}
	var target struct{ TargetID string }
	if err := json.Unmarshal(res, &target); err != nil {
		return nil, err
	}
	res, err = b.call("", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true})
	if err != nil {
		return nil, err
	}
	var attached struct{ SessionID string }
	if err := json.Unmarshal(res, &attached); err != nil {
		return nil, err
	}
	return &Page{b: b, session: attached.SessionID}, nil
}

// Eval evaluates a JavaScript expression in the page and returns its
// value as text ("" for null and undefined).
func (p *Page) Eval(expr string) (string, error) {
	res, err := p.b.call(p.session, "Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true})
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

// DOM is the page's DOM as HTML, without its scripts and styles.
func (p *Page) DOM() (string, error) {
	return p.Eval(`(() => { const c = document.documentElement.cloneNode(true); c.querySelectorAll("script, style").forEach((e) => e.remove()); return c.outerHTML; })()`)
}
