package predict_test

import (
	"context"
	"errors"
	"fmt"
	"strings"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/lmtest"
	"github.com/sigwire/adapter/predict"
	"github.com/sigwire/adapter/signature"
)

// programOf35 is a dspy.Predict("question -> answer") that DSPy 3.5 saved.
const programOf35 = `{"predict": {"demos": [], "signature": {"instructions": "Answer briefly.", "fields": [
		{"prefix": "Question:", "description": "${question}"},
		{"prefix": "Answer:", "description": "${answer}"}]}, "lm": null},
	"metadata": {"dependency_versions": {"python": "3.12", "dspy": "3.5.0"}}}`

// A program DSPy 3.5 saved is refused unless the caller goes on with
// WithAnyDSPyVersion; then it runs with DSPy 3.5's default adapter, XML, and
// Result.Profile says which DSPy's choices it made.
func ExampleWithAnyDSPyVersion() {
	prog, _ := predict.LoadProgram(strings.NewReader(programOf35))
	sig, _ := signature.Parse("question -> answer")
	_, err := predict.NewModule(sig).Load(prog, "predict")
	var ve *predict.VersionError
	fmt.Println(errors.Is(err, predict.ErrDSPyVersion), errors.As(err, &ve) && ve.Version == "3.5.0")

	m, _ := predict.NewModule(sig).Load(prog, "predict", predict.WithAnyDSPyVersion())
	srv := lmtest.NewServer(lmtest.Text("<answer>\nParis\n</answer>"))
	defer srv.Close()
	res, err := m.Call(context.Background(), srv.Client(), adapter.Values{"question": "What is the capital of France?"})
	fmt.Println(res.Outputs[0]["answer"], res.Adapter, res.Profile, err)
	// Output:
	// true true
	// Paris xml dspy-3.5 <nil>
}

// What a VersionError says: the version, what that DSPy changed for the
// module, and the option that goes on.
func ExampleVersionError() {
	prog, _ := predict.LoadProgram(strings.NewReader(programOf35))
	sig, _ := signature.Parse("question -> answer")
	_, err := predict.NewModule(sig).Load(prog, "predict")
	fmt.Println(err)
	// Output:
	// predict: predictor "predict" was saved by DSPy 3.5.0, whose prompts this library does not reproduce (it sends DSPy 3.3.1's, for programs of DSPy 3.4 and earlier): since DSPy 3.5 the default adapter is XMLAdapter with native function calling, not ChatAdapter, and its XML prompt is not public; load it with predict.WithAnyDSPyVersion() to run it with that adapter and DSPy 3.3.1's prompt text
}
