package types

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"

	openai "github.com/sashabaranov/go-openai"
)

// Image is DSPy's dspy.Image: an image given to the model by URL (http,
// https, gs) or inline as a data URI. In a user message it becomes an
// image_url content part, exactly where DSPy places it.
type Image struct {
	URL    string
	Detail openai.ImageURLDetail // "", "low", "high" or "auto"
}

// MaxImageBytes is the largest image NewImage, ImageFromBytes and
// ImageFromFile accept inline (in a data URI), and DownloadImage's default
// limit: 20 MiB of image data, what model providers accept.
const MaxImageBytes = 20 << 20

// NewImage accepts an http(s) or gs URL that names a host, or a data URI
// of an image of at most MaxImageBytes whose data is there and, when the
// URI says base64, is standard base64 (as NewAudio and NewFile check
// theirs). Local paths are refused: read them with ImageFromFile, so that
// reading the disk is always explicit.
func NewImage(src string) (Image, error) {
	s := strings.TrimSpace(src)
	if err := checkText("an image URL", s); err != nil {
		return Image{}, err
	}
	switch {
	case strings.HasPrefix(s, "data:"):
		if err := checkImageURI(s); err != nil {
			return Image{}, err
		}
		return Image{URL: s}, nil
	case strings.HasPrefix(s, "http://"), strings.HasPrefix(s, "https://"), strings.HasPrefix(s, "gs://"):
		if u, err := url.Parse(s); err != nil || u.Hostname() == "" {
			// "https://" alone, "https:///cat.png": the provider would
			// refuse it after the whole request was sent.
			return Image{}, fmt.Errorf("types: image URL %q names no host", showURL(s))
		}
		return Image{URL: s}, nil
	}
	return Image{}, fmt.Errorf("types: unrecognized image %q: give an http(s) or gs URL or a data URI; local files must be loaded with ImageFromFile", showURL(s))
}

// checkImageURI accepts data:image/<subtype>[;param…][;base64],<data>
// whose data is not empty, at most MaxImageBytes, and valid base64 when
// the header says base64.
func checkImageURI(s string) error {
	d, err := parseDataURI(s)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrNotImage, err)
	}
	switch n := d.size(); {
	case !strings.HasPrefix(d.media, "image/"):
		return fmt.Errorf("%w: a data URI of %q", ErrNotImage, clip(d.media))
	case n > MaxImageBytes:
		return fmt.Errorf("%w: %w: a data URI of %d bytes, over the %d-byte limit", ErrNotImage, ErrTooLarge, n, MaxImageBytes)
	case d.data == "":
		return fmt.Errorf("%w: a data URI with no data", ErrNotImage)
	case d.base64 && !validBase64(d.data):
		return fmt.Errorf("%w: the data URI %q is not valid base64", ErrNotImage, clip(s))
	}
	return nil
}

// imageMIME returns the media type of an image, normalized ("image/png");
// "" for anything else.
func imageMIME(s string) string {
	if m := mediaType(s); strings.HasPrefix(m, "image/") {
		return m
	}
	return ""
}

// ImageFromBytes encodes data as a data URI. An empty mime is detected
// from the bytes (http.DetectContentType); data that is not an image, or
// over MaxImageBytes, is an ErrNotImage error.
func ImageFromBytes(data []byte, mime string) (Image, error) {
	if len(data) > MaxImageBytes {
		return Image{}, fmt.Errorf("%w: %w: %d bytes, over the %d-byte limit", ErrNotImage, ErrTooLarge, len(data), MaxImageBytes)
	}
	if mime == "" {
		mime = http.DetectContentType(data)
	}
	m := imageMIME(mime)
	if m == "" {
		return Image{}, fmt.Errorf("%w: the data is %s", ErrNotImage, mime)
	}
	return Image{URL: "data:" + m + ";base64," + base64.StdEncoding.EncodeToString(data)}, nil
}

// ImageFromFile reads a local image into a data URI. Its media type comes
// from its bytes, or from its extension for formats the bytes do not give
// away (SVG, HEIC).
func ImageFromFile(path string) (Image, error) {
	data, err := readLocal("image", path, MaxImageBytes)
	if errors.Is(err, ErrTooLarge) {
		return Image{}, fmt.Errorf("%w: %w", ErrNotImage, err)
	}
	if err != nil {
		return Image{}, err
	}
	m := imageMIME(http.DetectContentType(data))
	if m == "" {
		m = imageMIME(mime.TypeByExtension(filepath.Ext(path)))
	}
	if m == "" {
		return Image{}, fmt.Errorf("%w: %s", ErrNotImage, path)
	}
	return ImageFromBytes(data, m)
}

// DownloadImage fetches an http(s) image into a data URI, so the model
// provider need not fetch it. Other schemes (file://, gs://) are refused,
// as are addresses that are not public unless allowed, bodies over the
// size limit (MaxImageBytes by default), downloads over the timeout and
// content that is not an image (by its Content-Type, else by its bytes).
// The connection is closed when the download ends.
func DownloadImage(ctx context.Context, rawURL string, opt DownloadOptions) (Image, error) {
	data, ct, err := download(ctx, rawURL, opt, MaxImageBytes)
	if err != nil {
		return Image{}, err
	}
	m := imageMIME(ct)
	if m == "" {
		m = imageMIME(http.DetectContentType(data))
	}
	if m == "" {
		return Image{}, fmt.Errorf("types: download %q: %w (Content-Type %q)", showURL(rawURL), ErrNotImage, ct)
	}
	return Image{URL: "data:" + m + ";base64," + base64.StdEncoding.EncodeToString(data)}, nil
}

// FormatParts returns the image_url part. An Image built as a struct
// literal is held to NewImage's rules: a URL NewImage refuses (a local
// path, file://, an oversized or non-image data URI) is an error, never a
// part.
func (i Image) FormatParts() ([]openai.ChatMessagePart, error) {
	if i.URL == "" {
		return nil, errors.New("types: empty Image")
	}
	if _, err := NewImage(i.URL); err != nil {
		return nil, err
	}
	return []openai.ChatMessagePart{{Type: openai.ChatMessagePartTypeImageURL, ImageURL: &openai.ChatMessageImageURL{URL: i.URL, Detail: i.Detail}}}, nil
}

// String is DSPy's repr: Image(url='…'), a data URI abbreviated.
func (i Image) String() string {
	if strings.HasPrefix(i.URL, "data:") {
		if j := strings.Index(i.URL, "base64,"); j >= 0 {
			return fmt.Sprintf("Image(url=%s<IMAGE_BASE_64_ENCODED(%d)>)", i.URL[:j+len("base64,")], len(i.URL)-j-len("base64,"))
		}
	}
	return "Image(url='" + i.URL + "')"
}

// MarshalJSON writes {"url": …} (and "detail" when set).
func (i Image) MarshalJSON() ([]byte, error) {
	m := map[string]string{"url": i.URL}
	if i.Detail != "" {
		m["detail"] = string(i.Detail)
	}
	return json.Marshal(m)
}

// UnmarshalJSON accepts a URL or data URI string, or {"url": …}.
func (i *Image) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		img, err := NewImage(s)
		*i = img
		return err
	}
	var m struct {
		URL    string                `json:"url"`
		Detail openai.ImageURLDetail `json:"detail"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return fmt.Errorf("types: Image: %w", err)
	}
	img, err := NewImage(m.URL)
	img.Detail = m.Detail
	*i = img
	return err
}

// ParseField reads an image URL or data URI from a field's text.
func (i *Image) ParseField(raw string) error {
	img, err := NewImage(raw)
	*i = img
	return err
}
