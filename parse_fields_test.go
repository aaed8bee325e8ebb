package adapter_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	adapter "github.com/sigwire/adapter"
)

// TestChatParseManyFields: a reply of 400 output fields (names looked up
// by the signature's index, issue 32 item 4) gives each field its own
// value, with markers written in the signature's case or another, and an
// input's marker ending the field before it, as with a few fields.
func TestChatParseManyFields(t *testing.T) {
	for _, n := range []int{3, 15, 16, 17, 400} {
		names := make([]string, n)
		var reply strings.Builder
		want := adapter.Values{}
		for i := range names {
			names[i] = fmt.Sprintf("Field_%d", i)
			marker := names[i]
			switch i % 3 {
			case 1:
				marker = strings.ToLower(marker)
			case 2:
				marker = strings.ToUpper(marker)
			}
			fmt.Fprintf(&reply, "[[ ## %s ## ]]\nvalue %d\n\n", marker, i)
			want[names[i]] = fmt.Sprintf("value %d", i)
			if i == n/2 {
				reply.WriteString("[[ ## Q ## ]]\nan echoed input\n\n")
			}
		}
		reply.WriteString("[[ ## COMPLETED ## ]]\ntrailing text")
		sig := mustParse(t, "q -> "+strings.Join(names, ", "))
		got, err := (adapter.Chat{}).Parse(sig, reply.String())
		require.NoError(t, err, "n=%d", n)
		assert.Equal(t, want, got, "n=%d", n)
	}
}
