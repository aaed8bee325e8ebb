package types

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"syscall"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// Image is DSPy's dspy.Image: an image given to the model by URL (http,
// https, gs) or inline as a data URI. In a user message it becomes an
// image_url content part, exactly where DSPy places it.
type Image struct {
	URL    string
	Detail openai.ImageURLDetail // "", "low", "high" or "auto"
}

// NewImage accepts an http(s) or gs URL or a data URI. Local paths are
// refused: read them with ImageFromFile, so that reading the disk is
// always explicit.
func NewImage(src string) (Image, error) {
	s := strings.TrimSpace(src)
	switch {
	case strings.HasPrefix(s, "data:image/"), strings.HasPrefix(s, "http://"), strings.HasPrefix(s, "https://"), strings.HasPrefix(s, "gs://"):
		return Image{URL: s}, nil
	}
	return Image{}, fmt.Errorf("types: unrecognized image %q: give an http(s) or gs URL or a data URI; local files must be loaded with ImageFromFile", clip(s))
}

// ImageFromBytes encodes data as a data URI; an empty mime is detected from
// the bytes.
func ImageFromBytes(data []byte, mime string) Image {
	if mime == "" {
		mime = http.DetectContentType(data)
	}
	return Image{URL: "data:" + mime + ";base64," + base64.StdEncoding.EncodeToString(data)}
}

// ImageFromFile reads a local image into a data URI.
func ImageFromFile(path string) (Image, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Image{}, fmt.Errorf("types: image: %w", err)
	}
	return ImageFromBytes(data, ""), nil
}

// DownloadOptions bound DownloadImage.
type DownloadOptions struct {
	MaxBytes     int64         // default 20 MiB
	Timeout      time.Duration // default 30 s
	AllowPrivate bool          // allow loopback, private and link-local addresses
	Client       *http.Client  // default: a client that enforces the above
}

// ErrForbiddenAddress is returned for a download that would reach a
// private, loopback or link-local address without AllowPrivate.
var ErrForbiddenAddress = errors.New("types: download to a private address refused")

// DownloadImage fetches an http(s) image into a data URI, so the model
// provider need not fetch it. Other schemes (file://, gs://) are refused,
// as are private addresses unless allowed, bodies over the size limit and
// downloads over the timeout.
func DownloadImage(ctx context.Context, rawURL string, opt DownloadOptions) (Image, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return Image{}, fmt.Errorf("types: download %q: only http and https URLs can be downloaded", clip(rawURL))
	}
	if opt.MaxBytes <= 0 {
		opt.MaxBytes = 20 << 20
	}
	if opt.Timeout <= 0 {
		opt.Timeout = 30 * time.Second
	}
	client := opt.Client
	if client == nil {
		dialer := &net.Dialer{Timeout: opt.Timeout}
		if !opt.AllowPrivate {
			dialer.Control = func(_, address string, _ syscall.RawConn) error {
				host, _, err := net.SplitHostPort(address)
				if err != nil {
					return err
				}
				if ip := net.ParseIP(host); ip == nil || ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsUnspecified() || ip.IsLinkLocalMulticast() {
					return fmt.Errorf("%w: %s", ErrForbiddenAddress, host)
				}
				return nil
			}
		}
		client = &http.Client{Transport: &http.Transport{DialContext: dialer.DialContext}}
	}
	ctx, cancel := context.WithTimeout(ctx, opt.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return Image{}, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return Image{}, fmt.Errorf("types: download %q: %w", clip(rawURL), err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return Image{}, fmt.Errorf("types: download %q: HTTP %d", clip(rawURL), resp.StatusCode)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, opt.MaxBytes+1))
	if err != nil {
		return Image{}, fmt.Errorf("types: download %q: %w", clip(rawURL), err)
	}
	if int64(len(data)) > opt.MaxBytes {
		return Image{}, fmt.Errorf("types: download %q: larger than %d bytes", clip(rawURL), opt.MaxBytes)
	}
	mime := resp.Header.Get("Content-Type")
	if i := strings.IndexByte(mime, ';'); i >= 0 {
		mime = mime[:i]
	}
	if !strings.HasPrefix(mime, "image/") {
		mime = ""
	}
	return ImageFromBytes(data, mime), nil
}

// FormatParts returns the image_url part.
func (i Image) FormatParts() ([]openai.ChatMessagePart, error) {
	if i.URL == "" {
		return nil, errors.New("types: empty Image")
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

// Audio is DSPy's dspy.Audio: base64 data and its format ("wav", "mp3").
// go-openai's message parts cannot carry input_audio, so formatting an
// Audio value fails with ErrUnsupportedPart.
type Audio struct {
	Data   string `json:"data"`
	Format string `json:"audio_format"`
}

// File is DSPy's dspy.File: a data URI, an uploaded file id, a filename.
// go-openai's message parts cannot carry files, so formatting a File value
// fails with ErrUnsupportedPart.
type File struct {
	FileData string `json:"file_data,omitempty"`
	FileID   string `json:"file_id,omitempty"`
	Filename string `json:"filename,omitempty"`
}

// ErrUnsupportedPart: the client library cannot send this kind of content
// part (go-openai sends text and image_url parts only).
var ErrUnsupportedPart = errors.New("types: go-openai cannot send this content part (only text and image_url)")

// FormatParts fails: see ErrUnsupportedPart.
func (Audio) FormatParts() ([]openai.ChatMessagePart, error) {
	return nil, fmt.Errorf("%w: input_audio", ErrUnsupportedPart)
}

// FormatParts fails: see ErrUnsupportedPart.
func (File) FormatParts() ([]openai.ChatMessagePart, error) {
	return nil, fmt.Errorf("%w: file", ErrUnsupportedPart)
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:77] + "..."
	}
	return s
}

// Document is DSPy's experimental dspy.experimental.Document: text (or a
// PDF) the model may cite. go-openai's message parts cannot carry
// documents, so formatting a Document value fails with ErrUnsupportedPart.
type Document struct {
	Data      string `json:"data"`
	Title     string `json:"title,omitempty"`
	MediaType string `json:"media_type,omitempty"` // "text/plain" (default) or "application/pdf"
	Context   string `json:"context,omitempty"`
}

// TypeDescription is DSPy's Document.description().
func (Document) TypeDescription() string {
	return "A document containing text content that can be referenced and cited. Include the full text content and optionally a title for proper referencing."
}

// FormatParts fails: see ErrUnsupportedPart.
func (Document) FormatParts() ([]openai.ChatMessagePart, error) {
	return nil, fmt.Errorf("%w: document", ErrUnsupportedPart)
}
