package types

import (
	"encoding/json"
	"fmt"
	"strings"

	openai "github.com/sashabaranov/go-openai"

	adapter "github.com/sigwire/adapter"
)

// Citation is one quoted passage and where it comes from.
type Citation struct {
	Type           string  `json:"type"` // "char_location"
	CitedText      string  `json:"cited_text"`
	DocumentIndex  int     `json:"document_index"`
	DocumentTitle  *string `json:"document_title,omitempty"`
	StartCharIndex int     `json:"start_char_index"`
	EndCharIndex   int     `json:"end_char_index"`
	SupportedText  *string `json:"supported_text,omitempty"`
}

// Citations is DSPy's experimental dspy.Citations as an output: quoted
// passages with their sources. For Anthropic models (a model name starting
// with "anthropic/", as DSPy decides) the field leaves the prompt, since
// the provider cites natively; go-openai does not decode provider
// citations, so the field is then empty. Otherwise the model writes the
// citations as JSON.
type Citations struct {
	Citations []Citation `json:"citations"`
}

// TypeDescription is DSPy's Citations.description().
func (Citations) TypeDescription() string {
	return "Citations with quoted text and source references. Include the exact text being cited and information about its source."
}

// PlanNative drops the field for Anthropic models.
func (Citations) PlanNative(r adapter.NativeRequest) adapter.Plan {
	if strings.HasPrefix(r.Request.Model, "anthropic/") {
		return adapter.Plan{Drop: true}
	}
	return adapter.Plan{}
}

// NativeValue reports none: go-openai's response has no citations.
func (Citations) NativeValue(openai.ChatCompletionChoice) (any, bool) { return nil, false }

// ParseField reads {"citations": [...]} or a bare list of citations.
func (c *Citations) ParseField(raw string) error {
	s := strings.TrimSpace(raw)
	var list []Citation
	if err := json.Unmarshal([]byte(s), &list); err == nil {
		c.Citations = list
		return nil
	}
	var w Citations
	if err := json.Unmarshal([]byte(s), &w); err != nil {
		return fmt.Errorf("types: Citations: %w", err)
	}
	*c = w
	return nil
}
