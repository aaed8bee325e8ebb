// Package lmtest is a scripted OpenAI-compatible chat-completions server on
// loopback HTTP, for tests and examples that drive the real go-openai
// client end to end.
//
//	srv := lmtest.NewServer(lmtest.Text("[[ ## answer ## ]]\n42\n\n[[ ## completed ## ]]"))
//	defer srv.Close()
//	res, err := adapter.Call(ctx, srv.Client(), sig, nil, inputs)
//	reqs := srv.Requests() // what the client sent
//
// Replies are served in order, one per request; Handle answers requests
// once the queue is empty. Streaming requests get server-sent events in
// ChunkSize pieces, with the usage chunk when stream_options.include_usage
// is set; Cut ends a stream without a finish reason, as a dropped
// connection does.
package lmtest
