package types

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"unicode/utf8"

	openai "github.com/sashabaranov/go-openai"
)

// Document is DSPy's experimental dspy.experimental.Document: text (or a
// PDF) that the model may cite. In a user message it becomes DSPy's
// document content part (Anthropic's document block, citations enabled):
//
//	{"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": …},
//	 "citations": {"enabled": true}, "title": …, "context": …}
//
// with title and context when set. A PDF's source is {"type": "base64",
// "media_type": "application/pdf", "data": <base64>}, as the provider
// requires (DSPy 3.3.1 labels it "text", which the provider refuses).
// go-openai cannot express the part: it is sent through a client whose
// HTTP client is wrapped with adapter.HTTPDoer, and refused
// (ErrUnsupportedPart) through any other. The citations a provider returns
// for it fill a Citations output.
type Document struct {
	Data      string `json:"data"`                 // the text; base64 for a PDF
	Title     string `json:"title,omitempty"`      // cited as document_title
	MediaType string `json:"media_type,omitempty"` // "text/plain" (the default) or "application/pdf"
	Context   string `json:"context,omitempty"`    // about the document, not cited
}

// The media types a Document may have, as DSPy allows.
const (
	DocumentText = "text/plain"
	DocumentPDF  = "application/pdf"
)

// DocumentFromBytes makes a Document of data: mediaType is
// DocumentText, DocumentPDF or "" to detect it (a PDF by its signature,
// else text, which must be valid UTF-8). Data over MaxMediaBytes is an
// ErrTooLarge error.
func DocumentFromBytes(data []byte, mediaType string) (Document, error) {
	if len(data) > MaxMediaBytes {
		return Document{}, fmt.Errorf("%w: %d bytes, over the %d-byte limit", ErrTooLarge, len(data), MaxMediaBytes)
	}
	if mediaType == "" {
		mediaType = DocumentText
		if bytes.HasPrefix(data, []byte("%PDF-")) {
			mediaType = DocumentPDF
		}
	}
	var d Document
	switch mediaType {
	case DocumentText:
		if !utf8.Valid(data) {
			return Document{}, errors.New("types: a text document must be valid UTF-8")
		}
		d = Document{Data: string(data), MediaType: DocumentText}
	case DocumentPDF:
		d = Document{Data: base64.StdEncoding.EncodeToString(data), MediaType: DocumentPDF}
	default:
		return Document{}, fmt.Errorf("types: document media type %q: give %q or %q", clip(mediaType), DocumentText, DocumentPDF)
	}
	return d, d.check()
}

// DocumentFromFile reads a local text or PDF file into a Document (a PDF by
// its signature; anything else must be UTF-8 text). Its title is left for
// you to set.
func DocumentFromFile(path string) (Document, error) {
	data, err := readLocal("document", path, MaxMediaBytes)
	if err != nil {
		return Document{}, err
	}
	d, err := DocumentFromBytes(data, "")
	if err != nil {
		return Document{}, fmt.Errorf("%w (%s)", err, filepath.Base(path))
	}
	return d, nil
}

// check holds a Document, however built, to the constructors' rules.
func (d Document) check() error {
	if d.Data == "" {
		return errors.New("types: empty Document")
	}
	if err := errors.Join(checkText("Document.Title", d.Title), checkText("Document.Context", d.Context)); err != nil {
		return err
	}
	switch d.MediaType {
	case "", DocumentText:
		if len(d.Data) > MaxMediaBytes {
			return fmt.Errorf("%w: a document of %d bytes, over the %d-byte limit", ErrTooLarge, len(d.Data), MaxMediaBytes)
		}
		return checkText("Document.Data", d.Data)
	case DocumentPDF:
		if n := base64.StdEncoding.DecodedLen(len(d.Data)); n > MaxMediaBytes {
			return fmt.Errorf("%w: a PDF of %d bytes, over the %d-byte limit", ErrTooLarge, n, MaxMediaBytes)
		}
		if !validBase64(d.Data) {
			return errors.New("types: a PDF Document's Data must be base64")
		}
		return nil
	}
	return fmt.Errorf("types: document media type %q: give %q or %q", clip(d.MediaType), DocumentText, DocumentPDF)
}

// TypeDescription is DSPy's Document.description().
func (Document) TypeDescription() string {
	return "A document containing text content that can be referenced and cited. Include the full text content and optionally a title for proper referencing."
}

// FormatParts returns DSPy's document part. A Document built as a struct
// literal is held to the constructors' rules.
func (d Document) FormatParts() ([]openai.ChatMessagePart, error) {
	if err := d.check(); err != nil {
		return nil, err
	}
	type source struct {
		Type      string `json:"type"`
		MediaType string `json:"media_type"`
		Data      string `json:"data"`
	}
	type citations struct {
		Enabled bool `json:"enabled"`
	}
	part := struct {
		Type      string    `json:"type"`
		Source    source    `json:"source"`
		Citations citations `json:"citations"`
		Title     string    `json:"title,omitempty"`
		Context   string    `json:"context,omitempty"`
	}{Type: "document", Source: source{"text", DocumentText, d.Data}, Citations: citations{true}, Title: d.Title, Context: d.Context}
	if d.MediaType == DocumentPDF {
		part.Source.Type, part.Source.MediaType = "base64", DocumentPDF
	}
	return rawPart(part)
}

// String is DSPy's str(): Document('title': n chars), the title only when
// set.
func (d Document) String() string {
	if d.Title != "" {
		return fmt.Sprintf("Document('%s': %d chars)", d.Title, len(d.Data))
	}
	return fmt.Sprintf("Document(%d chars)", len(d.Data))
}

// UnmarshalJSON accepts DSPy's {"data": …, "title": …, "media_type": …,
// "context": …} (null fields are unset) or a string, the document's text,
// held to the constructors' rules.
func (d *Document) UnmarshalJSON(b []byte) error {
	return unmarshalMedia(d, b, "Document", documentOf)
}

// documentOf is the document whose text is s.
func documentOf(s string) (Document, error) {
	d := Document{Data: s}
	return d, d.check()
}

// fields decodes a JSON object into d's fields.
func (d *Document) fields(b []byte) error {
	type plain Document
	return json.Unmarshal(b, (*plain)(d))
}

// ParseField reads a document from a field's text: DSPy's {"data": …,
// …}, or else the text itself as the document's text.
func (d *Document) ParseField(raw string) error {
	s := strings.TrimSpace(raw)
	if strings.HasPrefix(s, "{") {
		var v Document
		if err := v.UnmarshalJSON([]byte(s)); err == nil {
			*d = v
			return nil
		}
	}
	v, err := documentOf(s)
	*d = v
	return err
}
