package main

import (
	"regexp"
	"strings"
	"unicode"

	"github.com/sigwire/adapter/internal/pyjson"
)

// metric scores a prediction against a gold answer, from 0 to 1.
type metric func(pred, gold string) float64

// metrics are the -metric choices: DSPy's EM and F1
// (dspy.evaluate.metrics), which are SQuAD's.
var metrics = map[string]metric{
	"exact": exactMatch,
	"f1":    tokenF1,
}

// pyPunctuation is Python's string.punctuation, which SQuAD's
// normalisation removes.
const pyPunctuation = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"

var articles = regexp.MustCompile(`\b(a|an|the)\b`)

// normalize is SQuAD's normalize_answer, as DSPy's normalize_text applies
// it: lower case, punctuation removed, the articles a, an, the removed,
// runs of white space made one space. (DSPy first puts the text in
// Unicode NFD; both sides of a comparison usually share a form, and the
// standard library has no normaliser, so this one does not.)
func normalize(s string) string {
	s = strings.ToLower(s)
	s = strings.Map(func(r rune) rune {
		if strings.ContainsRune(pyPunctuation, r) {
			return -1
		}
		return r
	}, s)
	s = articles.ReplaceAllString(s, " ")
	return strings.Join(strings.FieldsFunc(s, unicode.IsSpace), " ")
}

// exactMatch is 1 when the normalised texts are equal (DSPy's EM).
func exactMatch(pred, gold string) float64 {
	if normalize(pred) == normalize(gold) {
		return 1
	}
	return 0
}

// tokenF1 is the F1 of the normalised texts' tokens, counted with
// multiplicity (DSPy's F1, SQuAD's f1_score); 0 when both are empty, as
// in DSPy.
func tokenF1(pred, gold string) float64 {
	p, g := strings.Fields(normalize(pred)), strings.Fields(normalize(gold))
	counts := map[string]int{}
	for _, t := range g {
		counts[t]++
	}
	same := 0
	for _, t := range p {
		if counts[t] > 0 {
			counts[t]--
			same++
		}
	}
	if same == 0 {
		return 0
	}
	precision := float64(same) / float64(len(p))
	recall := float64(same) / float64(len(g))
	return 2 * precision * recall / (precision + recall)
}

// text is the text a value is scored as: Python's str() of it.
func text(v any) string { return pyjson.Str(v) }

// score is m of pred against gold, the best over gold's items when gold is
// a list of answers for a field that is not a list (DSPy's metrics take
// a list of gold answers so).
func score(m metric, pred any, gold any, predIsList bool) float64 {
	if alts, ok := gold.([]any); ok && !predIsList && len(alts) > 0 {
		best := 0.0
		for _, a := range alts {
			best = max(best, m(text(pred), text(a)))
		}
		return best
	}
	return m(text(pred), text(gold))
}
