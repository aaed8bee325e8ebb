package adapter

import (
	"context"
	"runtime"
	"testing"

	openai "github.com/sashabaranov/go-openai"
)

type valueLM struct{ n int }

func (*valueLM) CreateChatCompletion(context.Context, openai.ChatCompletionRequest) (openai.ChatCompletionResponse, error) {
	return openai.ChatCompletionResponse{}, nil
}

// TestValueIdentitiesDieWithTheirLMs: the identities given to LMs as
// values are forgotten once the LMs are gone, so that the table does not
// grow with every LM a server makes; an LM alive keeps its identity.
func TestValueIdentitiesDieWithTheirLMs(t *testing.T) {
	size := func() int {
		values.Lock()
		defer values.Unlock()
		return len(values.ids)
	}
	keep := &valueLM{}
	id, ok := valueIdentity(keep)
	if !ok {
		t.Fatal("a pointer LM has an identity")
	}
	before := size()
	ids := map[string]bool{}
	for i := range 1000 {
		id, _ := valueIdentity(&valueLM{n: i})
		ids[id] = true
	}
	if len(ids) != 1000 {
		t.Fatalf("1000 LMs got %d identities", len(ids))
	}
	for i := 0; i < 100 && size() > before+100; i++ {
		runtime.GC() // cleanups run after a GC, on another goroutine
		runtime.Gosched()
	}
	if n := size() - before; n > 100 {
		t.Errorf("%d of 1000 identities of freed LMs are still kept", n)
	}
	if again, _ := valueIdentity(keep); again != id {
		t.Errorf("a live LM's identity changed: %q, then %q", id, again)
	}
	runtime.KeepAlive(keep)
}
