package adapter

// OnJoin makes f run each time a request joins another's call in flight
// (see Cached), so that tests can wait until every follower has joined
// before the LM answers; it returns a function that stops it.
func OnJoin(f func()) (stop func()) {
	joinHook.Store(&f)
	return func() { joinHook.Store(nil) }
}

// ExtractionSignature is the signature TwoStep's extractor answers.
var ExtractionSignature = buildExtractionSignature

// DecodeReflect is Decode through reflection alone, which its direct path
// must agree with.
func DecodeReflect[T any](vals Values) (T, error) { return decodeReflect[T](vals) }
