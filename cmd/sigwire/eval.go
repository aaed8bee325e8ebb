package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"reflect"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/olekukonko/tablewriter"
	openai "github.com/sashabaranov/go-openai"
	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/internal/pyjson"
	"github.com/sigwire/adapter/signature"
)

// example is one devset line: the inputs and the gold outputs.
type example struct {
	index  int
	id     string
	inputs adapter.Values
	gold   adapter.Values
}

// pyOutput is one line of Python's outputs.
type pyOutput struct {
	id       string
	index    int // -1: none given
	outputs  adapter.Values
	err      string
	messages []chatMessage // the prompt Python sent, when given
}

// chatMessage is a message of a prompt as compared: its role and text.
type chatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Report is the JSON report of sigwire eval (-report).
type Report struct {
	Program   string   `json:"program"`
	Signature string   `json:"signature"`
	Module    string   `json:"module"`
	Metric    string   `json:"metric"`
	Fields    []string `json:"fields"` // the output fields scored and compared
	Examples  int      `json:"examples"`
	Errors    int      `json:"errors"` // Go calls that failed (scored 0)
	// Score is the mean of the Go side's example scores over the examples
	// with gold outputs; PythonScore the same of Python's outputs.
	Score       float64  `json:"score"`
	PythonScore *float64 `json:"python_score,omitempty"`
	// Agree and Differ count the examples whose Go and Python outputs agree
	// (equal after the metric's normalisation, on every field compared).
	Agree  int `json:"agree"`
	Differ int `json:"differ"`
	// PromptsCompared counts the examples Python's prompt was given for;
	// PromptsDiffer those where Go's first request differs from it.
	PromptsCompared int            `json:"prompts_compared"`
	PromptsDiffer   int            `json:"prompts_differ"`
	Requests        int            `json:"requests"`   // LM requests sent
	CacheHits       int            `json:"cache_hits"` // calls answered by the cache
	Usage           openai.Usage   `json:"usage"`
	Results         []ResultReport `json:"results"`
}

// ResultReport is one example's line of the report.
type ResultReport struct {
	Index       int            `json:"index"` // 0-based line of the devset
	ID          string         `json:"id,omitempty"`
	Gold        adapter.Values `json:"gold,omitempty"`
	Go          adapter.Values `json:"go,omitempty"`
	Error       string         `json:"error,omitempty"`
	Score       *float64       `json:"score,omitempty"`
	Python      adapter.Values `json:"python,omitempty"`
	PythonError string         `json:"python_error,omitempty"`
	PythonScore *float64       `json:"python_score,omitempty"`
	Agree       *bool          `json:"agree,omitempty"`
	Prompt      *PromptDiff    `json:"prompt,omitempty"`
}

// PromptDiff compares Go's first request with Python's prompt.
type PromptDiff struct {
	Same bool `json:"same"`
	// Message is the first message that differs (0-based; the shorter
	// prompt's length when one is a prefix of the other), Offset the first
	// byte of its content that differs, Go and Python the text from there.
	Message int    `json:"message"`
	Offset  int    `json:"offset"`
	Go      string `json:"go,omitempty"`
	Python  string `json:"python,omitempty"`
}

// runEval is "sigwire eval program.json devset.jsonl".
func runEval(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("sigwire eval", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var p programFlags
	p.register(fs)
	concurrency := fs.Int("concurrency", 8, "calls at once")
	metricName := fs.String("metric", "exact", "exact (DSPy's EM) or f1 (DSPy's F1): SQuAD's, on normalised text")
	field := fs.String("field", "", "score and compare this output field only (default: every output but reasoning)")
	pythonPath := fs.String("python", "", "Python's outputs for the same examples, JSONL: by \"id\", by \"index\" (0-based) or in order")
	reportPath := fs.String("report", "", "write the JSON report to this file")
	progress := fs.String("progress", "auto", "a progress bar on stderr: auto (when it is a terminal), on or off")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return usageStatus(err)
	}
	if len(pos) != 2 {
		fs.Usage()
		return 2
	}
	m, ok := metrics[*metricName]
	if !ok {
		return fail(stderr, "eval", fmt.Errorf("-metric %q: want exact or f1", *metricName))
	}
	if *concurrency < 1 {
		return fail(stderr, "eval", fmt.Errorf("-concurrency %d: want 1 or more", *concurrency))
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	e, err := p.build(pos[0], logger, true)
	if err != nil {
		return fail(stderr, "eval", err)
	}
	defer e.Close()
	sig := e.module.Signature()
	fields, err := scoredFields(sig, *field)
	if err != nil {
		return fail(stderr, "eval", err)
	}
	devset, err := readDevset(pos[1], sig)
	if err != nil {
		return fail(stderr, "eval", err)
	}
	var py []*pyOutput
	if *pythonPath != "" {
		outs, err := readPython(*pythonPath, sig)
		if err != nil {
			return fail(stderr, "eval", err)
		}
		if py, err = matchPython(devset, outs); err != nil {
			return fail(stderr, "eval", err)
		}
	}
	var bar *progressbar.ProgressBar
	if showProgress(*progress, stderr) {
		bar = progressbar.NewOptions(len(devset), progressbar.OptionSetWriter(stderr), progressbar.OptionSetDescription("eval"),
			progressbar.OptionShowCount(), progressbar.OptionSetPredictTime(true), progressbar.OptionClearOnFinish())
	}
	rep := evaluate(ctx, e, devset, py, fields, m, *concurrency, func() {
		if bar != nil {
			_ = bar.Add(1)
		}
	})
	if bar != nil {
		_ = bar.Finish()
	}
	rep.Program, rep.Signature, rep.Module, rep.Metric = pos[0], p.signature, p.module, *metricName
	if err := writeTables(stdout, rep, py != nil); err != nil {
		return fail(stderr, "eval", err)
	}
	if *reportPath != "" {
		b, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return fail(stderr, "eval", err)
		}
		if err := os.WriteFile(*reportPath, append(b, '\n'), 0o644); err != nil {
			return fail(stderr, "eval", err)
		}
	}
	if ctx.Err() != nil {
		return fail(stderr, "eval", ctx.Err())
	}
	return 0
}

// showProgress decides -progress.
func showProgress(mode string, w io.Writer) bool {
	switch mode {
	case "on":
		return true
	case "off":
		return false
	}
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// scoredFields are the output fields scored: the one named, or every
// output but a ChainOfThought's reasoning.
func scoredFields(sig *signature.Signature, name string) ([]signature.Field, error) {
	if name != "" {
		f, isOutput, ok := sig.Field(name)
		if !ok || !isOutput {
			return nil, fmt.Errorf("-field %q is not an output of the signature", name)
		}
		return []signature.Field{f}, nil
	}
	var out []signature.Field
	for _, f := range sig.Outputs() {
		if f.Name != "reasoning" {
			out = append(out, f)
		}
	}
	return out, nil
}

// readJSONL calls f with each non-blank line of path, decoded as a JSON
// object, and its 1-based line number.
func readJSONL(path string, f func(line int, obj pyjson.Object) error) error {
	file, err := os.Open(path)
	if err != nil {
		return err
	}
	defer file.Close()
	sc := bufio.NewScanner(file)
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		v, err := pyjson.Decode(line)
		if err != nil {
			return fmt.Errorf("%s:%d: %w", path, n, err)
		}
		o, ok := v.(pyjson.Object)
		if !ok {
			return fmt.Errorf("%s:%d: not a JSON object", path, n)
		}
		if err := f(n, o); err != nil {
			return fmt.Errorf("%s:%d: %w", path, n, err)
		}
	}
	return sc.Err()
}

// idOf is the text of an "id" member (a string or a number).
func idOf(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return pyjson.Str(v)
}

// readDevset reads the devset: each line a JSON object of the inputs and
// the gold outputs (by the signature's field names), and an optional "id"
// when no field is so named; other members are left alone.
func readDevset(path string, sig *signature.Signature) ([]example, error) {
	var out []example
	err := readJSONL(path, func(_ int, o pyjson.Object) error {
		ex := example{index: len(out), inputs: adapter.Values{}, gold: adapter.Values{}}
		for _, mem := range o.Members() {
			_, isOutput, ok := sig.Field(mem.Key)
			switch {
			case ok && isOutput:
				ex.gold[mem.Key] = mem.Value
			case ok:
				ex.inputs[mem.Key] = pyjson.Plain(mem.Value) // as serve reads it
			case mem.Key == "id":
				ex.id = idOf(mem.Value)
			}
		}
		out = append(out, ex)
		return nil
	})
	if err == nil && len(out) == 0 {
		err = fmt.Errorf("%s: no examples", path)
	}
	return out, err
}

// readPython reads Python's outputs, one JSON object a line: the outputs
// under "outputs" or at the top level (prediction.toDict()), and optional
// "id", "index" (0-based devset line), "error" (the call failed) and
// "messages" (the prompt it sent: [{"role", "content"}], as
// inspect_history or lm.history shows it).
func readPython(path string, sig *signature.Signature) ([]*pyOutput, error) {
	var out []*pyOutput
	err := readJSONL(path, func(_ int, o pyjson.Object) error {
		p := &pyOutput{index: -1, outputs: adapter.Values{}}
		src := o
		if v, ok := o.Get("outputs"); ok {
			if inner, ok := v.(pyjson.Object); ok {
				src = inner
			}
		}
		for _, mem := range src.Members() {
			if _, isOutput, ok := sig.Field(mem.Key); ok && isOutput {
				p.outputs[mem.Key] = mem.Value
			}
		}
		if v, ok := o.Get("id"); ok {
			p.id = idOf(v)
		}
		if v, ok := o.Get("index"); ok {
			n, isInt := v.(int)
			if !isInt || n < 0 {
				return fmt.Errorf(`"index" %v: want a 0-based line number`, v)
			}
			p.index = n
		}
		if v, ok := o.Get("error"); ok && v != nil {
			p.err = pyjson.Str(v)
		}
		if v, ok := o.Get("messages"); ok && v != nil {
			msgs, err := pythonMessages(v)
			if err != nil {
				return err
			}
			p.messages = msgs
		}
		out = append(out, p)
		return nil
	})
	return out, err
}

// pythonMessages reads a prompt as Python's LM history holds it.
func pythonMessages(v any) ([]chatMessage, error) {
	list, ok := v.([]any)
	if !ok {
		return nil, errors.New(`"messages": want a list of {"role", "content"}`)
	}
	out := make([]chatMessage, 0, len(list))
	for i, x := range list {
		o, ok := x.(pyjson.Object)
		if !ok {
			return nil, fmt.Errorf(`"messages"[%d]: want {"role", "content"}`, i)
		}
		var m chatMessage
		if r, ok := o.Get("role"); ok {
			m.Role = pyjson.Str(r)
		}
		c, _ := o.Get("content")
		switch c := c.(type) {
		case string:
			m.Content = c
		case []any: // content parts: their text, in order
			for _, part := range c {
				if po, ok := part.(pyjson.Object); ok {
					if t, ok := po.Get("text"); ok {
						m.Content += pyjson.Str(t)
					}
				}
			}
		}
		out = append(out, m)
	}
	return out, nil
}

// matchPython lines Python's outputs up with the devset: by id when both
// have ids, by index when given, otherwise in order.
func matchPython(devset []example, outs []*pyOutput) ([]*pyOutput, error) {
	res := make([]*pyOutput, len(devset))
	byID := map[string]int{}
	for i, ex := range devset {
		if ex.id != "" {
			byID[ex.id] = i
		}
	}
	for n, p := range outs {
		i := n
		switch {
		case p.id != "" && len(byID) > 0:
			j, ok := byID[p.id]
			if !ok {
				return nil, fmt.Errorf("python outputs: id %q is not in the devset", p.id)
			}
			i = j
		case p.index >= 0:
			i = p.index
		}
		if i >= len(devset) {
			return nil, fmt.Errorf("python outputs: line %d is for example %d; the devset has %d", n+1, i, len(devset))
		}
		if res[i] != nil {
			return nil, fmt.Errorf("python outputs: two lines for example %d", i)
		}
		res[i] = p
	}
	return res, nil
}

// evaluate runs e's module over devset, concurrency calls at once, and
// builds the report; done is called after each example.
func evaluate(ctx context.Context, e *env, devset []example, py []*pyOutput, fields []signature.Field, m metric, concurrency int, done func()) *Report {
	rep := &Report{Examples: len(devset), Results: make([]ResultReport, len(devset))}
	for _, f := range fields {
		rep.Fields = append(rep.Fields, f.Name)
	}
	var mu sync.Mutex // guards rep's totals
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range min(concurrency, len(devset)) {
		wg.Go(func() {
			for i := range jobs {
				r, res := runExample(ctx, e, devset[i], pyAt(py, i), fields, m)
				rep.Results[i] = r
				mu.Lock()
				if res != nil {
					rep.Requests += res.Requests
					rep.CacheHits += res.CacheHits
					rep.Usage.PromptTokens += res.Usage.PromptTokens
					rep.Usage.CompletionTokens += res.Usage.CompletionTokens
					rep.Usage.TotalTokens += res.Usage.TotalTokens
				}
				mu.Unlock()
				done()
			}
		})
	}
	for i := range devset {
		if ctx.Err() != nil {
			break
		}
		jobs <- i
	}
	close(jobs)
	wg.Wait()

	var goSum, pySum float64
	var scored, pyScored int
	for i := range rep.Results {
		r := &rep.Results[i]
		if r.Index != i { // never run: ctx ended first
			r.Index, r.ID, r.Error = i, devset[i].id, "not run: "+context.Cause(ctx).Error()
		}
		if r.Error != "" {
			rep.Errors++
		}
		if r.Score != nil {
			goSum += *r.Score
			scored++
		}
		if r.PythonScore != nil {
			pySum += *r.PythonScore
			pyScored++
		}
		if r.Agree != nil {
			if *r.Agree {
				rep.Agree++
			} else {
				rep.Differ++
			}
		}
		if r.Prompt != nil {
			rep.PromptsCompared++
			if !r.Prompt.Same {
				rep.PromptsDiffer++
			}
		}
	}
	if scored > 0 {
		rep.Score = goSum / float64(scored)
	}
	if pyScored > 0 {
		s := pySum / float64(pyScored)
		rep.PythonScore = &s
	}
	return rep
}

func pyAt(py []*pyOutput, i int) *pyOutput {
	if py == nil {
		return nil
	}
	return py[i]
}

// runExample runs one example and scores and compares it.
func runExample(ctx context.Context, e *env, ex example, py *pyOutput, fields []signature.Field, m metric) (ResultReport, *adapter.Result) {
	r := ResultReport{Index: ex.index, ID: ex.id}
	if len(ex.gold) > 0 {
		r.Gold = ex.gold
	}
	res, err := e.module.Call(ctx, e.lm, ex.inputs, e.opts...)
	if err != nil {
		r.Error = err.Error()
	} else if len(res.Outputs) > 0 {
		r.Go = res.Outputs[0]
	}
	r.Score = scoreOf(m, r.Go, ex.gold, fields, err != nil)
	if py == nil {
		return r, res
	}
	r.Python, r.PythonError = py.outputs, py.err
	r.PythonScore = scoreOf(m, py.outputs, ex.gold, fields, py.err != "")
	agree := err == nil && py.err == "" && agrees(r.Go, py.outputs, fields)
	r.Agree = &agree
	if py.messages != nil {
		if req, perr := prepare(ctx, e, ex.inputs); perr == nil {
			d := diffPrompt(req.(openai.ChatCompletionRequest).Messages, py.messages)
			r.Prompt = &d
		} else if r.Error == "" {
			r.Error = "prepare: " + perr.Error()
		}
	}
	return r, res
}

// scoreOf is the mean of m over the fields that have gold outputs; nil
// when none has. A failed call scores 0, as in DSPy's Evaluate.
func scoreOf(m metric, out, gold adapter.Values, fields []signature.Field, failed bool) *float64 {
	var sum float64
	n := 0
	for _, f := range fields {
		g, ok := gold[f.Name]
		if !ok {
			continue
		}
		n++
		if failed {
			continue
		}
		if v, ok := out[f.Name]; ok {
			sum += score(m, v, g, isList(f))
		}
	}
	if n == 0 {
		return nil
	}
	s := sum / float64(n)
	return &s
}

func isList(f signature.Field) bool {
	return f.Type != nil && (f.Type.Kind() == reflect.Slice || f.Type.Kind() == reflect.Array)
}

// agrees reports whether Go's and Python's outputs are equal after the
// metrics' normalisation on every field compared.
func agrees(goOut, pyOut adapter.Values, fields []signature.Field) bool {
	for _, f := range fields {
		g, gok := goOut[f.Name]
		p, pok := pyOut[f.Name]
		if gok != pok || gok && normalize(text(g)) != normalize(text(p)) {
			return false
		}
	}
	return true
}

// diffPrompt compares Go's messages with Python's by role and text.
func diffPrompt(goMsgs []openai.ChatCompletionMessage, pyMsgs []chatMessage) PromptDiff {
	n := min(len(goMsgs), len(pyMsgs))
	for i := range n {
		g := chatMessage{Role: goMsgs[i].Role, Content: messageText(goMsgs[i])}
		p := pyMsgs[i]
		if g == p {
			continue
		}
		if g.Role != p.Role {
			return PromptDiff{Message: i, Go: "role " + g.Role, Python: "role " + p.Role}
		}
		off := 0
		for off < len(g.Content) && off < len(p.Content) && g.Content[off] == p.Content[off] {
			off++
		}
		return PromptDiff{Message: i, Offset: off, Go: clip(g.Content[off:], 80), Python: clip(p.Content[off:], 80)}
	}
	if len(goMsgs) != len(pyMsgs) {
		return PromptDiff{Message: n, Go: strconv.Itoa(len(goMsgs)) + " messages", Python: strconv.Itoa(len(pyMsgs)) + " messages"}
	}
	return PromptDiff{Same: true}
}

// messageText is a message's text: its content, or its text parts.
func messageText(m openai.ChatCompletionMessage) string {
	if len(m.MultiContent) == 0 {
		return m.Content
	}
	var s string
	for _, p := range m.MultiContent {
		if p.Type == openai.ChatMessagePartTypeText {
			s += p.Text
		}
	}
	return s
}

// writeTables prints the examples and the totals as tables.
func writeTables(w io.Writer, rep *Report, withPython bool) error {
	head := []string{"#", "id", "go " + rep.Metric, "error"}
	if withPython {
		head = []string{"#", "id", "go " + rep.Metric, "python " + rep.Metric, "agree", "prompt", "error"}
	}
	t := tablewriter.NewTable(w)
	t.Header(toAny(head)...)
	for _, r := range rep.Results {
		row := []string{strconv.Itoa(r.Index), r.ID, fmtScore(r.Score)}
		if withPython {
			row = append(row, fmtScore(r.PythonScore), fmtAgree(r.Agree), fmtPrompt(r.Prompt))
		}
		row = append(row, clip(r.Error, 60))
		if err := t.Append(toAny(row)...); err != nil {
			return err
		}
	}
	if err := t.Render(); err != nil {
		return err
	}
	sum := tablewriter.NewTable(w)
	sum.Header("examples", "errors", "go "+rep.Metric, "python "+rep.Metric, "agree", "differ", "prompts differ", "requests", "cache hits")
	py, agree, differ, prompts := "-", "-", "-", "-"
	if withPython {
		agree, differ = strconv.Itoa(rep.Agree), strconv.Itoa(rep.Differ)
		if rep.PythonScore != nil {
			py = fmt.Sprintf("%.3f", *rep.PythonScore)
		}
		if rep.PromptsCompared > 0 {
			prompts = fmt.Sprintf("%d of %d", rep.PromptsDiffer, rep.PromptsCompared)
		}
	}
	if err := sum.Append(strconv.Itoa(rep.Examples), strconv.Itoa(rep.Errors), fmt.Sprintf("%.3f", rep.Score), py, agree, differ, prompts,
		strconv.Itoa(rep.Requests), strconv.Itoa(rep.CacheHits)); err != nil {
		return err
	}
	return sum.Render()
}

func toAny(s []string) []any {
	out := make([]any, len(s))
	for i, x := range s {
		out[i] = x
	}
	return out
}

func fmtScore(s *float64) string {
	if s == nil {
		return "-"
	}
	return fmt.Sprintf("%.3f", *s)
}

func fmtAgree(a *bool) string {
	switch {
	case a == nil:
		return "-"
	case *a:
		return "agree"
	}
	return "differ"
}

func fmtPrompt(p *PromptDiff) string {
	switch {
	case p == nil:
		return "-"
	case p.Same:
		return "same"
	}
	return fmt.Sprintf("differs (message %d)", p.Message)
}

// clip cuts s to at most n bytes, on a rune boundary, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
