package httpapi_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/internal/testing/fakellm"
	"github.com/lambent/lambent/internal/testing/ssecheck"
)

// A model turn that ends while it makes server-executed calls closes each
// mcp_call as the function_call of a client tool would be: a whole call
// the turn left to run (max_output_tokens or content_filter after it) gets
// its response.output_item.done and stays in_progress in the stored
// output, for a continuation to run; the call max_output_tokens cut inside
// is done incomplete, the last item (OpenResponses, "Items"); the calls a
// broken stream cut get no done event (a client acts on one) and stay
// in_progress in the response.failed and the stored response.
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
		// done is each mcp_call's status in its output_item.done, "" for
		// none; status its status in the response, both in order.
		done, status []string
	}{
		{"max_output_tokens", fakellm.Turn{ToolCalls: calls, FinishReason: "length"}, "response.incomplete",
			[]string{"in_progress", "incomplete"}, []string{"in_progress", "incomplete"}},
		{"content_filter", fakellm.Turn{ToolCalls: calls, FinishReason: "content_filter"}, "response.incomplete",
			[]string{"in_progress", "in_progress"}, []string{"in_progress", "in_progress"}},
		{"broken stream", fakellm.Turn{ToolCalls: calls, CutAfterChunks: 5}, "response.failed",
			[]string{"", ""}, []string{"in_progress", "in_progress"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g := newGateway(t, fakellm.New(tc.turn), nil)
			status, _, body := g.postJSON(`{"input":"compute","stream":true,"tools":[{"type":"lambent:calculator"}]}`)
			require.Equal(t, http.StatusOK, status)
			evs, done, err := ssecheck.Parse(bytes.NewReader(body))
			require.NoError(t, err)
			require.True(t, done)
			last := evs[len(evs)-1]
			require.Equal(t, tc.end, last.Type)
			require.NoError(t, ssecheck.Check(nil, evs))
			var added []string
			doneStatus := map[string]string{}
			for _, ev := range evs {
				switch ev.Type {
				case "response.output_item.added":
					added = append(added, ev.Item.ID)
				case "response.output_item.done":
					doneStatus[ev.Item.ID] = ev.Item.Status
				}
			}
			gotDone := make([]string, len(added))
			for i, id := range added {
				gotDone[i] = doneStatus[id]
			}
			require.Equal(t, tc.done, gotDone, "each mcp_call's output_item.done")
			var end struct {
				Response wire `json:"response"`
			}
			require.NoError(t, json.Unmarshal(last.Data, &end))
			code, _, stored := g.do(http.MethodGet, "/v1/responses/"+end.Response.ID, "", "")
			require.Equal(t, http.StatusOK, code)
			var got wire
			require.NoError(t, json.Unmarshal(stored, &got))
			for _, r := range []wire{end.Response, got} {
				var statuses []string
				for _, it := range r.Output {
					require.Equal(t, "mcp_call", it.Type)
					statuses = append(statuses, it.Status)
				}
				require.Equal(t, tc.status, statuses)
			}
		})
	}
}
