// Package predict holds DSPy's modules for Go: Predict and ChainOfThought,
// typed over Go structs, an untyped Module over a signature and
// adapter.Values, and ReAct, DSPy's tool-using agent. Every module call
// can also stream (Stream): typed modules give their Out on the Done chunk.
//
// Modules and calls share one option vocabulary, adapter.CallOption: given
// to a constructor, an option is a default of every call of the module
// (adapter.UseAdapter, adapter.WithRequest, adapter.UseTrace, this
// package's WithDemos, WithInstructions, WithMaxIters, WithToolConcurrency);
// given to a call, it overrides the default for that call (a request
// field by field). An adapter set on the context with adapter.WithAdapter
// beats the module's, as in DSPy, and a call's adapter.UseAdapter beats
// both.
//
// A program optimised with DSPy in Python runs here with the same prompts:
// LoadProgram reads the JSON that program.save("x.json") writes, and
// Load applies one predictor's instructions, field texts and demos to a
// module as DSPy's load_state does, refusing a saved predictor whose fields
// do not line up and listing what it ignored (Module.Ignored). A ReAct
// loads its two predictors, "react" and "extract.predict", at once.
//
// A ReAct runs Go functions (types.NewTool) as tools; every tool run is
// reported to the call's adapter.Trace (ToolStart, ToolDone), and the
// result holds the trajectory, which marshals to DSPy's. By default it
// asks for one tool per step in the text, as DSPy 3.3.1's ReAct. ReActV2
// (and Agent, typed) is DSPy's ReActV2, which DSPy 3.5 made its
// dspy.ReAct: several calls per step, natively through the provider's
// function calling when the adapter says so, run at once
// (WithToolConcurrency), and a submit tool that carries the outputs. Their
// Stream shows the run
// as it happens: each step's thought as it is written, the calls chosen,
// each tool's start and end, then the answer (see ReAct.Stream).
//
// BestOfN and Refine run any of these modules several times and keep the
// prediction a reward scores best (Refine asks the LM for advice between
// attempts); their Stream streams each attempt, tagged with its number
// (adapter.Chunk.Attempt), and settles on the chosen one before Done.
//
// A budget given to a module call (adapter.WithBudget) spans the whole
// run: a BestOfN's or Refine's attempts and advice calls, a ReAct's steps.
// When it refuses a request, the run stops there and returns what it has
// with an error matching adapter.ErrBudget: BestOfN and Refine the best
// attempt so far, ReAct and ReActV2 the trajectory or history of the
// steps that ran (without the extract call or forced submit, which would
// need another request).
//
//	type QA struct{ Question string `json:"question"` }
//	type Answer struct{ Answer string `json:"answer"` }
//	p, err := predict.New[QA, Answer]()
//	out, res, err := p.Call(ctx, client, QA{"What is 6 times 7?"})
package predict
