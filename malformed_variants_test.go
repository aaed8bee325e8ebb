package adapter_test

import (
	"fmt"
	"strings"
)

// variants are the same families' malformations in other spellings,
// written without looking at the parser (a check that the recoveries
// generalise).
func variants() []gCase {
	var out []gCase
	// Markers.
	for _, form := range []string{"[[ ## %s ## ]]]", "[[  ##  %s  ##  ]]", "*[[ ## %s ## ]]*", "`[[ ## %s ## ]]`", "[[ ##%s ## ]",
		"[[## %s##]]", "[[ ## %s ## ]]**", "- [[ ## %s ## ]]", "[[ # %s # ]]", "[ # %s # ]", "[[ ## %s ##]", "[[ ## %s ## ]] -"} {
		for _, fs := range gSignatures(gAnswer) {
			i := indexOf(fs, "answer")
			marker := func(k int) string {
				if k == i {
					return fmt.Sprintf(form, fs[k].name)
				}
				return "[[ ## " + fs[k].name + " ## ]]"
			}
			out = append(out, gCase{"variant marker", "chat", form, fs, chatReply(fs, marker, true), wantOf(fs)})
		}
	}
	for _, comp := range []string{"[[ ## completed ## ]", "[ ## completed ## ]]", "## completed ##", "[[ ## completed ##]"} {
		fs := []gField{gReasoning, gAnswer}
		reply := chatReply(fs, canonMarker(fs), false) + "\n\n" + comp + "\n\nHope this helps!"
		out = append(out, gCase{"variant marker", "chat", comp, fs, reply, wantOf(fs)})
	}
	// Explained.
	for _, v := range []struct {
		text string
		want any
	}{
		{"I'd say 1648.", 1648}, {"=> 1648", 1648}, {"1648 is the year the treaty was signed.", 1648},
		{"Year: 1648 (Peace of Westphalia)", 1648}, {"After checking the sources, I conclude it was 1648", 1648},
		{"**1648** — the Peace of Westphalia", 1648}, {"The year 1648.", 1648}, {"The final answer is $\\boxed{1648}$", 1648},
		{"1648 or 1650", nil}, {"The 30 years' war ended in 1648.", nil}, {"Not 1648, but 1650.", nil},
	} {
		for _, fs := range gSignatures(gYear) {
			i := indexOf(fs, "year")
			g := with(fs, i, v.text, jsonQuote(v.text), nil)
			for _, a := range gAdapters {
				c := gCase{"variant explained", a, v.text, g, render(a, g), wantOf(g)}
				if v.want == nil {
					c.want = nil
				}
				out = append(out, c)
			}
		}
	}
	for _, v := range []struct {
		text string
		want any
	}{
		{"Yes.", true}, {"True — both dates match.", true}, {"Verdict: **Yes**", true}, {"The answer is yes", true},
		{"no, wait, yes", nil}, {"Probably false.", false},
	} {
		fs := []gField{gReasoning, gVerified}
		g := with(fs, 1, v.text, jsonQuote(v.text), v.want)
		for _, a := range gAdapters {
			c := gCase{"variant explained", a, v.text, g, render(a, g), wantOf(g)}
			if v.want == nil {
				c.want = nil
			}
			out = append(out, c)
		}
	}
	for _, v := range []struct {
		text string
		ok   bool
	}{
		{"The issue is technical in nature.", true}, {"Technical support issue", true}, {"category => technical", true},
		{"billing (or possibly technical)", false}, {"It's a billing problem, not a technical one.", false},
	} {
		fs := []gField{gReasoning, gCategory}
		g := with(fs, 1, v.text, jsonQuote(v.text), nil)
		if strings.HasPrefix(v.text, "It's a billing") {
			g[1].want = "billing"
		}
		for _, a := range gAdapters {
			c := gCase{"variant explained", a, v.text, g, render(a, g), wantOf(g)}
			if !v.ok {
				c.want = nil
			}
			out = append(out, c)
		}
	}
	// Hedged.
	for _, v := range []struct {
		text string
		ok   bool
	}{
		{"~ 1648", true}, {"≈1648", true}, {"approx 1648", true}, {"1648-ish", true}, {"approximately 1,648 people", true},
		{"1648 (approx.)", true}, {"est 1648", true}, {"somewhere around 1648", true}, {"1648 give or take", true}, {"about 1648 or so", true},
		{"over 1648", false}, {"up to 1648", false}, {"1648+", false}, {">1648", false}, {"≥ 1648", false},
	} {
		for _, fs := range gSignatures(gYear) {
			i := indexOf(fs, "year")
			g := with(fs, i, v.text, jsonQuote(v.text), nil)
			for _, a := range gAdapters {
				c := gCase{"variant hedged", a, v.text, g, render(a, g), wantOf(g)}
				if !v.ok {
					c.want = nil
				}
				out = append(out, c)
			}
		}
	}
	// Unknown for Optional.
	var none *int
	for _, text := range []string{"Not found in the text.", "No page number is mentioned.", "Cannot be determined from the context.",
		"The passage doesn't say.", "Information not available.", "unspecified", "None given", "It is not stated in the document.",
		"I don't know.", "There is no page number."} {
		for _, fs := range gSignatures(gPage) {
			i := indexOf(fs, "page")
			g := with(fs, i, text, jsonQuote(text), nil)
			g[i].want = none
			for _, a := range gAdapters {
				out = append(out, gCase{"variant unknown", a, text, g, render(a, g), wantOf(g)})
			}
		}
	}
	// Fenced.
	for _, fs := range [][]gField{{gAnswer}, {gReasoning, gAnswer}, {gReasoning, gYear}} {
		for _, a := range gAdapters {
			inner := render(a, fs)
			out = append(out, gCase{"variant fenced", a, "preamble", fs, "Here is my answer:\n```\n" + inner + "\n```", wantOf(fs)})
			out = append(out, gCase{"variant fenced", a, "chatter after", fs, "```\n" + inner + "\n```\n\nLet me know if you need more.", wantOf(fs)})
			out = append(out, gCase{"variant fenced", a, "4 backticks", fs, "````\n" + inner + "\n````", wantOf(fs)})
			if a == "chat" {
				inner = chatReply(fs, canonMarker(fs), false)
				out = append(out, gCase{"variant fenced", a, "chatter after, no completed", fs, "```\n" + inner + "\n```\n\nLet me know if you need more.", wantOf(fs)})
				out = append(out, gCase{"variant fenced", a, "crlf", fs, strings.ReplaceAll("```\n"+inner+"\n```", "\n", "\r\n"), wantOf(fs)})
			}
		}
	}
	// Missing bracket.
	for _, v := range []struct {
		target gField
		text   string
		ok     bool
	}{
		{gTags, "[\"sql\",\n \"indexing\"\n", true}, {gPerson, "{\"name\": \"Ada\", \"age\": 36", true},
		{gPeople, "[\n  {\"name\": \"Ada\", \"age\": 36},\n  {\"name\": \"Bob\", \"age\": 7}\n", true},
		{gCounts, "[3,4", true},
	} {
		for _, fs := range gSignatures(v.target) {
			i := indexOf(fs, v.target.name)
			g := with(fs, i, v.text, v.text, nil)
			for _, a := range gAdapters {
				out = append(out, gCase{"variant bracket", a, v.text, g, render(a, g), wantOf(g)})
			}
		}
	}
	// Renamed.
	args := gField{"next_tool_args", "dict[str, int]", `{"k": 3}`, `{"k": 3}`, "<k>3</k>", map[string]int{"k": 3}}
	summary := gStr("summary", "Short.")
	for _, s := range []struct {
		fs     []gField
		target int
		name   string
	}{
		{[]gField{gStr("next_thought", "t"), args}, 1, "tool_args"},
		{[]gField{gStr("next_thought", "t"), args}, 1, "args"},
		{[]gField{gReasoning, summary}, 1, "summary_text"},
		{[]gField{gReasoning, summary}, 1, "Summary"},
	} {
		key := func(k int) string {
			if k == s.target {
				return s.name
			}
			return s.fs[k].name
		}
		for _, a := range gAdapters {
			var reply string
			switch a {
			case "chat":
				reply = chatReply(s.fs, func(k int) string { return "[[ ## " + key(k) + " ## ]]" }, true)
			case "xml":
				reply = xmlReply(s.fs, key)
			default:
				reply = jsonReply(s.fs, key)
			}
			out = append(out, gCase{"variant renamed", a, s.name, s.fs, reply, wantOf(s.fs)})
		}
	}
	// Fenced array after reasoning, other shapes.
	for _, pre := range []string{"Step 1: look at [the docs].\nStep 2: pick tags.\n\n", "Thinking... (a) [sql]? (b) [indexing]?\n\nFinal:\n"} {
		reply := pre + "```json\n[\"sql\", \"indexing\"]\n```"
		for _, a := range gAdapters {
			out = append(out, gCase{"variant fenced array", a, pre[:8], []gField{gTags}, reply, wantOf([]gField{gTags})})
		}
	}
	// Correction.
	draft := []gField{gReasoning, gStr("answer", "Lyon")}
	final := []gField{gReasoning, gStr("answer", "Paris")}
	for _, cue := range []string{"Oops, correction:", "Sorry, the correct JSON is:", "Here is the fixed version:", "FINAL:"} {
		reply := jsonReply(draft, nameOf(draft)) + "\n" + cue + "\n" + jsonReply(final, nameOf(final))
		for _, a := range []string{"json", "chat", "xml"} {
			out = append(out, gCase{"variant correction", a, cue, final, reply, wantOf(final)})
		}
	}
	return out
}
