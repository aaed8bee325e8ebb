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
