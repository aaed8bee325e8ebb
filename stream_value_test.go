package adapter_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/internal/golden"
	"github.com/sigwire/adapter/lmtest"
	"github.com/sigwire/adapter/predict"
	"github.com/sigwire/adapter/signature"
)

// consumerTexts is the consumer Chunk documents: per field, the deltas
// joined, a Replace chunk discarding what came before.
type consumerTexts map[string]string

func (f consumerTexts) apply(c adapter.Chunk) {
	if c.Field == "" {
		return
	}
	if c.Replace {
		f[c.Field] = ""
	}
	f[c.Field] += c.Delta
}

// valueCase is a reply to read with one adapter and signature.
type valueCase struct {
	name  string
	a     adapter.Adapter
	sig   *signature.Signature
	reply string
}

// valueServer answers every request with the reply in hand.
type valueServer struct {
	*lmtest.Server
	mu    sync.Mutex
	reply lmtest.Reply
}

func newValueServer(t testing.TB) *valueServer {
	t.Helper()
	s := &valueServer{Server: lmtest.NewServer()}
	s.Handle(func(lmtest.Request) lmtest.Reply {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.reply
	})
	t.Cleanup(s.Close)
	return s
}

func (s *valueServer) set(r lmtest.Reply) {
	s.mu.Lock()
	s.reply = r
	s.mu.Unlock()
}

// checkDeltasAreTheValue calls and streams c's reply (in chunks of each
// size, 0 for the whole reply in one chunk) and reports where a consumer
// that applies deltas and replacements does not end with the Result's
// value of a str output, or where Stream's outputs differ from Call's.
// It returns false when Call failed (nothing to compare).
func checkDeltasAreTheValue(t testing.TB, srv *valueServer, c valueCase, sizes []int) bool {
	t.Helper()
	_, ok := checkReplaced(t, srv, c, sizes)
	return ok
}

// checkReplaced is checkDeltasAreTheValue, also reporting the chunk sizes
// at which the stream sent a replacement.
func checkReplaced(t testing.TB, srv *valueServer, c valueCase, sizes []int) (replaced []int, ok bool) {
	t.Helper()
	in := adapter.Values{}
	for i := range c.sig.NumInputs() {
		in[c.sig.Input(i).Name] = reflect.Zero(c.sig.Input(i).Type).Interface()
	}
	opts := []adapter.CallOption{adapter.UseAdapter(c.a), adapter.NoRetry(), adapter.WithRequest(openai.ChatCompletionRequest{Model: "m"})}
	srv.set(lmtest.Text(c.reply))
	res, err := adapter.Call(t.Context(), srv.Client(), c.sig, nil, in, opts...)
	for _, size := range sizes {
		r := lmtest.Text(c.reply)
		if size > 0 {
			r = r.ChunkSize(size)
		} else {
			r = r.ChunkSize(len(c.reply) + 1)
		}
		srv.set(r)
		texts := consumerTexts{}
		var last adapter.Chunk
		var serr error
		for ch, e := range adapter.Stream(t.Context(), srv.Client(), c.sig, nil, in, opts...) {
			if e != nil {
				serr = e
				break
			}
			texts.apply(ch)
			if ch.Replace && (len(replaced) == 0 || replaced[len(replaced)-1] != size) {
				replaced = append(replaced, size)
			}
			last = ch
		}
		if errText(err) != errText(serr) {
			t.Errorf("%s (%s, chunk %d): Call: %v\nStream: %v\nreply %q", c.name, c.a.Name(), size, err, serr, c.reply)
			continue
		}
		if err != nil {
			continue
		}
		if !last.Done {
			t.Errorf("%s (%s, chunk %d): no Done chunk", c.name, c.a.Name(), size)
			continue
		}
		if !reflect.DeepEqual(res.Outputs, last.Result.Outputs) {
			t.Errorf("%s (%s, chunk %d): Call %v, Stream %v", c.name, c.a.Name(), size, res.Outputs, last.Result.Outputs)
		}
		out := last.Result.Outputs[0]
		for i := range c.sig.NumOutputs() {
			f := c.sig.Output(i)
			v, has := out[f.Name]
			if !has {
				continue
			}
			if str, ok := v.(string); ok {
				if texts[f.Name] != str {
					t.Errorf("%s (%s, chunk %d): field %s: deltas %q, value %q\nreply %q", c.name, c.a.Name(), size, f.Name, texts[f.Name], str, c.reply)
				}
				continue
			}
			// Another type: text that ParseValue reads as the value
			// (nothing, or such text, for no value).
			if texts[f.Name] == "" && isNone(v) {
				continue
			}
			if got, err := adapter.ParseValue(texts[f.Name], f); err != nil || !reflect.DeepEqual(got, v) {
				t.Errorf("%s (%s, chunk %d): field %s: deltas %q read as %#v (%v), value %#v\nreply %q", c.name, c.a.Name(), size, f.Name, texts[f.Name], got, err, v, c.reply)
			}
		}
	}
	return replaced, err == nil
}

// isNone reports None: nil, or a nil pointer, slice or map.
func isNone(v any) bool {
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Invalid:
		return true
	case reflect.Pointer, reflect.Slice, reflect.Map, reflect.Interface:
		return rv.IsNil()
	}
	return false
}

// corpusValueCases returns the replies of the golden and corpus files,
// the leniency cases and the stream fuzzers' seeds, each with the
// adapter it was written for (first) and the other two.
func corpusValueCases(t testing.TB) (own, other []valueCase) {
	adapters := []adapter.Adapter{adapter.Chat{}, adapter.JSON{}, adapter.XML{}}
	add := func(name, adapterName string, sig *signature.Signature, reply string) {
		for _, a := range adapters {
			c := valueCase{name: name, a: a, sig: sig, reply: reply}
			if a.Name() == adapterName {
				own = append(own, c)
			} else {
				other = append(other, c)
			}
		}
	}
	for _, pattern := range []string{"testdata/dspy_golden*.json", "testdata/malformed*.json"} {
		cases, err := golden.LoadGlob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cases {
			if c.Completion == "" || c.Signature == nil {
				continue
			}
			sig, err := (&golden.Builder{Custom: typesNames()}).Signature(c.Signature)
			if err != nil {
				continue
			}
			add(c.ID, c.Adapter, sig, c.Completion)
		}
	}
	opts := signature.WithTypes(map[string]reflect.Type{"Person": reflect.TypeFor[Person]()})
	for _, c := range leniencyCases {
		sig, err := signature.Parse(c.sig, opts)
		if err != nil {
			t.Fatal(err)
		}
		add(c.family+"/"+c.name, c.adapter, sig, c.reply)
	}
	sig := must(signature.Parse("question -> reasoning, answer"))
	for target, name := range map[string]string{"FuzzChatStream": "chat", "FuzzXMLStream": "xml", "FuzzJSONStream": "json"} {
		for _, s := range fuzzSeeds(t, target) {
			add(target+"/"+s, name, sig, s)
		}
	}
	return own, other
}

// fuzzSeeds returns the first string argument of each seed file of a fuzz
// target.
func fuzzSeeds(t testing.TB, target string) []string {
	files, _ := filepath.Glob(filepath.Join("testdata", "fuzz", target, "*"))
	var out []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for line := range strings.SplitSeq(string(b), "\n") {
			if q, ok := strings.CutPrefix(line, "string("); ok {
				if s, err := strconv.Unquote(strings.TrimSuffix(q, ")")); err == nil {
					out = append(out, s)
				}
				break
			}
		}
	}
	return out
}

// TestStreamDeltasAreTheValue: for every reply of the corpus (golden and
// corpus completions, leniency cases, fuzz seeds), read by the adapter it
// was written for at chunk sizes 1 to 8, 16, 64 and whole, and by the
// other adapters at a few sizes, a consumer that applies deltas and
// replacements ends with exactly the Result's value of every str output,
// and Stream's outputs are Call's.
func TestStreamDeltasAreTheValue(t *testing.T) {
	srv := newValueServer(t)
	own, other := corpusValueCases(t)
	read := 0
	for _, c := range own {
		replaced, ok := checkReplaced(t, srv, c, []int{1, 2, 3, 4, 5, 6, 7, 8, 16, 64, 0})
		if ok {
			read++
		}
		if len(replaced) > 0 {
			t.Logf("REPLACED %s (%s) at %v: %q", c.name, c.a.Name(), replaced, c.reply)
		}
	}
	for _, c := range other {
		checkDeltasAreTheValue(t, srv, c, []int{1, 7, 0})
	}
	if read < 100 {
		t.Fatalf("only %d corpus replies read", read)
	}
}

// TestStreamDeltasAreTheValueGenerated: the same property over generated
// replies in each adapter's shape, built from the pieces that make a
// stream and a one-shot read disagree: unescaped and escaped quotes,
// delimiters after a quote, a second (corrected) object, keys, sections
// and elements given twice, markers and tags inside values, entities,
// CDATA, blanks, prose around the answer.
func TestStreamDeltasAreTheValueGenerated(t *testing.T) {
	srv := newValueServer(t)
	rng := rand.New(rand.NewPCG(30, 5))
	sig := must(signature.Parse("question -> reasoning, answer"))
	n := 150
	if testing.Short() {
		n = 40
	}
	typed := must(signature.Parse("question -> answer, n: int, tags: list[str]"))
	read := map[bool]int{}
	for i := range n {
		for _, a := range []adapter.Adapter{adapter.Chat{}, adapter.JSON{}, adapter.XML{}} {
			reply := genReply(rng, a.Name(), "reasoning", "answer")
			c := valueCase{name: fmt.Sprintf("gen %d", i), a: a, sig: sig, reply: reply}
			read[false] += b2i(checkDeltasAreTheValue(t, srv, c, []int{1 + rng.IntN(8), 1 + rng.IntN(40), 0}))
			reply = genReply(rng, a.Name(), "answer", "n", "tags")
			c = valueCase{name: fmt.Sprintf("gen typed %d", i), a: a, sig: typed, reply: reply}
			read[true] += b2i(checkDeltasAreTheValue(t, srv, c, []int{1 + rng.IntN(8), 0}))
		}
	}
	t.Logf("replies read: %d of %d str, %d of %d typed", read[false], 3*n, read[true], 3*n)
	if read[false] < n/2 || read[true] < n/4 {
		t.Fatalf("too few generated replies read: %v", read)
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// valueAtoms are the pieces generated values are made of.
var valueAtoms = []string{
	"The document says ", "Help here", "Paris", " and then", "é", "“", "”", "'",
	`"`, `"`, `" `, `",`, `"}`, `":`, `"]`, `" x`, ",", "}", "{", ":", "]", "[",
	" ", "  ", "\n", "\n\n", "\t", "<", ">", "&amp;", "&lt;", "&", ";",
	"[[ ## answer ## ]]", "## answer ##", "<answer>", "</answer>", "<![CDATA[", "]]>",
	`\"`, `\\`, `\n`, `\u00e9`, "None", "42",
}

// typedValues are the texts generated for the int and list fields.
var typedValues = map[string][]string{
	"n":    {"1", "-2", "3.0", "x", "None", "[1]", `"4"`, "5 apples", ""},
	"tags": {`["a", "b"]`, "[]", `["a" "b"]`, "a, b", "- a\n- b", "None", `[1, "x"]`, `["\"q\""]`},
}

// genValue returns a value text of a few atoms.
func genValue(rng *rand.Rand) string {
	var b strings.Builder
	for range rng.IntN(6) {
		b.WriteString(valueAtoms[rng.IntN(len(valueAtoms))])
	}
	return b.String()
}

// genReply returns a reply in the shape of the named adapter, with a
// random number of hard pieces.
func genReply(rng *rand.Rand, name string, outputs ...string) string {
	var b strings.Builder
	if rng.IntN(6) == 0 {
		b.WriteString("<think>" + genValue(rng) + "</think>\n")
	}
	if rng.IntN(4) == 0 {
		b.WriteString([]string{"Sure:\n", "Here it is: ", "```json\n", "Answer:\n"}[rng.IntN(4)])
	}
	fields := outputs
	if rng.IntN(3) == 0 {
		fields = append(fields[:len(fields):len(fields)], fields[rng.IntN(len(fields))]) // a field given twice
	}
	value := func(f string) string {
		if vs, ok := typedValues[f]; ok && rng.IntN(4) > 0 {
			return vs[rng.IntN(len(vs))]
		}
		return genValue(rng)
	}
	objects := 1 + rng.IntN(2)
	for o := range objects {
		if o > 0 {
			b.WriteString([]string{"\n\nCorrection: ", "\n", " Actually, ", "\nFinal answer:\n"}[rng.IntN(4)])
		}
		switch name {
		case "json":
			b.WriteString("{")
			for k, f := range fields {
				if k > 0 {
					b.WriteString([]string{", ", ",\n  ", ","}[rng.IntN(3)])
				}
				if vs, ok := typedValues[f]; ok && rng.IntN(2) == 0 {
					fmt.Fprintf(&b, "%q: %s", f, vs[rng.IntN(len(vs))])
					continue
				}
				fmt.Fprintf(&b, "%q: %s", f, []string{`"`, `"`, ` "`, ``}[rng.IntN(4)])
				b.WriteString(genValue(rng))
				b.WriteString(`"`)
			}
			if rng.IntN(5) > 0 {
				b.WriteString([]string{"}", "\n}", " }"}[rng.IntN(3)])
			}
		case "xml":
			for _, f := range fields {
				fmt.Fprintf(&b, "<%s>%s</%s>\n", f, value(f), f)
			}
		default:
			for _, f := range fields {
				fmt.Fprintf(&b, "[[ ## %s ## ]]\n%s\n\n", f, value(f))
			}
			if rng.IntN(2) == 0 {
				b.WriteString("[[ ## completed ## ]]")
			}
		}
	}
	if rng.IntN(5) == 0 {
		b.WriteString([]string{"\n```", "\nHope this helps.", " {", "\n"}[rng.IntN(4)])
	}
	return b.String()
}

// streamChunks streams reply with adapter a in chunks of size bytes and
// returns the field chunks (in order) and the Done chunk's outputs.
func streamChunks(t *testing.T, a adapter.Adapter, sig *signature.Signature, size int, replies ...string) ([]adapter.Chunk, adapter.Values) {
	t.Helper()
	var rs []lmtest.Reply
	for _, r := range replies {
		rs = append(rs, lmtest.Text(r).ChunkSize(size))
	}
	srv := lmtest.NewServer(rs...)
	defer srv.Close()
	var chunks []adapter.Chunk
	var out adapter.Values
	for ch, err := range adapter.Stream(t.Context(), srv.Client(), sig, nil, adapter.Values{"question": "q"}, adapter.UseAdapter(a), adapter.NoRetry()) {
		if err != nil {
			t.Fatalf("chunk size %d: %v", size, err)
		}
		switch {
		case ch.Done:
			out = ch.Result.Outputs[0]
		case ch.Field != "":
			chunks = append(chunks, ch)
		}
	}
	return chunks, out
}

// TestStreamRepliesReplaced: a fallback's reply replaces what the first
// adapter's reply streamed, with an explicit event on its first delta of
// each field ("unknown" then "42", never "unknown42").
func TestStreamRepliesReplaced(t *testing.T) {
	isig := mustParse(t, "question -> answer: int")
	for _, size := range []int{1, 4, 1 << 20} {
		srv := lmtest.NewServer(lmtest.Text("[[ ## answer ## ]]\nunknown").ChunkSize(size), lmtest.Text(`{"answer": 42}`).ChunkSize(size))
		texts := consumerTexts{}
		var last adapter.Chunk
		for ch, err := range adapter.Stream(t.Context(), srv.Client(), isig, nil, adapter.Values{"question": "q"}) {
			require.NoError(t, err)
			texts.apply(ch)
			last = ch
			if ch.Adapter == "json" && ch.Field == "answer" {
				assert.True(t, ch.Replace, "chunk size %d: the fallback's first delta replaces the chat reply's", size)
			}
		}
		srv.Close()
		require.True(t, last.Done)
		assert.Equal(t, 42, last.Result.Outputs[0]["answer"])
		assert.Equal(t, "42", texts["answer"], "chunk size %d", size)
	}

}

// checkContiguous streams reply at several chunk sizes and requires the
// field deltas, joined, to be want, with no replacement, each field's text
// arriving before the next field's, and, for chunks of up to 7 bytes and
// hold >= 0, no delta longer than the chunk and hold bytes: the text
// streams as it arrives, not as a suffix sent before Done.
func checkContiguous(t *testing.T, a adapter.Adapter, sig *signature.Signature, reply string, want adapter.Values, hold int) {
	t.Helper()
	for _, size := range []int{1, 2, 3, 5, 7, 16, 1 << 20} {
		chunks, out := streamChunks(t, a, sig, size, reply)
		require.Equal(t, want, out, "%q", reply)
		texts := consumerTexts{}
		var order []string
		for _, ch := range chunks {
			assert.False(t, ch.Replace, "%s %q chunk size %d: a replacement", a.Name(), reply, size)
			if hold >= 0 && size <= 7 {
				assert.LessOrEqual(t, len(ch.Delta), size+hold, "%s %q chunk size %d: %q held back", a.Name(), reply, size, ch.Delta)
			}
			if len(order) == 0 || order[len(order)-1] != ch.Field {
				assert.NotContains(t, order, ch.Field, "%s %q chunk size %d: %s's text after another field's", a.Name(), reply, size, ch.Field)
				order = append(order, ch.Field)
			}
			texts.apply(ch)
		}
		for name, v := range want {
			assert.Equal(t, v, texts[name], "%s %q chunk size %d", a.Name(), reply, size)
		}
	}
}

// TestJSONStreamHoldsClosingQuote: a JSON string's closing quote is held
// until the next significant byte confirms it, so the unescaped inner
// quotes Parse recovers stream as part of the value, with no replacement
// ({"answer": "The document says "Help here" and then…"} streamed "The
// document says " and stopped).
func TestJSONStreamHoldsClosingQuote(t *testing.T) {
	sig := mustParse(t, "question -> answer")
	checkContiguous(t, adapter.JSON{}, mustParse(t, "question -> answer, reasoning"), `{"answer": "He said "hi" twice", "reasoning": "r"}`,
		adapter.Values{"answer": `He said "hi" twice`, "reasoning": "r"}, 4)
	for reply, want := range map[string]string{
		`{"answer": "The document says "Help here" and then…"}`: `The document says "Help here" and then…`,
		`{"answer": "He said "hi"  twice", "n": 2}`:             `He said "hi"  twice`,
		`{"answer": "x" "y"}`:                                   `x" "y`,
		"{\"answer\": \"x\" \n}":                                "x",
		"```json\n{\"answer\": \"a \\\"b\\\" c\"}\n```":         `a "b" c`,
	} {
		checkContiguous(t, adapter.JSON{}, sig, reply, adapter.Values{"answer": want}, 4)
	}
}

// TestJSONStreamCorrection: a second, corrected object streams as it
// arrives, its first delta of each field replacing the draft's text; an
// empty corrected value replaces too.
func TestJSONStreamCorrection(t *testing.T) {
	sig := mustParse(t, "question -> answer")
	for _, size := range []int{1, 2, 3} {
		chunks, out := streamChunks(t, adapter.JSON{}, sig, size, `{"answer": "Lyon"}`+"\nCorrection: "+`{"answer": "Paris"}`)
		require.Equal(t, "Paris", out["answer"])
		texts, replaced := consumerTexts{}, 0
		for _, ch := range chunks {
			if ch.Replace {
				replaced++
				assert.Less(t, len(ch.Delta), len("Paris"), "chunk size %d: the correction streams as it arrives (%q)", size, ch.Delta)
			}
			texts.apply(ch)
		}
		assert.Equal(t, 1, replaced, "chunk size %d", size)
		assert.Equal(t, "Paris", texts["answer"], "chunk size %d", size)
	}
	chunks, out := streamChunks(t, adapter.JSON{}, sig, 3, `{"answer": "Lyon"} Actually, {"answer": ""}`)
	require.Equal(t, "", out["answer"])
	texts := consumerTexts{}
	for _, ch := range chunks {
		texts.apply(ch)
	}
	assert.Equal(t, "", texts["answer"])
	assert.True(t, chunks[len(chunks)-1].Replace)
}

// TestXMLStreamContiguousValues: where an XML reply holds a field's value
// as one contiguous reading, the deltas are that value with no
// replacement, before the next field's: a value holding its own closing
// tag (the closing tag is held until the next output element or the end
// confirms it), quoted (the quotes Parse drops), in a CDATA section split
// across chunks, or whose closing tag was forgotten (another output's
// opening tag is held until the field's closing tag or the end decides).
func TestXMLStreamContiguousValues(t *testing.T) {
	sig := mustParse(t, "question -> answer, reasoning")
	for value, want := range map[string]string{
		"\nprint('</answer>')\n":                          "print('</answer>')",
		"a</answer>b</ANSWER >c":                          "a</answer>b</ANSWER >c",
		`"The Great Gatsby"`:                              "The Great Gatsby",
		`"Two" and "three"`:                               `"Two" and "three"`,
		"<![CDATA[if a < b and c & d: pass]]>":            "if a < b and c & d: pass",
		"x &lt; y, <![CDATA[</answer>]]> z":               "x < y, </answer> z",
		"Put it in <reasoning> tags.":                     "Put it in <reasoning> tags.",
		"a</answer> and </answer> then text</answer> end": "a</answer> and </answer> then text",
	} {
		reply := "<answer>" + value + "</answer> trailing\n<reasoning>r</reasoning>"
		if strings.HasSuffix(value, "end") {
			reply = "<answer>" + value + "\n<reasoning>r</reasoning>"
		}
		checkContiguous(t, adapter.XML{}, sig, reply, adapter.Values{"answer": want, "reasoning": "r"}, -1)
	}
	checkContiguous(t, adapter.XML{}, sig, "<answer>\nIt is the capital.\n<reasoning>\nParis\n</reasoning>",
		adapter.Values{"answer": "It is the capital.", "reasoning": "Paris"}, -1)
}

// fuzzDeltasAreTheValue is the stream fuzzers' check of the property of
// TestStreamDeltasAreTheValue for one reply and chunk size.
func fuzzDeltasAreTheValue(t *testing.T, srv *valueServer, a adapter.Adapter, sig *signature.Signature, text string, size int) {
	t.Helper()
	checkDeltasAreTheValue(t, srv, valueCase{name: "fuzz", a: a, sig: sig, reply: text}, []int{size})
}

// TestPredictStreamCarriesReplace: a typed module's stream carries the
// replacement events (predict.Chunk embeds adapter.Chunk), so its
// consumer too ends with the value Out holds.
func TestPredictStreamCarriesReplace(t *testing.T) {
	type In struct {
		Question string `json:"question"`
	}
	type Out struct {
		Answer string `json:"answer"`
	}
	p, err := predict.New[In, Out]()
	require.NoError(t, err)
	srv := lmtest.NewServer(lmtest.Text(`{"answer": "Lyon"}` + "\nCorrection: " + `{"answer": "Paris"}`).ChunkSize(2))
	defer srv.Close()
	texts, replaced := consumerTexts{}, false
	var out Out
	for ch, err := range p.Stream(t.Context(), srv.Client(), In{Question: "q"}, adapter.UseAdapter(adapter.JSON{})) {
		require.NoError(t, err)
		texts.apply(ch.Chunk)
		replaced = replaced || ch.Replace
		if ch.Done {
			out = ch.Out
		}
	}
	assert.True(t, replaced)
	assert.Equal(t, "Paris", out.Answer)
	assert.Equal(t, out.Answer, texts["answer"])
}

// A consumer keeps each field's text: deltas extend it, and a chunk with
// Replace set starts it anew (here a draft object, then a corrected one).
func ExampleChunk_replace() {
	srv := lmtest.NewServer(lmtest.Text(`{"answer": "Lyon"} Correction: {"answer": "Paris"}`).ChunkSize(8))
	defer srv.Close()
	sig, err := signature.Parse("question -> answer")
	if err != nil {
		panic(err)
	}
	text := map[string]string{}
	for ch, err := range adapter.Stream(context.Background(), srv.Client(), sig, nil,
		adapter.Values{"question": "What is the capital of France?"}, adapter.UseAdapter(adapter.JSON{})) {
		if err != nil {
			fmt.Println(err)
			return
		}
		if ch.Replace {
			fmt.Printf("%s: %q is replaced\n", ch.Field, text[ch.Field])
			text[ch.Field] = ""
		}
		text[ch.Field] += ch.Delta
		if ch.Done {
			fmt.Println(text["answer"], "=", ch.Result.Outputs[0]["answer"])
		}
	}
	// Output:
	// answer: "Lyon" is replaced
	// Paris = Paris
}
