package reply

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestMixedMarkerStyles: a reply may give each field in any style the
// reader takes — a field marker in any spelling, or a label ("Title:",
// "**Title:**", "## Title" alone on its line) — and mix them: each field
// reads its own value, never None or missing, and no label line lands in
// the field before it. (Issue 45: "[[ ## year ## ]]" then "## title" then
// "370" read title as missing, and the heading as text of year.)
func TestMixedMarkerStyles(t *testing.T) {
	sig := mustSig(t, "question -> year: int, title: Optional[int], final_note: str")
	names := []string{"year", "title", "final_note"}
	spellings := markerSpellings(400)
	var taken []markerSpelling
	for _, sp := range spellings {
		f := make([]Field, 3)
		if Read(sig, sp.of("year", false)+"\n7", Markers, f, nil) == nil && f[0].Source == Marker && f[0].Text == "7" {
			taken = append(taken, sp)
		}
	}
	labelForms := []func(name, v string) string{
		func(n, v string) string { return n + ": " + v },
		func(n, v string) string { return "**" + n + ":** " + v },
		func(n, v string) string { return "**" + n + "**: " + v },
		func(n, v string) string { return "## " + n + "\n" + v },
		func(n, v string) string { return "### " + n + "\n\n" + v },
		func(n, v string) string { return "**" + n + "**\n" + v },
		func(n, v string) string { return n + ":\n" + v },
		func(n, v string) string { return "> " + n + ": " + v },
	}
	spelled := func(r *rand.Rand, name string) string {
		words := strings.Split(name, "_")
		for i, w := range words {
			switch r.IntN(3) {
			case 0:
				words[i] = strings.ToUpper(w[:1]) + w[1:]
			case 1:
				words[i] = strings.ToUpper(w)
			}
		}
		if r.IntN(2) == 0 {
			return strings.Join(words, " ")
		}
		return strings.Join(words, "_")
	}
	r := rand.New(rand.NewPCG(45, 2))
	mixes := 0
	for range 4000 {
		vals := []string{fmt.Sprint(r.IntN(3000)), fmt.Sprint(r.IntN(1000)), []string{"See the map.", "It rains\nall day.", "none"}[r.IntN(3)]}
		order := r.Perm(3)
		var b strings.Builder
		if r.IntN(3) == 0 {
			b.WriteString("Sure, here it is.\n\n")
		}
		markers := 0
		for k, i := range order {
			if k > 0 {
				b.WriteString([]string{"\n", "\n\n", "\n \n"}[r.IntN(3)])
			}
			if r.IntN(2) == 0 {
				sp := taken[r.IntN(len(taken))]
				b.WriteString(sp.of(names[i], false) + "\n" + vals[i])
				markers++
			} else {
				b.WriteString(labelForms[r.IntN(len(labelForms))](spelled(r, names[i]), vals[i]))
			}
		}
		if r.IntN(2) == 0 {
			b.WriteString("\n\n[[ ## completed ## ]]")
		}
		reply := b.String()
		if markers > 0 && markers < 3 {
			mixes++
		}
		for _, prefer := range []Shape{Markers, JSON, XML} {
			fields := make([]Field, 3)
			if err := Read(sig, reply, prefer, fields, nil); err != nil {
				t.Fatalf("%q (shape %d): %v", reply, prefer, err)
			}
			for i, f := range fields {
				if f.Text != vals[i] {
					t.Fatalf("%q (shape %d): %s is %s, want %q", reply, prefer, names[i], show(f), vals[i])
				}
			}
		}
	}
	if mixes < 1000 {
		t.Fatalf("only %d mixed replies", mixes)
	}
}

// TestLabelsInMarkerReplies: in a reply in markers, a label counts only
// for an output no marker names, by its whole name, outside code blocks;
// elsewhere it is text of the section it stands in.
func TestLabelsInMarkerReplies(t *testing.T) {
	sig := mustSig(t, "question -> reasoning, answer: Optional[int]")
	for _, c := range []struct {
		reply, reasoning, answer string
	}{
		// The answer has a marker: the label in the reasoning is text.
		{"[[ ## reasoning ## ]]\nAnswer: 5, then checked.\n\n[[ ## answer ## ]]\n6", "Answer: 5, then checked.", "6"},
		// An input's label is text.
		{"[[ ## reasoning ## ]]\nQuestion: why?\nBecause.\n\n[[ ## answer ## ]]\n6", "Question: why?\nBecause.", "6"},
		// Inside a code block a heading is a comment.
		{"[[ ## reasoning ## ]]\n```python\n# answer\nx = 1\n```\nDone.", "```python\n# answer\nx = 1\n```\nDone.", ""},
		// Only the output's whole name is a label.
		{"[[ ## reasoning ## ]]\nHere is the answer:\n6", "Here is the answer:\n6", ""},
		// A label of a marker-less output ends the section before it.
		{"[[ ## reasoning ## ]]\nBecause.\n## Answer\n6", "Because.", "6"},
		{"Answer: 6\n[[ ## reasoning ## ]]\nBecause.", "Because.", "6"},
		// A label with no text states nothing: the output stays missing.
		{"[[ ## reasoning ## ]]\nBecause.\n**Answer:**\n[[ ## completed ## ]]", "Because.", ""},
	} {
		fields := make([]Field, 2)
		if err := Read(sig, c.reply, Markers, fields, nil); err != nil {
			t.Fatalf("%q: %v", c.reply, err)
		}
		if fields[0].Text != c.reasoning || fields[1].Text != c.answer {
			t.Errorf("%q: reasoning %s, answer %s; want %q, %q", c.reply, show(fields[0]), show(fields[1]), c.reasoning, c.answer)
		}
		if c.answer == "" && fields[1].Source != Missing {
			t.Errorf("%q: answer from %d, want missing", c.reply, fields[1].Source)
		}
	}
}

// TestMixedReplyShapes: a reply that gives some fields in line styles
// (markers, labels) and others as XML elements, or as a JSON object before
// the first marker, reads every field's own value, or is ErrAmbiguous
// naming a field — never a missing field while the reply states it, nor
// one field's element or object inside another's text. (A JSON object
// inside a marker's section is that field's text: a dict value may hold
// any key.)
func TestMixedReplyShapes(t *testing.T) {
	sig := mustSig(t, "question -> year: int, title: Optional[int], note: str")
	names := []string{"year", "title", "note"}
	r := rand.New(rand.NewPCG(45, 4))
	read, ambiguous := 0, 0
	for range 3000 {
		vals := []string{fmt.Sprint(1900 + r.IntN(200)), fmt.Sprint(r.IntN(1000)), []string{"Dry.", "Cold\nat night."}[r.IntN(2)]}
		var b strings.Builder
		for k, i := range r.Perm(3) {
			if k > 0 {
				b.WriteString("\n\n")
			}
			style := r.IntN(4)
			if style == 3 && k > 0 {
				style = r.IntN(3)
			}
			switch style {
			case 0:
				b.WriteString([]string{"[[ ## ", "**[[ ## ", "## "}[r.IntN(3)] + names[i] + " ## ]]\n" + vals[i])
			case 1:
				b.WriteString([]string{"## ", "**", ""}[r.IntN(3)] + strings.ToUpper(names[i][:1]) + names[i][1:] + ":\n" + vals[i])
			case 2:
				b.WriteString("<" + names[i] + ">" + vals[i] + "</" + names[i] + ">")
			case 3:
				q, _ := json.Marshal(vals[i])
				b.WriteString(`{"` + names[i] + `": ` + string(q) + `}`)
			}
		}
		reply := b.String()
		for _, prefer := range []Shape{Markers, JSON, XML} {
			fields := make([]Field, 3)
			err := Read(sig, reply, prefer, fields, nil)
			if err != nil {
				var re *Error
				if !errors.Is(err, errAmbiguous) || !errors.As(err, &re) || re.Field < 0 {
					t.Fatalf("%q (shape %d): %v", reply, prefer, err)
				}
				ambiguous++
				continue
			}
			read++
			for i, f := range fields {
				if got := fieldText(f); got != vals[i] {
					t.Fatalf("%q (shape %d): %s is %q (source %d), want %q", reply, prefer, names[i], got, f.Source, vals[i])
				}
			}
		}
	}
	if read < 1000 || ambiguous < 1000 {
		t.Fatalf("%d read, %d ambiguous: the generator misses one kind", read, ambiguous)
	}
}

// fieldText is a field's content as text, whatever its source.
func fieldText(f Field) string {
	switch f.Source {
	case Missing:
		return "<missing>"
	case Element, Member:
		if f.Value == nil {
			return "<null>"
		}
		return fmt.Sprint(f.Value)
	}
	return f.Text
}
