package types

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"

	openai "github.com/sashabaranov/go-openai"

	adapter "github.com/sigwire/adapter"
)

// Audio is DSPy's dspy.Audio: base64 audio data and its format ("wav",
// "mp3"). In a user message it becomes DSPy's input_audio content part,
// {"type": "input_audio", "input_audio": {"data": …, "format": …}}, where
// DSPy places it. go-openai cannot express that part: it is sent through a
// client whose HTTP client is wrapped with adapter.HTTPDoer, and refused
// (ErrUnsupportedPart) through any other.
type Audio struct {
	Data   string `json:"data"`         // base64, without a data: prefix
	Format string `json:"audio_format"` // "wav", "mp3", …
}

// NewAudio accepts a data URI of audio, data:audio/<format>;base64,<data>,
// of at most MaxMediaBytes. The format is the media subtype without an
// "x-" prefix, as DSPy reads it; audio/mpeg (and audio/mp3) is "mp3", the
// name providers accept, where DSPy keeps "mpeg". Local paths are refused:
// read them with AudioFromFile, so that reading the disk is always
// explicit.
func NewAudio(src string) (Audio, error) {
	s := strings.TrimSpace(src)
	if !strings.HasPrefix(s, "data:") {
		return Audio{}, fmt.Errorf("types: unrecognized audio %q: give a data URI (data:audio/wav;base64,…); local files must be loaded with AudioFromFile, URLs with DownloadAudio", showURL(s))
	}
	d, err := parseDataURI(s)
	if err != nil {
		return Audio{}, fmt.Errorf("%w: %w", ErrNotAudio, err)
	}
	f := audioFormat(d.media)
	if f == "" {
		return Audio{}, fmt.Errorf("%w: a data URI of %q", ErrNotAudio, clip(d.media))
	}
	if !d.base64 {
		return Audio{}, fmt.Errorf("types: audio data URI %q is not base64", clip(s))
	}
	a := Audio{Data: d.data, Format: f}
	return a, a.check()
}

// audioFormat names the format of an audio media type: the subtype without
// "x-" ("audio/x-wav" is "wav"), with the names providers accept for WAV
// and MP3; "" for a type that is not audio. application/ogg, which
// http.DetectContentType reports for Ogg files, is "ogg".
func audioFormat(media string) string {
	m := mediaType(media)
	if m == "application/ogg" {
		return "ogg"
	}
	sub, ok := strings.CutPrefix(m, "audio/")
	if !ok {
		return ""
	}
	sub = strings.TrimPrefix(sub, "x-")
	switch sub {
	case "wave", "vnd.wave":
		return "wav"
	case "mpeg", "mp3", "mpeg3":
		return "mp3"
	}
	if !isToken(sub) {
		return ""
	}
	return sub
}

// audioExt maps file extensions to formats, for files whose bytes
// http.DetectContentType does not recognize.
var audioExt = map[string]string{
	".wav": "wav", ".mp3": "mp3", ".ogg": "ogg", ".oga": "ogg", ".opus": "opus", ".flac": "flac",
	".m4a": "m4a", ".aac": "aac", ".aif": "aiff", ".aiff": "aiff", ".webm": "webm",
}

// AudioFromBytes encodes audio data. format is a format name ("wav",
// "mp3") or an audio media type ("audio/mpeg"); "" detects it from the
// bytes (WAV, MP3, Ogg, AIFF), and data it cannot recognize is an
// ErrNotAudio error that asks for the format. Data over MaxMediaBytes is
// an ErrTooLarge error.
func AudioFromBytes(data []byte, format string) (Audio, error) {
	if len(data) > MaxMediaBytes {
		return Audio{}, fmt.Errorf("%w: %d bytes of audio, over the %d-byte limit", ErrTooLarge, len(data), MaxMediaBytes)
	}
	f := format
	switch {
	case f == "":
		if f = audioFormat(http.DetectContentType(data)); f == "" {
			return Audio{}, fmt.Errorf("%w: the data is %s; give its format", ErrNotAudio, http.DetectContentType(data))
		}
	case strings.Contains(f, "/"):
		if f = audioFormat(format); f == "" {
			return Audio{}, fmt.Errorf("%w: %q", ErrNotAudio, clip(format))
		}
	default:
		f = strings.TrimPrefix(strings.ToLower(strings.TrimSpace(f)), "x-")
	}
	a := Audio{Data: base64.StdEncoding.EncodeToString(data), Format: f}
	return a, a.check()
}

// AudioFromFile reads a local audio file. Its format comes from its bytes,
// or from its extension (.wav, .mp3, .ogg, .flac, .m4a, …).
func AudioFromFile(path string) (Audio, error) {
	data, err := readLocal("audio", path, MaxMediaBytes)
	if err != nil {
		return Audio{}, err
	}
	f := audioFormat(http.DetectContentType(data))
	if f == "" {
		f = audioExt[strings.ToLower(filepath.Ext(path))]
	}
	if f == "" {
		return Audio{}, fmt.Errorf("%w: %s", ErrNotAudio, path)
	}
	return AudioFromBytes(data, f)
}

// DownloadAudio fetches http(s) audio, as DSPy's Audio.from_url does:
// providers take audio inline only. It obeys DownloadImage's rules (no
// other schemes, no address that is not public unless allowed, the size
// limit, MaxMediaBytes by default, the timeout) and refuses content that
// is not audio, by its Content-Type, else by its bytes.
func DownloadAudio(ctx context.Context, rawURL string, opt DownloadOptions) (Audio, error) {
	data, ct, err := download(ctx, rawURL, opt, MaxMediaBytes)
	if err != nil {
		return Audio{}, err
	}
	f := audioFormat(ct)
	if f == "" {
		f = audioFormat(http.DetectContentType(data))
	}
	if f == "" {
		return Audio{}, fmt.Errorf("types: download %q: %w (Content-Type %q)", showURL(rawURL), ErrNotAudio, ct)
	}
	a := Audio{Data: base64.StdEncoding.EncodeToString(data), Format: f}
	return a, a.check()
}

// check holds an Audio, however built, to the constructors' rules.
func (a Audio) check() error {
	switch {
	case a.Data == "":
		return errors.New("types: empty Audio")
	case !isToken(a.Format) || len(a.Format) > 32:
		return fmt.Errorf("types: audio format %q is not a format name (wav, mp3, …)", clip(a.Format))
	case base64.StdEncoding.DecodedLen(len(a.Data)) > MaxMediaBytes:
		return fmt.Errorf("%w: %d bytes of audio, over the %d-byte limit", ErrTooLarge, base64.StdEncoding.DecodedLen(len(a.Data)), MaxMediaBytes)
	case !validBase64(a.Data):
		return errors.New("types: audio data is not base64")
	}
	return nil
}

// FormatParts returns DSPy's input_audio part. An Audio built as a struct
// literal is held to the constructors' rules (base64 data within
// MaxMediaBytes, a format name).
func (a Audio) FormatParts() ([]openai.ChatMessagePart, error) {
	if err := a.check(); err != nil {
		return nil, err
	}
	var part struct {
		Type       string `json:"type"`
		InputAudio struct {
			Data   string `json:"data"`
			Format string `json:"format"`
		} `json:"input_audio"`
	}
	part.Type = "input_audio"
	part.InputAudio.Data, part.InputAudio.Format = a.Data, a.Format
	return rawPart(part)
}

// rawPart marshals a part go-openai cannot express, for the HTTPDoer
// wrapper to send (adapter.RawPart).
func rawPart(part any) ([]openai.ChatMessagePart, error) {
	b, err := json.Marshal(part)
	if err != nil {
		return nil, err
	}
	p, err := adapter.RawPart(b)
	if err != nil {
		return nil, err
	}
	return []openai.ChatMessagePart{p}, nil
}

// String is DSPy's repr: Audio(data=<AUDIO_BASE_64_ENCODED(n)>,
// audio_format='wav').
func (a Audio) String() string {
	return fmt.Sprintf("Audio(data=<AUDIO_BASE_64_ENCODED(%d)>, audio_format='%s')", len(a.Data), a.Format)
}

// UnmarshalJSON accepts {"data": …, "audio_format": …} (DSPy's fields) or
// a data URI string, held to the constructors' rules.
func (a *Audio) UnmarshalJSON(b []byte) error { return unmarshalMedia(a, b, "Audio", NewAudio) }

// ParseField reads audio from a field's text: a data URI, or DSPy's
// {"data": …, "audio_format": …}.
func (a *Audio) ParseField(raw string) error { return parseMedia(a, raw, "Audio", NewAudio) }

// fields decodes a JSON object into a's fields.
func (a *Audio) fields(b []byte) error {
	type plain Audio
	return json.Unmarshal(b, (*plain)(a))
}
