package value

import (
	"fmt"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// A value only where the text states one (DESIGN.md decision 21). Beyond
// the value itself, three structures decide whether a text states it;
// each is read from the words around the value, never from a list of
// whole phrasings:
//
//  1. A noun phrase. "No", "yes", "true" and "false" are answers when the
//     text ends after them, punctuation follows them ("No.", "No, it is
//     not", "Yes - because …") or a word of a closed class does (a
//     pronoun, an article, an auxiliary, an adverb, a conjunction or a
//     preposition: "No it isn't", "Yes the claim holds", "No because …").
//     Followed directly by any other word — a noun, an adjective — the
//     word is a determiner and the text a noun phrase: "No answer", "No
//     idea", "No way to tell", "No information is given", "True story"
//     state no yes/no value.
//  2. An alternative. A value joined by or/and to None ("7 or None",
//     "null or 7", "yes, or nothing"), or conditioned on not being None
//     ("7, unless it is None", "7 if not None"), is ambiguous; joined by "or" to a
//     comparative ("7 or more", "7 or fewer") it is a bound. A value
//     joined to another value of the type ("7 or 8", "[1, 2] and [3]",
//     `{"a": 1} or {"b": 2}`) is ambiguous, as is a value corrected by
//     another ("[1, 2]. Actually, [3]."): two different values in the
//     text, whatever joins them.
//  3. Refusals and hedges given for a list of text items ("No answer",
//     "I don't know.", "Maybe.", "It depends.") are not a one-item list:
//     see noItem.
//
// Negations and bounds before a value ("not 7", "at least 7") are the
// qualifier rule in prose.go, applied to container values in prose too.

// closedWords are the English function words that may follow a yes/no
// answer word directly, without punctuation, while it stays the answer:
// pronouns, articles and determiners, auxiliaries, adverbs of stance and
// degree, conjunctions and prepositions. They are closed classes: a
// finite list covers them, unlike the nouns and adjectives that make the
// answer word a determiner. A word ending in "n't" is an auxiliary too.
var closedWords = wordSet(
	// pronouns
	"i", "i'm", "i'd", "i've", "i'll", "me", "my", "you", "you're", "he", "he's", "she", "she's", "it", "it's", "its",
	"we", "we're", "they", "they're", "them", "this", "that", "that's", "these", "those", "there", "there's", "here",
	"here's", "who", "which", "what",
	// articles and determiners
	"the", "a", "an", "all", "both", "each", "every", "either", "some", "any", "his", "her", "our", "their", "your",
	// auxiliaries
	"is", "are", "was", "were", "be", "been", "being", "am", "do", "does", "did", "has", "have", "had", "can", "cannot",
	"could", "will", "would", "should", "shall", "may", "might", "must",
	// adverbs
	"not", "never", "definitely", "absolutely", "certainly", "surely", "indeed", "really", "truly", "actually", "clearly",
	"obviously", "evidently", "apparently", "probably", "likely", "possibly", "basically", "generally", "mostly", "only",
	"just", "still", "also", "too", "so", "very", "quite", "exactly", "precisely", "correct", "correctly", "right", "true",
	"false", "yes", "no", "sir", "ma'am", "of", "course", "sure", "again", "now", "then", "though", "however",
	"therefore", "thus", "hence", "overall", "ultimately", "finally", "enough", "please",
	// conjunctions
	"and", "but", "or", "and/or", "nor", "because", "since", "as", "if", "unless", "when", "while", "whereas", "although",
	// prepositions
	"to", "in", "on", "at", "by", "for", "from", "with", "without", "according", "based", "per", "under", "after",
	"before", "about", "regarding", "given", "due",
)

func wordSet(words ...string) map[string]bool {
	m := make(map[string]bool, len(words))
	for _, w := range words {
		m[w] = true
	}
	return m
}

// errNounPhrase: a yes/no word that determines a noun ("No answer").
var errNounPhrase = fmt.Errorf("%w: a yes/no word before a noun (\"No answer\", \"No idea\") starts a noun phrase, not an answer", ErrInvalid)

// wordAt returns the word (letters, digits, apostrophes, '/') starting at
// s[i], lower case, and where it ends.
func wordAt(s string, i int) (string, int) {
	j := i
	for j < len(s) {
		r, size := utf8.DecodeRuneInString(s[j:])
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '\'' && r != '’' && r != '/' {
			break
		}
		j += size
	}
	return strings.Trim(strings.ReplaceAll(strings.ToLower(s[i:j]), "’", "'"), "'"), j
}

// skipBlanks returns the index of the first byte at or after i that is not
// a space, a tab or a no-break space (a line break ends a phrase).
func skipBlanks(s string, i int) int {
	for i < len(s) {
		switch {
		case s[i] == ' ' || s[i] == '\t':
			i++
		case strings.HasPrefix(s[i:], "\u00a0"):
			i += len("\u00a0")
		default:
			return i
		}
	}
	return i
}

// determines reports whether the yes/no word ending at s[end] determines a
// noun: an open-class word follows it directly, with only blanks between,
// or a hyphen joins it to one ("No-one knows") (rule 1 above).
func determines(s string, end int) bool {
	if hyphenated(s, end) {
		return true
	}
	i := skipBlanks(s, end)
	if i == end || i == len(s) {
		return false
	}
	r, _ := utf8.DecodeRuneInString(s[i:])
	if !unicode.IsLetter(r) {
		return false
	}
	w, _ := wordAt(s, i)
	return !closedWords[w] && !strings.HasSuffix(w, "n't")
}

// hyphenated reports whether the yes/no word ending at s[end] is joined by
// a hyphen to the letters of a compound ("No-one", "no-body"): a noun
// phrase, like "No one".
func hyphenated(s string, end int) bool {
	if end+1 >= len(s) || s[end] != '-' {
		return false
	}
	r, _ := utf8.DecodeRuneInString(s[end+1:])
	return unicode.IsLetter(r)
}

// Words that stand for no value when joined to one ("7 or None"), and the
// comparatives that make "7 or more" a bound.
var (
	noneAlternatives = wordSet("none", "null", "nil", "n/a", "na", "unknown", "undefined", "nothing", "neither", "not")
	andNone          = wordSet("none", "null", "nil", "n/a", "unknown", "undefined")
	orBounds         = wordSet("more", "less", "fewer", "higher", "lower", "above", "below", "greater", "larger", "smaller",
		"over", "under", "later", "earlier", "longer", "shorter", "older", "newer", "bigger", "most", "least", "up")
	trailingBounds = wordSet("max", "maximum", "min", "minimum", "tops", "plus")
	altHedges      = wordSet("maybe", "perhaps", "possibly", "potentially", "even", "also", "just")
	conjunctions   = wordSet("or", "and", "and/or", "nor", "vs", "versus")
	// conditionWords may stand between "unless"/"if" and a None word.
	conditionWords = wordSet("it", "it's", "its", "that", "this", "that's", "the", "answer", "value", "is", "was", "be", "turns",
		"out", "not", "actually")
	errNoneAltern = fmt.Errorf("%w: a value with None as its alternative (\"7 or None\") states neither", ErrAmbiguous)
)

// alternative reports a value at text[start:end] joined to None, and for
// a number to a bound (rule 2 above): ErrAmbiguous, errBound, or nil. Two
// values of the type joined together are the caller's to see.
func alternative(text string, start, end int, numeric bool) error {
	// After the value: [ ,;(]* conjunction [hedge] word, or a bound word.
	i := end
	for i < len(text) && strings.IndexByte(" \t,;(\"'`*_", text[i]) >= 0 {
		i++
	}
	conj, j := wordAt(text, i)
	if i < len(text) && text[i] == '/' && i == end {
		conj, j = "or", i+1 // "7/None"
	}
	switch {
	case conjunctions[conj]:
		k := skipDecor(text, j)
		w, next := wordAt(text, k)
		if altHedges[w] {
			k = skipDecor(text, next)
			w, next = wordAt(text, k)
		}
		switch {
		case w == "not" && strings.HasSuffix(strings.ToLower(strings.TrimRight(text[:start], " \t")), "whether"):
		case conj == "or" && noneAlternatives[w] || andNone[w]:
			return errNoneAltern
		case conj == "or" && w == "no" && determines(text, next): // "7 or no value"
			return errNoneAltern
		case numeric && orBounds[w]: // "7 or more", "7 and up"
			return errBound
		}
	case conj == "unless" || conj == "if":
		// "7, unless it is None", "7 if not None": a condition that
		// leaves None as the alternative.
		k := skipDecor(text, j)
		w, next := wordAt(text, k)
		for n := 0; n < 4 && conditionWords[w]; n++ {
			k = skipDecor(text, next)
			w, next = wordAt(text, k)
		}
		if andNone[w] {
			return errNoneAltern
		}
	case numeric && conj == "at":
		if w, _ := wordAt(text, skipBlanks(text, j)); w == "most" || w == "least" {
			return errBound // "7 at most"
		}
	case numeric && trailingBounds[conj] && i > end:
		return errBound // "7 max"
	}
	// Before the value: a None word, [,] conjunction, [(].
	b := strings.TrimRight(text[:start], " \t(\"'`*_")
	var rest string
	if strings.HasSuffix(b, "/") {
		conj, rest = "or", b[:len(b)-1]
	} else {
		k := strings.LastIndexFunc(b, func(r rune) bool { return !unicode.IsLetter(r) && r != '/' })
		conj, rest = strings.ToLower(b[k+1:]), b[:k+1]
	}
	if conjunctions[conj] {
		rest = strings.TrimRight(rest, " \t,;\"'`*_)")
		k := strings.LastIndexFunc(rest, func(r rune) bool { return !unicode.IsLetter(r) && r != '/' })
		if w := strings.ToLower(rest[k+1:]); andNone[w] || conj == "or" && w == "nothing" {
			return errNoneAltern
		}
	}
	return nil
}

// skipDecor returns the index of the first byte at or after i that is not
// a blank, a quote or an emphasis mark.
func skipDecor(s string, i int) int {
	for i < len(s) && strings.IndexByte(" \t\"'`*_", s[i]) >= 0 {
		i++
	}
	return i
}

// Words that open a text stating no item: negations and refusals, hedges,
// and the pronouns that start a sentence about the answer rather than the
// answer ("I don't know.", "It depends.").
var (
	noItemNegations = wordSet("no", "not", "none", "nothing", "never", "cannot", "can't", "unable", "nobody", "neither", "n/a")
	noItemHedges    = wordSet("maybe", "perhaps", "possibly", "probably", "unclear", "unsure", "uncertain", "unknown",
		"depends", "hard", "difficult", "impossible", "could", "might")
	noItemPronouns = wordSet("i", "i'm", "i'd", "i've", "we", "we're", "it", "it's", "there", "there's", "this", "that", "that's", "sorry")
)

// noItem reports whether bare text given for a list of text items states
// no item: a None or "not given" answer, or a text that opens with a
// negation ("No answer", "Not enough information."), a hedge ("Maybe.",
// "Hard to say.") or a pronoun that makes it a sentence about the answer
// ("I don't know.", "It depends.").
func noItem(s string) bool {
	if none, err := noneAnswer(s, nil); none || err != nil {
		return true
	}
	t := cleanScalar(s)
	w, _ := wordAt(t, 0)
	return noItemNegations[w] || noItemHedges[w] || noItemPronouns[w]
}

// IsClosedWord reports whether w (lower case) is one of the closed-class
// words that may follow a yes/no answer word directly without making it a
// determiner (rule 1 above). Tests use it to generate noun phrases.
func IsClosedWord(w string) bool { return closedWords[w] || strings.HasSuffix(w, "n't") }

// refusalRE finds a clause saying the text cannot tell: a first-person
// negated ability or knowledge ("I cannot determine", "I can't be sure",
// "I don't know") or an impersonal one ("it cannot be determined", "there
// is no way to tell"). After a yes/no word it takes the answer back: "No,
// I cannot determine this." states no value.
var refusalRE = regexp.MustCompile(`(?i)\bI(?:\s+|'|’)(?:cannot|can't|can’t|can not|am unable to|m unable to|am not able to|m not able to|do not|don't|don’t|am not|m not)\s+(?:\w+\s+){0,2}?(?:know|tell|say|determine|answer|sure|certain|confirm|verify)\b` +
	`|\b(?:cannot|can't|can’t|can not)\s+be\s+(?:determined|known|said|told|confirmed|verified|answered)\b` +
	`|\b(?:impossible|not possible|no way)\s+to\s+(?:tell|know|say|determine)\b`)

// takesBack reports whether rest, the text after a leading yes/no answer
// word, takes the answer back. The clauses of its first sentence (split at
// , ; : ( ) - – — and a leading "but") are each judged as a whole text
// would be: a refusal ("I cannot tell", refusalRE anywhere in rest), a
// "not given" or unknown answer ("unknown", "N/A", "not stated", "the
// passage does not say"), too little to go on ("not enough information",
// "nobody knows") or a hedge ("unclear", "maybe", "hard to say", "it
// depends", "not sure") leaves the text stating no value: "No - unclear."
// and "Yes, probably, but not sure" state none. A justification keeps it
// ("No, because the sky is clear.", "Yes, it is.", "No, not at all",
// "Yes, probably"): "probably" leans to the answer, as in "Probably yes".
// A None word that agrees with a "no" ("No, none.") is no refusal either,
// nor is a "nobody" that answers ("No, nobody came.").
func takesBack(rest string) bool {
	if refusalRE.MatchString(rest) {
		return true
	}
	s := strings.TrimLeft(rest, " \t\u00a0.,;:!?-–—()[]*_\"'`")
	if end := sentenceEndRE.FindStringIndex(s); end != nil {
		s = s[:end[0]]
	}
	for _, c := range clauseSplitRE.Split(s, -1) {
		c = strings.Trim(c, " \t\u00a0.!?*_\"'`")
		for _, lead := range [...]string{"but ", "and ", "yet ", "though ", "although "} {
			if len(c) > len(lead) && strings.EqualFold(c[:len(lead)], lead) {
				c = strings.TrimSpace(c[len(lead):])
			}
		}
		if c == "" {
			continue
		}
		if l := strings.ToLower(c); noneWords[l] && l != "none" && l != "null" && l != "nil" {
			return true // "No; unknown"
		}
		if clauseNoneRE.MatchString(c) {
			return true
		}
	}
	return false
}

var (
	// sentenceEndRE ends the first sentence after a yes/no word.
	sentenceEndRE = regexp.MustCompile(`[.!?](?:\s|$)|\n`)
	// clauseSplitRE splits a sentence into its clauses.
	clauseSplitRE = regexp.MustCompile(`[,;:()–—]|\s-+\s|--`)
	// clauseNoneRE: a clause that, as a whole text, states no value: a
	// hedge (the hedge words of noItemHedges, "probably" aside), an unknown
	// or "not given" answer, too little to go on, the source not saying
	// it; optionally after "it is" / "that is".
	clauseNoneRE = regexp.MustCompile(`(?i)^(?:(?:it|that|this)(?:\s+is|'s|’s|\s+was|\s+remains|\s+seems)\s+)?(?:` +
		`maybe|perhaps|possibly|unclear|unsure|uncertain|unknown|(?:it\s+)?depends|(?:hard|difficult|impossible)\s+to\s+(?:say|tell|know|determine)|(?:could|might)\s+be` +
		`|not\s+(?:enough|sure|certain|clear|known|stated|given|specified|mentioned|provided|determinable|determined|available|applicable|indicated|said)` +
		`|n/a|insufficient|(?:nobody|no\s*one|no-one)\s+(?:knows|(?:can|could)\s+(?:say|tell|know|be\s+sure)|is\s+sure)|undetermined|unspecified|unstated|indeterminate|unavailable|undeterminable` +
		`|(?:cannot|can't|can’t|can\s+not)\s+(?:say|tell|know|determine|be\s+sure|be\s+certain)` +
		`|(?:the\s+)?(?:text|context|passage|document|article|excerpt|source|input|question|data|information)s?\s+(?:does|do|did)\s*(?:not|n't)\s+(?:say|mention|specify|state|tell|indicate|give)` +
		`)\b`)
)

// errRefusal: a yes/no word taken back by a refusal.
var errRefusal = fmt.Errorf("%w: the text says it cannot tell", ErrInvalid)

// noneHead reports whether text opens with a None answer ("Unknown, maybe
// 7", "N/A - perhaps [1, 2]"): whatever value follows is a guess the text
// has already disowned.
func noneHead(text string) bool {
	s := cleanScalar(text)
	m := noneHeadRE.FindStringSubmatch(s)
	return m != nil && m[1] != s && noneWords[strings.ToLower(cleanScalar(m[1]))]
}
