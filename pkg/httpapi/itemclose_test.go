package httpapi_test

import (
	"bytes"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/internal/testing/fakellm"
	"github.com/lambent/lambent/internal/testing/ssecheck"
)

// A model turn cut short (max_output_tokens, content_filter, the model's
// stream broken off) while it makes server-executed calls closes every
// mcp_call item it opened before the terminal event: each
// response.output_item.added has its response.output_item.done (the call
// stays in_progress in the stored output, for a continuation to run).
func TestCutTurnClosesServerCalls(t *testing.T) {
	t.Parallel()
	calls := []fakellm.ToolCall{
		{ID: "call_mul", Name: "calculator", Arguments: `{"expression":"6*7"}`},
		{ID: "call_pow", Name: "calculator", Arguments: `{"expression":"2^10"}`},
	}
	for _, tc := range []struct {
		name string
		turn fakellm.Turn
		end  string
	}{
		{"max_output_tokens", fakellm.Turn{ToolCalls: calls, FinishReason: "length"}, "response.incomplete"},
		{"content_filter", fakellm.Turn{ToolCalls: calls, FinishReason: "content_filter"}, "response.incomplete"},
		{"broken stream", fakellm.Turn{ToolCalls: calls, CutAfterChunks: 5}, "response.failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g := newGateway(t, fakellm.New(tc.turn), nil)
			status, _, body := g.postJSON(`{"input":"compute","stream":true,"tools":[{"type":"lambent:calculator"}]}`)
			require.Equal(t, http.StatusOK, status)
			evs, done, err := ssecheck.Parse(bytes.NewReader(body))
			require.NoError(t, err)
			require.True(t, done)
			require.Equal(t, tc.end, evs[len(evs)-1].Type)
			require.NoError(t, ssecheck.Check(nil, evs))
			open := map[string]bool{}
			for _, ev := range evs {
				switch ev.Type {
				case "response.output_item.added":
					open[ev.Item.ID] = true
				case "response.output_item.done":
					delete(open, ev.Item.ID)
				}
			}
			require.Empty(t, open, "items added but never done")
		})
	}
}
