package types

import (
	"encoding/json"
	"fmt"
	"strings"

	openai "github.com/sashabaranov/go-openai"

	adapter "github.com/sigwire/adapter"
)

// Citation is one quoted passage and where it comes from. The fields are
// DSPy's; URL is added for citations of web pages.
//
// A citation the provider returned has the provider's type: Anthropic's
// "char_location" (a text Document: CitedText is the quoted passage,
// DocumentIndex the document's position among the request's documents,
// StartCharIndex and EndCharIndex the passage's place in it),
// "page_location" and "content_block_location" (their page or block
// numbers are in Raw), "web_search_result_location" (URL, DocumentTitle,
// CitedText); or OpenAI's "url_citation" (URL, DocumentTitle, and
// StartCharIndex and EndCharIndex, which locate the text the citation
// supports in the reply's text, Result.Completions). Raw keeps the
// provider's object as it was sent.
//
// The default tags make the prompt's schema require what DSPy's requires
// (cited_text, document_index, start_char_index, end_char_index), so the
// model is never asked for a URL.
type Citation struct {
	Type           string  `json:"type" default:"\"char_location\""` // "char_location", …
	CitedText      string  `json:"cited_text"`
	DocumentIndex  int     `json:"document_index"`
	DocumentTitle  *string `json:"document_title,omitempty" default:"null"`
	StartCharIndex int     `json:"start_char_index"`
	EndCharIndex   int     `json:"end_char_index"`
	SupportedText  *string `json:"supported_text,omitempty" default:"null"`
	URL            string  `json:"url,omitempty" default:"\"\""`
	// Raw is the provider's citation object as sent (nil for citations
	// the model wrote as text).
	Raw json.RawMessage `json:"-"`
}

// Citations is DSPy's experimental dspy.Citations as an output: quoted
// passages with their sources.
//
// Where the provider cites natively its citations fill the field, read
// from the wire (go-openai does not decode them): Anthropic's citations
// of Document inputs as LiteLLM relays them (the shape DSPy reads), and
// OpenAI's url_citation annotations (search models, also through
// OpenRouter). They replace what the text gave, as in DSPy. A streamed
// reply's citations are read from its raw lines; a blocking Call sees them
// only through a client whose HTTP client is wrapped with adapter.HTTPDoer
// (without it the field is empty where the provider cites natively).
//
// For Anthropic models (a model name starting with "anthropic/", as DSPy
// decides) and OpenAI's search models (a name holding "-search-preview" or
// "-search-api") the field leaves the prompt, since the provider cites
// natively. Otherwise the model writes the citations as JSON.
type Citations struct {
	Citations []Citation `json:"citations"`
}

// TypeDescription is DSPy's Citations.description().
func (Citations) TypeDescription() string {
	return "Citations with quoted text and source references. Include the exact text being cited and information about its source."
}

// PlanNative drops the field for models that cite natively.
func (Citations) PlanNative(r adapter.NativeRequest) adapter.Plan {
	m := r.Request.Model
	base := m[strings.LastIndexByte(m, '/')+1:]
	if strings.HasPrefix(m, "anthropic/") || strings.Contains(base, "-search-preview") || strings.Contains(base, "-search-api") {
		return adapter.Plan{Drop: true}
	}
	return adapter.Plan{}
}

// NativeValue reports none: go-openai's response has no citations (they
// come from the wire, see WireValue).
func (Citations) NativeValue(openai.ChatCompletionChoice) (any, bool) { return nil, false }

// WireValue reads the citations a choice carried on the wire: provider
// citation blocks, then url_citation annotations. It reports none when
// there are none.
func (Citations) WireValue(_ openai.ChatCompletionChoice, extras adapter.ChoiceExtras) (any, bool) {
	var out []Citation
	for _, raw := range extras.Citations {
		out = append(out, providerCitation(raw))
	}
	for _, raw := range extras.Annotations {
		if c, ok := urlCitation(raw); ok {
			out = append(out, c)
		}
	}
	if len(out) == 0 {
		return nil, false
	}
	return Citations{Citations: out}, true
}

// providerCitation reads a citation block (Anthropic's shape). A field sent
// in another shape than expected is left zero; Raw keeps the block.
func providerCitation(raw json.RawMessage) Citation {
	var f struct {
		Type           json.RawMessage `json:"type"`
		CitedText      json.RawMessage `json:"cited_text"`
		DocumentIndex  json.RawMessage `json:"document_index"`
		DocumentTitle  json.RawMessage `json:"document_title"`
		Title          json.RawMessage `json:"title"`
		StartCharIndex json.RawMessage `json:"start_char_index"`
		EndCharIndex   json.RawMessage `json:"end_char_index"`
		SupportedText  json.RawMessage `json:"supported_text"`
		URL            json.RawMessage `json:"url"`
	}
	c := Citation{Raw: raw}
	if json.Unmarshal(raw, &f) != nil {
		return c
	}
	_ = json.Unmarshal(f.Type, &c.Type)
	_ = json.Unmarshal(f.CitedText, &c.CitedText)
	_ = json.Unmarshal(f.DocumentIndex, &c.DocumentIndex)
	_ = json.Unmarshal(f.StartCharIndex, &c.StartCharIndex)
	_ = json.Unmarshal(f.EndCharIndex, &c.EndCharIndex)
	_ = json.Unmarshal(f.URL, &c.URL)
	c.DocumentTitle = optionalString(f.DocumentTitle)
	if c.DocumentTitle == nil {
		c.DocumentTitle = optionalString(f.Title) // web_search_result_location
	}
	c.SupportedText = optionalString(f.SupportedText)
	return c
}

// urlCitation reads an annotation of type url_citation: {"type":
// "url_citation", "url_citation": {"url", "title", "start_index",
// "end_index"}}.
func urlCitation(raw json.RawMessage) (Citation, bool) {
	var a struct {
		Type        string `json:"type"`
		URLCitation *struct {
			URL        json.RawMessage `json:"url"`
			Title      json.RawMessage `json:"title"`
			StartIndex json.RawMessage `json:"start_index"`
			EndIndex   json.RawMessage `json:"end_index"`
		} `json:"url_citation"`
	}
	if json.Unmarshal(raw, &a) != nil || a.Type != "url_citation" || a.URLCitation == nil {
		return Citation{}, false
	}
	u := a.URLCitation
	c := Citation{Type: "url_citation", Raw: raw, DocumentTitle: optionalString(u.Title)}
	_ = json.Unmarshal(u.URL, &c.URL)
	_ = json.Unmarshal(u.StartIndex, &c.StartCharIndex)
	_ = json.Unmarshal(u.EndIndex, &c.EndCharIndex)
	return c, true
}

// optionalString reads a JSON string; nil for null, "", or another kind.
func optionalString(raw json.RawMessage) *string {
	var s string
	if json.Unmarshal(raw, &s) != nil || s == "" {
		return nil
	}
	return &s
}

// ParseField reads {"citations": [...]} or a bare list of citations; a
// citation without a type is a "char_location", as in DSPy.
func (c *Citations) ParseField(raw string) error {
	s := strings.TrimSpace(raw)
	var w Citations
	if err := json.Unmarshal([]byte(s), &w.Citations); err != nil {
		w = Citations{}
		if err := json.Unmarshal([]byte(s), &w); err != nil {
			return fmt.Errorf("types: Citations: %w", err)
		}
	}
	for i := range w.Citations {
		if w.Citations[i].Type == "" {
			w.Citations[i].Type = "char_location"
		}
	}
	*c = w
	return nil
}
