package signature

import "errors"

// Errors callers can test for with errors.Is. Their texts carry no
// "signature: " prefix: the *FieldError that reports one does.
var (
	// ErrDuplicate reports a field name given twice.
	ErrDuplicate = errors.New("duplicate field name")
	// ErrBadName reports a field name that is not a valid identifier.
	ErrBadName = errors.New("not a valid identifier")
	// ErrUnsupported reports a type the signature cannot hold.
	ErrUnsupported = errors.New("unsupported type")
	// ErrNotStrict reports outputs that OpenAI's strict mode cannot
	// express: maps (dict[K, V]) and Any, whose keys or shape are open,
	// and custom types that do not serialize as text. The JSON adapter
	// then asks for json_object (JSON mode) instead, and says so in the
	// result's mode; it never silently drops a field from the schema.
	ErrNotStrict = errors.New("cannot be expressed as a strict JSON schema")
)
