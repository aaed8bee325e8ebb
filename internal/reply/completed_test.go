package reply

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/sigwire/adapter/signature"
)

// markerSpelling is one way of writing a field marker: brackets, hashes,
// blanks, case and decoration, applied to any name.
type markerSpelling struct {
	pre, open, s1, h1, s2, s3, h2, s4, close, post string
	upper, title                                   bool
}

// of writes the marker of name in this spelling; mid leaves out the
// decoration that only a line start carries.
func (m markerSpelling) of(name string, mid bool) string {
	switch {
	case m.upper:
		name = strings.ToUpper(name)
	case m.title:
		name = strings.ToUpper(name[:1]) + name[1:]
	}
	pre := m.pre
	if mid {
		pre = ""
	}
	return pre + m.open + m.s1 + m.h1 + m.s2 + name + m.s3 + m.h2 + m.s4 + m.close + m.post
}

// markerSpellings generates n spellings at random (a fixed seed): DSPy's
// own, and the drift models write around it.
func markerSpellings(n int) []markerSpelling {
	r := rand.New(rand.NewPCG(45, 1))
	pick := func(xs ...string) string { return xs[r.IntN(len(xs))] }
	blank := func() string { return pick("", " ", " ", "  ", "\t", " \t") }
	out := []markerSpelling{{open: "[[", s1: " ", h1: "##", s2: " ", s3: " ", h2: "##", s4: " ", close: "]]"}}
	for len(out) < n {
		out = append(out, markerSpelling{
			pre:   pick("", "", "**", "### ", "## ", "> ", "1. ", "- ", "* ", "`", "  "),
			open:  pick("[[", "[[", "[", "", "[[["),
			s1:    blank(),
			h1:    pick("##", "##", "#", "###", ""),
			s2:    blank(),
			s3:    blank(),
			h2:    pick("##", "##", "#", "###", ""),
			s4:    blank(),
			close: pick("]]", "]]", "]", "", "]]]"),
			post:  pick("", "", ":", "**", ":**", "`", " :", "*"),
			upper: r.IntN(4) == 0,
			title: r.IntN(4) == 0,
		})
	}
	return out
}

// TestCompletedMarkerSpellings: any spelling of a marker the reader takes
// for a field, it takes for "completed" too, where it would take it for
// the field (at a line start, or in the middle of a line): the reply ends
// there, for every shape an adapter prefers. A reply that is only the
// completed marker holds no field (None for an Optional, missing for a
// str: no error, no marker text as a value); text before it is the
// answer; text after it is ignored.
func TestCompletedMarkerSpellings(t *testing.T) {
	str := mustSig(t, "q -> page: str")
	opt := mustSig(t, "q -> page: Optional[int]")
	two := mustSig(t, "q -> note: str, page: str")
	read := func(sig *signature.Signature, reply string, prefer Shape) ([]Field, error) {
		fields := make([]Field, sig.NumOutputs())
		err := Read(sig, reply, prefer, fields, nil)
		return fields, err
	}
	takes := func(reply string) bool {
		f, err := read(str, reply, Markers)
		return err == nil && f[0].Source == Marker && f[0].Text == "7"
	}
	type check struct {
		sig   *signature.Signature
		reply string
		want  []Field // the page field last
	}
	var lineStart, midLine int
	for _, sp := range markerSpellings(6000) {
		var checks []check
		if takes(sp.of("page", false) + "\n7") {
			lineStart++
			c := sp.of("completed", false)
			checks = append(checks,
				check{str, c, []Field{{}}},
				check{opt, c, []Field{{}}},
				check{opt, c + "\n7", []Field{{}}},
				check{str, "Sure.\n" + c + "\nmore", []Field{{Source: Bare, Text: "Sure."}}},
				check{str, "[[ ## page ## ]]\n7\n\n" + c + "\n8", []Field{{Source: Marker, Text: "7"}}},
				check{str, sp.of("page", false) + "\n7\n" + c + "\n[[ ## page ## ]]\n8", []Field{{Source: Marker, Text: "7"}}},
				check{two, "[[ ## note ## ]]\nx\n\n" + c + "\n[[ ## page ## ]]\n8", []Field{{Source: Marker, Text: "x"}, {}}},
			)
		}
		if takes("Here: " + sp.of("page", true) + " 7") {
			midLine++
			c := sp.of("completed", true)
			checks = append(checks,
				check{str, "Sure. " + c + " more", []Field{{Source: Bare, Text: "Sure."}}},
				check{str, "[[ ## page ## ]]\n7 " + c + " 8", []Field{{Source: Marker, Text: "7"}}},
			)
		}
		for _, c := range checks {
			for _, prefer := range []Shape{Markers, JSON, XML} {
				got, err := read(c.sig, c.reply, prefer)
				if err != nil {
					t.Errorf("%q (%s, shape %d): %v", c.reply, c.sig, prefer, err)
					continue
				}
				for i := range got {
					if got[i].Source != c.want[i].Source || got[i].Text != c.want[i].Text {
						t.Errorf("%q (%s, shape %d): field %d is %s, want %s", c.reply, c.sig, prefer, i, show(got[i]), show(c.want[i]))
					}
				}
			}
		}
	}
	// The generator reaches both kinds of spelling.
	if lineStart < 1000 || midLine < 100 {
		t.Fatalf("only %d line-start and %d mid-line spellings taken", lineStart, midLine)
	}
}

func show(f Field) string { return fmt.Sprintf("{%d %q}", f.Source, f.Text) }
