package reply

// The fast paths of the reply reader (issue 32) read what the general
// rules read.

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// FuzzCanonicalMarker: canonicalMarkerAt, markerAt's fast path for the
// marker as DSPy writes it, finds a marker only where anyMarkerAt (the
// rules for every form) finds the same one, at every run of hashes of any
// text, whatever the position the scan may not reach back before.
func FuzzCanonicalMarker(f *testing.F) {
	for _, s := range []string{
		"[[ ## answer ## ]]",
		"[[ ## reasoning ## ]]\nr\n\n[[ ## answer ## ]]\n4\n\n[[ ## completed ## ]]",
		"x [[ ## answer ## ]]\n[[[ ## answer ## ]]\n**[[ ## answer ## ]]**\n[[ ## answer ## ]]]\n",
		"[[ ## answer ## ]]:\n[[ ## answer ### ]]\n[[ ##  answer ## ]]\n[[ ## answer ## ]]\r\n",
		"[[ ## question ## ]]\n[[ ## Answer ## ]]\n[[ ## completed ## ]]\n[[ ## unknown_name ## ]]\n",
		"[[ ## " + strings.Repeat("n", 90) + " ## ]]\n[[ ## " + strings.Repeat("n", 84) + " ## ]]\n",
		"\n[[ ## answer ## ]]",
	} {
		f.Add(s, 0)
		f.Add(s, 1)
	}
	sig := mustSig(f, "question, context -> reasoning, answer, final_answer")
	f.Fuzz(func(t *testing.T, s string, lo int) {
		lo = max(0, min(lo, len(s)))
		for i := 0; i < len(s); i++ {
			if s[i] != '#' || i > 0 && s[i-1] == '#' {
				continue
			}
			run := i
			for run < len(s) && s[run] == '#' {
				run++
			}
			if i < lo {
				continue // FindMarker looks from lo on
			}
			var fast, want Mark
			if !canonicalMarkerAt(sig, s, i, run, lo, &fast) {
				continue
			}
			wantOK := anyMarkerAt(sig, s, i, run, lo, &want)
			if !wantOK || fast != want {
				t.Fatalf("%q, lo %d, hashes at %d: canonicalMarkerAt %+v, anyMarkerAt %+v (%v)", s, lo, i, fast, want, wantOK)
			}
		}
	})
}

// TestCanonicalMarkerTakesTheCommonCase: the fast path reads DSPy's own
// markers (what it leaves to anyMarkerAt is covered by the marker tests).
func TestCanonicalMarkerTakesTheCommonCase(t *testing.T) {
	sig := mustSig(t, "question -> reasoning, answer")
	s := "[[ ## reasoning ## ]]\nr\n\n[[ ## answer ## ]]\n4\n\n[[ ## completed ## ]]"
	n := 0
	for pos := 0; ; n++ {
		i := strings.Index(s[pos:], "##")
		if i < 0 {
			break
		}
		var m Mark
		if !canonicalMarkerAt(sig, s, pos+i, pos+i+2, pos, &m) {
			t.Fatalf("no canonical marker at %d", pos+i)
		}
		pos = m.End
	}
	if n != 3 {
		t.Fatalf("%d markers, want 3", n)
	}
}

// TestMarkersPastTheBuffer: a reply with more markers than the first
// pass keeps is read as one with fewer: markers read again past the
// buffer count by the same rules (a mid-line marker of an output that has
// a line-start one is text, the first line-start completed marker ends
// the reply).
func TestMarkersPastTheBuffer(t *testing.T) {
	var names []string
	for i := range maxBuffered + 4 {
		names = append(names, "f"+strconv.Itoa(i))
	}
	sig := mustSig(t, "question -> "+strings.Join(names, ", "))
	var b strings.Builder
	for i, n := range names {
		fmt.Fprintf(&b, "[[ ## %s ## ]]\nv%d", n, i)
		if i == len(names)-2 {
			b.WriteString(" quoting [[ ## f0 ## ]] x") // text: f0 has a line-start marker
		}
		b.WriteString("\n\n")
	}
	b.WriteString("[[ ## completed ## ]]\n[[ ## f1 ## ]]\nafter the end")
	fields := make([]Field, len(names))
	if err := Read(sig, b.String(), Markers, fields, nil); err != nil {
		t.Fatal(err)
	}
	for i, f := range fields {
		want := "v" + strconv.Itoa(i)
		if i == len(names)-2 {
			want += " quoting [[ ## f0 ## ]] x"
		}
		if f.Source != Marker || f.Text != want {
			t.Errorf("%s: %v %q, want %q", names[i], f.Source, f.Text, want)
		}
	}
}

// TestFenceAfterStructure: a code fence is the reply's answer only when
// it opens before any structure; a reply whose first text is a marker,
// JSON or XML (after blank lines) is read as it is, fences inside it
// included.
func TestFenceAfterStructure(t *testing.T) {
	for _, tc := range []struct {
		text   string
		fenced bool
	}{
		{"[[ ## answer ## ]]\n```\nx\n```", false},
		{"\n \t\r\n  {\"answer\": 1}\n```\nx\n```", false},
		{"\n<answer>\n```\nx\n```\n</answer>", false},
		{"```\n[[ ## answer ## ]]\nx\n```", true},
		{"Here it is:\n```json\n{\"answer\": 1}\n```", true},
		{"\u00a0\n```json\n{\"answer\": 1}\n```", true},
		{"\u00a0[\n```json\n{\"answer\": 1}\n```", false},
	} {
		if _, fenced := fenceBody(tc.text); fenced != tc.fenced {
			t.Errorf("%q: fenced %v, want %v", tc.text, fenced, tc.fenced)
		}
	}
}
