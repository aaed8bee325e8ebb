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

// A Refine's stream: each attempt's deltas (a later attempt starts the
// field anew: Replace), the status of each attempt, and the Done chunk
// naming the attempt whose outputs were chosen.
func ExampleRefine_Stream() {
	srv := lmtest.NewServer(
		lmtest.Text("[[ ## answer ## ]]\nIt is Brussels.").ChunkSize(6),
		lmtest.Text("[[ ## discussion ## ]]\nThe answer has four words.\n\n[[ ## advice ## ]]\n"+
			`{"self": "Answer with the name alone."}`),
		lmtest.Text("[[ ## answer ## ]]\nBrussels").ChunkSize(6))
	defer srv.Close()
	qa, _ := predict.New[Question, Answer]()
	refine, _ := predict.NewRefine(qa, 3, oneWord, 1.0)
	answer := ""
	for ch, err := range refine.Stream(context.Background(), srv.Client(), Question{"What is the capital of Belgium?"}) {
		switch {
		case err != nil:
			fmt.Println(err)
			return
		case ch.Done:
			fmt.Printf("chosen: attempt %d, %q (the stream holds %q)\n", ch.Attempt, ch.Out.Answer, answer)
		case ch.Status != "":
			fmt.Printf("[%s]\n", ch.Status)
		case ch.Field == "answer":
			if ch.Replace {
				answer = ""
			}
			answer += ch.Delta
		}
	}
	// Output:
	// [Attempt 1 of 3]
	// [Attempt 1 of 3: reward 0]
	// [Asking for advice after attempt 1]
	// [Attempt 2 of 3]
	// [Attempt 2 of 3: reward 1]
	// chosen: attempt 2, "Brussels" (the stream holds "Brussels")
}
