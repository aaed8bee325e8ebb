package jsonx

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestExtract(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{`{"a": 1}`, `{"a": 1}`},
		{"Sure! Here it is:\n```json\n{\"a\": [1, 2]}\n```\nDone.", `{"a": [1, 2]}`},
		{"See [1] for details. {\"a\": \"}\"}", `{"a": "}"}`},
		{"prefix {'a': 'it''s'} suffix", `{'a': 'it''s'}`},
		{"The result: {\"a\": \"cut", "{\"a\": \"cut"},
		{"[1, 2] and more", "[1, 2]"},
		// The outermost span, never an inner fragment of it.
		{"[[1, 2], [3, x]]", "[[1, 2], [3, x]]"},
		{"Answer: [[1, 2], [3, None]]", "[[1, 2], [3, None]]"},
		{`Here: [{"a": 1}, {"a": 2}]`, `[{"a": 1}, {"a": 2}]`},
		{`[{"a": 1}, {"a": x}] then`, `[{"a": 1}, {"a": x}]`},
		{`[note] {"a": 1}`, `{"a": 1}`},
	} {
		got, start, ok := Extract(tt.in)
		require.True(t, ok, tt.in)
		assert.Equal(t, tt.want, got, tt.in)
		assert.Equal(t, got, tt.in[start:start+len(got)], "offset of %q", tt.in)
	}
	_, _, ok := Extract("no json here")
	assert.False(t, ok)
}

func TestRepair(t *testing.T) {
	for _, tt := range []struct {
		in, want  string
		truncated bool
	}{
		{`{'a': 'x', 'b': True, 'c': None}`, `{"a": "x", "b": true, "c": null}`, false},
		{`{"a": 1, "b": [1, 2,],}`, `{"a": 1, "b": [1, 2]}`, false},
		{`{"a": "x", "b": "y"`, `{"a": "x", "b": "y"}`, false},
		{`{"a": "x", "b": {"c": true`, `{"a": "x", "b": {"c": true}}`, false},
		{`{"a": "cut in the mid`, "", true},
		{`{"s": "Projekt „Phoenix" läuft", "b": 1}`, `{"s": "Projekt „Phoenix\" läuft", "b": 1}`, false},
		{`{"a": "x", "b": `, "", true},
		{`{"a": "x", "b"`, "", true},
		{`{"a": "x", "b": 12`, `{"a": "x", "b": 12}`, false},
		{`{"a": ["x", "y"`, "", true},
		{`{"a": "x", `, "", true},
		{`{"a": 1.5e`, "", true},
		{`{"a": -`, "", true},
		{`{"a": tru`, "", true},
		{`{"a": "x", "b": true`, `{"a": "x", "b": true}`, false},
		{`{"a": 1,}`, `{"a": 1}`, false},
		{`{"a": 1.}`, `{"a": 1.0}`, false},
		{`{"a": 1.`, "", true},
	} {
		got, info, err := Repair(tt.in)
		require.NoError(t, err, tt.in)
		assert.Equal(t, tt.truncated, info.Truncated, tt.in)
		if !tt.truncated {
			assert.JSONEq(t, tt.want, got, tt.in)
		}
	}
}

// TestRepairNeverInventsNumbers: a number that is not one is an error
// (or, at the very end, a truncation), never a 0 or a shortened number.
func TestRepairNeverInventsNumbers(t *testing.T) {
	for _, in := range []string{`{"n": -}`, `{"ns": [1, -]}`, `{"n": 2e+, "m": 1}`, `{0"0E "`} {
		_, info, err := Repair(in)
		assert.ErrorIs(t, err, ErrInvalid, in)
		assert.False(t, info.Truncated, in)
	}
	// Found by FuzzRepair: the repairer read 0E0 from these.
	for _, in := range []string{"{`'0E", "{`'0.", `{0"0E "`} {
		out, info, err := Repair(in)
		assert.True(t, err != nil || info.Truncated, "%q repaired to %q", in, out)
	}
}

// TestRepairEndsInNumber: a span cut right after a number, with only
// closing braces missing, is read but flagged, so that callers acting on
// the value can refuse it ({"amount": 10 may have been 100).
func TestRepairEndsInNumber(t *testing.T) {
	for _, tt := range []struct {
		in   string
		ends bool
	}{
		{`{"amount": 10`, true},
		{`{"a": {"b": -2.5e3`, true},
		{`{"amount": 10}`, false},
		{`{"a": "x", "b": "10"`, false},
		{`{"a": [1, 2]`, false},
		{`{"a": true`, false},
		{`{'a': 1, 'b': None`, false},
	} {
		_, info, err := Repair(tt.in)
		require.NoError(t, err, tt.in)
		assert.False(t, info.Truncated, tt.in)
		assert.Equal(t, tt.ends, info.EndsInNumber, tt.in)
	}
}

func TestRepairBounds(t *testing.T) {
	// The missing-comma pattern costs O(n²) in the repairer: 64 KiB of it
	// took 1.4 s, so the cap is 16 KiB.
	_, _, err := Repair("[" + strings.Repeat("1 ", 8<<10) + "1]")
	assert.ErrorIs(t, err, ErrTooLarge)
	assert.LessOrEqual(t, MaxRepair, 16<<10)
	_, _, err = Repair("{\"a\": \"" + strings.Repeat("x", MaxRepair) + "\"}")
	assert.ErrorIs(t, err, ErrTooLarge)
	_, _, err = Repair(strings.Repeat("[", 1000) + strings.Repeat("]", 1000))
	assert.ErrorIs(t, err, ErrTooDeep)
}

// FuzzRepair: a repair is valid JSON, and every string the span states
// (see statedIn) is in it as stated, escapes decoded once (a
// substring of one of its strings: the repairer may join strings).
func FuzzRepair(f *testing.F) {
	for _, s := range []string{`{"a": 1}`, `{'a': [1, 2,]`, "```json\n{\"a\"", `[{"a": "b\"`, `{"a": tru`,
		`{"data": {}, "text": [{"item": "\\n", "entry": [], "key": {"<entry key=\"k\">v</entry>": "<think>t</think>",}], "key": "a1"}`,
		`["C:\\new\\table.txt", "a\"b/c.txt",]`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		span, start, ok := Extract(s)
		if !ok {
			return
		}
		if s[start:start+len(span)] != span {
			t.Fatalf("span %q not at offset %d", span, start)
		}
		out, info, err := Repair(span)
		if err != nil || info.Truncated {
			return
		}
		if !json.Valid([]byte(out)) {
			t.Fatalf("repair of %q is not JSON: %q", span, out)
		}
		got := allStrings(t, out)
		for _, want := range statedIn(span) {
			found := false
			for _, g := range got {
				if strings.Contains(g, want) {
					found = true
					break
				}
			}
			if !found {
				t.Fatalf("repair of %q lost the stated string %q: %q", span, want, out)
			}
		}
	})
}

// TestRepairKeepsStatedStrings: the repairer reads a string that holds
// '/' or '\' as a file path and keeps its escapes as backslashes; the
// strings a span states read as JSON states them.
func TestRepairKeepsStatedStrings(t *testing.T) {
	for in, want := range map[string]string{
		`{"data": {}, "text": [{"item": "\\n", "entry": [], "key": {"<entry key=\"k\">v</entry>": "<think>t</think>",}}], "key": "a1"}`: `{"data": {}, "text": [{"item": "\\n", "entry": [], "key": {"<entry key=\"k\">v</entry>": "<think>t</think>"}}], "key": "a1"}`,
		`["C:\\new\\table.txt", "a\"b/c.txt", "/usr/bin/x\ty",]`:                                                                        `["C:\\new\\table.txt", "a\"b/c.txt", "/usr/bin/x\ty"]`,
		`{'a': "x\"y/z.txt", "b": [True, None]}`:                                                                                        `{"a": "x\"y/z.txt", "b": [true, null]}`,
		`{"a\u00e9/b": "c" // note` + "\n}":                                                                                             `{"a\u00e9/b": "c"}`,
	} {
		got, info, err := Repair(in)
		require.NoError(t, err, in)
		require.False(t, info.Truncated, in)
		assert.JSONEq(t, want, got, in)
	}
}

// statedIn returns, decoded, the double-quoted strings of span that
// JSON's grammar reads unambiguously: opened where a key or value starts,
// closed where one ends, with JSON's escapes only, outside comments.
func statedIn(span string) []string {
	var out []string
	for i := 0; i < len(span); i++ {
		switch span[i] {
		case '/': // a comment states nothing: the repairer drops it
			switch {
			case strings.HasPrefix(span[i:], "//"):
				if n := strings.IndexByte(span[i:], '\n'); n >= 0 {
					i += n
				} else {
					i = len(span)
				}
			case strings.HasPrefix(span[i:], "/*"):
				if n := strings.Index(span[i+2:], "*/"); n >= 0 {
					i += n + 3
				} else {
					i = len(span)
				}
			}
		case '\'':
			if valueMayStartAt(span, i) {
				for i++; i < len(span) && span[i] != '\''; i++ {
					if span[i] == '\\' {
						i++
					}
				}
			}
		case '"':
			j := i + 1
			for j < len(span) && span[j] != '"' {
				if span[j] == '\\' {
					j++
				}
				j++
			}
			if j >= len(span) {
				return out
			}
			n := j + 1
			for n < len(span) && strings.IndexByte(" \t\r\n", span[n]) >= 0 {
				n++
			}
			var s string
			if valueMayStartAt(span, i) && (n == len(span) || strings.IndexByte(",:]}", span[n]) >= 0) &&
				json.Unmarshal([]byte(span[i:j+1]), &s) == nil {
				out = append(out, s)
			}
			i = j
		}
	}
	return out
}

// valueMayStartAt reports whether a value may start at span[i]: nothing
// but blanks before it, or an opening bracket, a comma or a colon (a NUL
// byte is a byte like any other, not the span's start).
func valueMayStartAt(span string, i int) bool {
	return strings.TrimLeft(span[:i], " \t\r\n") == "" || strings.IndexByte("{[,:", prevSignificant(span, 0, i)) >= 0
}

// allStrings lists the keys and string values of the JSON text s, a
// repeated key's too.
func allStrings(t *testing.T, s string) []string {
	var acc []string
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber() // a number beyond float64 (1E700) is still a number
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return acc
		}
		if err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		if str, ok := tok.(string); ok {
			acc = append(acc, str)
		}
	}
}

// TestRepairKeepsEscapesBesideComments: a string beside a comment is a
// string the text states, protected from the repairer like any other: its
// escapes are read once (before: "x\/\u0079" next to a comment came back
// as the text x\/\u0079, its backslashes doubled by the repairer).
func TestRepairKeepsEscapesBesideComments(t *testing.T) {
	for _, in := range []string{
		"{\"v\": \"x\\/\\u0079\" // note\n}",
		"{\"v\": \"x\\/\\u0079\" /* c */, \"n\": 1}",
		"{\"v\" /* c */ : /* c */ \"x\\/\\u0079\",}",
		"{\"v\": [\t[ \"x\\/\\u0079\"\t // note\n],\t]}",
	} {
		fixed, _, err := Repair(in)
		require.NoError(t, err, in)
		v, err := Decode(fixed)
		require.NoError(t, err, in)
		assert.Contains(t, fmt.Sprint(v), "x/y", in)
		assert.NotContains(t, fmt.Sprint(v), `\`, in)
	}
}

// TestDuplicateKeyValues: a key repeated with the same value, however
// written, decodes; with another value it is a *DuplicateKeyError. Numbers
// are the same value as Python reads them: 1.5, 1.50 and 15e-1 are one
// float; 1 and 1.0 are an int and a float.
func TestDuplicateKeyValues(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		same bool
	}{
		{`[1, 2]`, `[1,2]`, true},
		{`{"x": 1, "y": [true]}`, `{"y":[true],"x":1}`, true},
		{`"x/y"`, `"x\/\u0079"`, true},
		{`1.5`, `1.50`, true},
		{`1.5`, `15e-1`, true},
		{`-0`, `0`, true},
		{`1e400`, `2e400`, true},
		{`1`, `1.0`, false},
		{`0.0`, `-0.0`, false},
		{`1.5`, `1.6`, false},
		{`"1"`, `1`, false},
		{`[1, 2]`, `[2, 1]`, false},
		{`{"x": 1}`, `{"x": 1, "y": 2}`, false},
		{`null`, `false`, false},
	} {
		_, err := Decode(`{"k": ` + tt.a + `, "k": ` + tt.b + `}`)
		if tt.same {
			assert.NoError(t, err, "%s, %s", tt.a, tt.b)
		} else {
			var dk *DuplicateKeyError
			assert.ErrorAs(t, err, &dk, "%s, %s", tt.a, tt.b)
		}
	}
}
