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

	// ErrDSPyVersion is matched by Load's *VersionError: the program was
	// saved by a DSPy whose prompts this library does not reproduce (3.5
	// and later). WithAnyDSPyVersion loads it under DSPy 3.5's profile.
	ErrDSPyVersion = errors.New("predict: a program saved by a DSPy version whose prompts this library does not reproduce")

	// ErrWrongModule is matched by Load's error for a saved program that
	// another kind of module wrote: DSPy's ReActV2 state (dspy.ReActV2,
	// and dspy.ReAct since DSPy 3.5) loaded into a ReAct. The error's text
	// names the module that loads it.
	ErrWrongModule = errors.New("predict: a saved program of another kind of module")
)
