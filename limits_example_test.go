package adapter_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/lmtest"
	"github.com/sigwire/adapter/signature"
)

// A reply past the call's limits ends with an error that names the limit,
// never with a shortened reply. Here a stream of 40 KiB meets a 16 KiB
// limit; without WithLimits the default (64 MiB) applies.
func ExampleWithLimits() {
	var events strings.Builder
	for range 400 {
		events.WriteString(`data: {"choices":[{"index":0,"delta":{"content":"[[ ## answer ## ]]\nmore text "}}]}` + "\n\n")
	}
	srv := lmtest.NewServer(lmtest.Raw(200, http.Header{"Content-Type": {"text/event-stream"}}, []byte(events.String())))
	defer srv.Close()
	sig, _ := signature.Parse("question -> answer")

	for chunk, err := range adapter.Stream(context.Background(), srv.Client(), sig, nil, adapter.Values{"question": "q"},
		adapter.WithLimits(adapter.Limits{ReplyBytes: 16 << 10})) {
		if err != nil {
			fmt.Println(errors.Is(err, adapter.ErrReplyTooLarge))
			fmt.Println(err)
			return
		}
		_ = chunk
	}
	// Output:
	// true
	// adapter: chat: LM call: reply too large: the stream passed 16 KiB (Limits.ReplyBytes; raise it with adapter.WithLimits)
}
