package jsonx

import (
	"encoding/json"
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

func FuzzRepair(f *testing.F) {
	for _, s := range []string{`{"a": 1}`, `{'a': [1, 2,]`, "```json\n{\"a\"", `[{"a": "b\"`, `{"a": tru`} {
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
	})
}

func TestCloseOne(t *testing.T) {
	for in, want := range map[string]string{
		`[{'a': 1}, {'b': 2}`:              `[{'a': 1}, {'b': 2}]`,
		`['sql', 'indexing'`:               `['sql', 'indexing']`,
		`[3, 4`:                            `[3, 4]`,
		`[{"a": 1, "b": 2]`:                `[{"a": 1, "b": 2}]`,
		`{"tags": ["a", "b", "n": 1}`:      `{"tags": ["a", "b"], "n": 1}`,
		`[{"a": 1, {"a": 2}]`:              `[{"a": 1}, {"a": 2}]`,
		`{"a": {"b": 1}`:                   `{"a": {"b": 1}}`,
		`{"a": [1, 2}`:                     `{"a": [1, 2]}`,
		`[1, 2,`:                           "",
		`["a", "b`:                         "",
		`[1.5e`:                            "",
		`{"a": [1`:                         "",
		`{"a": 1}`:                         "",
		`[[1, 2]`:                          `[[1, 2]]`,
		`{"a": tru`:                        "",
		`{"a": true`:                       `{"a": true}`,
		`{"x": [1, 2], "y": {"z": 3}`:      `{"x": [1, 2], "y": {"z": 3}}`,
		`{"x": [1, 2, "y": [3, 4, "z": 5}`: "",
	} {
		got, ok := CloseOne(in)
		if want == "" {
			assert.False(t, ok, "%s gave %s", in, got)
			continue
		}
		if assert.True(t, ok, in) {
			assert.Equal(t, want, got)
		}
	}
}

// FuzzCloseOne: a span CloseOne completes gains exactly one closing
// bracket and nothing else.
func FuzzCloseOne(f *testing.F) {
	for _, s := range []string{`[{'a': 1}, {'b': 2}`, `{"tags": ["a", "b", "n": 1}`, `[{"a": 1, {"a": 2}]`, `[3, 4`, `{"a": "x"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out, ok := CloseOne(s)
		if !ok {
			return
		}
		t2 := strings.TrimRight(s, " \t\r\n")
		if len(out) != len(t2)+1 && len(out) != len(s)+1 {
			t.Fatalf("%q -> %q: not one byte more", s, out)
		}
		for i := 0; i < len(out); i++ {
			if i >= len(s) || out[i] != s[i] {
				if c := out[i]; c != '}' && c != ']' {
					t.Fatalf("%q -> %q: inserted %q", s, out, c)
				}
				if out[i+1:] != s[i:] && out[i+1:] != t2[min(i, len(t2)):] {
					t.Fatalf("%q -> %q: changed more than one byte", s, out)
				}
				return
			}
		}
	})
}

// TestExactAddsNoMember: a stray word at an open end is not read as a key
// with a null value (FuzzToolArgs found {"0"1…( read as {"0":1…,"(":null});
// nulls the text holds are kept.
func TestExactAddsNoMember(t *testing.T) {
	for _, s := range []string{`{"0"1(`, `{"a": 1 (`, `{"a": "x" (`, `{"a": null, "b": 1 (`} {
		got, err := Exact(s)
		assert.ErrorIs(t, err, ErrInvalid, "%s read as %s", s, got)
	}
	for s, want := range map[string]string{
		`{"a": null, "b": None,}`: `{"a": null, "b": null}`,
		`{'a': None}`:             `{"a": null}`,
	} {
		got, err := Exact(s)
		require.NoError(t, err, s)
		assert.JSONEq(t, want, got)
	}
}
