package wire

import (
	"testing"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestClientConfig guards the read of go-openai's unexported
// configuration: it finds what the client was made with, API key
// included. A go-openai release that changes the layout fails here
// rather than in the cache, which would quietly identify every client per
// process (see the root's Identifier).
func TestClientConfig(t *testing.T) {
	made := openai.DefaultAzureConfig("sk-secret", "https://example.test/")
	made.OrgID = "org"
	c := openai.NewClientWithConfig(made)

	cfg, token, ok := ClientConfig(c)
	require.True(t, ok)
	assert.Equal(t, "sk-secret", token)
	assert.Equal(t, made.BaseURL, cfg.BaseURL)
	assert.Equal(t, made.OrgID, cfg.OrgID)
	assert.Equal(t, openai.APITypeAzure, cfg.APIType)
	assert.Equal(t, made.APIVersion, cfg.APIVersion)
	assert.Equal(t, "gpt-4o", cfg.GetAzureDeploymentByModel("gpt-4o"))
	assert.Same(t, cfg, must(ClientConfig(c)), "the client's own configuration, not a copy")

	_, token, ok = ClientConfig(openai.NewClient(""))
	require.True(t, ok)
	assert.Empty(t, token)
}

func must(cfg *openai.ClientConfig, _ string, ok bool) *openai.ClientConfig {
	if !ok {
		panic("ClientConfig: not ok")
	}
	return cfg
}
