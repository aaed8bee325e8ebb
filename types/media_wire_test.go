package types_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/lmtest"
	"github.com/sigwire/adapter/types"
)

// wavBytes is the start of a WAV file: enough for http.DetectContentType.
var wavBytes = []byte("RIFF\x24\x00\x00\x00WAVEfmt \x10\x00\x00\x00\x01\x00\x01\x00\x40\x1f\x00\x00\x80\x3e\x00\x00\x02\x00\x10\x00data\x00\x00\x00\x00")

var pdfBytes = []byte("%PDF-1.4\n1 0 obj <<>> endobj\ntrailer <<>>\n%%EOF\n")

// media returns an Audio, a File and a Document and the exact parts DSPy
// 3.3.1 sends for them (its format() dicts, in its key order).
func media(t testing.TB, tag string) (clip types.Audio, report types.File, doc types.Document, parts []string) {
	t.Helper()
	clip, err := types.AudioFromBytes(append(append([]byte{}, wavBytes...), tag...), "")
	require.NoError(t, err)
	report, err = types.FileFromBytes(append(append([]byte{}, pdfBytes...), tag...), "report-"+tag+".pdf", "")
	require.NoError(t, err)
	doc = types.Document{Data: "The grass is green. The sky is blue. (" + tag + ")", Title: "Colours " + tag, Context: "A trustworthy document."}
	b64 := func(b []byte) string {
		return base64.StdEncoding.EncodeToString(append(append([]byte{}, b...), tag...))
	}
	parts = []string{
		`{"type":"input_audio","input_audio":{"data":"` + b64(wavBytes) + `","format":"wav"}}`,
		`{"type":"file","file":{"file_data":"data:application/pdf;base64,` + b64(pdfBytes) + `","filename":"report-` + tag + `.pdf"}}`,
		`{"type":"document","source":{"type":"text","media_type":"text/plain","data":"The grass is green. The sky is blue. (` + tag + `)"},"citations":{"enabled":true},"title":"Colours ` + tag + `","context":"A trustworthy document."}`,
	}
	return clip, report, doc, parts
}

// wrapped is a go-openai client for srv whose HTTP client is the
// library's wrapper.
func wrapped(srv *lmtest.Server) *openai.Client {
	cfg := srv.Config()
	cfg.HTTPClient = adapter.HTTPDoer(cfg.HTTPClient)
	return openai.NewClientWithConfig(cfg)
}

// wireContents returns the raw JSON of each message's content in a
// request body, as sent.
func wireContents(t *testing.T, body []byte) []string {
	t.Helper()
	var req struct {
		Messages []struct {
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	require.NoError(t, json.Unmarshal(body, &req))
	out := make([]string, len(req.Messages))
	for i, m := range req.Messages {
		out[i] = string(m.Content)
	}
	return out
}

// expectedContents is what the wire must carry for msgs (Format's
// output): text as go-openai writes it, and each raw part exactly as its
// type made it.
func expectedContents(t *testing.T, msgs []openai.ChatCompletionMessage) []string {
	t.Helper()
	out := make([]string, len(msgs))
	for i, m := range msgs {
		if m.MultiContent == nil {
			b, err := json.Marshal(m.Content)
			require.NoError(t, err)
			out[i] = string(b)
			continue
		}
		var parts []string
		for _, p := range m.MultiContent {
			if raw, ok := adapter.RawPartJSON(p); ok {
				parts = append(parts, string(raw))
				continue
			}
			b, err := json.Marshal(p)
			require.NoError(t, err)
			parts = append(parts, string(b))
		}
		out[i] = "[" + strings.Join(parts, ",") + "]"
	}
	return out
}

// TestMediaOnTheWireChat: a DSPy signature with an Audio, a File and a
// Document input, sent through go-openai with the HTTPDoer wrapper, puts
// DSPy 3.3.1's parts on the wire byte for byte, where DSPy places them.
func TestMediaOnTheWireChat(t *testing.T) {
	sig := parse(t, "question, clip: Audio, report: File, doc: Document -> answer")
	clip, report, doc, parts := media(t, "q")
	srv := lmtest.NewServer(lmtest.Text("[[ ## answer ## ]]\nblue\n\n[[ ## completed ## ]]"))
	defer srv.Close()
	res, err := adapter.Call(t.Context(), wrapped(srv), sig, nil,
		adapter.Values{"question": "What colour is the sky?", "clip": clip, "report": report, "doc": doc}, adapter.UseAdapter(adapter.Chat{}))
	require.NoError(t, err)
	assert.Equal(t, "blue", res.Outputs[0]["answer"])

	body := srv.Requests()[0].Body
	contents := wireContents(t, body)
	require.Len(t, contents, 2)
	want := `[{"type":"text","text":"[[ ## question ## ]]\nWhat colour is the sky?\n\n[[ ## clip ## ]]\n"},` + parts[0] +
		`,{"type":"text","text":"\n\n[[ ## report ## ]]\n"},` + parts[1] +
		`,{"type":"text","text":"\n\n[[ ## doc ## ]]\n"},` + parts[2] +
		",{\"type\":\"text\",\"text\":\"\\n\\nRespond with the corresponding output fields, starting with the field `[[ ## answer ## ]]`, and then ending with the marker for `[[ ## completed ## ]]`.\"}]"
	assert.Equal(t, want, contents[1])
	for _, p := range parts {
		assert.Equal(t, 1, bytes.Count(body, []byte(p)), "each part once, byte for byte: %s", p)
	}
	assert.NotContains(t, string(body), "x-sigwire-raw-part")
}

// TestMediaOnTheWire: for Chat, JSON, XML (and BAML), Call and Stream, with the
// media in the inputs, in a demo and in a History turn, every message
// reaches the wire as Format wrote it, each part exactly as its type made
// it.
func TestMediaOnTheWire(t *testing.T) {
	sig := parse(t, "history: History, question, clip: Audio, report: File, doc: Document -> answer")
	dClip, dReport, dDoc, dParts := media(t, "demo")
	hClip, hReport, hDoc, hParts := media(t, "history")
	clip, report, doc, parts := media(t, "main")
	demos := []adapter.Values{{"question": "Demo?", "clip": dClip, "report": dReport, "doc": dDoc, "answer": "green"}}
	in := adapter.Values{
		"history":  types.History{Messages: []map[string]any{{"question": "Before?", "clip": hClip, "report": hReport, "doc": hDoc, "answer": "grey"}}},
		"question": "What colour is the sky?", "clip": clip, "report": report, "doc": doc,
	}
	replies := map[string]string{
		"chat": "[[ ## answer ## ]]\nblue\n\n[[ ## completed ## ]]",
		"json": `{"answer": "blue"}`,
		"xml":  "<answer>blue</answer>",
		"baml": `{"answer": "blue"}`,
	}
	for _, a := range []adapter.Adapter{adapter.Chat{}, adapter.JSON{}, adapter.XML{}, adapter.BAML{}} {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", a.Name(), stream), func(t *testing.T) {
				srv := lmtest.NewServer(lmtest.Text(replies[a.Name()]))
				defer srv.Close()
				client := wrapped(srv)
				var res *adapter.Result
				var err error
				if stream {
					_, res, err = drainStream(adapter.Stream(t.Context(), client, sig, demos, in, adapter.UseAdapter(a)))
				} else {
					res, err = adapter.Call(t.Context(), client, sig, demos, in, adapter.UseAdapter(a))
				}
				require.NoError(t, err)
				assert.Equal(t, "blue", res.Outputs[0]["answer"])

				msgs, err := a.Format(sig, demos, in)
				require.NoError(t, err)
				body := srv.Requests()[0].Body
				assert.Equal(t, expectedContents(t, msgs), wireContents(t, body))
				for _, p := range append(append(dParts, hParts...), parts...) {
					assert.Equal(t, 1, bytes.Count(body, []byte(p)), "each part once, byte for byte: %.80s", p)
				}
				assert.NotContains(t, string(body), "x-sigwire-raw-part")
			})
		}
	}
}

// drainStream collects a stream's result.
func drainStream(seq func(func(adapter.Chunk, error) bool)) (string, *adapter.Result, error) {
	var text strings.Builder
	var res *adapter.Result
	for ch, err := range seq {
		if err != nil {
			return text.String(), nil, err
		}
		text.WriteString(ch.Delta)
		if ch.Done {
			res = ch.Result
		}
	}
	return text.String(), res, nil
}

// TestMediaWithoutTheWrapper: through a plain go-openai client the call
// fails before any request, naming the field that holds the part — in the
// inputs, a History turn or a demo — and saying how to turn the wrapper
// on.
func TestMediaWithoutTheWrapper(t *testing.T) {
	clip, report, doc, _ := media(t, "x")
	srv := lmtest.NewServer()
	defer srv.Close()
	for _, c := range []struct {
		name  string
		sig   string
		demos []adapter.Values
		in    adapter.Values
		field string
		part  string
	}{
		{"input", "question, clip: Audio -> answer", nil, adapter.Values{"question": "?", "clip": clip}, "clip", "input_audio"},
		{"list", "question, files: list[File] -> answer", nil, adapter.Values{"question": "?", "files": []types.File{report}}, "files", "file"},
		{"history", "history: History, question, doc: Optional[Document] -> answer", nil, adapter.Values{"question": "?", "doc": nil,
			"history": types.History{Messages: []map[string]any{{"question": "before", "doc": doc, "answer": "a"}}}}, "history", "document"},
		{"demo", "question, clip: Optional[Audio] -> answer", []adapter.Values{{"question": "d", "clip": clip, "answer": "a"}},
			adapter.Values{"question": "?", "clip": nil}, "clip", "input_audio"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := parse(t, c.sig)
			_, err := adapter.Call(t.Context(), srv.Client(), s, c.demos, c.in)
			var ie *adapter.InputError
			require.ErrorAs(t, err, &ie)
			assert.Equal(t, c.field, ie.Field)
			assert.ErrorIs(t, err, types.ErrUnsupportedPart)
			assert.ErrorIs(t, err, adapter.ErrUnsupportedPart)
			assert.ErrorContains(t, err, "cfg.HTTPClient = adapter.HTTPDoer(cfg.HTTPClient)")
			assert.ErrorContains(t, err, "a content part of type "+c.part)
			if c.demos != nil {
				assert.ErrorContains(t, err, "in demo 0")
			}
			_, _, err = drainStream(adapter.Stream(t.Context(), srv.Client(), s, c.demos, c.in))
			assert.ErrorIs(t, err, types.ErrUnsupportedPart)
		})
	}
	assert.Empty(t, srv.Requests(), "nothing was sent")
}

// TestMediaTwoStep: TwoStep's "name: value" user message carries the media
// as parts, where DSPy's str() of a custom type puts them (an image too);
// through the wrapper they reach the wire, and the extraction call gets
// the main LM's text only.
func TestMediaTwoStep(t *testing.T) {
	sig := parse(t, "question, clip: Audio, photo: Image -> answer")
	clip, _, _, parts := media(t, "main")
	photo, err := types.NewImage("https://example.com/sky.png")
	require.NoError(t, err)
	in := adapter.Values{"question": "What colour?", "clip": clip, "photo": photo}
	main := lmtest.NewServer(lmtest.Text("The sky is blue."))
	defer main.Close()
	extractor := lmtest.NewServer(lmtest.Text("[[ ## answer ## ]]\nblue\n\n[[ ## completed ## ]]"))
	defer extractor.Close()
	ts := adapter.TwoStep{Extractor: extractor.Client()}

	msgs, err := ts.Format(sig, nil, in)
	require.NoError(t, err)
	user := msgs[len(msgs)-1].MultiContent
	require.Len(t, user, 4)
	assert.Equal(t, "question: What colour?\n\nclip: ", user[0].Text)
	raw, ok := adapter.RawPartJSON(user[1])
	require.True(t, ok)
	assert.Equal(t, parts[0], string(raw))
	assert.Equal(t, "\n\nphoto: ", user[2].Text)
	assert.Equal(t, "https://example.com/sky.png", user[3].ImageURL.URL)

	res, err := adapter.Call(t.Context(), wrapped(main), sig, nil, in, adapter.UseAdapter(ts))
	require.NoError(t, err)
	assert.Equal(t, "blue", res.Outputs[0]["answer"])
	assert.Equal(t, expectedContents(t, msgs), wireContents(t, main.Requests()[0].Body))
	assert.NotContains(t, string(extractor.Requests()[0].Body), "input_audio")

	_, err = adapter.Call(t.Context(), main.Client(), sig, nil, in, adapter.UseAdapter(ts))
	assert.ErrorIs(t, err, types.ErrUnsupportedPart)
}

// BenchmarkAudioCall: a Call carrying 1 MiB of audio through the HTTPDoer
// wrapper over loopback, and the same Call with the bytes as a text input
// (what go-openai alone would send), to show what the part costs.
func BenchmarkAudioCall(b *testing.B) {
	data := make([]byte, 1<<20)
	copy(data, wavBytes)
	clip, err := types.AudioFromBytes(data, "")
	require.NoError(b, err)
	srv := lmtest.NewServer()
	defer srv.Close()
	srv.Handle(func(lmtest.Request) lmtest.Reply {
		return lmtest.Text("[[ ## answer ## ]]\nok\n\n[[ ## completed ## ]]")
	})
	client := wrapped(srv)
	for _, c := range []struct {
		name string
		sig  string
		in   adapter.Values
	}{
		{"audio-part", "clip: Audio -> answer", adapter.Values{"clip": clip}},
		{"same-bytes-as-text", "clip -> answer", adapter.Values{"clip": clip.Data}},
	} {
		sig := parse(b, c.sig)
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := adapter.Call(b.Context(), client, sig, nil, c.in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestMediaListOnTheWire: a list of documents is DSPy's JSON list of
// markers, split into parts with the list's punctuation as text around
// them (reference §9.1), each part byte for byte.
func TestMediaListOnTheWire(t *testing.T) {
	sig := parse(t, "documents: list[Document], question -> answer")
	_, _, d1, p1 := media(t, "one")
	_, _, d2, p2 := media(t, "two")
	srv := lmtest.NewServer(lmtest.Text("[[ ## answer ## ]]\nblue\n\n[[ ## completed ## ]]"))
	defer srv.Close()
	_, err := adapter.Call(t.Context(), wrapped(srv), sig, nil, adapter.Values{"documents": []types.Document{d1, d2}, "question": "Sky?"})
	require.NoError(t, err)
	want := `[{"type":"text","text":"[[ ## documents ## ]]\n[\""},` + p1[2] + `,{"type":"text","text":"\", \""},` + p2[2] +
		`,{"type":"text","text":"\"]\n\n[[ ## question ## ]]\nSky?\n\nRespond with the corresponding output fields, starting with the field ` +
		"`[[ ## answer ## ]]`, and then ending with the marker for `[[ ## completed ## ]]`.\"}]"
	assert.Equal(t, want, wireContents(t, srv.Requests()[0].Body)[1])
}
