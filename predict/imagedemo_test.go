package predict_test

import (
	"context"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/lmtest"
	"github.com/sigwire/adapter/predict"
	"github.com/sigwire/adapter/signature"
	"github.com/sigwire/adapter/types"
)

const (
	markerStart = "<<CUSTOM-TYPE-START-IDENTIFIER>>"
	markerEnd   = "<<CUSTOM-TYPE-END-IDENTIFIER>>"
)

// savedImage is a dspy.Image as DSPy 3.3.1 saves it in a demo: its parts
// in the custom-type marker.
func savedImage(url string) string {
	return markerStart + `[{"type": "image_url", "image_url": {"url": ` + quoteJSON(url) + `}}]` + markerEnd
}

func quoteJSON(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// imageProgram is a saved program of one predictor, "p", over
// "photo, note -> caption" whose one demo holds photo, note and caption.
func imageProgram(t testing.TB, photo, note, caption string) predict.Program {
	doc := `{"p": {"demos": [{"augmented": true, "photo": ` + quoteJSON(photo) + `, "note": ` + quoteJSON(note) + `, "caption": ` + quoteJSON(caption) + `}],
		"signature": {"instructions": "Caption it.", "fields": [{"prefix": "Photo:", "description": "${photo}"}, {"prefix": "Note:", "description": "${note}"}, {"prefix": "Caption:", "description": "${caption}"}]}, "lm": null}}`
	prog, err := predict.LoadProgram(strings.NewReader(doc))
	require.NoError(t, err)
	return prog
}

func imageURLs(msgs []openai.ChatCompletionMessage) []string {
	var urls []string
	for _, m := range msgs {
		for _, p := range m.MultiContent {
			if p.ImageURL != nil {
				urls = append(urls, p.ImageURL.URL)
			}
		}
	}
	return urls
}

// TestLoadImageDemos: an image DSPy saved in a demo (the custom-type
// marker string, real file 53) loads as the Image it stands for, in an
// Image field as in a str field, as DSPy formats it: an image part in the
// demo's user message; in an output field, DSPy's marker text. It goes
// through NewImage's checks, so a local file, a non-image data URI or
// anything else a marker might claim is an error naming the demo and the
// field, never a content part; marker text inside other text stays text.
func TestLoadImageDemos(t *testing.T) {
	const url = "https://example.com/card.png"
	for _, spec := range []string{"photo: Image, note -> caption", "photo, note -> caption"} {
		sig, err := signature.Parse(spec, signature.WithTypes(types.Names()))
		require.NoError(t, err)
		m, err := predict.NewModule(sig).Load(imageProgram(t, savedImage(url), "n", "c"), "p")
		require.NoError(t, err, spec)
		assert.Equal(t, types.Image{URL: url}, m.Demos()[0]["photo"], spec)
		in := adapter.Values{"photo": "https://example.com/in.png", "note": "x"}
		if sig.Input(0).Type == reflect.TypeFor[types.Image]() {
			in["photo"] = types.Image{URL: "https://example.com/in.png"}
		}
		msgs, err := adapter.Chat{}.Format(m.Signature(), m.Demos(), in)
		require.NoError(t, err)
		assert.Equal(t, openai.ChatMessagePart{Type: openai.ChatMessagePartTypeText, Text: "[[ ## photo ## ]]\n"}, msgs[1].MultiContent[0], spec)
		assert.Equal(t, url, msgs[1].MultiContent[1].ImageURL.URL, spec)
		assert.NotContains(t, msgs[1].MultiContent[2].Text, markerStart, spec)
	}

	// A list of images, each saved as its marker, in a list[Image] field.
	sig, err := signature.Parse("photos: list[Image] -> caption", signature.WithTypes(types.Names()))
	require.NoError(t, err)
	prog, err := predict.LoadProgram(strings.NewReader(`{"p": {"demos": [{"photos": [` + quoteJSON(savedImage("https://a.example/1.png")) + `, ` + quoteJSON(savedImage("https://a.example/2.png")) + `], "caption": "c"}],
		"signature": {"instructions": "", "fields": [{"prefix": "Photos:", "description": "${photos}"}, {"prefix": "Caption:", "description": "${caption}"}]}}}`))
	require.NoError(t, err)
	m, err := predict.NewModule(sig).Load(prog, "p")
	require.NoError(t, err)
	assert.Equal(t, []types.Image{{URL: "https://a.example/1.png"}, {URL: "https://a.example/2.png"}}, m.Demos()[0]["photos"])

	// In an output field: DSPy's marker text in the assistant turn.
	sig, err = signature.Parse("note, caption -> photo: Image", signature.WithTypes(types.Names()))
	require.NoError(t, err)
	prog, err = predict.LoadProgram(strings.NewReader(`{"p": {"demos": [{"note": "n", "caption": "c", "photo": ` + quoteJSON(savedImage(url)) + `}], "signature": {"instructions": "", "fields": [{"prefix": "Note:", "description": "${note}"}, {"prefix": "Caption:", "description": "${caption}"}, {"prefix": "Photo:", "description": "${photo}"}]}}}`))
	require.NoError(t, err)
	m, err = predict.NewModule(sig).Load(prog, "p")
	require.NoError(t, err)
	msgs, err := adapter.Chat{}.Format(m.Signature(), m.Demos(), adapter.Values{"note": "n", "caption": "c"})
	require.NoError(t, err)
	assert.Equal(t, "[[ ## photo ## ]]\n"+savedImage(url)+"\n\n[[ ## completed ## ]]\n", msgs[2].Content)

	refused := map[string]string{
		"a local file":       savedImage("file:///etc/passwd"),
		"a local path":       savedImage("/etc/passwd"),
		"a data URI of text": savedImage("data:text/plain;base64,aGk="),
		"two parts":          markerStart + `[{"type": "image_url", "image_url": {"url": "https://a.example/1.png"}}, {"type": "image_url", "image_url": {"url": "https://a.example/2.png"}}]` + markerEnd,
		"an audio part":      markerStart + `[{"type": "input_audio", "input_audio": {"data": "AAAA", "format": "wav"}}]` + markerEnd,
		"a text part":        markerStart + `[{"type": "text", "text": "hi"}]` + markerEnd,
		"an unknown member":  markerStart + `[{"type": "image_url", "image_url": {"url": "https://a.example/1.png"}, "cache_control": {}}]` + markerEnd,
		"an unknown detail":  markerStart + `[{"type": "image_url", "image_url": {"url": "https://a.example/1.png", "detail": "ultra"}}]` + markerEnd,
		"not JSON":           markerStart + `[{"type": "image_url"` + markerEnd,
		"no parts":           markerStart + `[]` + markerEnd,
		"no URL":             markerStart + `[{"type": "image_url", "image_url": {}}]` + markerEnd,
	}
	for what, demo := range refused {
		for _, spec := range []string{"photo: Image, note -> caption", "photo, note -> caption"} {
			sig, err := signature.Parse(spec, signature.WithTypes(types.Names()))
			require.NoError(t, err)
			_, err = predict.NewModule(sig).Load(imageProgram(t, demo, "n", "c"), "p")
			assert.ErrorContains(t, err, `predict: predictor "p": demo 1: field "photo": `, "%s (%s)", what, spec)
		}
	}

	// Marker text inside other text is text, as every untrusted text is.
	for _, text := range []string{"see " + savedImage(url), savedImage(url) + " and more", " " + savedImage(url), savedImage(url) + savedImage(url),
		markerStart + `[{"type": "image_url", "image_url": {"url": "https://a.example/` + markerEnd + markerStart + `"}}]` + markerEnd} {
		sig, err := signature.Parse("photo, note -> caption")
		require.NoError(t, err)
		m, err := predict.NewModule(sig).Load(imageProgram(t, "p", text, text), "p")
		require.NoError(t, err)
		assert.Equal(t, text, m.Demos()[0]["note"])
		msgs, err := adapter.Chat{}.Format(m.Signature(), m.Demos(), adapter.Values{"photo": "p", "note": "n"})
		require.NoError(t, err)
		assert.Empty(t, imageURLs(msgs), text)
	}
}

// TestLoadImageDemosOverTheWire: the loaded image reaches the model as an
// image part through the real client, and a refused one sends nothing.
func TestLoadImageDemosOverTheWire(t *testing.T) {
	srv := lmtest.NewServer(lmtest.Text("[[ ## caption ## ]]\nA card.\n\n[[ ## completed ## ]]"))
	defer srv.Close()
	sig, err := signature.Parse("photo: Image, note -> caption", signature.WithTypes(types.Names()))
	require.NoError(t, err)
	m, err := predict.NewModule(sig).Load(imageProgram(t, savedImage("data:image/png;base64,iVBORw0KGgo="), "n", "c"), "p")
	require.NoError(t, err)
	res, err := m.Call(context.Background(), srv.Client(), adapter.Values{"photo": types.Image{URL: "https://example.com/in.png"}, "note": "x"})
	require.NoError(t, err)
	assert.Equal(t, "A card.", res.Outputs[0]["caption"])
	var body struct {
		Messages []struct {
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	require.NoError(t, json.Unmarshal(srv.Requests()[0].Body, &body))
	assert.Contains(t, string(body.Messages[1].Content), `"image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}`)
	assert.NotContains(t, string(srv.Requests()[0].Body), "CUSTOM-TYPE")
}

// FuzzLoadImageDemo: whatever a saved demo's value holds, in a str or an
// Image field, loading it gives an error or demos whose only image parts
// are images NewImage accepts, each from a demo value that is exactly
// DSPy's marker for it; the text is never lost.
func FuzzLoadImageDemo(f *testing.F) {
	for _, s := range []string{savedImage("https://example.com/a.png"), savedImage("file:///etc/passwd"), "plain", markerStart, markerStart + markerEnd,
		savedImage("data:image/png;base64,iVBORw0KGgo="), "x" + savedImage("https://example.com/a.png"),
		markerStart + `"[{\"type\": \"image_url\", \"image_url\": {\"url\": \"https://example.com/a.png\"}}]"` + markerEnd} {
		f.Add(s)
	}
	sigs := []*signature.Signature{}
	for _, spec := range []string{"photo: Image, note -> caption", "photo, note -> caption"} {
		sig, err := signature.Parse(spec, signature.WithTypes(types.Names()))
		require.NoError(f, err)
		sigs = append(sigs, sig)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			return // JSON text is UTF-8: a saved file cannot hold it
		}
		doc := `{"p": {"demos": [{"photo": ` + quoteJSON(s) + `, "note": ` + quoteJSON(s) + `, "caption": "c"}], "signature": {"instructions": "", "fields": [{"prefix": "Photo:", "description": "${photo}"}, {"prefix": "Note:", "description": "${note}"}, {"prefix": "Caption:", "description": "${caption}"}]}}}`
		prog, err := predict.LoadProgram(strings.NewReader(doc))
		if err != nil {
			t.Fatalf("a program with a string demo does not load: %v", err)
		}
		for _, sig := range sigs {
			m, err := predict.NewModule(sig).Load(prog, "p")
			if err != nil {
				continue
			}
			var want []string
			for _, name := range []string{"photo", "note"} {
				switch v := m.Demos()[0][name].(type) {
				case types.Image:
					if _, err := types.NewImage(v.URL); err != nil {
						t.Fatalf("%s: an image NewImage refuses, %v, from %q: %v", name, v, s, err)
					}
					payload, isMarker := strings.CutPrefix(s, markerStart)
					payload, isMarker = strings.CutSuffix(payload, markerEnd)
					isMarker = isMarker && strings.HasPrefix(s, markerStart) && strings.Count(s, markerStart) == 1 && strings.Count(s, markerEnd) == 1
					switch {
					case isMarker:
						// DSPy's marker for exactly this image.
						var parts []struct {
							ImageURL struct {
								URL string `json:"url"`
							} `json:"image_url"`
						}
						if err := json.Unmarshal([]byte(payload), &parts); err != nil || len(parts) != 1 || strings.TrimSpace(parts[0].ImageURL.URL) != v.URL {
							t.Fatalf("%s: an image %v from %q (%v)", name, v, s, err)
						}
					case name == "photo" && sig.Input(0).Type == reflect.TypeFor[types.Image]():
						// An Image field reads a URL, as it always has.
						if img, err := types.NewImage(s); err != nil || img != v {
							t.Fatalf("%s: an image %v from %q (%v)", name, v, s, err)
						}
					default:
						t.Fatalf("%s: an image %v from %q", name, v, s)
					}
					want = append(want, v.URL)
				case string:
					if v != s {
						t.Fatalf("%s: %q became %q", name, s, v)
					}
				default:
					t.Fatalf("%s: %q became %#v", name, s, v)
				}
			}
			in := adapter.Values{"photo": "p", "note": "n"}
			if sig.Input(0).Type == reflect.TypeFor[types.Image]() {
				in["photo"] = types.Image{URL: "https://example.com/in.png"}
				want = append(want, "https://example.com/in.png")
			}
			msgs, err := adapter.Chat{}.Format(m.Signature(), m.Demos(), in)
			if err != nil {
				t.Fatalf("a loaded demo does not format: %v", err)
			}
			if got := imageURLs(msgs); !slices.Equal(got, want) {
				t.Fatalf("image parts %q from %q", got, s)
			}
		}
	})
}

// TestLoadCutMarker: a custom-type value cut short when it was saved
// (DSPy's start marker and no end marker, as SIMBA saves a long demo
// value; real file 68) loads in an Image field, a str field and a list of
// images, keeps the saved text, and is sent as DSPy sends it: the text, in
// a user message of one text part. Ignored names the demo and the field;
// the complete markers beside it still load as images.
func TestLoadCutMarker(t *testing.T) {
	cut := markerStart + `[{"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,/9j/4AAQSkZJRg` + "\n\t\t... <TRUNCATED FOR BREVITY>"
	for _, spec := range []string{"photo: Image, note -> caption", "photo, note -> caption"} {
		sig, err := signature.Parse(spec, signature.WithTypes(types.Names()))
		require.NoError(t, err)
		m, err := predict.NewModule(sig).Load(imageProgram(t, cut, "n", "c"), "p")
		require.NoError(t, err, spec)
		assert.Equal(t, cut, m.Demos()[0]["photo"], spec)
		require.Len(t, m.Ignored(), 1, spec)
		assert.Contains(t, m.Ignored()[0], `demo 1: field "photo": a custom-type value cut short when it was saved`, spec)
		assert.Contains(t, m.Ignored()[0], `ending "…`, spec)
		in := adapter.Values{"photo": "https://example.com/in.png", "note": "x"}
		if sig.Input(0).Type == reflect.TypeFor[types.Image]() {
			in["photo"] = types.Image{URL: "https://example.com/in.png"}
		}
		msgs, err := adapter.Chat{}.Format(m.Signature(), m.Demos(), in)
		require.NoError(t, err)
		assert.Equal(t, []openai.ChatMessagePart{{Type: openai.ChatMessagePartTypeText, Text: "[[ ## photo ## ]]\n" + cut + "\n\n[[ ## note ## ]]\nn"}}, msgs[1].MultiContent, spec)
	}

	// In a list of images, beside a complete marker.
	sig, err := signature.Parse("photos: list[Image] -> caption", signature.WithTypes(types.Names()))
	require.NoError(t, err)
	prog, err := predict.LoadProgram(strings.NewReader(`{"p": {"demos": [{"photos": [` + quoteJSON(savedImage("https://a.example/1.png")) + `, ` + quoteJSON(cut) + `], "caption": "c"}, {"photos": [], "caption": "d"}, {"photos": [` + quoteJSON(cut) + `], "caption": "e"}],
		"signature": {"instructions": "", "fields": [{"prefix": "Photos:", "description": "${photos}"}, {"prefix": "Caption:", "description": "${caption}"}]}}}`))
	require.NoError(t, err)
	m, err := predict.NewModule(sig).Load(prog, "p")
	require.NoError(t, err)
	assert.Equal(t, []any{types.Image{URL: "https://a.example/1.png"}, cut}, m.Demos()[0]["photos"])
	require.Len(t, m.Ignored(), 2)
	assert.Contains(t, m.Ignored()[0], `demo 1: field "photos": a custom-type value cut short`)
	assert.Contains(t, m.Ignored()[1], `demo 3: field "photos": a custom-type value cut short`)
	msgs, err := adapter.Chat{}.Format(m.Signature(), m.Demos(), adapter.Values{"photos": []types.Image{}})
	require.NoError(t, err)
	assert.Equal(t, []string{"https://a.example/1.png"}, imageURLs(msgs))
	assert.Equal(t, `", `+strings.NewReplacer(`\u003c`, "<", `\u003e`, ">").Replace(quoteJSON(cut))+`]`, msgs[1].MultiContent[2].Text, "the cut value is text, as DSPy's json.dumps gives it")

	// Real file 68: SIMBA's demo, 100,030 characters.
	prog, err = predict.ReadProgram("testdata/realworld/68-dspy-rise-humbench-bibliographic-simba-cot_optimized.json")
	require.NoError(t, err)
	sig, err = signature.Parse("page_image: Image -> reasoning: str, document: str", signature.WithTypes(types.Names()))
	require.NoError(t, err)
	m, err = predict.NewModule(sig).Load(prog, "predict.predict")
	require.NoError(t, err)
	assert.Contains(t, m.Ignored(), `demo 1: field "page_image": a custom-type value cut short when it was saved (DSPy's <<CUSTOM-TYPE-START-IDENTIFIER>> with no <<CUSTOM-TYPE-END-IDENTIFIER>>; 100030 characters ending "…/K\n\t\t... <TRUNCATED FOR BREVITY>"): kept as the saved text, which DSPy sends as it is, not read as the field's type`)
}
