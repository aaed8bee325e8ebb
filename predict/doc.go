// Package predict holds DSPy's modules for Go: Predict and ChainOfThought,
// typed over Go structs, plus an untyped Module over a signature and
// adapter.Values. A module keeps its defaults (demos, adapter, LM options);
// a call may override them, and an adapter set on the context with
// adapter.WithAdapter still wins over the module's, as in DSPy.
//
// A program optimised with DSPy in Python runs here with the same prompts:
// LoadProgram reads the JSON that program.save("x.json") writes, and
// Load applies one predictor's instructions, field texts and demos to a
// module, refusing a saved predictor whose fields do not line up.
//
//	type QA struct{ Question string `json:"question"` }
//	type Answer struct{ Answer string `json:"answer"` }
//	p, err := predict.New[QA, Answer]()
//	out, res, err := p.Call(ctx, client, QA{"What is 6 times 7?"})
package predict
