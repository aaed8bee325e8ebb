package adapter_test

import (
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/internal/value"
	"github.com/sigwire/adapter/signature"
)

// ticketKind is an enum for the prose rule's type space.
type ticketKind string

func (ticketKind) EnumValues() []string { return []string{"billing", "technical", "shipping"} }

// proseType is one field type of the prose rule's space, with two
// different values as a model writes them and the first one's Go value.
type proseType struct {
	typ  string
	v, w string
	want any
}

func proseTypes() []proseType {
	seven := 7
	yes := true
	return []proseType{
		{"bool", "yes", "no", true},
		{"bool", "False", "True", false},
		{"int", "7", "8", 7},
		{"float", "0.75", "0.5", 0.75},
		{"Literal['yes', 'no']", "no", "yes", "no"},
		{"Literal['billing', 'technical', 'shipping']", "billing", "technical", "billing"},
		{"Ticket", "technical", "shipping", ticketKind("technical")},
		{"Optional[int]", "7", "8", &seven},
		{"Optional[bool]", "Yes", "No", &yes},
		{"list[int]", "[1, 2]", "[3, 4]", []int{1, 2}},
		{"list[str]", `["a", "b"]`, `["c"]`, []string{"a", "b"}},
		{"Optional[list[int]]", "[1, 2]", "[3]", []int{1, 2}},
		{"dict[str, int]", `{"a": 1}`, `{"b": 2}`, map[string]int{"a": 1}},
		{"list[bool]", "[true, false]", "[false]", []bool{true, false}},
	}
}

// proseOutcome is what a phrasing states.
type proseOutcome uint8

const (
	stated    proseOutcome = iota // the value v
	noValue                       // nothing: an error, or None for an Optional type
	ambiguous                     // two values, or a value and None: ErrAmbiguous
	refused                       // negated, bounded, a range: an error
)

// proseTemplate is a phrasing with its oracle; {v} and {w} stand for the
// type's two values. numeric templates apply to numbers only.
type proseTemplate struct {
	family  string
	text    string
	want    proseOutcome
	numeric bool // numbers only
	yesNo   bool // types whose values are yes/no words only
}

func proseTemplates() []proseTemplate {
	var ts []proseTemplate
	add := func(family string, want proseOutcome, texts ...string) {
		for _, t := range texts {
			ts = append(ts, proseTemplate{family: family, text: t, want: want})
		}
	}
	add("value", stated, "{v}", "{v}.", "Answer: {v}", "**{v}**", "{v}, because the passage says so.",
		"{v} - the passage says so.", "The answer is {v}.", "Probably {v}.", "{v} (the passage says so)")
	add("refusal", noValue, "No answer", "No idea.", "No way to tell.", "No information is given.", "No data available",
		"No comment.", "No clue", "No definitive answer can be given.", "No reliable estimate", "I cannot answer that.",
		"I don't know.", "Not enough information.", "Unable to determine.", "N/A", "Unknown", "I'm sorry, but I can't determine that.",
		"None", "Nothing is stated.", "No answer was found in the passage.", "No single answer")
	add("hedge", noValue, "Maybe.", "Possibly", "It depends.", "Hard to say.", "Not sure.", "Unclear.", "Perhaps", "Could be either.")
	add("alternative", ambiguous, "{v} or {w}", "{v} and {w}", "either {v} or {w}", "{v} or None", "{v} or null", "{v}, or nothing",
		"{v} or unknown", "None or {v}", "{v} (or {w})", "{v} and/or {w}", "{v}, or possibly {w}", "{v} or maybe None", "null or {v}",
		"{v}; {w}", "{v}/None", "{v} or 'unknown'", "{v} or **None**", "**{v}** or None", "{v} or no value", "N/A or {v}",
		"{v} (or None)", "Either {v} or nothing.")
	add("negation", refused, "not {v}", "Not {v}, but {w}.", "It is not {v}.", "definitely not {v}")
	add("correction", ambiguous, "{v}, no wait, {w}", "{v}. Actually, {w}.", "{v} — correction: {w}", "{v}. Scratch that: {w}.")
	for _, t := range []string{"{v}-{w}", "{v} to {w}", "between {v} and {w}", "from {v} to {w}", "{v}–{w}", "{v} or more", "at least {v}",
		"{v} or fewer", "{v} at most", "{v} max", "{v} and up", "no more than {v}", "{v} and above", "up to {v}"} {
		ts = append(ts, proseTemplate{family: "range", text: t, want: refused, numeric: true})
	}
	// A refusal after a yes/no word, and a None answer with a guess.
	for _, t := range []string{"{v}, I cannot determine this.", "{v}, but I can't be sure.", "{v} - it cannot be determined from the passage.",
		"{v}; there is no way to tell."} {
		ts = append(ts, proseTemplate{family: "refusal", text: t, want: noValue, yesNo: true})
	}
	// The clause after a yes/no word, judged as a whole text would be: a
	// refusal, a hedge, an unknown or "not enough information" takes the
	// answer back; a justification keeps it. Separators × clauses.
	for _, sep := range clauseSeps {
		for _, c := range takeBackClauses {
			ts = append(ts, proseTemplate{family: "clause refusal", text: "{v}" + sep + c + sepClose(sep), want: noValue, yesNo: true})
		}
		for _, c := range keepClauses {
			ts = append(ts, proseTemplate{family: "clause answer", text: "{v}" + sep + c + sepClose(sep), want: stated, yesNo: true})
		}
		// The answer taken back, then given again: the text still disowns
		// it ("False, unclear. no"), whatever the later word says.
		for _, c := range takeBackClauses[:8] {
			for _, again := range []string{" {v}", " {w}", " So: {v}."} {
				ts = append(ts, proseTemplate{family: "taken back, then restated",
					text: "{v}" + sep + strings.TrimSuffix(c, ".") + "." + again + sepClose(sep), want: noValue, yesNo: true})
			}
		}
	}
	// "No-one", "Nobody", "No one": a noun phrase, not a yes/no word.
	for _, t := range []string{"{v}-one knows", "{v}-one knows.", "{v}-body can tell"} {
		ts = append(ts, proseTemplate{family: "noun phrase", text: t, want: noValue, yesNo: true})
	}
	// An alternative with None joined by unless / if not.
	add("alternative", ambiguous, "{v}, unless it is None", "{v} unless None", "{v}, if not None", "{v}, unless it's null",
		"{v} (unless it is None)")
	add("refusal", refused, "Unknown, maybe {v}", "Unknown (possibly {v})", "N/A - perhaps {v}", "None, but probably {v}")
	// A value named again and joined to None there: every mention counts,
	// not only the first (issue 45: "nO no and unknown A" read "no").
	add("alternative", ambiguous, "{v} {v} and unknown", "{v}. Well, {v} or unknown.", "{v}, {v} or None", "The answer is {v}; {v} or null.")
	// A yes/no word is an answer before punctuation or a closed-class word,
	// a determiner before any other word.
	for _, t := range []string{"{v}, it is.", "{v} it is", "{v} the passage says so", "{v} because the passage says so",
		"{v} - the passage says so", "{v}! The passage says so.", "{v} indeed", "{v}, definitely not otherwise",
		"No evidence contradicts it, so the answer is {v}.", "No data contradicts it: {v}", "{v}\u00a0it is",
		"{v}, {v}.", "{v}, definitely {v}", "{v}. {v}, it is."} {
		ts = append(ts, proseTemplate{family: "answer word", text: t, want: stated, yesNo: true})
	}
	for _, t := range []string{"{v} answer", "{v} idea.", "{v} clear evidence", "{v} way to tell", "{v} information is given.", "{v} comment",
		"{v} single value fits", "{v} data", "{v} relevant passage mentions it", "{v}\u00a0answer", "Answer: {v} idea"} {
		ts = append(ts, proseTemplate{family: "noun phrase", text: t, want: noValue, yesNo: true})
	}
	return ts
}

// The separators after a leading yes/no word, and the clauses that follow
// it: those that take the answer back and those that justify it.
var (
	clauseSeps      = []string{", ", "; ", ": ", " - ", " – ", " — ", " (", ",", " -- "}
	takeBackClauses = []string{"not enough information.", "not enough information is given", "unclear.", "unknown", "Unknown.",
		"uncertain", "unsure", "not sure", "not certain", "not clear", "not known", "not stated", "not given", "not specified",
		"not mentioned", "nobody knows", "no one can tell", "no-one knows", "the passage does not say", "the text doesn't say.",
		"hard to say", "difficult to tell", "it is unclear", "that is uncertain", "it depends", "maybe", "perhaps", "possibly",
		"probably, but not sure", "but not sure", "I cannot tell", "insufficient information", "n/a", "N/A", "N/A in the text", "not determinable",
		"it cannot be determined", "cannot say"}
	keepClauses = []string{"it is.", "it is not.", "because the passage says so.", "the passage says so", "not at all", "not really",
		"definitely", "probably", "the sky is clear.", "as the passage states", "it is raining.", "clearly", "according to the text",
		"the text says so.", "never", "I am sure", "I know this", "it is known to be so", "nobody came.", "nobody signed it"}
)

// statesYesNo reports a yes/no word in s: an answer of its own.
func statesYesNo(s string) bool {
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return r < 'a' || r > 'z' }) {
		switch w {
		case "yes", "no", "true", "false":
			return true
		}
	}
	return false
}

// sepClose closes a parenthesis a separator opened.
func sepClose(sep string) string {
	if strings.HasSuffix(sep, "(") {
		return ")"
	}
	return ""
}

func (tt proseTemplate) fill(pt proseType) string {
	return strings.NewReplacer("{v}", pt.v, "{w}", pt.w).Replace(tt.text)
}

func proseSig(t testing.TB, typ string) *signature.Signature {
	sig, err := signature.Parse("question -> x: "+typ, signature.WithTypes(map[string]reflect.Type{"Ticket": reflect.TypeFor[ticketKind]()}))
	if err != nil {
		t.Fatal(err)
	}
	return sig
}

// TestProseRule: a value only where the text states one (issue 30 item 1,
// DESIGN.md decision 21). Every phrasing family — a stated value,
// refusals, hedges, alternatives, negations, corrections, ranges — is
// filled with every scalar and container type's values and read through
// ParseValue, Chat, JSON and BAML (a string member) and XML (an element);
// each must give the family's outcome: the value, no value (an error, or
// None for an Optional type), ErrAmbiguous, or an error. The five paths
// agree.
func TestProseRule(t *testing.T) {
	failures := 0
	for _, pt := range proseTypes() {
		sig := proseSig(t, pt.typ)
		f := sig.Output(0)
		optional := f.Spec.Kind() == signature.KindOptional
		numeric := f.Spec.Kind() == signature.KindInt || f.Spec.Kind() == signature.KindFloat ||
			optional && (f.Spec.Elem().Kind() == signature.KindInt || f.Spec.Elem().Kind() == signature.KindFloat)
		yesNo := strings.Contains("yes no true false", strings.ToLower(pt.v))
		for _, tt := range proseTemplates() {
			if tt.numeric && !numeric || tt.yesNo && !yesNo {
				continue
			}
			text := tt.fill(pt)
			label := fmt.Sprintf("%s/%s %q", tt.family, pt.typ, text)
			got, err := adapter.ParseValue(text, f)
			ok := true
			switch tt.want {
			case stated:
				ok = assert.NoError(t, err, label) && assert.Equal(t, pt.want, got, label)
			case noValue:
				if err == nil {
					ok = assert.True(t, optional && reflect.ValueOf(got).IsNil(), "%s: a value from a text that states none: %#v", label, got)
				}
			case ambiguous:
				ok = assert.ErrorIs(t, err, adapter.ErrAmbiguous, "%s gave %#v", label, got)
			case refused:
				ok = assert.Error(t, err, "%s gave %#v", label, got)
			}
			if err != nil && !strings.Contains(err.Error(), `"x"`) {
				ok = assert.Fail(t, "the error names no field", "%s: %v", label, err)
			}
			if q := strconv.Quote(strings.TrimRight(text, ".")); err != nil && !strings.Contains(err.Error(), q[1:len(q)-1]) {
				ok = assert.Fail(t, "the error does not keep the text", "%s: %v", label, err)
			}
			if !ok {
				failures++
				continue
			}
			// Every adapter reads the same text to the same outcome.
			for _, c := range fieldReplies(text) {
				vals, perr := c.p.Parse(sig, c.reply)
				if err != nil {
					var pe *adapter.ParseError
					if assert.ErrorAs(t, perr, &pe, "%T %s gave %#v", c.p, label, vals) {
						assert.Equal(t, c.reply, pe.Completion, label)
						assert.Equal(t, errors.Is(err, adapter.ErrAmbiguous), errors.Is(perr, adapter.ErrAmbiguous), "%T %s: %v / %v", c.p, label, err, perr)
					}
					continue
				}
				if assert.NoError(t, perr, "%T %s", c.p, label) {
					assert.Equal(t, got, vals["x"], "%T %s", c.p, label)
				}
			}
		}
	}
	if failures > 0 {
		t.Logf("%d phrasings read against their family's outcome", failures)
	}
}

// FuzzProseRule: for any text the prose rule calls a noun phrase or an
// alternative with None, ParseValue states no value, whatever surrounds
// it. The fuzzer picks the type, the noun or None word, the joining
// punctuation and the words before and after (one line of letters and
// punctuation: no digits, brackets, quotes or emphasis, which could state
// a value of their own, and no colon after the value, which would make
// the text before it a label); the phrasing is "No <noun> …" for a yes/no type,
// "… <value>[,;(] or|and <None word> …" or "<None answer>, maybe <value> …"
// for any type. The result must
// be an error, or None for an Optional type.
func FuzzProseRule(f *testing.F) {
	f.Add(uint8(0), uint8(0), "answer", "", "")
	f.Add(uint8(1), uint8(2), "idea", "I would say", ", sorry.")
	f.Add(uint8(7), uint8(1), "way to tell", "Answer:", " at all")
	f.Add(uint8(9), uint8(3), "information is given", "", ". The passage is silent!")
	f.Add(uint8(12), uint8(5), "data", "Hmm", " - hard to say")
	types := proseTypes()
	sigs := make([]*signature.Signature, len(types))
	for i, pt := range types {
		sigs[i] = proseSig(f, pt.typ)
	}
	line := func(s string) bool {
		for _, r := range s {
			if !(r == ' ' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || strings.ContainsRune(".,;:!?-", r)) {
				return false
			}
		}
		return true
	}
	nones := []string{"None", "null", "nil", "N/A", "unknown", "undefined", "nothing", "not"}
	seps := []string{"", ",", " (", ";", " ,"}
	f.Fuzz(func(t *testing.T, typ, form uint8, word, before, after string) {
		if !line(word) || !line(before) || !line(after) || len(word)+len(before)+len(after) > 200 ||
			strings.ContainsRune(word+after, ':') {
			return // a colon after the value makes what precedes it a label ("Yes or None: Y")
		}
		pt := types[int(typ)%len(types)]
		f := sigs[int(typ)%len(types)].Output(0)
		var text string
		if form%8 == 5 {
			// "<yes/no><separator> <clause that takes it back> …".
			v := strings.ToLower(pt.v)
			if v != "yes" && v != "no" && v != "true" && v != "false" {
				return
			}
			if after != "" && strings.IndexByte(".,;:!?- ", after[0]) < 0 {
				after = " " + after
			}
			sep := clauseSeps[int(form/8)%len(clauseSeps)]
			text = pt.v + sep + takeBackClauses[len(word)%len(takeBackClauses)] + after + sepClose(sep)
		} else if form%4 == 3 {
			// "<None answer>, maybe <value> …": a guess the text disowns.
			heads := []string{"Unknown", "N/A", "None", "Not specified", "unknown"}
			joins := []string{", maybe ", " (possibly ", " - perhaps ", ", but probably ", ": likely "}
			if after != "" && strings.IndexByte(".,;:!?- ", after[0]) < 0 {
				after = " " + after
			}
			text = heads[int(form/4)%len(heads)] + joins[int(form/32)%len(joins)] + pt.v + after
		} else if form%2 == 0 {
			// "No <noun> …" for a yes/no type.
			v := strings.ToLower(pt.v)
			noun := strings.ToLower(strings.TrimSpace(word))
			first, _, _ := strings.Cut(noun, " ")
			if v != "yes" && v != "no" && v != "true" && v != "false" || len(first) < 2 || !isLetters(first) ||
				value.IsClosedWord(first) || statesYesNo(noun+" "+after) {
				return // the words after the noun phrase must not answer themselves ("Yes man. No.")
			}
			if after != "" && strings.IndexByte(".,;:!?- ", after[0]) < 0 {
				after = " " + after
			}
			text = strings.TrimSpace(before + " " + pt.v + " " + noun + after)
			if before != "" && !strings.HasSuffix(strings.TrimSpace(before), ":") {
				return // the yes/no word must start the answer (a label may precede it)
			}
		} else {
			none := nones[int(form/2)%len(nones)]
			conj := "or"
			if form/2%3 == 1 && (none == "None" || none == "null" || none == "unknown") {
				conj = "and"
			}
			if after != "" && strings.IndexByte(".,;:!?- ", after[0]) < 0 {
				after = " " + after // the None word ends where the words after begin
			}
			text = before + " " + pt.v + seps[int(form/16)%len(seps)] + " " + conj + " " + none + after
		}
		got, err := adapter.ParseValue(text, f)
		if err == nil && !reflect.ValueOf(got).IsZero() || err == nil && f.Spec.Kind() != signature.KindOptional {
			t.Fatalf("%s %q: a value from a text that states none: %#v", pt.typ, text, got)
		}
		// Every adapter reads the same text, as its field, to the same outcome.
		sig := sigs[int(typ)%len(types)]
		for _, c := range fieldReplies(text) {
			vals, perr := c.p.Parse(sig, c.reply)
			if perr == nil {
				if !reflect.ValueOf(vals["x"]).IsZero() || f.Spec.Kind() != signature.KindOptional {
					t.Fatalf("%T %s %q: a value from a text that states none: %#v", c.p, pt.typ, text, vals["x"])
				}
				continue
			}
			var pe *adapter.ParseError
			if !errors.As(perr, &pe) || pe.Completion != c.reply || !strings.Contains(perr.Error(), `"x"`) {
				t.Fatalf("%T %s %q: %v: not a ParseError naming the field and keeping the reply", c.p, pt.typ, text, perr)
			}
		}
	})
}

// fieldReplies are the replies of every adapter that give the output x
// the text.
func fieldReplies(text string) []struct {
	p     adapter.Parser
	reply string
} {
	return []struct {
		p     adapter.Parser
		reply string
	}{
		{adapter.Chat{}, "[[ ## x ## ]]\n" + text + "\n\n[[ ## completed ## ]]"},
		{adapter.JSON{}, `{"x": ` + jsonQuote(text) + `}`},
		{adapter.XML{}, "<x>" + xmlText(text) + "</x>"},
		{adapter.BAML{}, `{"x": ` + jsonQuote(text) + `}`},
	}
}

func isLetters(s string) bool {
	for _, r := range s {
		if r < 'a' || r > 'z' {
			return false
		}
	}
	return s != ""
}

// xmlText escapes text as an XML element's character data.
func xmlText(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}
