package wire

import (
	"encoding/json"
	"strings"

	openai "github.com/sashabaranov/go-openai"
)

// wireBody is the part of a blocking response body go-openai drops.
type wireBody struct {
	Choices []struct {
		Index   int `json:"index"`
		Message struct {
			Content   wireContent `json:"content"`
			Reasoning string      `json:"reasoning"`
			wireExtras
		} `json:"message"`
	} `json:"choices"`
	Usage   *wireUsage `json:"usage"`
	XGroq   *xGroq     `json:"x_groq"`
	Timings *timings   `json:"timings"`
}

// Complete finishes a blocking reply as go-openai decoded it, body being
// its raw bytes as the HTTP wrapper kept them (nil without the wrapper):
// a reply with more than MaxChoices choices is an error; every choice
// the server sent no finish reason for gets "stop" (arrivedWhole); and
// what go-openai left out is filled in (normalize). It returns the extras
// the body carried, an entry for each choice that carried any; a choice
// with more than maxItems of them is an error.
func Complete(resp *openai.ChatCompletionResponse, body []byte, maxItems int) ([]ChoiceExtras, error) {
	if len(resp.Choices) > MaxChoices {
		return nil, tooManyChoices("a reply")
	}
	arrivedWhole(resp)
	return normalize(resp, body, maxItems)
}

// arrivedWhole marks a reply that arrived whole — a blocking body, or a
// stream that ended with "data: [DONE]" — as finished: a choice the
// server sent no finish reason for (Snowflake Cortex never sends one; a
// LiteLLM proxy with n=2 sends one for choice 0 only) gets "stop". What
// is left without a finish reason is a choice of a stream cut off before
// [DONE], which the pipeline reports as truncated; so does a choice that
// ended with "length". This is the one place the end of a reply is
// decided, for Call and Stream alike.
func arrivedWhole(resp *openai.ChatCompletionResponse) {
	for i := range resp.Choices {
		if resp.Choices[i].FinishReason == "" {
			resp.Choices[i].FinishReason = openai.FinishReasonStop
		}
	}
}

// normalize fills what go-openai left out of a blocking response: content
// sent as an array of parts (go-openai keeps the text parts in
// MultiContent and drops thinking parts), and, when the raw body is known
// (through the HTTPDoer wrapper), reasoning sent as "reasoning" or as
// thinking parts, usage sent only inside x_groq, and the prompt tokens a
// cache served counted in a provider's own member (cachedFrom). It returns the
// extras the body carried; a choice with more than maxItems of them is an
// error.
func normalize(resp *openai.ChatCompletionResponse, body []byte, maxItems int) ([]ChoiceExtras, error) {
	for i := range resp.Choices {
		m := &resp.Choices[i].Message
		if m.Content == "" && len(m.MultiContent) > 0 {
			var b strings.Builder
			for _, p := range m.MultiContent {
				if p.Type == openai.ChatMessagePartTypeText {
					b.WriteString(p.Text)
				}
			}
			m.Content, m.MultiContent = b.String(), nil
		}
	}
	if len(body) == 0 {
		return nil, nil
	}
	var wb wireBody
	if json.Unmarshal(body, &wb) != nil {
		return nil, nil
	}
	if len(wb.Choices) > MaxChoices {
		return nil, tooManyChoices("a reply")
	}
	var extras []ChoiceExtras
	for _, c := range wb.Choices {
		x := ChoiceExtras{Index: c.Index}
		if err := c.Message.wireExtras.collect(&x, nil, maxItems); err != nil {
			return nil, err
		}
		if len(x.Annotations) > 0 || len(x.Citations) > 0 {
			extras = append(extras, x)
		}
		for i := range resp.Choices {
			ch := &resp.Choices[i]
			if ch.Index != c.Index {
				continue
			}
			if ch.Message.ReasoningContent == "" {
				if c.Message.Reasoning != "" {
					ch.Message.ReasoningContent = c.Message.Reasoning
				} else {
					ch.Message.ReasoningContent = c.Message.Content.thinking
				}
			}
		}
	}
	if resp.Usage.TotalTokens == 0 && resp.Usage.PromptTokens == 0 && wb.XGroq != nil && wb.XGroq.Usage != nil {
		resp.Usage = *wb.XGroq.Usage
	}
	var cacheHit, cacheRead, cacheN *int
	if wb.Usage != nil {
		cacheHit, cacheRead = wb.Usage.cacheHit, wb.Usage.cacheRead
	}
	if wb.Timings != nil {
		cacheN = wb.Timings.CacheN
	}
	resp.Usage = cachedFrom(resp.Usage, cacheHit, cacheRead, cacheN)
	return extras, nil
}
