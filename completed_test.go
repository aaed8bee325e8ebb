package adapter_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/lmtest"
	"github.com/sigwire/adapter/signature"
)

// TestCompletedEndsTheReply: the completed marker, in any spelling the
// reader takes for a field's marker, ends the reply for every adapter:
// its text is never a value, a reply that is only the marker holds no
// field (None for an Optional, as DSPy reads it; missing for a str), and
// a bare answer before it is the answer, whether the marker starts a line
// or follows the answer on its line. Stream agrees with Parse. (The generated spellings: internal/reply's
// TestCompletedMarkerSpellings.)
func TestCompletedEndsTheReply(t *testing.T) {
	str := mustParse(t, "q -> page: str")
	opt := mustParse(t, "q -> page: Optional[int]")
	parsers := []adapter.Parser{adapter.Chat{}, adapter.JSON{}, adapter.XML{}}
	for _, marker := range []string{"[[ ## completed ## ]]", "[[ ##  completed  ## ]]", "[[ ##\tcompleted\t## ]]", "[ ## Completed ## ]", "**[[ ## COMPLETED ## ]]**"} {
		for _, p := range parsers {
			got, err := p.Parse(opt, marker)
			require.NoError(t, err, "%T %q", p, marker)
			assert.Equal(t, adapter.Values{"page": (*int)(nil)}, got, "%T %q", p, marker)

			_, err = p.Parse(str, marker)
			assert.ErrorIs(t, err, adapter.ErrMissingField, "%T %q", p, marker)

			for _, reply := range []string{"Paris " + marker, "Paris\n" + marker + "\nUser: and Rome?", "Paris " + marker + " Rome"} {
				got, err := p.Parse(str, reply)
				require.NoError(t, err, "%T %q", p, reply)
				assert.Equal(t, adapter.Values{"page": "Paris"}, got, "%T %q", p, reply)
				if a, ok := p.(adapter.Adapter); ok {
					text, res, err := streamReply(t, a, str, reply, 3)
					require.NoError(t, err, "%T %q streamed", p, reply)
					assert.Equal(t, adapter.Values{"page": "Paris"}, res.Outputs[0], "%T %q streamed", p, reply)
					assert.Equal(t, "Paris", text["page"], "%T %q: the deltas", p, reply)
				}
			}
		}
	}
}

// streamReply streams reply from an lmtest server in chunks of size bytes
// through adapter a, and returns each field's text as a consumer keeps it
// (Replace applied), the Done chunk's Result and the stream's error.
func streamReply(t *testing.T, a adapter.Adapter, sig *signature.Signature, reply string, size int) (map[string]string, *adapter.Result, error) {
	t.Helper()
	srv := lmtest.NewServer(lmtest.Text(reply).ChunkSize(size))
	defer srv.Close()
	text := map[string]string{}
	var res *adapter.Result
	for c, err := range adapter.Stream(t.Context(), srv.Client(), sig, nil, adapter.Values{"q": "x"}, adapter.UseAdapter(a), adapter.NoFallback()) {
		if err != nil {
			return text, c.Result, err
		}
		if c.Replace {
			text[c.Field] = ""
		}
		text[c.Field] += c.Delta
		if c.Done {
			res = c.Result
		}
	}
	return text, res, nil
}
