package adapter_test

import (
	"encoding/json"
	"reflect"
	"testing"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/lmtest"
	"github.com/sigwire/adapter/signature"
)

// clip is a Formatter whose part go-openai's types cannot express.
type clip struct{ data string }

func (c clip) FormatParts() ([]openai.ChatMessagePart, error) {
	p, err := adapter.RawPart(json.RawMessage(`{"type": "input_audio", "input_audio": {"data": "` + c.data + `", "format": "wav"}}`))
	return []openai.ChatMessagePart{p}, err
}

// TestRawPartsThroughTheWrapper: a part go-openai cannot express reaches
// the wire exactly as given through a client whose HTTP client is the
// HTTPDoer wrapper, for Call and Stream; without the wrapper the call
// fails before any request, naming the input and the fix.
func TestRawPartsThroughTheWrapper(t *testing.T) {
	sig, err := signature.Parse("question, audio: Clip -> answer", signature.WithTypes(map[string]reflect.Type{"Clip": reflect.TypeFor[clip]()}))
	require.NoError(t, err)
	in := adapter.Values{"question": "What is said?", "audio": clip{"UklGRg=="}}
	srv := lmtest.NewServer(lmtest.Text("[[ ## answer ## ]]\nhello"), lmtest.Text("[[ ## answer ## ]]\nhello"))
	defer srv.Close()

	_, err = adapter.Call(t.Context(), srv.Client(), sig, nil, in)
	var ie *adapter.InputError
	require.ErrorAs(t, err, &ie)
	assert.Equal(t, "audio", ie.Field)
	assert.ErrorIs(t, err, adapter.ErrUnsupportedPart)
	assert.Contains(t, err.Error(), "adapter.HTTPDoer")
	assert.Empty(t, srv.Requests(), "nothing was sent")

	cfg := srv.Config()
	cfg.HTTPClient = adapter.HTTPDoer(cfg.HTTPClient)
	client := openai.NewClientWithConfig(cfg)
	res, err := adapter.Call(t.Context(), client, sig, nil, in)
	require.NoError(t, err)
	assert.Equal(t, "hello", res.Outputs[0]["answer"])
	_, sres, err := drain(adapter.Stream(t.Context(), client, sig, nil, in))
	require.NoError(t, err)
	assert.Equal(t, "hello", sres.Outputs[0]["answer"])

	for _, r := range srv.Requests() {
		var body struct {
			Messages []struct {
				Content json.RawMessage `json:"content"`
			} `json:"messages"`
		}
		require.NoError(t, json.Unmarshal(r.Body, &body))
		var parts []json.RawMessage
		require.NoError(t, json.Unmarshal(body.Messages[1].Content, &parts))
		var texts []string
		var audio json.RawMessage
		for _, p := range parts {
			var head struct{ Type, Text string }
			require.NoError(t, json.Unmarshal(p, &head))
			switch head.Type {
			case "text":
				texts = append(texts, head.Text)
			case "input_audio":
				audio = p
			default:
				t.Fatalf("unexpected part %s", p)
			}
		}
		assert.JSONEq(t, `{"type":"input_audio","input_audio":{"data":"UklGRg==","format":"wav"}}`, string(audio))
		assert.Contains(t, texts[0], "[[ ## audio ## ]]")
		assert.NotContains(t, string(r.Body), "x-sigwire-raw-part")
	}
}

// TestRawPartRefusesNonObjects: a raw part is a JSON object with a type.
func TestRawPartRefusesNonObjects(t *testing.T) {
	for _, bad := range []string{`[]`, `"x"`, `{}`, `{"type": ""}`, `{`, ``} {
		_, err := adapter.RawPart(json.RawMessage(bad))
		assert.Error(t, err, bad)
	}
}
