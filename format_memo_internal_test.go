package adapter

import (
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sigwire/adapter/signature"
)

// The demos' messages Format keeps are copies in a buffer of their own:
// not views of the arena that also holds a request's inputs (a large
// input would stay alive as long as the signature).
func TestKeptDemosOwnTheirText(t *testing.T) {
	sig, err := signature.Parse("question, context -> answer")
	require.NoError(t, err)
	demos := []Values{{"question": "q1", "context": "c1", "answer": "a1"}, {"question": "q2", "context": "c2", "answer": "a2"}}
	big := Values{"question": "q", "context": strings.Repeat("x", 1<<16)}
	for range 2 { // seen once, then kept
		_, err := chatLayout.format(nil, sig, demos, big, false)
		require.NoError(t, err)
	}
	c := chatLayout.memo(sig).demos.Load()
	require.NotNil(t, c)
	require.Len(t, c.msgs, 4)
	next := unsafe.Pointer(unsafe.StringData(c.msgs[0].Content))
	for _, m := range c.msgs {
		at := unsafe.Pointer(unsafe.StringData(m.Content))
		assert.Equal(t, next, at, "the kept texts lie back to back in one buffer")
		next = unsafe.Add(at, len(m.Content))
	}
	msgs, err := chatLayout.format(nil, sig, demos, big, false)
	require.NoError(t, err)
	assert.Equal(t, c.msgs, msgs[1:5], "the next Format uses them")
}
