package types

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"path/filepath"
	"strings"

	openai "github.com/sashabaranov/go-openai"
)

// File is DSPy's dspy.File: a file given inline as a data URI, by the id
// of a file uploaded to the provider, and/or by name. In a user message it
// becomes DSPy's file content part, {"type": "file", "file": {…}} with the
// fields that are set, where DSPy places it. go-openai cannot express that
// part: it is sent through a client whose HTTP client is wrapped with
// adapter.HTTPDoer, and refused (ErrUnsupportedPart) through any other.
type File struct {
	FileData string `json:"file_data,omitempty"` // data:<media type>;base64,<data>
	FileID   string `json:"file_id,omitempty"`
	Filename string `json:"filename,omitempty"`
}

// NewFile accepts a base64 data URI of at most MaxMediaBytes as a File's
// data. Local paths are refused (DSPy reads a path given as a string): read
// them with FileFromFile, so that reading the disk is always explicit.
func NewFile(src string) (File, error) {
	s := strings.TrimSpace(src)
	if !strings.HasPrefix(s, "data:") {
		return File{}, fmt.Errorf("types: unrecognized file %q: give a data URI (data:application/pdf;base64,…); local files must be loaded with FileFromFile, URLs with DownloadFile", showURL(s))
	}
	f := File{FileData: s}
	return f, f.check()
}

// FileFromBytes encodes data as a File's data URI, named filename (which
// may be empty). An empty mimeType is found from the filename's extension,
// else from the bytes (PDF, text, images, …), else it is
// application/octet-stream. Data over MaxMediaBytes is an ErrTooLarge
// error.
func FileFromBytes(data []byte, filename, mimeType string) (File, error) {
	if len(data) > MaxMediaBytes {
		return File{}, fmt.Errorf("%w: %d bytes, over the %d-byte limit", ErrTooLarge, len(data), MaxMediaBytes)
	}
	m := mediaType(mimeType)
	if mimeType == "" {
		m = detectFileType(filename, data)
	} else if m == "" {
		return File{}, fmt.Errorf("types: file: %q is not a media type", clip(mimeType))
	}
	f := File{FileData: "data:" + m + ";base64," + base64.StdEncoding.EncodeToString(data), Filename: filename}
	return f, f.check()
}

// detectFileType finds a file's media type from its name's extension, else
// its bytes, else application/octet-stream.
func detectFileType(filename string, data []byte) string {
	if ext := filepath.Ext(filename); ext != "" {
		if m := mediaType(mime.TypeByExtension(ext)); m != "" {
			return m
		}
	}
	if m := mediaType(http.DetectContentType(data)); m != "" {
		return m
	}
	return "application/octet-stream"
}

// FileFromFile reads a local file into a File named by its base name, as
// DSPy's File.from_path does; its media type comes from its extension,
// else its bytes.
func FileFromFile(path string) (File, error) {
	data, err := readLocal("file", path, MaxMediaBytes)
	if err != nil {
		return File{}, err
	}
	return FileFromBytes(data, filepath.Base(path), "")
}

// FileFromID refers to a file uploaded to the provider (OpenAI's Files
// API), as DSPy's File.from_file_id does; filename may be empty.
func FileFromID(id, filename string) File {
	return File{FileID: id, Filename: filename}
}

// DownloadFile fetches an http(s) file into a File's data URI. It obeys
// DownloadImage's rules (no other schemes, no address that is not public
// unless allowed, the size limit, MaxMediaBytes by default, the timeout).
// Its media type is the Content-Type, else found as FileFromBytes finds
// it.
//
// The file is named by the URL's last path element, decoded, when that is
// a safe base name: valid UTF-8, at most 255 bytes, not blank, not "." or
// "..", without a path separator ('/', '\\'), a control or format
// character (a bidirectional override, a zero-width space) or a line
// separator. Otherwise — and when the URL ends in '/' — it is named
// "download". The name is never cleaned up into another: it is the URL's,
// or "download".
func DownloadFile(ctx context.Context, rawURL string, opt DownloadOptions) (File, error) {
	data, ct, err := download(ctx, rawURL, opt, MaxMediaBytes)
	if err != nil {
		return File{}, err
	}
	name := fileName(rawURL)
	if ct == "" {
		ct = detectFileType(name, data)
	}
	f := File{FileData: "data:" + ct + ";base64," + base64.StdEncoding.EncodeToString(data), Filename: name}
	return f, f.check()
}

// check holds a File, however built, to the constructors' rules.
func (f File) check() error {
	if f.FileData == "" && f.FileID == "" && f.Filename == "" {
		return errors.New("types: empty File: set FileData, FileID or Filename")
	}
	if err := errors.Join(checkText("File.FileID", f.FileID), checkText("File.Filename", f.Filename)); err != nil {
		return err
	}
	if f.FileData == "" {
		return nil
	}
	d, err := parseDataURI(f.FileData)
	switch {
	case err != nil:
		return fmt.Errorf("types: File.FileData: %w", err)
	case d.media == "":
		return fmt.Errorf("types: File.FileData %q has no media type", clip(f.FileData))
	case !d.base64:
		return fmt.Errorf("types: File.FileData %q is not base64", clip(f.FileData))
	case d.size() > MaxMediaBytes:
		return fmt.Errorf("%w: a data URI of %d bytes, over the %d-byte limit", ErrTooLarge, d.size(), MaxMediaBytes)
	case !validBase64(d.data):
		return fmt.Errorf("types: File.FileData %q is not valid base64", clip(f.FileData))
	}
	return nil
}

// FormatParts returns DSPy's file part: {"type": "file", "file": {…}} with
// file_data, file_id and filename when set, in that order. A File built as
// a struct literal is held to the constructors' rules.
func (f File) FormatParts() ([]openai.ChatMessagePart, error) {
	if err := f.check(); err != nil {
		return nil, err
	}
	return rawPart(struct {
		Type string `json:"type"`
		File File   `json:"file"`
	}{"file", f})
}

// String is DSPy's repr: File(file_data=<DATA_URI(application/pdf, n
// chars)>, file_id='…', filename='…'), with the fields that are set.
func (f File) String() string {
	var parts []string
	if f.FileData != "" {
		if strings.HasPrefix(f.FileData, "data:") {
			media, _, _ := strings.Cut(strings.TrimPrefix(f.FileData, "data:"), ";")
			n := len(f.FileData)
			if _, data, ok := strings.Cut(f.FileData, "base64,"); ok {
				n = len(data)
			}
			parts = append(parts, fmt.Sprintf("file_data=<DATA_URI(%s, %d chars)>", media, n))
		} else {
			parts = append(parts, fmt.Sprintf("file_data=<DATA(%d chars)>", len(f.FileData)))
		}
	}
	if f.FileID != "" {
		parts = append(parts, "file_id='"+f.FileID+"'")
	}
	if f.Filename != "" {
		parts = append(parts, "filename='"+f.Filename+"'")
	}
	return "File(" + strings.Join(parts, ", ") + ")"
}

// UnmarshalJSON accepts DSPy's {"file_data": …, "file_id": …, "filename":
// …} (null fields are unset) or a data URI string, held to the
// constructors' rules. A path is never read. JSON is untrusted data (a
// saved program, a model's reply): a filename that is not a safe base
// name (see DownloadFile) is an ErrUnsafeFilename error.
func (f *File) UnmarshalJSON(b []byte) error { return unmarshalMedia(f, b, "File", NewFile) }

// statedName holds a File's name read from untrusted data (JSON, a
// model's text) to DownloadFile's safe base-name rule. Where DownloadFile
// derives a name from a URL and falls back to "download", this name is
// stated: one that breaks the rule is an error, never kept and never
// replaced by a name the data did not state.
func statedName(name string) error {
	if name == "" || safeFileName(name) {
		return nil
	}
	return fmt.Errorf("%w: File.Filename %q must be a base name: valid UTF-8, at most %d bytes, not blank, \".\" or \"..\", without a path separator, a control or format character or a line separator",
		ErrUnsafeFilename, clip(name), maxFileName)
}

// ParseField reads a file from a field's text: a data URI, or DSPy's
// {"file_data": …, "file_id": …, "filename": …}, whose filename must be a
// safe base name (see UnmarshalJSON). Unlike DSPy, which reads a path the
// model wrote, it never touches the disk.
func (f *File) ParseField(raw string) error { return parseMedia(f, raw, "File", NewFile) }

// fields decodes a JSON object into f's fields; its filename is stated by
// untrusted data (see statedName).
func (f *File) fields(b []byte) error {
	type plain File
	if err := json.Unmarshal(b, (*plain)(f)); err != nil {
		return err
	}
	return statedName(f.Filename)
}
