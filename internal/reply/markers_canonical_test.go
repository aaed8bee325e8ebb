package reply

import (
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
			fast, ok := canonicalMarkerAt(sig, s, i, run, lo)
			if !ok {
				continue
			}
			want, wantOK := anyMarkerAt(sig, s, i, run, lo)
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
		m, ok := canonicalMarkerAt(sig, s, pos+i, pos+i+2, pos)
		if !ok {
			t.Fatalf("no canonical marker at %d", pos+i)
		}
		pos = m.End
	}
	if n != 3 {
		t.Fatalf("%d markers, want 3", n)
	}
}
