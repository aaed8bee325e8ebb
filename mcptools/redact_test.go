package mcptools_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/lmtest"
	"github.com/sigwire/adapter/mcptools"
	"github.com/sigwire/adapter/predict"
	"github.com/sigwire/adapter/signature"
)

// TestTransportErrorRedacted (security review 4, N8): a client connected
// over streamable HTTP to a server URL that carries secrets (a token in
// its query, a user name and password, a fragment; the shapes of the
// types package's redaction test) loses its server. The tool call's error,
// which ReAct shows the model, and the listing's error hold none of the
// secrets, yet keep the query's keys; the error unwraps to the SDK's, its
// *url.Error unredacted. End to end, no request to the LM carries a secret.
func TestTransportErrorRedacted(t *testing.T) {
	secrets := []string{"SECRET", "hunter2", "tokenuser", "FRAGSECRET"}
	shapes := []string{
		"http://tokenuser:hunter2@{h}/mcp?token=SECRET&size=2",
		"http://tokenuser@{h}/mcp?token=SECRET", // a token as the user name
		"http://{h}/mcp?SECRET",                 // a bare query value
		"http://{h}/mcp?token=SECRET#access_token=FRAGSECRET",
		"HTTP://tokenuser:hunter2@{h}/mcp?token=SECRET%26more&b=SECRET",
	}
	ctx := context.Background()
	for _, shape := range shapes {
		t.Run(shape, func(t *testing.T) {
			hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return newWeatherServer(t).Server }, nil))
			endpoint := strings.ReplaceAll(shape, "{h}", strings.TrimPrefix(hs.URL, "http://"))
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v1"}, nil).
				Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint, DisableStandaloneSSE: true}, nil)
			require.NoError(t, err)
			t.Cleanup(func() { _ = cs.Close() })
			tools, err := mcptools.Tools(ctx, cs)
			require.NoError(t, err)
			hs.CloseClientConnections()
			hs.Close()

			_, err = byName(tools)["weather"].Call(ctx, json.RawMessage(`{"city": "Paris"}`))
			require.Error(t, err)
			var ue *url.Error
			require.ErrorAs(t, err, &ue, "the SDK's error is reached through the redaction")
			require.Contains(t, ue.Error(), "SECRET", "the test's precondition: the SDK's error names the URL with its query")
			msg := err.Error()
			assert.True(t, strings.HasPrefix(msg, "mcptools: tool weather: "), msg)
			for _, s := range secrets {
				assert.NotContains(t, msg, s)
			}
			if strings.Contains(shape, "token=") {
				assert.Contains(t, msg, "token=REDACTED", "the query's keys stay")
			}

			_, err = mcptools.Tools(ctx, cs)
			require.Error(t, err)
			assert.ErrorContains(t, err, "mcptools: listing the server's tools: ")
			for _, s := range secrets {
				assert.NotContains(t, err.Error(), s)
			}

			srv := lmtest.NewServer(
				step("Look it up.", "weather", `{"city": "Paris"}`),
				step("Done.", "finish", "{}"),
				answer("Unknown"))
			defer srv.Close()
			sig, err := signature.Parse("question -> answer")
			require.NoError(t, err)
			agent, err := predict.NewReAct(sig, tools)
			require.NoError(t, err)
			res, err := agent.Call(ctx, srv.Client(), adapter.Values{"question": "Weather in Paris?"})
			require.NoError(t, err)
			traj := res.Outputs[0]["trajectory"].(predict.Trajectory)
			require.NotEmpty(t, traj)
			assert.Contains(t, traj[0].Observation, "Execution error in weather: mcptools: tool weather: ")
			reqs := srv.Requests()
			require.Len(t, reqs, 3)
			for i, r := range reqs {
				for _, m := range r.Chat.Messages {
					for _, s := range secrets {
						assert.NotContains(t, m.Content, s, "request %d", i)
					}
				}
			}
		})
	}
}
