package reply

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/sigwire/adapter/signature"
)

// streamText feeds text to fs in chunks of size bytes and returns each
// field's text as a consumer that applies replacements holds it.
func streamText(fs Stream, text string, size int) map[string]string {
	got := map[string]string{}
	var ds []Delta
	apply := func(ds []Delta) {
		for _, d := range ds {
			if d.Reasoning || d.Field == "" {
				continue
			}
			if d.Replace {
				got[d.Field] = ""
			}
			got[d.Field] += d.Text
		}
	}
	for i := 0; i < len(text); i += size {
		ds = fs.Write(ds[:0], text[i:min(i+size, len(text))])
		apply(ds)
	}
	apply(fs.Close(ds[:0]))
	return got
}

// plainElements is an XML reply of two str fields given once each as
// plain elements (text and CDATA), possibly after a think block: the
// replies whose streamed text must equal Read's (see the root's
// FuzzXMLStream for why others may differ).
var plainElements = regexp.MustCompile(`(?is)^[^<]*(?:<think>[^<]*</think>[^<]*)?(?:(?:<reasoning>(?:[^<]|(?-i:<!\[CDATA\[)(?:[^\]]|\][^\]])*\]\]>)*</reasoning>|<answer>(?:[^<]|(?-i:<!\[CDATA\[)(?:[^\]]|\][^\]])*\]\]>)*</answer>)[^<]*){2}$`)

// FuzzStreams: each of the package's streams, fed any reply in any
// chunking, never panics and agrees with Read on that reply: a marker
// section streams as the text Read gives it, quotes dropped as Unquote
// drops them (or, read from a marker the stream cannot follow yet,
// nothing); a plain element streams as Read's element text; a string
// member of one JSON object streams as Read's string.
func FuzzStreams(f *testing.F) {
	for _, s := range []string{
		"[[ ## reasoning ## ]]\nr\n\n[[ ## answer ## ]]\n\"a\"\n\n[[ ## completed ## ]]",
		"<think>x</think>**[[ ## answer ## ]]**: a  \n b\n[[ ## reasoning ## ]] r",
		"<answer>a &amp; b</answer><reasoning><![CDATA[x]]></reasoning>",
		"<think>hm</think><reasoning>r</reasoning>\n<answer>  spaced  </answer>",
		`{"answer": "a\u00e9\\\"b", "reasoning": "r"}`,
		`{"answer": "The document says "Help here" and then…", "reasoning": "r"}`,
	} {
		f.Add(s, uint8(3))
	}
	sig, err := signature.Parse("question -> reasoning, answer")
	if err != nil {
		f.Fatal(err)
	}
	names := []string{"reasoning", "answer"}
	f.Fuzz(func(t *testing.T, text string, size uint8) {
		n := int(size%64) + 1
		fields := make([]Field, 2)

		got := streamText(NewMarkerStream(sig, func(*signature.Signature, string) (map[string]any, error) { return nil, nil }), text, n)
		if Read(sig, text, Markers, fields, nil) == nil {
			for i, name := range names {
				if fields[i].Source != Marker {
					continue
				}
				want := Unquote(fields[i].Text, sig.Output(i))
				if got[name] != want && got[name] != "" {
					t.Fatalf("markers: field %s streams %q, Read %q", name, got[name], want)
				}
			}
		}

		got = streamText(NewXMLStream(sig), text, n)
		lower := strings.ToLower(text)
		if plainElements.MatchString(text) && !strings.Contains(text, "[[") && !strings.Contains(text, "{") &&
			strings.Count(lower, "<answer>") == 1 && strings.Count(lower, "<reasoning>") == 1 &&
			Read(sig, text, XML, fields, nil) == nil {
			for i, name := range names {
				leaf, ok := fields[i].Value.(string)
				if fields[i].Source != Element || !ok {
					continue
				}
				if want := Unquote(leaf, sig.Output(i)); got[name] != want {
					t.Fatalf("xml: field %s streams %q, Read %q", name, got[name], want)
				}
			}
		}

		got = streamText(NewJSONStream(sig), text, n)
		var obj map[string]json.RawMessage
		if json.Unmarshal([]byte(text), &obj) != nil || strings.Count(text, `"answer"`) != 1 || Read(sig, text, JSON, fields, nil) != nil {
			return
		}
		if fields[1].Source == String && got["answer"] != fields[1].Text {
			t.Fatalf("json: answer streams %q, Read %q", got["answer"], fields[1].Text)
		}
	})
}
