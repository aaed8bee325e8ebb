package types_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/types"
)

// onePart returns the JSON of the single raw part v formats as.
func onePart(t *testing.T, v adapter.Formatter) string {
	t.Helper()
	parts, err := v.FormatParts()
	require.NoError(t, err)
	require.Len(t, parts, 1)
	raw, ok := adapter.RawPartJSON(parts[0])
	require.True(t, ok, "a raw part")
	return string(raw)
}

func TestAudio(t *testing.T) {
	for src, want := range map[string]types.Audio{
		"data:audio/wav;base64,UklGRg==":             {Data: "UklGRg==", Format: "wav"},
		"data:audio/x-wav;base64,UklGRg==":           {Data: "UklGRg==", Format: "wav"},
		" data:audio/mpeg;base64,SUQz ":              {Data: "SUQz", Format: "mp3"}, // DSPy: "mpeg"
		"data:audio/flac;rate=44100;base64,ZkxhQw==": {Data: "ZkxhQw==", Format: "flac"},
		"data:AUDIO/OGG;base64,T2dnUw==":             {Data: "T2dnUw==", Format: "ogg"},
	} {
		got, err := types.NewAudio(src)
		require.NoError(t, err, src)
		assert.Equal(t, want, got, src)
	}
	for _, bad := range []string{
		"clip.wav", "/tmp/clip.wav", "https://example.com/a.wav", "data:image/png;base64,AAAA", "data:audio/wav,UklGRg==",
		"data:audio/wav;base64,Ukl$Rg==", "data:audio/wav;base64,UklGR", "data:audio/wav;base64", "data:audio/;base64,AAAA", "data:audio/wav;base64,",
	} {
		_, err := types.NewAudio(bad)
		assert.Error(t, err, bad)
	}

	a, err := types.AudioFromBytes(wavBytes, "")
	require.NoError(t, err)
	assert.Equal(t, types.Audio{Data: base64.StdEncoding.EncodeToString(wavBytes), Format: "wav"}, a)
	a, err = types.AudioFromBytes([]byte("\x00\x01raw"), "audio/mpeg")
	require.NoError(t, err)
	assert.Equal(t, "mp3", a.Format)
	a, err = types.AudioFromBytes([]byte("\x00\x01raw"), "FLAC")
	require.NoError(t, err)
	assert.Equal(t, "flac", a.Format)
	_, err = types.AudioFromBytes([]byte("hello, world"), "")
	assert.ErrorIs(t, err, types.ErrNotAudio)
	assert.ErrorContains(t, err, "give its format")
	_, err = types.AudioFromBytes([]byte("x"), "text/plain")
	assert.ErrorIs(t, err, types.ErrNotAudio)
	_, err = types.AudioFromBytes([]byte("x"), `wav","format":"mp3`)
	assert.Error(t, err, "a format that is not a name")
	_, err = types.AudioFromBytes(make([]byte, types.MaxMediaBytes+1), "wav")
	assert.ErrorIs(t, err, types.ErrTooLarge)

	dir := t.TempDir()
	wav := filepath.Join(dir, "voice.bin")
	require.NoError(t, os.WriteFile(wav, wavBytes, 0o600))
	a, err = types.AudioFromFile(wav)
	require.NoError(t, err)
	assert.Equal(t, "wav", a.Format, "by its bytes")
	m4a := filepath.Join(dir, "note.M4A")
	require.NoError(t, os.WriteFile(m4a, []byte("\x00\x00\x00\x20ftypM4A "), 0o600))
	a, err = types.AudioFromFile(m4a)
	require.NoError(t, err)
	assert.Equal(t, "m4a", a.Format, "by its extension")
	txt := filepath.Join(dir, "a.txt")
	require.NoError(t, os.WriteFile(txt, []byte("hello"), 0o600))
	_, err = types.AudioFromFile(txt)
	assert.ErrorIs(t, err, types.ErrNotAudio)
	_, err = types.AudioFromFile(dir)
	assert.ErrorContains(t, err, "not a regular file")

	assert.Equal(t, `{"type":"input_audio","input_audio":{"data":"UklGRg==","format":"wav"}}`, onePart(t, types.Audio{Data: "UklGRg==", Format: "wav"}))
	assert.Equal(t, "Audio(data=<AUDIO_BASE_64_ENCODED(8)>, audio_format='wav')", types.Audio{Data: "UklGRg==", Format: "wav"}.String())
}

// TestMediaLiteralsChecked: a value built as a struct literal is held to
// its constructors' rules when it becomes a part, so that no malformed
// part reaches the provider.
func TestMediaLiteralsChecked(t *testing.T) {
	for _, v := range []adapter.Formatter{
		types.Audio{}, types.Audio{Data: "UklGRg=="}, types.Audio{Data: "not base64!", Format: "wav"},
		types.Audio{Data: "UklGRg==", Format: "w a v"}, types.Audio{Data: strings.Repeat("A", 4*(types.MaxMediaBytes/3+1)), Format: "wav"},
		types.File{}, types.File{FileData: "/etc/passwd"}, types.File{FileData: "data:application/pdf,%25PDF"},
		types.File{FileData: "data:;base64,AAAA"}, types.File{FileData: "data:application/pdf;base64,AA=A"}, types.File{FileID: "\xff"},
		types.Document{}, types.Document{Data: "x", MediaType: "text/html"}, types.Document{Data: "\xff\xfe"},
		types.Document{Data: "not base64", MediaType: types.DocumentPDF}, types.Document{Data: "x", Title: "\xff"},
	} {
		_, err := v.FormatParts()
		assert.Error(t, err, "%#v", v)
	}
	sig := parse(t, "clip: Audio -> transcript")
	_, err := adapter.Chat{}.Format(sig, nil, adapter.Values{"clip": types.Audio{Data: "UklGRg==", Format: "w a v"}})
	assert.ErrorContains(t, err, `"clip"`)
}

func TestFile(t *testing.T) {
	// DSPy's parts (reference §9.4, review E5): only the fields that are set.
	assert.Equal(t, `{"type":"file","file":{"file_id":"file-123"}}`, onePart(t, types.FileFromID("file-123", "")))
	assert.Equal(t, `{"type":"file","file":{"file_data":"data:text/plain;base64,aGk=","file_id":"file-1","filename":"a.txt"}}`,
		onePart(t, types.File{FileData: "data:text/plain;base64,aGk=", FileID: "file-1", Filename: "a.txt"}))

	f, err := types.FileFromBytes(pdfBytes, "", "")
	require.NoError(t, err)
	assert.Equal(t, types.File{FileData: "data:application/pdf;base64," + base64.StdEncoding.EncodeToString(pdfBytes)}, f, "a PDF by its bytes")
	f, err = types.FileFromBytes([]byte("a,b\n1,2\n"), "t.csv", "")
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(f.FileData, "data:text/csv;base64,"), f.FileData)
	f, err = types.FileFromBytes([]byte{0, 1, 2, 3}, "", "")
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(f.FileData, "data:application/octet-stream;base64,"), f.FileData)
	f, err = types.FileFromBytes([]byte("x"), "x.bin", "Application/Pdf; q=1")
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(f.FileData, "data:application/pdf;base64,"), f.FileData)
	_, err = types.FileFromBytes([]byte("x"), "", "not a type")
	assert.Error(t, err)
	_, err = types.FileFromBytes(make([]byte, types.MaxMediaBytes+1), "", "")
	assert.ErrorIs(t, err, types.ErrTooLarge)

	path := filepath.Join(t.TempDir(), "research.pdf")
	require.NoError(t, os.WriteFile(path, pdfBytes, 0o600))
	f, err = types.FileFromFile(path)
	require.NoError(t, err)
	assert.Equal(t, "research.pdf", f.Filename)
	assert.Equal(t, "File(file_data=<DATA_URI(application/pdf, 64 chars)>, filename='research.pdf')", f.String())

	_, err = types.NewFile("research.pdf")
	assert.ErrorContains(t, err, "FileFromFile")
	f, err = types.NewFile("data:application/pdf;base64,JVBERg==")
	require.NoError(t, err)
	assert.Equal(t, "data:application/pdf;base64,JVBERg==", f.FileData)
}

func TestDocument(t *testing.T) {
	// DSPy 3.3.1's part: title and context only when set.
	assert.Equal(t, `{"type":"document","source":{"type":"text","media_type":"text/plain","data":"The sky is blue."},"citations":{"enabled":true}}`,
		onePart(t, types.Document{Data: "The sky is blue."}))
	assert.Equal(t, `{"type":"document","source":{"type":"text","media_type":"text/plain","data":"a \u003cb\u003e"},"citations":{"enabled":true},"title":"T","context":"C"}`,
		onePart(t, types.Document{Data: "a <b>", Title: "T", Context: "C", MediaType: types.DocumentText}))
	// A PDF is sent as base64, as the provider requires.
	d, err := types.DocumentFromBytes(pdfBytes, "")
	require.NoError(t, err)
	assert.Equal(t, types.DocumentPDF, d.MediaType)
	assert.Equal(t, `{"type":"document","source":{"type":"base64","media_type":"application/pdf","data":"`+base64.StdEncoding.EncodeToString(pdfBytes)+`"},"citations":{"enabled":true}}`, onePart(t, d))
	d, err = types.DocumentFromBytes([]byte("plain text"), "")
	require.NoError(t, err)
	assert.Equal(t, types.Document{Data: "plain text", MediaType: types.DocumentText}, d)
	_, err = types.DocumentFromBytes([]byte("\xff\xfe"), "")
	assert.ErrorContains(t, err, "UTF-8")
	_, err = types.DocumentFromBytes([]byte("x"), "text/html")
	assert.Error(t, err)
	path := filepath.Join(t.TempDir(), "facts.txt")
	require.NoError(t, os.WriteFile(path, []byte("Water boils at 100°C."), 0o600))
	d, err = types.DocumentFromFile(path)
	require.NoError(t, err)
	assert.Equal(t, "Water boils at 100°C.", d.Data)
	assert.Equal(t, "Document(22 chars)", d.String())
	d.Title = "Physics"
	assert.Equal(t, "Document('Physics': 22 chars)", d.String())
}

// TestMediaJSON: the values read back what DSPy's saved programs hold
// (DSPy's field names, None as null), and are held to the constructors'
// rules.
func TestMediaJSON(t *testing.T) {
	var v struct {
		Clip   types.Audio    `json:"clip"`
		Report types.File     `json:"report"`
		Doc    types.Document `json:"doc"`
		Gone   types.Audio    `json:"gone"`
	}
	require.NoError(t, json.Unmarshal([]byte(`{"clip": {"data": "UklGRg==", "audio_format": "wav"},
		"report": {"file_data": null, "file_id": "file-9", "filename": null},
		"doc": {"data": "text", "title": null, "media_type": "text/plain", "context": null}, "gone": null}`), &v))
	assert.Equal(t, types.Audio{Data: "UklGRg==", Format: "wav"}, v.Clip)
	assert.Equal(t, types.File{FileID: "file-9"}, v.Report)
	assert.Equal(t, types.Document{Data: "text", MediaType: "text/plain"}, v.Doc)
	assert.Equal(t, types.Audio{}, v.Gone)
	b, err := json.Marshal(v.Clip)
	require.NoError(t, err)
	assert.JSONEq(t, `{"data": "UklGRg==", "audio_format": "wav"}`, string(b))

	var a types.Audio
	assert.Error(t, json.Unmarshal([]byte(`{"data": "!!", "audio_format": "wav"}`), &a))
	require.NoError(t, json.Unmarshal([]byte(`"data:audio/wav;base64,UklGRg=="`), &a))
	var f types.File
	assert.Error(t, json.Unmarshal([]byte(`"/etc/passwd"`), &f), "a path is never read")
	assert.Error(t, json.Unmarshal([]byte(`{}`), &f))
}

// TestMediaAsOutputs: as outputs they parse as DSPy reads them (a data
// URI, DSPy's JSON object, a document's text), a File never from a path.
func TestMediaAsOutputs(t *testing.T) {
	sig := parse(t, "q -> clip: Audio, report: File, doc: Document")
	vals, err := adapter.Chat{}.Parse(sig, "[[ ## clip ## ]]\ndata:audio/wav;base64,UklGRg==\n\n[[ ## report ## ]]\n{\"file_id\": \"file-1\"}\n\n[[ ## doc ## ]]\nThe sky is blue.\n\n[[ ## completed ## ]]")
	require.NoError(t, err)
	assert.Equal(t, types.Audio{Data: "UklGRg==", Format: "wav"}, vals["clip"])
	assert.Equal(t, types.File{FileID: "file-1"}, vals["report"])
	assert.Equal(t, types.Document{Data: "The sky is blue."}, vals["doc"])

	_, err = adapter.Chat{}.Parse(sig, "[[ ## clip ## ]]\ndata:audio/wav;base64,UklGRg==\n\n[[ ## report ## ]]\n/etc/passwd\n\n[[ ## doc ## ]]\nx\n\n[[ ## completed ## ]]")
	var pe *adapter.ParseError
	require.ErrorAs(t, err, &pe)
	assert.ErrorContains(t, err, "report")

	vals, err = adapter.JSON{}.Parse(sig, `{"clip": {"data": "UklGRg==", "audio_format": "mp3"}, "report": {"file_data": "data:text/plain;base64,aGk="}, "doc": {"data": "d", "title": "T"}}`)
	require.NoError(t, err)
	assert.Equal(t, types.Audio{Data: "UklGRg==", Format: "mp3"}, vals["clip"])
	assert.Equal(t, types.File{FileData: "data:text/plain;base64,aGk="}, vals["report"])
	assert.Equal(t, types.Document{Data: "d", Title: "T"}, vals["doc"])
}

// TestDownloadMedia: audio and files download under DownloadImage's rules:
// the address check, the size limit, the content check (audio).
func TestDownloadMedia(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/voice.mp3":
			w.Header().Set("Content-Type", "audio/mpeg")
			_, _ = w.Write([]byte("ID3\x03\x00"))
		case "/voice":
			w.Header().Set("Content-Type", "application/octet-stream")
			_, _ = w.Write(wavBytes)
		case "/page":
			w.Header().Set("Content-Type", "text/html")
			_, _ = w.Write([]byte("<html></html>"))
		case "/docs/report.pdf":
			_, _ = w.Write(pdfBytes)
		case "/big":
			_, _ = w.Write(make([]byte, 4096))
		}
	}))
	defer srv.Close()
	ctx := context.Background()
	open := types.DownloadOptions{AllowPrivate: true}

	a, err := types.DownloadAudio(ctx, srv.URL+"/voice.mp3", open)
	require.NoError(t, err)
	assert.Equal(t, types.Audio{Data: base64.StdEncoding.EncodeToString([]byte("ID3\x03\x00")), Format: "mp3"}, a)
	a, err = types.DownloadAudio(ctx, srv.URL+"/voice", open)
	require.NoError(t, err)
	assert.Equal(t, "wav", a.Format, "by its bytes")
	_, err = types.DownloadAudio(ctx, srv.URL+"/page", open)
	assert.ErrorIs(t, err, types.ErrNotAudio)

	f, err := types.DownloadFile(ctx, srv.URL+"/docs/report.pdf?x=1", open)
	require.NoError(t, err)
	assert.Equal(t, types.File{FileData: "data:application/pdf;base64," + base64.StdEncoding.EncodeToString(pdfBytes), Filename: "report.pdf"}, f)
	_, err = types.DownloadFile(ctx, srv.URL+"/big", types.DownloadOptions{AllowPrivate: true, MaxBytes: 1024})
	assert.ErrorContains(t, err, "larger than 1024 bytes")

	// The address check: loopback (and every other special range) is
	// refused unless allowed, and a client of one's own needs AllowPrivate.
	_, err = types.DownloadAudio(ctx, srv.URL+"/voice.mp3", types.DownloadOptions{Timeout: 2 * time.Second})
	assert.ErrorIs(t, err, types.ErrForbiddenAddress)
	_, err = types.DownloadFile(ctx, "http://169.254.169.254/latest/meta-data/", types.DownloadOptions{Timeout: 2 * time.Second})
	assert.ErrorIs(t, err, types.ErrForbiddenAddress)
	_, err = types.DownloadFile(ctx, srv.URL+"/docs/report.pdf", types.DownloadOptions{Client: http.DefaultClient})
	assert.ErrorIs(t, err, types.ErrUncheckedClient)
	_, err = types.DownloadAudio(ctx, "file:///etc/passwd", open)
	assert.ErrorContains(t, err, "only http and https")
}

// FuzzMedia: whatever text the media constructors and parsers are given
// (a data URI, DSPy's JSON, a field's text), a value they accept formats
// as a well-formed part that carries exactly what was given; and a
// citation object read from the wire is kept, never a panic.
func FuzzMedia(f *testing.F) {
	for _, s := range []string{
		"data:audio/wav;base64,UklGRg==", "data:audio/x-mpeg;codecs=1;base64,SUQz", "data:audio/wav;base64,Ukl=Rg==", "data:audio/;base64,",
		"data:application/pdf;base64,JVBERg==", "data:text/plain,hi", "data:;base64,AAAA", "data:image/png;base64,iVBORw0KGgo=",
		`{"data": "UklGRg==", "audio_format": "wav"}`, `{"file_id": "file-1", "filename": "a.pdf"}`, `{"data": "d", "media_type": "application/pdf"}`,
		`{"type":"char_location","cited_text":"x","document_index":0,"start_char_index":0,"end_char_index":1}`,
		`{"type":"url_citation","url_citation":{"url":"https://e.org","title":"E","start_index":0,"end_index":2}}`,
		`{"type":"url_citation","url_citation":null}`, "data:audio/wav;base64,\xff", "\x00",
		`{"file_id": "f", "filename": "../x"}`, "https://", "https://example.com/a.png", "gs://b/a.png", "data:image/png;base64,!!!!", "data:image/svg+xml,%3Csvg%2F%3E",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		part := func(v adapter.Formatter) map[string]any {
			parts, err := v.FormatParts()
			if err != nil {
				t.Fatalf("%q: accepted, but its part fails: %v", s, err)
			}
			raw, ok := adapter.RawPartJSON(parts[0])
			if !ok || len(parts) != 1 {
				t.Fatalf("%q: not one raw part", s)
			}
			var m map[string]any
			if err := json.Unmarshal(raw, &m); err != nil {
				t.Fatalf("%q: part %s: %v", s, raw, err)
			}
			return m
		}
		if a, err := types.NewAudio(s); err == nil {
			m := part(a)["input_audio"].(map[string]any)
			if m["data"] != a.Data || m["format"] != a.Format || !strings.HasSuffix(strings.TrimSpace(s), ","+a.Data) {
				t.Fatalf("%q: audio part %v", s, m)
			}
		}
		if img, err := types.NewImage(s); err == nil {
			// An accepted image names a host, or carries data that
			// decodes as the URI says.
			u := strings.TrimSpace(s)
			parts, err := img.FormatParts()
			if err != nil || len(parts) != 1 || parts[0].ImageURL == nil || parts[0].ImageURL.URL != u {
				t.Fatalf("%q: image part %v, %v", s, parts, err)
			}
			if rest, ok := strings.CutPrefix(u, "data:"); ok {
				header, data, _ := strings.Cut(rest, ",")
				if data == "" {
					t.Fatalf("%q: an image with no data", s)
				}
				if strings.HasSuffix(header, ";base64") {
					if _, err := base64.StdEncoding.DecodeString(data); err != nil {
						t.Fatalf("%q: image data is not base64: %v", s, err)
					}
				}
			} else if pu, err := url.Parse(u); err != nil || pu.Hostname() == "" {
				t.Fatalf("%q: an image URL without a host", s)
			}
		}
		if fl, err := types.NewFile(s); err == nil {
			if m := part(fl)["file"].(map[string]any); m["file_data"] != strings.TrimSpace(s) {
				t.Fatalf("%q: file part %v", s, m)
			}
		}
		var a types.Audio
		if a.ParseField(s) == nil {
			part(a)
		}
		var fl types.File
		if fl.ParseField(s) == nil {
			part(fl)
			if n := fl.Filename; n == "." || n == ".." || strings.ContainsAny(n, "/\\\n\r\x00\u2028\u2029\u202e") {
				t.Fatalf("%q: read the unsafe file name %q", s, n)
			}
		}
		var d types.Document
		if d.ParseField(s) == nil {
			if src := part(d)["source"].(map[string]any); src["data"] != d.Data {
				t.Fatalf("%q: document part %v", s, src)
			}
		}
		if strings.HasPrefix(s, "{") && json.Valid([]byte(s)) {
			raw := json.RawMessage(s)
			v, ok := types.Citations{}.WireValue(openai.ChatCompletionChoice{}, adapter.ChoiceExtras{Citations: []json.RawMessage{raw}, Annotations: []json.RawMessage{raw}})
			if !ok {
				t.Fatalf("%q: a citation object was dropped", s)
			}
			if c := v.(types.Citations).Citations; string(c[0].Raw) != s {
				t.Fatalf("%q: raw %s", s, c[0].Raw)
			}
		}
	})
}
