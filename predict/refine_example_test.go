package predict_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/sigwire/adapter/lmtest"
	"github.com/sigwire/adapter/predict"
)

// oneWord rewards a one-word answer, as DSPy's docstring example does.
func oneWord(_ context.Context, _ Question, out Answer) (float64, error) {
	if len(strings.Fields(out.Answer)) == 1 {
		return 1, nil
	}
	return 0, nil
}

func ExampleNewBestOfN() {
	srv := lmtest.NewServer(
		lmtest.Text("[[ ## answer ## ]]\nIt is Brussels."),
		lmtest.Text("[[ ## answer ## ]]\nBrussels"))
	defer srv.Close()
	qa, _ := predict.New[Question, Answer]()
	best, _ := predict.NewBestOfN(qa, 3, oneWord, 1.0)
	out, res, err := best.Call(context.Background(), srv.Client(), Question{"What is the capital of Belgium?"})
	fmt.Println(out.Answer, res.Calls, err)
	// Output: Brussels 2 <nil>
}

func ExampleNewRefine() {
	srv := lmtest.NewServer(
		lmtest.Text("[[ ## answer ## ]]\nIt is Brussels."),
		lmtest.Text("[[ ## discussion ## ]]\nThe answer has four words.\n\n[[ ## advice ## ]]\n"+
			`{"self": "Answer with the name alone."}`),
		lmtest.Text("[[ ## answer ## ]]\nBrussels"))
	defer srv.Close()
	qa, _ := predict.New[Question, Answer]()
	refine, _ := predict.NewRefine(qa, 3, oneWord, 1.0)
	out, res, err := refine.Call(context.Background(), srv.Client(), Question{"What is the capital of Belgium?"})
	fmt.Println(out.Answer, res.Calls, err)
	last := srv.Requests()[2].Chat.Messages
	fmt.Println(strings.Contains(last[len(last)-1].Content, "[[ ## hint_ ## ]]\nAnswer with the name alone."))
	// Output:
	// Brussels 3 <nil>
	// true
}
