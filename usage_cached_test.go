package adapter_test

import (
	"fmt"
	"net/http"
	"strconv"
	"testing"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/lmtest"
)

// TestCachedTokensShapes: the prompt tokens a provider's cache served are
// read into Usage.PromptTokensDetails.CachedTokens from every shape
// providers send them in, blocking (through HTTPDoer) and streamed, and
// priced at Price.CachedInput. The real recordings (TestProviderRecordings)
// hold DeepSeek's, xAI's, OpenAI's and llama.cpp's; these are the shapes
// written out, with the edges.
func TestCachedTokensShapes(t *testing.T) {
	sig := mustParse(t, "q -> a")
	const reply = "[[ ## a ## ]]\nok\n\n[[ ## completed ## ]]"
	cases := []struct {
		name         string
		usage, extra string // the usage object's members beyond the counts; top-level members
		want         int
	}{
		{"deepseek prompt_cache_hit_tokens", `,"prompt_cache_hit_tokens":64,"prompt_cache_miss_tokens":36`, ``, 64},
		{"deepseek beside a zero detail", `,"prompt_tokens_details":{"cached_tokens":0},"prompt_cache_hit_tokens":64`, ``, 64},
		{"litellm cache_read_input_tokens", `,"cache_read_input_tokens":80,"cache_creation_input_tokens":0`, ``, 80},
		{"llama.cpp timings.cache_n", ``, `,"timings":{"cache_n":99,"prompt_n":1,"prompt_ms":8.9}`, 99},
		{"openai details win", `,"prompt_tokens_details":{"cached_tokens":50},"prompt_cache_hit_tokens":64`, `,"timings":{"cache_n":99}`, 50},
		{"more than the prompt is not believed", `,"prompt_cache_hit_tokens":500`, ``, 0},
		{"a count that is not a number is ignored", `,"prompt_cache_hit_tokens":"64"`, `,"timings":{"cache_n":null}`, 0},
		{"none", ``, ``, 0},
	}
	counts := `"prompt_tokens":100,"completion_tokens":5,"total_tokens":105`
	for _, c := range cases {
		blocking := fmt.Sprintf(`{"id":"x","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":%s},"finish_reason":"stop"}],"usage":{%s%s}%s}`,
			strconv.Quote(reply), counts, c.usage, c.extra)
		stream := fmt.Sprintf("data: {\"id\":\"x\",\"object\":\"chat.completion.chunk\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":%s}}]}\n\n"+
			"data: {\"id\":\"x\",\"object\":\"chat.completion.chunk\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n"+
			"data: {\"id\":\"x\",\"object\":\"chat.completion.chunk\",\"model\":\"m\",\"choices\":[],\"usage\":{%s%s}%s}\n\ndata: [DONE]\n\n",
			strconv.Quote(reply), counts, c.usage, c.extra)
		for _, streamed := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", c.name, streamed), func(t *testing.T) {
				h := http.Header{"Content-Type": {"application/json"}}
				body := blocking
				if streamed {
					h, body = http.Header{"Content-Type": {"text/event-stream"}}, stream
				}
				srv := lmtest.NewServer(lmtest.Raw(200, h, []byte(body)))
				defer srv.Close()
				cfg := srv.Config()
				cfg.HTTPClient = adapter.HTTPDoer(nil)
				lm := openai.NewClientWithConfig(cfg)
				var res *adapter.Result
				var err error
				if streamed {
					res, err = streamResult(adapter.Stream(t.Context(), lm, sig, nil, adapter.Values{"q": "x"}))
				} else {
					res, err = adapter.Call(t.Context(), lm, sig, nil, adapter.Values{"q": "x"})
				}
				require.NoError(t, err)
				assert.Equal(t, "ok", res.Outputs[0]["a"])
				assert.Equal(t, 100, res.Usage.PromptTokens)
				assert.Equal(t, c.want, cachedOf(res.Usage), "cached prompt tokens")
				assert.Equal(t, c.want, cachedOf(res.UsageByModel["m"]), "cached prompt tokens by model")
				cost, err := res.Cost(adapter.Prices{"m": {Input: 1e6, CachedInput: 0.1e6, Output: 2e6}})
				require.NoError(t, err)
				assert.InDelta(t, float64(100-c.want)+0.1*float64(c.want)+10, cost, 1e-9)
			})
		}
	}
}
