package adapter_test

import (
	"context"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/lmtest"
	"github.com/sigwire/adapter/signature"
)

// celsius is a user-defined output type: it names and describes itself
// and parses its own text.
type celsius float64

func (celsius) TypeName() string { return "Celsius" }

func (celsius) TypeDescription() string { return "A temperature in degrees Celsius, like 21.5 °C." }

func (c *celsius) ParseField(raw string) error {
	s := strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(raw), "°C"))
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return fmt.Errorf("not a temperature: %q", raw)
	}
	*c = celsius(f)
	return nil
}

// thermometerPhoto is a user-defined input type that is sent as an image.
type thermometerPhoto struct{ url string }

func (p thermometerPhoto) FormatParts() ([]openai.ChatMessagePart, error) {
	return []openai.ChatMessagePart{{Type: openai.ChatMessagePartTypeImageURL, ImageURL: &openai.ChatMessageImageURL{URL: p.url}}}, nil
}

// TestUserDefinedTypes plugs two custom types in without any adapter
// knowing them.
func TestUserDefinedTypes(t *testing.T) {
	sig, err := signature.Parse("photo: Photo -> reading: Celsius", signature.WithTypes(map[string]reflect.Type{
		"Photo":   reflect.TypeFor[thermometerPhoto](),
		"Celsius": reflect.TypeFor[celsius](),
	}))
	require.NoError(t, err)
	for _, a := range []adapter.Adapter{adapter.Chat{}, adapter.JSON{}, adapter.XML{}} {
		reply := map[string]string{"chat": "[[ ## reading ## ]]\n21.5 °C", "json": `{"reading": "21.5 °C"}`, "xml": "<reading>21.5 °C</reading>"}[a.Name()]
		srv := lmtest.NewServer(lmtest.Text(reply))
		res, err := adapter.Call(context.Background(), srv.Client(), sig, nil, adapter.Values{"photo": thermometerPhoto{"https://example.com/t.jpg"}}, adapter.UseAdapter(a))
		require.NoError(t, err, a.Name())
		assert.Equal(t, celsius(21.5), res.Outputs[0]["reading"], a.Name())
		msgs := srv.Requests()[0].Chat.Messages
		assert.Contains(t, msgs[0].Content, "`reading` (Celsius): \n    Type description of Celsius: A temperature in degrees Celsius", a.Name())
		var sawImage bool
		for _, p := range msgs[len(msgs)-1].MultiContent {
			sawImage = sawImage || (p.ImageURL != nil && p.ImageURL.URL == "https://example.com/t.jpg")
		}
		assert.True(t, sawImage, "%s: the photo is an image part", a.Name())
		srv.Close()
	}
}
