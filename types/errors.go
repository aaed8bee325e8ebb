package types

import (
	"errors"

	"github.com/sigwire/adapter"
)

// Sentinels for errors.Is: every one the package exports is here. The
// errors this package returns to a Go caller begin with "types: " (the
// sentinel's own text, or the wrap of the function that returns it);
// ErrArgumentName and ErrToolArguments, whose text the model reads in a
// tool's result, carry none, and ErrUnsupportedPart is the root package's
// (reported inside its *adapter.InputError or *adapter.LMError).
var (
	// ErrArgumentName is matched (errors.Is) by the error of a tool call
	// whose arguments hold a key that is not exactly the name of one of the
	// tool's arguments: an unknown key, or one that differs from a name only
	// in case or Unicode folding ("AMOUNT" or "Amount" for "amount", "aſk" for
	// "ask"). encoding/json would match such a key to the argument, so a trace
	// or an approval step reading the arguments as written would see one value
	// and the tool run with another; the call is refused instead, and the
	// error (which names the keys) is what the model is shown.
	ErrArgumentName = errors.New("a key is not exactly the name of an argument")
	// ErrToolArguments is matched (errors.Is) by a ToolCall's Err: its
	// arguments are not one JSON object that could be read without guessing.
	// The error also matches adapter.ErrTruncated for arguments cut off
	// (inside a string, or right after a number: {"amount": 10 may have been
	// 100) and adapter.ErrAmbiguous for an argument given twice.
	ErrToolArguments = errors.New("tool call arguments are not one readable JSON object")
	// ErrMissingArgument is matched (errors.Is) by the error of a tool call
	// that leaves out a required argument: a field of the argument struct
	// without omitempty and without a default in its schema. Decoding
	// would give it its zero value, and the tool would run with a value
	// the model never gave; the call is refused instead, as DSPy's Python
	// tools refuse a missing argument, and the model is shown the names.
	ErrMissingArgument = errors.New("a required argument is missing")
	// ErrTooLarge is returned for inline data (bytes, a file, a data URI) over
	// its type's limit.
	ErrTooLarge = errors.New("types: too large")
	// ErrNotImage is returned for data that is not an image (by its declared
	// or detected media type), and for an inline image over MaxImageBytes
	// (with ErrTooLarge).
	ErrNotImage = errors.New("types: not an image")
	// ErrNotAudio is returned for data that is not audio (by its declared or
	// detected media type).
	ErrNotAudio = errors.New("types: not audio")
	// ErrUnsafeFilename is returned for a File whose name, read from JSON or
	// a model's text, is not a safe base name (DownloadFile's rule: valid
	// UTF-8, at most 255 bytes, not blank, not "." or "..", without a path
	// separator, a control or format character or a line separator).
	ErrUnsafeFilename = errors.New("types: not a safe file name")
	// ErrForbiddenAddress is returned for a download that would reach an
	// address that is not public (see PublicAddress) without AllowPrivate.
	ErrForbiddenAddress = errors.New("types: download to a private address refused")
	// ErrUncheckedClient is returned for DownloadOptions with a Client but
	// without AllowPrivate: a client of your own bypasses the address check.
	ErrUncheckedClient = errors.New("types: DownloadOptions.Client bypasses the private-address check: set AllowPrivate with it, or leave Client nil")
	// ErrUnsupportedPart is the root package's [adapter.ErrUnsupportedPart]:
	// an Audio, File or Document input sent through a client that cannot carry
	// its content part (an *openai.Client without the adapter.HTTPDoer
	// wrapper).
	ErrUnsupportedPart = adapter.ErrUnsupportedPart
)
