package adapter_test

import (
	"runtime"
	"strings"
	"testing"

	adapter "github.com/sigwire/adapter"
)

// adversarialReplies are hostile replies: 10 MB of text, 100 000-deep
// nesting, a million markers, NUL bytes and invalid UTF-8, a JSON span
// over the repair cap, hundreds of thousands of unclosed tags, entities
// and CDATA sections.
func adversarialReplies() map[string]string {
	return map[string]string{
		"10 MB section":         "[[ ## answer ## ]]\n" + strings.Repeat("word ", 2<<20),
		"deep brackets":         strings.Repeat("[", 100000) + strings.Repeat("]", 100000),
		"deep objects":          strings.Repeat(`{"a":`, 100000),
		"a million markers":     strings.Repeat("[[ ## answer ## ]]\nx\n", 1000000),
		"NUL and bad UTF-8":     "[[ ## answer ## ]]\n\x00\x00\xff\xfe\n[[ ## items ## ]]\n[\"\xc3\x28\"]",
		"over the repair cap":   `{"answer": "` + strings.Repeat("x", 200000) + `", "items": [`,
		"unclosed tags":         strings.Repeat("<answer>", 200000),
		"deep elements":         strings.Repeat("<items><item>", 100000),
		"bracket soup":          strings.Repeat("{[", 500000),
		"unterminated entities": "<answer>" + strings.Repeat("&amp", 1000000) + "</answer>",
		"bare ampersands":       strings.Repeat("& ", 1000000),
		"unclosed CDATA":        strings.Repeat("<answer><![CDATA[", 300000),
		"a million items":       "[[ ## answer ## ]]\nx\n[[ ## items ## ]]\n" + strings.Repeat("- item\n", 1000000),
	}
}

// allocated runs f and returns the objects and bytes it allocated.
func allocated(f func()) (objects, bytes uint64) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.Mallocs - before.Mallocs, after.TotalAlloc - before.TotalAlloc
}

// TestAdversarialReplies feeds every adversarial reply to every parser,
// every field stream and ParseValue. Each must finish with bounded work:
// the allocated objects stay under a fixed budget and the allocated bytes
// under a small multiple of the input, where a quadratic or per-element
// blow-up would exceed both by far. (Scans that do not allocate are shown
// linear by BenchmarkAdversarial, which doubles each input.)
func TestAdversarialReplies(t *testing.T) {
	if testing.Short() {
		t.Skip("large inputs")
	}
	sig := mustParse(t, "q -> answer, items: list[str]")
	items := sig.Output(1)
	type run struct {
		name string
		f    func(text string) error
	}
	var runs []run
	for _, a := range []adapter.Adapter{adapter.Chat{}, adapter.JSON{}, adapter.XML{}, adapter.BAML{}} {
		runs = append(runs, run{a.Name() + " parse", func(text string) error {
			vals, err := a.(adapter.Parser).Parse(sig, text)
			if err == nil && vals == nil {
				t.Errorf("%s: no values and no error", a.Name())
			}
			return err
		}})
		if sp, ok := a.(adapter.StreamParser); ok {
			runs = append(runs, run{a.Name() + " stream", func(text string) error {
				fs := sp.NewFieldStream(sig)
				var ds []adapter.FieldDelta
				for i := 0; i < len(text); i += 4096 {
					ds = fs.Write(ds[:0], text[i:min(i+4096, len(text))])
				}
				fs.Close(ds[:0])
				return nil
			}})
		}
	}
	runs = append(runs, run{"ParseValue list[str]", func(text string) error {
		_, err := adapter.ParseValue(text, items)
		return err
	}})
	for name, text := range adversarialReplies() {
		for _, r := range runs {
			objects, bytes := allocated(func() { _ = r.f(text) })
			// The largest legitimate reads of these allocate a few thousand
			// objects (a million-item list: two per item) and a few copies
			// of the text; a per-element or per-marker blow-up allocates
			// hundreds of thousands, a quadratic one gigabytes.
			maxObjects := uint64(50000)
			if name == "a million items" {
				maxObjects = 2100000
			}
			if objects > maxObjects {
				t.Errorf("%s: %s allocated %d objects", name, r.name, objects)
			}
			if limit := 16*uint64(len(text)) + 64<<20; bytes > limit {
				t.Errorf("%s: %s allocated %d MB for %d bytes of input", name, r.name, bytes>>20, len(text))
			}
		}
	}
}
