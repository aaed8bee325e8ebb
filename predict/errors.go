package predict

import "errors"

// Sentinels for errors.Is: every one the package exports is here, its
// text beginning with "predict: ".
var (
	// ErrZeroModule is what the methods of a nil or zero module (Module,
	// Predict, ChainOfThought, ReAct) return, wrapped in an error that
	// names the type and its constructor: build one with NewModule,
	// NewChainOfThoughtModule, New, NewChainOfThought or NewReAct. The
	// accessors (Signature, Demos, Module, Ignored) return nil instead.
	ErrZeroModule = errors.New("predict: a nil or zero module")
	// ErrNoSubmit matches the *NoSubmitError of a ReActV2 run that ended
	// without outputs: no submit succeeded, the forced submit included.
	ErrNoSubmit = errors.New("predict: the agent ended without submitting its outputs")
)
