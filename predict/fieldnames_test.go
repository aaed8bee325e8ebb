package predict_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/lmtest"
	"github.com/sigwire/adapter/predict"
	"github.com/sigwire/adapter/signature"
)

// savedField is one field of a program written for a test: its name (in
// the demos), prefix and description as saved.
type savedField struct{ name, prefix, desc string }

// dspyField is a field as DSPy saves it by default: the prefix it derives
// from the name, the "${name}" description.
func dspyField(name string) savedField {
	return savedField{name, signature.InferPrefix(name) + ":", "${" + name + "}"}
}

// savedProgram writes a program of one predictor, "classify.predict",
// with these fields and n demos holding demoKeys (each "<key> <i>"),
// bootstrapped ("augmented": true, as DSPy marks the demos it traced, which
// hold exactly the predictor's fields) or labeled (a training example's
// keys).
func savedProgram(t testing.TB, fields []savedField, n int, augmented bool, demoKeys ...string) predict.Program {
	type fs struct {
		Prefix string `json:"prefix"`
		Desc   string `json:"description"`
	}
	st := struct {
		Instructions string `json:"instructions"`
		Fields       []fs   `json:"fields"`
	}{Instructions: "Classify the article's sentiment."}
	for _, f := range fields {
		st.Fields = append(st.Fields, fs{f.prefix, f.desc})
	}
	demos := make([]map[string]any, n)
	for i := range demos {
		demos[i] = map[string]any{}
		for _, k := range demoKeys {
			demos[i][k] = fmt.Sprintf("%s %d", k, i+1)
		}
		if augmented {
			demos[i]["augmented"] = true
		}
	}
	b, err := json.Marshal(map[string]any{"classify.predict": map[string]any{"demos": demos, "signature": st, "lm": nil}})
	require.NoError(t, err)
	prog, err := predict.LoadProgram(strings.NewReader(string(b)))
	require.NoError(t, err)
	return prog
}

type Article struct {
	Article string `json:"article"`
}

type Label struct {
	Label string `json:"label"`
}

// TestLoadRefusesOtherFieldNames is the review's case: a typed module
// whose fields are named article and label loads a program saved with
// news_article and sentiment. Loading it by position, as DSPy does, would
// drop both fields of all 16 demos ("Not supplied for this particular
// example") and give sentiment's texts to label; it is an error that lists
// the saved names, for the typed and the untyped module alike, unless the
// caller asks for DSPy's positional load (WithFieldsByPosition).
func TestLoadRefusesOtherFieldNames(t *testing.T) {
	prog := savedProgram(t, []savedField{dspyField("news_article"), dspyField("reasoning"), {"sentiment", "Sentiment:", "positive, negative or neutral"}}, 16, true, "news_article", "reasoning", "sentiment")
	const want = `predict: predictor "classify.predict" was saved with the fields news_article, reasoning, sentiment; the signature has article, reasoning, label: name the fields as saved (Go: the json tags), or load with predict.WithFieldsByPosition() to apply the saved texts by position as DSPy does (the demos' news_article, sentiment are then left out)`

	cot, err := predict.NewChainOfThought[Article, Label]()
	require.NoError(t, err)
	_, err = cot.Load(prog, "classify.predict")
	require.EqualError(t, err, want)
	var mismatch *predict.FieldMismatchError
	require.True(t, errors.As(err, &mismatch))
	assert.Equal(t, &predict.FieldMismatchError{Predictor: "classify.predict",
		Saved:  []string{"news_article", "reasoning", "sentiment"},
		Fields: []string{"article", "reasoning", "label"}, DemoKeys: []string{"news_article", "sentiment"}}, mismatch)

	// The untyped module, from a signature string, says the same.
	sig, err := signature.Parse("article -> label")
	require.NoError(t, err)
	m, err := predict.NewChainOfThoughtModule(sig)
	require.NoError(t, err)
	_, err = m.Load(prog, "classify.predict")
	assert.EqualError(t, err, want)
	p, err := predict.New[Article, Label]()
	require.NoError(t, err)
	_, err = p.Load(prog, "classify.predict")
	assert.ErrorAs(t, err, &mismatch, "another number of fields lists the saved names too")
	assert.EqualError(t, err, `predict: predictor "classify.predict" was saved with 3 fields (news_article, reasoning, sentiment); the signature has 2 (article, label)`)

	// Fields named as saved load, demos whole.
	type NewsArticle struct {
		NewsArticle string `json:"news_article"`
	}
	type Sentiment struct {
		Sentiment string `json:"sentiment"`
	}
	good, err := predict.NewChainOfThought[NewsArticle, Sentiment]()
	require.NoError(t, err)
	good, err = good.Load(prog, "classify.predict")
	require.NoError(t, err)
	assert.Len(t, good.Module().Demos(), 16)
	assert.Equal(t, adapter.Values{"news_article": "news_article 1", "reasoning": "reasoning 1", "sentiment": "sentiment 1"}, good.Module().Demos()[0])

	// DSPy's positional load, asked for: the texts by position, the demo
	// fields left out and listed, the renaming listed.
	cot, err = cot.Load(prog, "classify.predict", predict.WithFieldsByPosition())
	require.NoError(t, err)
	assert.Equal(t, "positive, negative or neutral", cot.Signature().Output(1).Desc)
	assert.Equal(t, "Sentiment:", cot.Signature().Output(1).Prefix)
	assert.Equal(t, adapter.Values{"reasoning": "reasoning 1"}, cot.Module().Demos()[0])
	ignored := cot.Module().Ignored()
	assert.Equal(t, "fields: loaded by position (WithFieldsByPosition): news_article as article, sentiment as label", ignored[0])
	assert.Equal(t, `demo 1: "news_article", "sentiment": not fields of the signature`, ignored[1])
	assert.Len(t, ignored, 17)

	// Over the wire, the module loaded as saved sends its demos whole.
	srv := lmtest.NewServer(lmtest.Text("[[ ## reasoning ## ]]\nr\n\n[[ ## sentiment ## ]]\npositive\n\n[[ ## completed ## ]]"))
	defer srv.Close()
	out, _, _, err := good.Call(context.Background(), srv.Client(), NewsArticle{"x"})
	require.NoError(t, err)
	assert.Equal(t, "positive", out.Sentiment)
	body := string(srv.Requests()[0].Body)
	assert.Contains(t, body, "news_article 16")
	assert.NotContains(t, body, "Not supplied for this particular example")
}

// TestLoadFieldNameEvidence: where the saved state reveals a field's name —
// DSPy's "${name}" description, a prefix DSPy derived from a name the
// signature or the demos hold ("News Article:"), or demos that hold none of
// a field but hold keys that name no field — a field named otherwise is an
// error; where nothing reveals it, the texts go by position, as in DSPy.
func TestLoadFieldNameEvidence(t *testing.T) {
	custom := func(name string) savedField {
		return savedField{name, "The " + name + " >>", "What the " + name + " is."}
	}
	prefixOnly := func(name string) savedField {
		return savedField{name, signature.InferPrefix(name) + ":", "About " + name + "."}
	}
	cases := []struct {
		name      string
		fields    []savedField
		augmented bool
		demoKeys  []string
		sig       string
		err       string // "" when it loads
	}{
		{"placeholders, renamed", []savedField{dspyField("news_article"), dspyField("sentiment")}, false, nil, "article -> label",
			"saved with the fields news_article, sentiment; the signature has article, label: name the fields"},
		{"placeholders, reordered", []savedField{dspyField("context"), dspyField("question"), dspyField("answer")}, false, nil, "question, context -> answer",
			"saved with the fields context, question, answer; the signature has question, context, answer"},
		{"prefixes from the demo keys", []savedField{prefixOnly("news_article"), prefixOnly("sentiment")}, false, []string{"news_article", "sentiment"}, "article -> label",
			"saved with the fields news_article, sentiment; the signature has article, label"},
		{"prefixes from the signature's other names", []savedField{prefixOnly("context"), prefixOnly("question"), prefixOnly("answer")}, false, nil, "question, context -> answer",
			"saved with the fields context, question, answer; the signature has question, context, answer"},
		{"bootstrapped demos", []savedField{custom("news_article"), custom("sentiment")}, true, []string{"news_article", "sentiment"}, "article -> label",
			"saved with the fields ?, ?; the signature has article, label: its demos hold news_article, sentiment, which name no field: name the fields"},
		{"one bootstrapped key", []savedField{custom("question"), custom("response")}, true, []string{"question", "response"}, "question -> answer",
			"saved with the fields ?, ?; the signature has question, answer: its demos hold response, which names no field"},
		{"labeled demos that keep nothing", []savedField{custom("news_article"), custom("sentiment")}, false, []string{"news_article", "sentiment"}, "article -> label",
			"saved with the fields ?, ?; the signature has article, label: its demos hold news_article, sentiment, which name no field"},
		{"labeled demos that keep a field", []savedField{custom("question"), custom("response")}, false, []string{"question", "response"}, "question -> answer", ""},
		{"nothing reveals them", []savedField{custom("news_article"), custom("sentiment")}, false, nil, "article -> label", ""},
		{"custom texts, names as saved", []savedField{custom("question"), custom("answer")}, true, []string{"question", "answer"}, "question -> answer", ""},
		{"extra keys in labeled demos", []savedField{dspyField("question"), dspyField("answer")}, false, []string{"question", "answer", "gold_titles", "dspy_uuid"}, "question -> answer", ""},
		{"a field no demo holds", []savedField{custom("context"), dspyField("question"), dspyField("answer")}, true, []string{"question", "answer"}, "context, question -> answer", ""},
		{"a user prefix naming nothing", []savedField{{"label", "Sentiment:", "the label"}}, true, []string{"label"}, "-> label", ""},
		{"a prefix of the field's own name, demos of another", []savedField{{"newsArticle", "News Article:", "the text"}}, true, []string{"newsArticle"}, "news_article ->",
			"its demos hold newsArticle, which names no field"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			prog := savedProgram(t, c.fields, 2, c.augmented, c.demoKeys...)
			sig, err := signature.Parse(c.sig)
			require.NoError(t, err)
			_, err = predict.NewModule(sig).Load(prog, "classify.predict")
			if c.err == "" {
				require.NoError(t, err)
			} else {
				require.ErrorContains(t, err, c.err)
			}
			_, err = predict.NewModule(sig).Load(prog, "classify.predict", predict.WithFieldsByPosition())
			assert.NoError(t, err, "WithFieldsByPosition loads whatever the names")
		})
	}
}

// TestLoadNeverDropsSavedDemoFields: over generated programs — two to four
// fields from a pool of names, each saved with DSPy's texts, custom texts
// or a derived prefix only; bootstrapped demos (every field) or labeled
// ones (some fields, sometimes other keys); a signature that keeps,
// renames, swaps or shuffles the names — Load either refuses with a
// FieldMismatchError, or loads without losing what the program reveals: no
// field whose saved name its description shows is loaded under another
// name, no value of a bootstrapped demo (which holds exactly the fields) is
// dropped, and no demo is emptied unless every field's name is shown. A
// signature named as saved loads (unless its labeled demos hold none of its
// fields and nothing else shows their names); WithFieldsByPosition always loads.
func TestLoadNeverDropsSavedDemoFields(t *testing.T) {
	pool := []string{"question", "context", "answer", "news_article", "sentiment", "label", "article", "summary", "reasoning", "user_query"}
	rng := rand.New(rand.NewPCG(30, 7))
	var refused, loaded int
	for i := range 3000 {
		n := 2 + rng.IntN(3)
		names := slices.Clone(pool)
		rng.Shuffle(len(names), func(a, b int) { names[a], names[b] = names[b], names[a] })
		saved := names[:n]
		fields := make([]savedField, n)
		revealed := make([]bool, n)
		for j, s := range saved {
			switch rng.IntN(3) {
			case 0:
				fields[j], revealed[j] = dspyField(s), true
			case 1:
				fields[j] = savedField{s, "The " + s + " >>", "What the " + s + " is."}
			default:
				fields[j] = savedField{s, signature.InferPrefix(s) + ":", "About " + s + "."}
			}
		}
		augmented := rng.IntN(2) == 0
		var demoKeys []string
		for _, s := range saved {
			if augmented || rng.IntN(3) > 0 {
				demoKeys = append(demoKeys, s)
			}
		}
		if !augmented && rng.IntN(4) == 0 {
			demoKeys = append(demoKeys, "gold_"+saved[0], "dspy_uuid")
		}
		ours := slices.Clone(saved)
		switch rng.IntN(4) {
		case 1: // rename one to an unused name
			ours[rng.IntN(n)] = names[n+rng.IntN(len(names)-n)]
		case 2: // swap two
			a, b := rng.IntN(n), rng.IntN(n)
			ours[a], ours[b] = ours[b], ours[a]
		case 3:
			rng.Shuffle(n, func(a, b int) { ours[a], ours[b] = ours[b], ours[a] })
		}
		nIn := 1 + rng.IntN(n-1)
		sig, err := signature.Parse(strings.Join(ours[:nIn], ", ") + " -> " + strings.Join(ours[nIn:], ", "))
		require.NoError(t, err)
		prog := savedProgram(t, fields, 2, augmented, demoKeys...)
		desc := fmt.Sprintf("case %d: saved %v (revealed %v), demos %v (augmented %v), signature %v", i, saved, revealed, demoKeys, augmented, ours)

		m, err := predict.NewModule(sig).Load(prog, "classify.predict")
		_, perr := predict.NewModule(sig).Load(prog, "classify.predict", predict.WithFieldsByPosition())
		require.NoError(t, perr, desc)
		if slices.Equal(ours, saved) && err != nil {
			// Only labeled demos that hold none of the fields, whose names
			// nothing else shows, are refused although named as saved:
			// nothing tells them from demos of renamed fields.
			for _, k := range demoKeys {
				require.NotContains(t, saved, k, "named as saved, refused: %s: %v", desc, err)
			}
			require.False(t, augmented, desc)
		}
		if err != nil {
			var mm *predict.FieldMismatchError
			require.ErrorAs(t, err, &mm, desc)
			refused++
			continue
		}
		loaded++
		for j := range saved {
			if revealed[j] {
				require.Equal(t, saved[j], ours[j], "a revealed name loaded under another: %s", desc)
			}
		}
		// A demo is emptied only when every field's saved name is shown
		// (a "${name}" description, or a prefix derived from a name the
		// signature or the demos hold) and is the signature's: its keys are
		// then a training example's, none of them this predictor's fields,
		// and DSPy loads it so.
		allShown := true
		for j, f := range fields {
			derived := f.prefix == signature.InferPrefix(saved[j])+":" && (slices.Contains(ours, saved[j]) || slices.Contains(demoKeys, saved[j]))
			allShown = allShown && (revealed[j] || derived)
		}
		if len(demoKeys) > 0 && !allShown {
			require.NotEmpty(t, m.Demos()[0], "a demo emptied: %s", desc)
		}
		if augmented {
			for _, k := range demoKeys {
				require.Contains(t, m.Demos()[0], k, "a traced demo's value dropped: %s", desc)
			}
		}
	}
	t.Logf("%d generated programs: %d loaded, %d refused", refused+loaded, loaded, refused)
	assert.Positive(t, refused)
	assert.Positive(t, loaded)
}
