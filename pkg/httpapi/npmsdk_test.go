package httpapi_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/internal/testing/fakellm"
)

// The npm SDK works unchanged, including the stream helper's
// finalResponse() on a client-tool pause (response.completed carrying
// status requires_action), and a background response with its
// background_options (which change nothing here: it runs at once).
func TestNPMSDK(t *testing.T) {
	dir := jsClients(t)
	g := newGateway(t, fakellm.New(
		fakellm.Turn{Text: "Hello there!"},
		fakellm.Turn{Text: "Streaming works fine."},
		fakellm.Turn{ToolCalls: []fakellm.ToolCall{{ID: "call_rome", Name: "get_weather", Arguments: `{"city":"Rome"}`}}},
		fakellm.Turn{Text: "Sunny in Rome, 25C."},
		fakellm.Turn{Text: "Done, at leisure."},
	), nil)
	var got struct {
		Plain    struct{ Status, Text string }
		Streamed struct {
			Status, Text string
			Events       []string
		}
		Paused struct {
			Status string
			Calls  []struct{ CallID, Name, Arguments string } `json:"calls"`
		}
		Continued  struct{ Status, Text string }
		Retrieved  bool
		Background struct{ Status, Text string }
	}
	runJS(t, dir, "npm_sdk.mjs", g.srv.URL+"/v1", &got)
	require.Equal(t, "completed", got.Plain.Status)
	require.Equal(t, "Hello there!", got.Plain.Text)
	require.Equal(t, "completed", got.Streamed.Status)
	require.Equal(t, "Streaming works fine.", got.Streamed.Text)
	require.Equal(t, "response.created", got.Streamed.Events[0])
	require.Equal(t, "response.completed", got.Streamed.Events[len(got.Streamed.Events)-1])
	require.Equal(t, "requires_action", got.Paused.Status)
	require.Len(t, got.Paused.Calls, 1)
	require.Equal(t, "completed", got.Continued.Status)
	require.Equal(t, "Sunny in Rome, 25C.", got.Continued.Text)
	require.True(t, got.Retrieved)
	require.Equal(t, "completed", got.Background.Status)
	require.Equal(t, "Done, at leisure.", got.Background.Text)
}
