package value

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// A scalar (a number, a bool, an enum or Literal member) is often written
// inside an explanation: "Based on the passage, the answer is 1648.", "The
// treaty was signed in **1648**.", "The user cannot log in, so the
// category is **technical**.", or on the last line after one. fromProse
// reads it when the text as a whole is not a value, and only when the
// text says it unambiguously:
//
//  1. the last line, when it reads on its own and is labelled ("Answer:
//     1648") or nothing before it names another value;
//  2. the emphasised spans (**x**, __x__, `x`), when they all read as one
//     value;
//  3. every value of the type in the text, when there is exactly one.
//
// A value negated ("not 1648") or bounded ("at least 1648", "between 1640
// and 1650") is never taken: the text does not state it.

// candidate is a place in prose where a value of the type may be.
type candidate struct {
	text    string
	blocked error // negated, bounded, a percentage, part of a range: refuse
}

// candidateFinder lists the candidates of a type in a text.
type candidateFinder func(text string) []candidate

var emphasisRE = regexp.MustCompile("\\*\\*([^*\\n]+)\\*\\*|__([^_\\n]+)__|`([^`\\n]+)`")

// fromProse reads a scalar explained in text (see above); ok is false when
// the text does not hold one.
func fromProse[T comparable](raw string, read func(string) (T, error), find candidateFinder, numeric bool) (v T, err error, ok bool) {
	text := strings.TrimSpace(raw)
	if len(text) > maxProse {
		return v, nil, false
	}
	cands := find(text)
	if head, last, multi := lastLine(text); multi {
		if lv, lerr := orUnlabelled(last, read); lerr == nil {
			if labelRE.MatchString(cleanScalar(last)) || !otherValue(find(head), read, lv) {
				return lv, nil, true
			}
		}
	}
	var found []T
	var alt error
	for _, m := range emphasisRE.FindAllStringSubmatchIndex(text, 16) {
		var span string
		for g := 2; g < len(m); g += 2 {
			if m[g] >= 0 {
				span = text[m[g]:m[g+1]]
			}
		}
		if ev, eerr := orUnlabelled(span, read); eerr == nil {
			if !contains(found, ev) {
				found = append(found, ev)
			}
			if alt == nil {
				alt = alternative(text, m[0], m[1], numeric)
			}
		}
	}
	switch len(found) {
	case 1:
		if alt != nil {
			return v, fmt.Errorf("%w: %s", alt, clip(raw)), true
		}
		return found[0], nil, true
	case 0:
	default:
		return v, fmt.Errorf("%w: %s emphasises %d different values", ErrAmbiguous, clip(raw), len(found)), true
	}
	for _, c := range cands {
		if c.blocked != nil {
			return v, fmt.Errorf("%w: %s", c.blocked, clip(raw)), true
		}
		cv, cerr := read(c.text)
		if cerr != nil {
			return v, cerr, true // a number that is not one of the type ("4.5" for an int)
		}
		if !contains(found, cv) {
			found = append(found, cv)
		}
	}
	switch len(found) {
	case 0:
		return v, nil, false
	case 1:
		return found[0], nil, true
	}
	return v, fmt.Errorf("%w: %s names %d different values", ErrAmbiguous, clip(raw), len(found)), true
}

// maxProse bounds the explanation read for a value: a longer text is not
// one field's value explained.
const maxProse = 4 << 10

func contains[T comparable](s []T, v T) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// otherValue reports whether the candidates name a value other than v.
func otherValue[T comparable](cands []candidate, read func(string) (T, error), v T) bool {
	for _, c := range cands {
		if c.blocked != nil {
			return true
		}
		if cv, err := read(c.text); err != nil || cv != v {
			return true
		}
	}
	return false
}

// lastLine splits text into what comes before its last non-empty line and
// that line; multi is false for a single line.
func lastLine(text string) (head, last string, multi bool) {
	t := strings.TrimRight(text, " \t\r\n")
	i := strings.LastIndexAny(t, "\r\n")
	if i < 0 {
		return "", t, false
	}
	return t[:i], strings.TrimSpace(t[i+1:]), strings.TrimSpace(t[:i]) != ""
}

// Words before a value that say the text does not state it.
var (
	negations = map[string]bool{"not": true, "no": true, "never": true, "isn't": true, "wasn't": true, "aren't": true,
		"weren't": true, "isnt": true, "wasnt": true, "nor": true, "neither": true, "without": true, "except": true}
	bounds = map[string]bool{"least": true, "most": true, "more": true, "less": true, "fewer": true, "over": true,
		"under": true, "nearly": true, "almost": true, "above": true, "below": true, "exceeding": true, "between": true,
		"greater": true, "beyond": true, "upto": true, "max": true, "min": true, "maximum": true, "minimum": true}
	errNegated = fmt.Errorf("%w: the value is negated", ErrAmbiguous)
	errBound   = fmt.Errorf("%w: a bound, not a value", ErrInvalid)
)

// qualifier reports how the words just before text[i] qualify what
// follows: errNegated, errBound or nil.
func qualifier(text string, i int) error { return qualify(text, i, false) }

// qualify is qualifier; for an answer word (yes/no), answer words before
// it are the answer repeated, not a negation ("No, no.", as a bool reads
// it).
func qualify(text string, i int, answer bool) error {
	words := strings.FieldsFunc(strings.ToLower(text[:i]), func(r rune) bool {
		return !unicode.IsLetter(r) && r != '\'' && r != '’'
	})
	for k := len(words) - 1; k >= 0 && k >= len(words)-3; k-- {
		w := strings.ReplaceAll(words[k], "’", "'")
		if _, yesNo := strongBools[w]; answer && yesNo {
			continue
		}
		switch {
		case negations[w] || strings.HasSuffix(w, "n't"):
			return errNegated
		case bounds[w] || w == "to" && k > 0 && words[k-1] == "up":
			return errBound
		}
	}
	return nil
}

// numberCandidates finds the numbers written in prose: digits with
// optional sign, currency sign, thousands separators and decimals, standing
// alone (not inside a word, a date or a range). A percentage, a range
// ("1640-1650"), a date or a fraction blocks the reading.
func numberCandidates(text string) []candidate {
	var out []candidate
	for i := 0; i < len(text); {
		c := text[i]
		if c < '0' || c > '9' {
			i++
			continue
		}
		start := i
		for i < len(text) && (text[i] >= '0' && text[i] <= '9' || (text[i] == ',' || text[i] == '.') && i+1 < len(text) && text[i+1] >= '0' && text[i+1] <= '9') {
			i++
		}
		tok := text[start:i]
		before, _ := utf8.DecodeLastRuneInString(text[:start])
		if unicode.IsLetter(before) || before == '_' || before == '.' {
			continue // inside a word ("v2", "COVID-19" keeps its digits)
		}
		if bounded(text, start, i) {
			out = append(out, candidate{tok, errBound})
			continue
		}
		if start > 0 && (text[start-1] == '-' || text[start-1] == '+' || text[start-1] == '$' || text[start-1] == '~') {
			b2, _ := utf8.DecodeLastRuneInString(text[:start-1])
			if text[start-1] == '-' && (unicode.IsDigit(b2) || unicode.IsLetter(b2)) {
				continue // the end of a range or a compound word
			}
			if text[start-1] == '-' || text[start-1] == '+' {
				tok = text[start-1 : i]
			}
		}
		after, size := utf8.DecodeRuneInString(text[i:])
		switch {
		case unicode.IsLetter(after) || after == '_':
			continue // "10th", "3rd", "2x"
		case after == '%':
			out = append(out, candidate{tok, fmt.Errorf("%w: %s is a percentage: the scale is ambiguous", ErrInvalid, clip(tok+"%"))})
			continue
		case (after == '-' || after == '/' || after == '–' || after == ':') && i+size < len(text) && text[i+size] >= '0' && text[i+size] <= '9':
			out = append(out, candidate{tok, fmt.Errorf("%w: %s is part of a range, a date or a ratio", ErrInvalid, clip(text[start:min(len(text), i+size+4)]))})
			i += size
			continue
		}
		if q := qualifier(text, start); q != nil {
			out = append(out, candidate{tok, q})
			continue
		}
		if a := alternative(text, start, i, true); a != nil {
			out = append(out, candidate{tok, a})
			continue
		}
		if w := nextWord(text[i:]); scaleWords[w] || w == "k" || w == "m" || w == "b" {
			out = append(out, candidate{tok, fmt.Errorf("%w: %s %s: a scale word changes the value", ErrInvalid, tok, w)})
			continue
		}
		out = append(out, candidate{text: tok})
	}
	return out
}

// nextWord returns the word at the start of s (after blanks), lower case.
func nextWord(s string) string {
	s = strings.TrimLeft(s, " \t")
	end := strings.IndexFunc(s, func(r rune) bool { return !unicode.IsLetter(r) })
	if end < 0 {
		end = len(s)
	}
	return strings.ToLower(s[:end])
}

// bounded reports a comparison sign before the number at text[start:end]
// (">1648", "≤ 3", but not the arrow "=> 3") or a plus after it ("1648+").
func bounded(text string, start, end int) bool {
	b := strings.TrimRight(text[:start], " \t")
	for _, sign := range [...]string{">", "<", "≥", "≤", "⩾", "⩽"} {
		if strings.HasSuffix(b, sign) && !strings.HasSuffix(b, "=>") && !strings.HasSuffix(b, "->") {
			return true
		}
	}
	return end < len(text) && text[end] == '+' && (end+1 == len(text) || text[end+1] < '0' || text[end+1] > '9')
}

// choiceCandidates finds the choices (enum values, Literal members)
// named in prose as whole words, in any case, "_" read as a space: every
// place each is named, so that a mention the text qualifies (negated,
// joined to None, taken back) blocks the reading wherever it stands, not
// only the first one ("no, no or unknown" states no Literal['yes', 'no']).
func choiceCandidates(choices []string) candidateFinder {
	return func(text string) []candidate {
		lower := strings.ToLower(text)
		var out []candidate
		for _, c := range choices {
			if c == "" {
				continue
			}
			for _, form := range [...]string{strings.ToLower(c), strings.ToLower(strings.ReplaceAll(c, "_", " "))} {
				_, yesNo := strongBools[form]
				named := false
				for off := 0; off < len(lower); {
					i := indexWord(lower[off:], form)
					if i < 0 {
						break
					}
					i += off
					off = i + len(form)
					if yesNo && determines(lower, i+len(form)) {
						continue // "No evidence …": a determiner, not the member
					}
					named = true
					blocked := qualify(lower, i, yesNo)
					if blocked == nil {
						blocked = alternative(lower, i, i+len(form), false)
					}
					if blocked == nil && yesNo && takesBack(lower[i+len(form):]) {
						blocked = errRefusal // "No, I cannot tell."
					}
					out = append(out, candidate{text: c, blocked: blocked})
				}
				if named {
					break
				}
			}
		}
		return out
	}
}

// indexWord is the index of w in s between non-letters, or -1.
func indexWord(s, w string) int {
	for off := 0; off < len(s); {
		i := strings.Index(s[off:], w)
		if i < 0 {
			return -1
		}
		i += off
		if (i == 0 || !isLetterByte(s[i-1])) && (i+len(w) == len(s) || !isLetterByte(s[i+len(w)])) {
			return i
		}
		off = i + 1
	}
	return -1
}

// boolCandidates finds a yes/no answer that ends prose ("…, so the claim
// holds: yes."), with every other truth word in the text as a candidate
// too (two different ones are ambiguous); any negation in the text blocks
// the reading, as does a truth word joined to None ("None or yes") or
// one the clause after it takes back ("False, unclear. no"). A
// truth word that determines a noun ("No evidence was found, so: false")
// is no answer, and no candidate.
func boolCandidates(text string) []candidate {
	lower := strings.ToLower(text)
	type word struct {
		w          string
		start, end int
	}
	var words []word
	for i := 0; i < len(lower); {
		r, size := utf8.DecodeRuneInString(lower[i:])
		if !unicode.IsLetter(r) && r != '\'' {
			i += size
			continue
		}
		j := i
		for j < len(lower) {
			r, size := utf8.DecodeRuneInString(lower[j:])
			if !unicode.IsLetter(r) && r != '\'' {
				break
			}
			j += size
		}
		words = append(words, word{lower[i:j], i, j})
		i = j
	}
	if len(words) == 0 {
		return nil
	}
	if _, ok := strongBools[words[len(words)-1].w]; !ok {
		// No answer ends the text; one joined to None still says the
		// text does not state a value ("Either yes or nothing.").
		for _, w := range words {
			if _, ok := strongBools[w.w]; ok {
				if err := alternative(lower, w.start, w.end, false); err != nil {
					return []candidate{{text: w.w, blocked: err}}
				}
			}
		}
		return nil
	}
	var out []candidate
	for _, w := range words {
		switch {
		case negations[w.w] && w.w != "no" || strings.HasSuffix(w.w, "n't"):
			return []candidate{{text: w.w, blocked: errNegated}}
		}
		if _, ok := strongBools[w.w]; ok && !determines(lower, w.end) { // "No evidence …" is no answer
			blocked := alternative(lower, w.start, w.end, false)
			if blocked == nil && takesBack(lower[w.end:]) {
				blocked = errRefusal // "False, unclear. no": the first answer is taken back
			}
			out = append(out, candidate{text: w.w, blocked: blocked})
		}
	}
	return out
}

// Optional fields: "Unknown - the text does not say.", "Not mentioned in
// the passage.", "The text does not mention a page." all mean None, when
// nothing else in the text is a value of the type.
var (
	notGivenRE = regexp.MustCompile(`(?i)\b(?:not|no|none|never|cannot|unable|without)\b[\s,]+(?:\w+\s+){0,3}?(?:mention|mentioned|state|stated|specify|specified|provide|provided|give|given|available|know|known|determine|determined|say|said|find|found|include|included|list|listed|indicate|indicated|disclose|disclosed|report|reported|clear|applicable|present|identified|tell|sure)\b|n't\s+(?:\w+\s+){0,2}?(?:mention|say|specify|state|provide|give|include|contain|list|indicate|disclose|know|tell|have|find|determine)\b` +
		`|^(?:not|never)\s+(?:mentioned|stated|specified|provided|given|available|applicable|known|found|listed|included|indicated|disclosed|reported|determined|defined|present|identified)\b` +
		`|^no\s+(?:information|data|answer|value|mention|details?|date|number|page|year)\b` +
		`|^(?:cannot|can't|can not)\s+be\s+determined|^(?:unable|impossible)\s+to\s+(?:determine|tell|say)|^(?:undetermined|unspecified|unstated|indeterminate|unavailable)\b` +
		`|^(?:there\s+is|there's)\s+no\b` +
		`|^(?:the\s+)?(?:text|context|passage|document|article|excerpt|source|input|question|email|record|report|data|information|page)s?\s+(?:does|do|did|has|have)\s*(?:not|n't)\s+(?:mention|say|specify|state|provide|give|include|contain|list|indicate|disclose|have)`)
	noneHeadRE = regexp.MustCompile(`^([^.,;:(\n–—]+?)\s*(?:$|[.,;:(\n–—]|\s-\s)`)
)

// noneAnswer reports whether raw says the field has no value: a None word
// or a "not given" phrase, alone or followed by an explanation. An
// explanation that holds a value of the type (cands finds one) makes it
// ambiguous.
func noneAnswer(raw string, find candidateFinder) (none bool, err error) {
	s := cleanScalar(raw)
	if noneWords[strings.ToLower(s)] {
		return true, nil
	}
	head := s
	if m := noneHeadRE.FindStringSubmatch(s); m != nil {
		head = cleanScalar(m[1])
	}
	if !noneWords[strings.ToLower(head)] && !notGivenRE.MatchString(s) {
		return false, nil
	}
	if len(s) > maxProse {
		return false, nil
	}
	if find != nil {
		for _, c := range find(s) {
			if errors.Is(c.blocked, errNegated) {
				continue // "no page 12 is mentioned" still says none
			}
			return false, fmt.Errorf("%w: %s says both that there is no value and %q", ErrAmbiguous, clip(raw), c.text)
		}
	}
	return true, nil
}
