package predict_test

import (
	"errors"
	"fmt"
	"strings"

	"github.com/sigwire/adapter/predict"
	"github.com/sigwire/adapter/signature"
)

// classifyProgram is a program DSPy saved whose fields are news_article and
// sentiment.
const classifyProgram = `{"classify.predict": {"demos": [{"augmented": true, "news_article": "Shares rose.", "sentiment": "positive"}],
	"signature": {"instructions": "Classify the sentiment.", "fields": [
		{"prefix": "News Article:", "description": "${news_article}"},
		{"prefix": "Sentiment:", "description": "positive, negative or neutral"}]}, "lm": null}}`

// A module whose fields are named otherwise than the saved program's is
// refused, with the saved names.
func ExampleFieldMismatchError() {
	prog, _ := predict.LoadProgram(strings.NewReader(classifyProgram))
	sig, _ := signature.Parse("article -> label")
	_, err := predict.NewModule(sig).Load(prog, "classify.predict")
	var mismatch *predict.FieldMismatchError
	if errors.As(err, &mismatch) {
		fmt.Println("saved:", mismatch.Saved)
		fmt.Println("ours: ", mismatch.Fields)
	}
	// Output:
	// saved: [news_article sentiment]
	// ours:  [article label]
}

// WithFieldsByPosition loads the texts by position, as DSPy does; the demos' values
// under the saved names are left out, and Ignored says so.
func ExampleWithFieldsByPosition() {
	prog, _ := predict.LoadProgram(strings.NewReader(classifyProgram))
	sig, _ := signature.Parse("article -> label")
	m, err := predict.NewModule(sig).Load(prog, "classify.predict", predict.WithFieldsByPosition())
	fmt.Println(err)
	fmt.Println(m.Signature().Output(0).Desc)
	for _, line := range m.Ignored() {
		fmt.Println(line)
	}
	// Output:
	// <nil>
	// positive, negative or neutral
	// fields: loaded by position (WithFieldsByPosition): news_article as article, sentiment as label
	// demo 1: "news_article", "sentiment": not fields of the signature
}

// A bare dspy.Predict saved on its own (dspy.Predict(...).save(path)) holds
// its state at the top level: its one predictor is "self".
func ExampleLoadProgram_barePredict() {
	prog, _ := predict.LoadProgram(strings.NewReader(`{"traces": [], "train": [],
		"demos": [{"input_text": "An essay.", "result": 0}],
		"signature": {"instructions": "Detect AI text.", "fields": [
			{"prefix": "Input Text:", "description": "text to be evaluated"},
			{"prefix": "Result:", "description": "0 for human 1 for AI"}]},
		"lm": null, "metadata": {"dependency_versions": {"dspy": "3.0.3"}}}`))
	fmt.Println(prog.Names(), prog.Skipped, prog.DSPyVersion)
	sig, _ := signature.Parse("input_text -> result: int")
	m, err := predict.NewModule(sig).Load(prog, predict.FlatName)
	fmt.Println(len(m.Demos()), err)
	// Output:
	// [self] [metadata] 3.0.3
	// 1 <nil>
}
