package adapter_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sigwire/adapter"
	"github.com/sigwire/adapter/lmtest"
)

// TestXMLNullAndEmpty: DSPy 3.5's XML value rules where they are exact
// (its upgrade guide): a self-closing tag is None for a nullable field,
// an open and a close tag with nothing between are the empty string; the
// same through Call and Stream. (For an Optional of another type, an
// empty value is None, the library's rule for an Optional; a str that is
// not Optional reads "" from either spelling.)
func TestXMLNullAndEmpty(t *testing.T) {
	sig := mustParse(t, "q -> a: Optional[str], b: Optional[str], c: str, d: Optional[int]")
	for _, reply := range []string{
		"<a/>\n<b></b>\n<c/>\n<d/>",
		"<a />\n<b></b>\n<c></c>\n<d></d>",
	} {
		check := func(t *testing.T, out adapter.Values) {
			t.Helper()
			assert.Nil(t, out["a"], "<a/>: None")
			b, ok := out["b"].(*string)
			require.True(t, ok)
			require.NotNil(t, b, "<b></b>: the empty string, not None")
			assert.Equal(t, "", *b)
			assert.Equal(t, "", out["c"])
			assert.Nil(t, out["d"])
		}
		srv := lmtest.NewServer(lmtest.Text(reply), lmtest.Text(reply))
		res, err := adapter.Call(t.Context(), srv.Client(), sig, nil, adapter.Values{"q": "x"}, adapter.UseAdapter(adapter.XML{}))
		require.NoError(t, err, reply)
		check(t, res.Outputs[0])
		_, sres, err := drain(adapter.Stream(t.Context(), srv.Client(), sig, nil, adapter.Values{"q": "x"}, adapter.UseAdapter(adapter.XML{})))
		require.NoError(t, err, reply)
		check(t, sres.Outputs[0])
		srv.Close()
	}
}
