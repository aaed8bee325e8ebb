package predict_test

import (
	"context"
	"errors"
	"math"
	"sync"
	"testing"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/lmtest"
	"github.com/sigwire/adapter/predict"
	"github.com/sigwire/adapter/signature"
)

// answerReply is a Chat reply for an answer output.
func answerReply(answer string) lmtest.Reply {
	return lmtest.Text("[[ ## answer ## ]]\n" + answer + "\n\n[[ ## completed ## ]]")
}

// feedbackReply is a Chat reply for OfferFeedback.
func feedbackReply(discussion, adviceJSON string) lmtest.Reply {
	return lmtest.Text("[[ ## discussion ## ]]\n" + discussion + "\n\n[[ ## advice ## ]]\n" + adviceJSON + "\n\n[[ ## completed ## ]]")
}

// parisOnly rewards the bare city name.
func parisOnly(_ context.Context, _ Question, out Answer) (float64, error) {
	if out.Answer == "Paris" {
		return 1, nil
	}
	return 0, nil
}

func qaModule(t *testing.T) *predict.Module {
	t.Helper()
	sig, err := signature.Parse("question -> answer")
	require.NoError(t, err)
	return predict.NewModule(sig)
}

func valuesParisOnly(_ context.Context, _ adapter.Values, out adapter.Values) (float64, error) {
	if out["answer"] == "Paris" {
		return 1, nil
	}
	return 0, nil
}

func seeds(reqs []lmtest.Request) []any {
	out := make([]any, len(reqs))
	for i, r := range reqs {
		if r.Chat.Seed != nil {
			out[i] = *r.Chat.Seed
		}
	}
	return out
}

// TestBestOfNStopsAtThreshold: the first prediction whose reward reaches
// the threshold is returned at once; every attempt is a distinct request
// at temperature 1.0.
func TestBestOfNStopsAtThreshold(t *testing.T) {
	srv := lmtest.NewServer(answerReply("Paris, France").WithUsage(100, 10), answerReply("Paris").WithUsage(120, 5), answerReply("unused"))
	defer srv.Close()
	p, err := predict.New[Question, Answer](adapter.WithRequest(openai.ChatCompletionRequest{Model: "m", Temperature: 0.2}))
	require.NoError(t, err)
	best, err := predict.NewBestOfN(p, 3, parisOnly, 1.0)
	require.NoError(t, err)

	out, res, err := best.Call(context.Background(), srv.Client(), Question{"What is the capital of France?"})
	require.NoError(t, err)
	assert.Equal(t, "Paris", out.Answer)
	reqs := srv.Requests()
	require.Len(t, reqs, 2, "attempt 2 reached the threshold: no third attempt")
	for _, r := range reqs {
		assert.InDelta(t, 1.0, r.Chat.Temperature, 0, "DSPy's temperature=1.0 beats the module's")
		assert.Equal(t, "m", r.Chat.Model, "the rest of the template is kept")
	}
	assert.Equal(t, []any{0, 1}, seeds(reqs), "rollouts 0 and 1")
	assert.Equal(t, 2, res.Calls)
	assert.Equal(t, openai.Usage{PromptTokens: 220, CompletionTokens: 15, TotalTokens: 235}, res.Usage, "usage summed over the attempts")
	assert.Equal(t, "Paris", res.Outputs[0]["answer"], "the Result's outputs are the chosen attempt's")
}

// TestBestOfNReturnsTheBest: no attempt reaches the threshold: the best
// one, the first of equals.
func TestBestOfNReturnsTheBest(t *testing.T) {
	srv := lmtest.NewServer(answerReply("a"), answerReply("bb"), answerReply("cc"), answerReply("d"))
	defer srv.Close()
	length := func(_ context.Context, _ adapter.Values, out adapter.Values) (float64, error) {
		return float64(len(out["answer"].(string))), nil
	}
	best, err := predict.NewBestOfN(qaModule(t), 4, length, 10)
	require.NoError(t, err)
	out, res, err := best.Call(context.Background(), srv.Client(), adapter.Values{"question": "q"})
	require.NoError(t, err)
	assert.Equal(t, "bb", out["answer"])
	assert.Len(t, srv.Requests(), 4)
	assert.Equal(t, 4, res.Calls)

	// A threshold of +Inf: all N attempts, whatever the rewards.
	srv2 := lmtest.NewServer(answerReply("Paris"), answerReply("Paris"))
	defer srv2.Close()
	all, err := predict.NewBestOfN(qaModule(t), 2, valuesParisOnly, math.Inf(1))
	require.NoError(t, err)
	_, _, err = all.Call(context.Background(), srv2.Client(), adapter.Values{"question": "q"})
	require.NoError(t, err)
	assert.Len(t, srv2.Requests(), 2)
}

// TestBestOfNFailCount: failed attempts are tolerated up to WithFailCount
// (default N); the next failure ends the call with every error; when no
// attempt succeeds the call fails rather than return nothing.
func TestBestOfNFailCount(t *testing.T) {
	bad := lmtest.Error(400, `{"error":{"message":"bad request","type":"invalid_request_error"}}`)
	ctx := context.Background()
	t.Run("tolerated, then the best", func(t *testing.T) {
		srv := lmtest.NewServer(bad, answerReply("Paris"))
		defer srv.Close()
		best, err := predict.NewBestOfN(qaModule(t), 3, valuesParisOnly, 1)
		require.NoError(t, err)
		out, res, err := best.Call(ctx, srv.Client(), adapter.Values{"question": "q"})
		require.NoError(t, err)
		assert.Equal(t, "Paris", out["answer"])
		assert.Equal(t, 2, res.Calls, "the failed attempt's request counts")
	})
	t.Run("every attempt fails", func(t *testing.T) {
		srv := lmtest.NewServer(bad, bad, bad)
		defer srv.Close()
		best, err := predict.NewBestOfN(qaModule(t), 3, valuesParisOnly, 1)
		require.NoError(t, err)
		_, res, err := best.Call(ctx, srv.Client(), adapter.Values{"question": "q"})
		var ae *predict.AttemptsError
		require.ErrorAs(t, err, &ae)
		assert.Len(t, ae.Errs, 3)
		var lmErr *adapter.LMError
		assert.ErrorAs(t, err, &lmErr, "each attempt's error is reachable")
		assert.Contains(t, err.Error(), "every attempt failed")
		assert.Equal(t, 3, res.Calls)
	})
	t.Run("WithFailCount(1): the second failure ends the call", func(t *testing.T) {
		srv := lmtest.NewServer(bad, answerReply("no"), bad, answerReply("Paris"))
		defer srv.Close()
		best, err := predict.NewBestOfN(qaModule(t), 4, valuesParisOnly, 1, predict.WithFailCount(1))
		require.NoError(t, err)
		_, _, err = best.Call(ctx, srv.Client(), adapter.Values{"question": "q"})
		var ae *predict.AttemptsError
		require.ErrorAs(t, err, &ae)
		assert.Equal(t, 3, ae.Attempts)
		assert.Len(t, ae.Errs, 2)
		assert.Len(t, srv.Requests(), 3, "no attempt after the call failed")
	})
	t.Run("WithFailCount(0): the first failure ends the call", func(t *testing.T) {
		srv := lmtest.NewServer(bad, answerReply("Paris"))
		defer srv.Close()
		best, err := predict.NewBestOfN(qaModule(t), 2, valuesParisOnly, 1, predict.WithFailCount(0))
		require.NoError(t, err)
		_, _, err = best.Call(ctx, srv.Client(), adapter.Values{"question": "q"})
		require.Error(t, err)
		assert.Len(t, srv.Requests(), 1)
	})
	t.Run("a reward's error and NaN are failures", func(t *testing.T) {
		srv := lmtest.NewServer(answerReply("x"), answerReply("y"), answerReply("Paris"))
		defer srv.Close()
		n := 0
		reward := func(_ context.Context, _ adapter.Values, out adapter.Values) (float64, error) {
			n++
			switch n {
			case 1:
				return 0, errors.New("judge unavailable")
			case 2:
				return math.NaN(), nil
			}
			return 1, nil
		}
		best, err := predict.NewBestOfN(qaModule(t), 3, reward, 1, predict.WithFailCount(1))
		require.NoError(t, err)
		_, _, err = best.Call(ctx, srv.Client(), adapter.Values{"question": "q"})
		var ae *predict.AttemptsError
		require.ErrorAs(t, err, &ae)
		assert.ErrorContains(t, ae.Errs[0], "judge unavailable")
		assert.ErrorContains(t, ae.Errs[1], "NaN")
	})
	t.Run("a done context ends the call at once", func(t *testing.T) {
		srv := lmtest.NewServer(answerReply("x"), answerReply("y"))
		defer srv.Close()
		cctx, cancel := context.WithCancel(ctx)
		reward := func(context.Context, adapter.Values, adapter.Values) (float64, error) {
			cancel()
			return 0, nil
		}
		best, err := predict.NewBestOfN(qaModule(t), 3, reward, 1)
		require.NoError(t, err)
		_, _, err = best.Call(cctx, srv.Client(), adapter.Values{"question": "q"})
		assert.ErrorIs(t, err, context.Canceled)
		assert.Len(t, srv.Requests(), 1)
	})
}

// TestBestOfNDistinctRequests: with a Cached middleware, the N attempts
// are N requests (DSPy's rollout_id bypasses its cache); running the same
// search again is answered from the cache, attempt by attempt.
func TestBestOfNDistinctRequests(t *testing.T) {
	srv := lmtest.NewServer(answerReply("a"), answerReply("b"), answerReply("c"))
	defer srv.Close()
	lm := adapter.WithMiddleware(srv.Client(), adapter.Cached(adapter.NewLRU(16)))
	never := func(context.Context, adapter.Values, adapter.Values) (float64, error) { return 0, nil }
	best, err := predict.NewBestOfN(qaModule(t), 3, never, 1)
	require.NoError(t, err)
	_, res, err := best.Call(context.Background(), lm, adapter.Values{"question": "q"})
	require.NoError(t, err)
	assert.Len(t, srv.Requests(), 3, "three attempts, three requests, not one reply served three times")
	assert.Equal(t, 0, res.CacheHits)

	_, res, err = best.Call(context.Background(), lm, adapter.Values{"question": "q"})
	require.NoError(t, err)
	assert.Len(t, srv.Requests(), 3, "the same rollouts again: from the cache")
	assert.Equal(t, 3, res.CacheHits)

	// Another first rollout: new requests.
	srv.Push(answerReply("d"), answerReply("e"), answerReply("f"))
	shifted, err := predict.NewBestOfN(qaModule(t), 3, never, 1, predict.WithFirstRollout(3))
	require.NoError(t, err)
	_, _, err = shifted.Call(context.Background(), lm, adapter.Values{"question": "q"})
	require.NoError(t, err)
	require.Len(t, srv.Requests(), 6)
	assert.Equal(t, []any{3, 4, 5}, seeds(srv.Requests()[3:]))
}

// TestBestOfNTrace: the search is a module run; each attempt is the
// program's run inside it.
func TestBestOfNTrace(t *testing.T) {
	srv := lmtest.NewServer(answerReply("x"), answerReply("Paris"))
	defer srv.Close()
	var mu sync.Mutex
	var events []string
	parents := map[uint64]string{}
	tr := &adapter.Trace{ModuleStart: func(i adapter.ModuleStartInfo) {
		mu.Lock()
		defer mu.Unlock()
		parents[i.ID] = i.Module
		events = append(events, i.Module+" in "+parents[i.ParentID])
	}}
	best, err := predict.NewBestOfN(qaModule(t), 3, valuesParisOnly, 1)
	require.NoError(t, err)
	_, _, err = best.Call(adapter.WithTrace(context.Background(), tr), srv.Client(), adapter.Values{"question": "q"})
	require.NoError(t, err)
	assert.Equal(t, []string{"BestOfN in ", "Predict in BestOfN", "Predict in BestOfN"}, events)

	// Stream reports the same runs.
	srv.Push(answerReply("x"), answerReply("Paris"))
	events = nil
	for _, err := range best.Stream(adapter.WithTrace(context.Background(), tr), srv.Client(), adapter.Values{"question": "q"}) {
		require.NoError(t, err)
	}
	assert.Equal(t, []string{"BestOfN in ", "Predict in BestOfN", "Predict in BestOfN"}, events)
}

func TestBestOfNConstruction(t *testing.T) {
	m := qaModule(t)
	_, err := predict.NewBestOfN(m, 0, valuesParisOnly, 1)
	assert.ErrorContains(t, err, "at least one attempt")
	_, err = predict.NewBestOfN(m, 2, nil, 1)
	assert.ErrorContains(t, err, "nil reward")
	_, err = predict.NewBestOfN(m, 2, valuesParisOnly, math.NaN())
	assert.ErrorContains(t, err, "NaN")
	_, err = predict.NewBestOfN(m, 2, valuesParisOnly, 1, predict.WithFailCount(-1))
	assert.ErrorContains(t, err, "negative")
	_, err = predict.NewBestOfN(m, 2, valuesParisOnly, 1, predict.WithRewardCode("x"))
	assert.ErrorContains(t, err, "Refine")
	_, err = predict.NewBestOfN(new(predict.Module), 2, valuesParisOnly, 1)
	assert.ErrorIs(t, err, predict.ErrZeroModule)
	var zero *predict.BestOfN[adapter.Values, adapter.Values]
	_, _, err = zero.Call(context.Background(), nil, nil)
	assert.ErrorIs(t, err, predict.ErrZeroModule)
	var zeroRefine predict.Refine[Question, Answer]
	_, _, err = zeroRefine.Call(context.Background(), nil, Question{})
	assert.ErrorIs(t, err, predict.ErrZeroModule)
}

const (
	capitalQuestion = "What is the capital of France?"
	capitalHint     = "Answer with the city's name alone."
	rewardSource    = "def capital_only(args, pred):\n    return 1.0 if pred.answer == \"Paris\" else 0.0\n"
	programSource   = `predict = dspy.Predict("question -> answer")`
)

// The OfferFeedback request DSPy 3.3.1 sends for the run of
// TestRefineGolden, written out from DSPy's source (dspy/predict/refine.py:
// the OfferFeedback signature, inspect_modules, orjson.dumps with
// OPT_INDENT_2 for every non-str input) and its ChatAdapter's layout
// (reference dspy-adapters.md §2.2–§2.4, §4.1, §4.2).
const goldenFeedbackSystem = "Your input fields are:\n" +
	"1. `program_code` (str): The code of the program that we are analyzing\n" +
	"2. `modules_defn` (str): The definition of each module in the program, including its I/O\n" +
	"3. `program_inputs` (str): The inputs to the program that we are analyzing\n" +
	"4. `program_trajectory` (str): The trajectory of the program's execution, showing each module's I/O\n" +
	"5. `program_outputs` (str): The outputs of the program that we are analyzing\n" +
	"6. `reward_code` (str): The code of the reward function that we are analyzing\n" +
	"7. `target_threshold` (float): The target threshold for the reward function\n" +
	"8. `reward_value` (float): The reward value assigned to the program's outputs\n" +
	"9. `module_names` (list[str]): The names of the modules in the program, for which we seek advice\n" +
	"Your output fields are:\n" +
	"1. `discussion` (str): Discussing blame of where each module went wrong, if it did\n" +
	"2. `advice` (dict[str, str]): For each module, describe very concretely, in this order: the specific scenarios in which it has made mistakes in the past and what each mistake was, followed by what it should do differently in that kind ofscenario in the future. If the module is not to blame, write N/A.\n" +
	"All interactions will be structured in the following way, with the appropriate values filled in.\n" +
	"\n" +
	"[[ ## program_code ## ]]\n{program_code}\n\n" +
	"[[ ## modules_defn ## ]]\n{modules_defn}\n\n" +
	"[[ ## program_inputs ## ]]\n{program_inputs}\n\n" +
	"[[ ## program_trajectory ## ]]\n{program_trajectory}\n\n" +
	"[[ ## program_outputs ## ]]\n{program_outputs}\n\n" +
	"[[ ## reward_code ## ]]\n{reward_code}\n\n" +
	"[[ ## target_threshold ## ]]\n{target_threshold}\n\n" +
	"[[ ## reward_value ## ]]\n{reward_value}\n\n" +
	"[[ ## module_names ## ]]\n{module_names}\n\n" +
	"[[ ## discussion ## ]]\n{discussion}\n\n" +
	"[[ ## advice ## ]]\n{advice}        # note: the value you produce must adhere to the JSON schema: {\"type\": \"object\", \"additionalProperties\": {\"type\": \"string\"}}\n\n" +
	"[[ ## completed ## ]]\n" +
	"In adhering to this structure, your objective is: \n" +
	"        In the discussion, assign blame to each module that contributed to the final reward being below the threshold, if\n" +
	"        any. Then, prescribe concrete advice of how the module should act on its future input when we retry the process, if\n" +
	"        it were to receive the same or similar inputs. If a module is not to blame, the advice should be N/A.\n" +
	"        The module will not see its own history, so it needs to rely on entirely concrete and actionable advice from you\n" +
	"        to avoid the same mistake on the same or similar inputs."

const goldenFeedbackUser = "[[ ## program_code ## ]]\n" + programSource + "\n\n" +
	"[[ ## modules_defn ## ]]\n" +
	"--------------------------------------------------------------------------------\n" +
	"Module self\n" +
	"\tInput Fields:\n" +
	"\t\t1. `question` (str):\n" +
	"\tOutput Fields:\n" +
	"\t\t1. `answer` (str):\n" +
	"\tOriginal Instructions: \n" +
	"\t\tGiven the fields `question`, produce the fields `answer`.\n" +
	"--------------------------------------------------------------------------------\n\n" +
	"[[ ## program_inputs ## ]]\n" +
	"{\n  \"question\": \"What is the capital of France?\"\n}\n\n" +
	"[[ ## program_trajectory ## ]]\n" +
	"[\n" +
	"  {\n" +
	"    \"module_name\": \"self\",\n" +
	"    \"inputs\": {\n" +
	"      \"question\": \"What is the capital of France?\"\n" +
	"    },\n" +
	"    \"outputs\": {\n" +
	"      \"answer\": \"Paris, France\"\n" +
	"    }\n" +
	"  }\n" +
	"]\n\n" +
	"[[ ## program_outputs ## ]]\n" +
	"{\n  \"answer\": \"Paris, France\"\n}\n\n" +
	"[[ ## reward_code ## ]]\n" + rewardSource + "\n\n" +
	"[[ ## target_threshold ## ]]\n1.0\n\n" +
	"[[ ## reward_value ## ]]\n0.0\n\n" +
	"[[ ## module_names ## ]]\n[\n  \"self\"\n]\n\n" +
	"Respond with the corresponding output fields, starting with the field `[[ ## discussion ## ]]`, then `[[ ## advice ## ]]` (must be formatted as a valid Python dict[str, str]), and then ending with the marker for `[[ ## completed ## ]]`."

// The second attempt's request: the signature with DSPy's hint_ input
// appended, the advice as its value.
const goldenHintedSystem = "Your input fields are:\n" +
	"1. `question` (str): \n" +
	"2. `hint_` (str): A hint to the module from an earlier run\n" +
	"Your output fields are:\n" +
	"1. `answer` (str):\n" +
	"All interactions will be structured in the following way, with the appropriate values filled in.\n" +
	"\n" +
	"[[ ## question ## ]]\n{question}\n\n" +
	"[[ ## hint_ ## ]]\n{hint_}\n\n" +
	"[[ ## answer ## ]]\n{answer}\n\n" +
	"[[ ## completed ## ]]\n" +
	"In adhering to this structure, your objective is: \n" +
	"        Given the fields `question`, produce the fields `answer`."

const goldenHintedUser = "[[ ## question ## ]]\n" + capitalQuestion + "\n\n" +
	"[[ ## hint_ ## ]]\n" + capitalHint + "\n\n" +
	"Respond with the corresponding output fields, starting with the field `[[ ## answer ## ]]`, and then ending with the marker for `[[ ## completed ## ]]`."

// TestRefineGolden: an attempt below the threshold, DSPy's OfferFeedback
// call, then a second attempt that carries the advice as hint_; the
// feedback and hinted prompts are DSPy's bytes.
func TestRefineGolden(t *testing.T) {
	srv := lmtest.NewServer(
		answerReply("Paris, France").WithUsage(50, 5),
		feedbackReply("The module named the country too.", `{"self": "`+capitalHint+`"}`).WithUsage(400, 30),
		answerReply("Paris").WithUsage(60, 4),
	)
	defer srv.Close()
	ref, err := predict.NewRefine(qaModule(t), 3, valuesParisOnly, 1.0,
		predict.WithProgramCode(programSource), predict.WithRewardCode(rewardSource))
	require.NoError(t, err)
	out, res, err := ref.Call(context.Background(), srv.Client(), adapter.Values{"question": capitalQuestion})
	require.NoError(t, err)
	assert.Equal(t, "Paris", out["answer"])

	reqs := srv.Requests()
	require.Len(t, reqs, 3)
	fb := reqs[1].Chat
	require.Len(t, fb.Messages, 2)
	assert.Equal(t, goldenFeedbackSystem, fb.Messages[0].Content)
	assert.Equal(t, goldenFeedbackUser, fb.Messages[1].Content)
	assert.Nil(t, fb.Seed, "the feedback call uses the LM as the caller set it, as DSPy's uses dspy.settings.lm")
	assert.Zero(t, fb.Temperature)

	hinted := reqs[2].Chat
	require.Len(t, hinted.Messages, 2)
	assert.Equal(t, goldenHintedSystem, hinted.Messages[0].Content)
	assert.Equal(t, goldenHintedUser, hinted.Messages[1].Content)
	assert.Equal(t, []any{0, nil, 1}, seeds(reqs))

	assert.Equal(t, 3, res.Calls, "two attempts and the feedback call")
	assert.Equal(t, openai.Usage{PromptTokens: 510, CompletionTokens: 39, TotalTokens: 549}, res.Usage)
}

// TestRefineChainOfThought: a typed ChainOfThought is the predictor
// "predict"; the feedback sees its reasoning among the outputs.
func TestRefineChainOfThought(t *testing.T) {
	srv := lmtest.NewServer(
		answer("Paris, France"),
		feedbackReply("Too long.", `{"predict": "`+capitalHint+`"}`),
		answer("Paris"),
	)
	defer srv.Close()
	cot, err := predict.NewChainOfThought[Question, Answer]()
	require.NoError(t, err)
	ref, err := predict.NewRefine(cot, 2, parisOnly, 1)
	require.NoError(t, err)
	out, _, err := ref.Call(context.Background(), srv.Client(), Question{capitalQuestion})
	require.NoError(t, err)
	assert.Equal(t, "Paris", out.Answer)

	reqs := srv.Requests()
	require.Len(t, reqs, 3)
	fb := lastUser(reqs[1])
	assert.Contains(t, fb, "[[ ## modules_defn ## ]]\n"+
		"--------------------------------------------------------------------------------\n"+
		"Module predict\n"+
		"\tInput Fields:\n"+
		"\t\t1. `question` (str):\n"+
		"\tOutput Fields:\n"+
		"\t\t1. `reasoning` (str): \n"+
		"\t\t2. `answer` (str): often between 1 and 5 words\n"+
		"\tOriginal Instructions: \n"+
		"\t\tGiven the fields `question`, produce the fields `answer`.\n"+
		"--------------------------------------------------------------------------------\n\n")
	assert.Contains(t, fb, "[[ ## program_outputs ## ]]\n{\n  \"reasoning\": \"r\",\n  \"answer\": \"Paris, France\"\n}\n\n")
	assert.Contains(t, fb, "[[ ## module_names ## ]]\n[\n  \"predict\"\n]\n\n")
	assert.Contains(t, fb, "[[ ## reward_code ## ]]\ngithub.com/sigwire/adapter/predict_test.parisOnly\n\n", "Go cannot read the reward's source: its name")
	assert.Contains(t, fb, "[[ ## program_code ## ]]\n*predict.ChainOfThought[github.com/sigwire/adapter/predict_test.Question,github.com/sigwire/adapter/predict_test.Answer]\n\n")
	assert.Contains(t, lastUser(reqs[2]), "[[ ## hint_ ## ]]\n"+capitalHint+"\n\n")
}

// TestRefineReAct: a ReAct's two predictors, "react" and
// "extract.predict", each get their own advice (N/A when the advice names
// neither); the feedback sees every predictor run of the attempt.
func TestRefineReAct(t *testing.T) {
	srv := lmtest.NewServer(
		step("I know it.", "finish", "{}"),
		answer("Paris, France"),
		feedbackReply("The extract step added the country.", `{"extract.predict": "Give the city only."}`),
		step("I know it.", "finish", "{}"),
		answer("Paris"),
	)
	defer srv.Close()
	ref, err := predict.NewRefine(searchAgent(t), 2, valuesParisOnly, 1)
	require.NoError(t, err)
	out, res, err := ref.Call(context.Background(), srv.Client(), adapter.Values{"question": capitalQuestion})
	require.NoError(t, err)
	assert.Equal(t, "Paris", out["answer"])
	assert.Equal(t, 5, res.Calls)

	reqs := srv.Requests()
	require.Len(t, reqs, 5)
	fb := lastUser(reqs[2])
	assert.Contains(t, fb, "[[ ## program_trajectory ## ]]\n"+
		"[\n"+
		"  {\n"+
		"    \"module_name\": \"react\",\n"+
		"    \"inputs\": {\n"+
		"      \"question\": \"What is the capital of France?\",\n"+
		"      \"trajectory\": \"\"\n"+
		"    },\n"+
		"    \"outputs\": {\n"+
		"      \"next_thought\": \"I know it.\",\n"+
		"      \"next_tool_name\": \"finish\",\n"+
		"      \"next_tool_args\": {}\n"+
		"    }\n"+
		"  },\n"+
		"  {\n"+
		"    \"module_name\": \"extract.predict\",\n"+
		"    \"inputs\": {\n"+
		"      \"question\": \"What is the capital of France?\",\n"+
		"      \"trajectory\": \"[[ ## thought_0 ## ]]\\nI know it.\\n\\n[[ ## tool_name_0 ## ]]\\nfinish\\n\\n[[ ## tool_args_0 ## ]]\\n{}\\n\\n[[ ## observation_0 ## ]]\\nCompleted.\"\n"+
		"    },\n"+
		"    \"outputs\": {\n"+
		"      \"reasoning\": \"r\",\n"+
		"      \"answer\": \"Paris, France\"\n"+
		"    }\n"+
		"  }\n"+
		"]\n\n")
	assert.Contains(t, fb, "[[ ## program_outputs ## ]]\n{\n"+
		"  \"trajectory\": {\n"+
		"    \"thought_0\": \"I know it.\",\n"+
		"    \"tool_name_0\": \"finish\",\n"+
		"    \"tool_args_0\": {},\n"+
		"    \"observation_0\": \"Completed.\"\n"+
		"  },\n"+
		"  \"reasoning\": \"r\",\n"+
		"  \"answer\": \"Paris, France\"\n"+
		"}\n\n", "DSPy's Prediction(trajectory=..., **extract): the trajectory first")
	assert.Contains(t, fb, "[[ ## module_names ## ]]\n[\n  \"react\",\n  \"extract.predict\"\n]\n\n")
	assert.Contains(t, fb, "Module react\n\tInput Fields:\n\t\t1. `question` (str): \n\t\t2. `trajectory` (str):\n\tOutput Fields:\n\t\t1. `next_thought` (str): \n\t\t2. `next_tool_name` (Literal['search', 'finish']): \n\t\t3. `next_tool_args` (dict[str, Any]):\n\tOriginal Instructions: \n\t\tGiven the fields `question`, produce the fields `answer`.\n\t\t\n\t\tYou are an Agent.")
	assert.Contains(t, fb, "Module extract.predict\n")

	react2, extract2 := reqs[3].Chat.Messages, reqs[4].Chat.Messages
	assert.Contains(t, react2[0].Content, "3. `hint_` (str): A hint to the module from an earlier run\n")
	assert.Contains(t, react2[len(react2)-1].Content, "[[ ## trajectory ## ]]\n\n\n[[ ## hint_ ## ]]\nN/A\n\n", "advice that names no predictor is N/A")
	assert.Contains(t, extract2[len(extract2)-1].Content, "[[ ## hint_ ## ]]\nGive the city only.\n\n")
}

// TestRefineFeedbackEdges: advice that is empty gives no hint (DSPy's
// `if not advice`); a failed feedback call is a failed attempt, and the
// next attempt runs without advice.
func TestRefineFeedbackEdges(t *testing.T) {
	ctx := context.Background()
	t.Run("empty advice", func(t *testing.T) {
		srv := lmtest.NewServer(answerReply("x"), feedbackReply("Nothing to say.", "{}"), answerReply("Paris"))
		defer srv.Close()
		ref, err := predict.NewRefine(qaModule(t), 2, valuesParisOnly, 1)
		require.NoError(t, err)
		_, _, err = ref.Call(ctx, srv.Client(), adapter.Values{"question": "q"})
		require.NoError(t, err)
		assert.NotContains(t, srv.Requests()[2].Chat.Messages[0].Content, "hint_")
	})
	t.Run("advice for no predictor", func(t *testing.T) {
		// A ChainOfThought's predictor is "predict": advice keyed "self"
		// (a Predict's name) is dropped, as DSPy drops it, and said.
		srv := lmtest.NewServer(answer("Paris, France"), feedbackReply("Too long.", `{"self": "`+capitalHint+`"}`), answer("Paris"))
		defer srv.Close()
		cot, err := predict.NewChainOfThought[Question, Answer]()
		require.NoError(t, err)
		ref, err := predict.NewRefine(cot, 2, parisOnly, 1)
		require.NoError(t, err)
		_, res, err := ref.Call(ctx, srv.Client(), Question{capitalQuestion})
		require.NoError(t, err)
		assert.Contains(t, lastUser(srv.Requests()[2]), "[[ ## hint_ ## ]]\nN/A\n\n", "the request DSPy sends")
		note := `attempt 1: the feedback's advice for "self" names no predictor of the program ("predict") and was dropped, as DSPy drops it`
		assert.Contains(t, res.Notes, note)

		// Stream says it as Call does.
		srv.Push(answer("Paris, France"), feedbackReply("Too long.", `{"self": "`+capitalHint+`"}`), answer("Paris"))
		var done *adapter.Result
		for ch, err := range ref.Stream(ctx, srv.Client(), Question{capitalQuestion}) {
			require.NoError(t, err)
			if ch.Done {
				done = ch.Result
			}
		}
		require.NotNil(t, done)
		assert.Contains(t, done.Notes, note)
	})
	t.Run("failed feedback", func(t *testing.T) {
		bad := lmtest.Error(400, `{"error":{"message":"bad request","type":"invalid_request_error"}}`)
		srv := lmtest.NewServer(answerReply("x"), bad, answerReply("y"), bad)
		defer srv.Close()
		ref, err := predict.NewRefine(qaModule(t), 3, valuesParisOnly, 1, predict.WithFailCount(1))
		require.NoError(t, err)
		_, res, err := ref.Call(ctx, srv.Client(), adapter.Values{"question": "q"})
		var ae *predict.AttemptsError
		require.ErrorAs(t, err, &ae, "the second failed feedback is one failure too many")
		assert.ErrorContains(t, ae.Errs[0], "feedback")
		assert.Equal(t, 4, res.Calls)
		assert.NotContains(t, srv.Requests()[2].Chat.Messages[0].Content, "hint_")
	})
	t.Run("WithFeedbackOptions", func(t *testing.T) {
		srv := lmtest.NewServer(answerReply("x"), feedbackReply("d", `{"self": "h"}`), answerReply("Paris"))
		defer srv.Close()
		ref, err := predict.NewRefine(qaModule(t), 2, valuesParisOnly, 1,
			predict.WithFeedbackOptions(adapter.WithRequest(openai.ChatCompletionRequest{Model: "critic"})))
		require.NoError(t, err)
		_, _, err = ref.Call(ctx, srv.Client(), adapter.Values{"question": "q"}, adapter.WithRequest(openai.ChatCompletionRequest{Model: "worker"}))
		require.NoError(t, err)
		reqs := srv.Requests()
		assert.Equal(t, []string{"worker", "worker", "worker"}, []string{reqs[0].Chat.Model, reqs[1].Chat.Model, reqs[2].Chat.Model},
			"the call's options beat the feedback's defaults")
		srv.Push(answerReply("x"), feedbackReply("d", `{"self": "h"}`), answerReply("Paris"))
		_, _, err = ref.Call(ctx, srv.Client(), adapter.Values{"question": "q"})
		require.NoError(t, err)
		assert.Equal(t, "critic", srv.Requests()[4].Chat.Model)
	})
}

// TestRefineTrace: Refine's run holds the attempts and the feedback call.
func TestRefineTrace(t *testing.T) {
	srv := lmtest.NewServer(answerReply("x"), feedbackReply("d", `{"self": "h"}`), answerReply("Paris"))
	defer srv.Close()
	var events []string
	kinds := map[uint64]string{}
	tr := &adapter.Trace{ModuleStart: func(i adapter.ModuleStartInfo) {
		kinds[i.ID] = i.Module
		events = append(events, i.Module+" in "+kinds[i.ParentID])
	}}
	ref, err := predict.NewRefine(qaModule(t), 2, valuesParisOnly, 1)
	require.NoError(t, err)
	_, _, err = ref.Call(context.Background(), srv.Client(), adapter.Values{"question": "q"}, adapter.UseTrace(tr))
	require.NoError(t, err)
	assert.Equal(t, []string{"Refine in ", "Predict in Refine", "Predict in Refine", "Predict in Refine"}, events)
}

// TestRefineNested: a Refine over a BestOfN names the predictors as DSPy
// does for a module held as an attribute ("module"), and sees the best
// inner attempt's run.
func TestRefineNested(t *testing.T) {
	srv := lmtest.NewServer(answerReply("x"), answerReply("y"), feedbackReply("d", `{"module": "h"}`), answerReply("Paris"))
	defer srv.Close()
	inner, err := predict.NewBestOfN(qaModule(t), 2, valuesParisOnly, 1)
	require.NoError(t, err)
	ref, err := predict.NewRefine(inner, 2, valuesParisOnly, 1)
	require.NoError(t, err)
	out, res, err := ref.Call(context.Background(), srv.Client(), adapter.Values{"question": "q"})
	require.NoError(t, err)
	assert.Equal(t, "Paris", out["answer"])
	assert.Equal(t, 4, res.Calls)
	reqs := srv.Requests()
	fb := lastUser(reqs[2])
	assert.Contains(t, fb, "[[ ## module_names ## ]]\n[\n  \"module\"\n]")
	assert.Contains(t, fb, "\"module_name\": \"module\"")
	assert.Contains(t, fb, "\"answer\": \"x\"", "the inner search's best attempt (the first of equals)")
	assert.Contains(t, lastUser(reqs[3]), "[[ ## hint_ ## ]]\nh\n\n")
}
