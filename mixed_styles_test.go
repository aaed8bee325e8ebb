package adapter_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	adapter "github.com/sigwire/adapter"
)

// TestMixedStylesParseAndStream: a Chat reply that gives some fields with
// markers and others with labels ("## Title", "**Title:**", "Title:")
// reads every field's value, the label never in the field before it
// (issue 45: the title was None and its heading part of the year), and
// the field stream's deltas end with Parse's values at every chunk size
// (the stream cannot know whether a marker of the labelled field follows,
// so it holds the rest back and settles to Parse's reading). The
// generated spellings of markers: internal/reply's TestMixedMarkerStyles.
func TestMixedStylesParseAndStream(t *testing.T) {
	sig := mustParse(t, "question -> year, title, final_note")
	names := []string{"year", "title", "final_note"}
	markers := []func(string) string{
		func(n string) string { return "[[ ## " + n + " ## ]]\n" },
		func(n string) string { return "**[[ ## " + n + " ## ]]**\n" },
		func(n string) string { return "### [[ ## " + strings.ToUpper(n) + " ## ]]:\n" },
		func(n string) string { return "## " + n + " ##\n" },
	}
	labels := []func(string) string{
		func(n string) string { return "## " + n + "\n" },
		func(n string) string { return "**" + strings.ReplaceAll(n, "_", " ") + ":** " },
		func(n string) string { return strings.ToUpper(n[:1]) + n[1:] + ": " },
		func(n string) string { return "### " + n + "\n\n" },
	}
	r := rand.New(rand.NewPCG(45, 3))
	for range 300 {
		vals := []string{fmt.Sprint(1900 + r.IntN(200)), "The " + fmt.Sprint(r.IntN(1000)) + " steps", "Dry.\nCold at night."}
		var b strings.Builder
		for k, i := range r.Perm(3) {
			if k > 0 {
				b.WriteString("\n\n")
			}
			if r.IntN(2) == 0 {
				b.WriteString(markers[r.IntN(len(markers))](names[i]))
			} else {
				b.WriteString(labels[r.IntN(len(labels))](names[i]))
			}
			b.WriteString(vals[i])
		}
		if r.IntN(2) == 0 {
			b.WriteString("\n\n[[ ## completed ## ]]")
		}
		reply := b.String()
		got, err := adapter.Chat{}.Parse(sig, reply)
		require.NoError(t, err, reply)
		want := adapter.Values{"year": vals[0], "title": vals[1], "final_note": vals[2]}
		require.Equal(t, want, got, reply)
		for _, size := range []int{1, 3, 16, 256} {
			streamed := streamFields(sig, reply, size)
			for _, n := range names {
				assert.Equal(t, want[n], streamed[n], "%q: %s in chunks of %d", reply, n, size)
			}
		}
	}
}

// TestMixedShapesAmbiguous: a reply that gives one field as an XML
// element, a JSON object or a label, and the others in another shape, is
// ErrAmbiguous naming the field the chosen shape missed, in every adapter
// — never None for an Optional the reply states (before: title None, or
// year "1999\n<title>370</title>").
func TestMixedShapesAmbiguous(t *testing.T) {
	sig := mustParse(t, "q -> year: str, title: Optional[int]")
	for _, reply := range []string{
		"[[ ## year ## ]]\n1999\n<title>370</title>",
		"<year>1999</year>\n[[ ## title ## ]]\n370",
		"{\"year\": \"1999\"}\n[[ ## title ## ]]\n370",
		"<year>1999</year>\nTitle: 370",
		"{\"title\": 370}\n<year>1999</year>",
	} {
		for _, p := range []adapter.Parser{adapter.Chat{}, adapter.JSON{}, adapter.XML{}} {
			_, err := p.Parse(sig, reply)
			var pe *adapter.ParseError
			require.ErrorAs(t, err, &pe, "%T %q", p, reply)
			assert.ErrorIs(t, err, adapter.ErrAmbiguous, "%T %q", p, reply)
			assert.NotEmpty(t, pe.Field, "%T %q", p, reply)
		}
	}
}
