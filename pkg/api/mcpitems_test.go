package api

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The MCP items are written in OpenAI's shapes and read back from them.
func TestMCPItemsRoundTrip(t *testing.T) {
	for _, c := range []struct {
		item Item
		wire string
	}{
		{Item{Type: ItemMCPListTools, ID: "mcpl_1", Status: ItemCompleted, ServerLabel: "docs",
			Tools: []MCPTool{{Name: "echo", Description: "Echo.", InputSchema: json.RawMessage(`{"type":"object"}`), Annotations: json.RawMessage(`{"readOnlyHint":true}`)}}},
			`{"type":"mcp_list_tools","id":"mcpl_1","server_label":"docs","tools":[{"name":"echo","description":"Echo.","input_schema":{"type":"object"},"annotations":{"readOnlyHint":true}}]}`},
		{Item{Type: ItemMCPListTools, ID: "mcpl_2", ServerLabel: "docs", Error: "down", Tools: []MCPTool{}},
			`{"type":"mcp_list_tools","id":"mcpl_2","server_label":"docs","tools":[],"error":"down"}`},
		{Item{Type: ItemMCPApprovalRequest, ID: "mcpr_1", ServerLabel: "docs", Name: "echo", Arguments: `{"text":"x"}`},
			`{"type":"mcp_approval_request","id":"mcpr_1","server_label":"docs","name":"echo","arguments":"{\"text\":\"x\"}"}`},
		{Item{Type: ItemMCPApprovalResponse, ID: "mcpa_1", ApprovalRequestID: "mcpr_1", Approve: false, Reason: "no"},
			`{"type":"mcp_approval_response","id":"mcpa_1","approval_request_id":"mcpr_1","approve":false,"reason":"no"}`},
		{Item{Type: ItemMCPApprovalResponse, ID: "mcpa_2", ApprovalRequestID: "mcpr_1", Approve: true},
			`{"type":"mcp_approval_response","id":"mcpa_2","approval_request_id":"mcpr_1","approve":true,"reason":null}`},
	} {
		b, err := json.Marshal(c.item)
		require.NoError(t, err)
		assert.JSONEq(t, c.wire, string(b))
		var back Item
		require.NoError(t, json.Unmarshal(b, &back))
		back.Status = c.item.Status
		assert.Equal(t, c.item, back)
	}
	for body, param := range map[string]string{
		`{"type":"mcp_approval_response","approve":true}`:                 "approval_request_id",
		`{"type":"mcp_approval_response","approval_request_id":"mcpr_1"}`: "approve",
		`{"type":"mcp_list_tools","tools":[]}`:                            "server_label",
		`{"type":"mcp_list_tools","server_label":"d","tools":[{"x":1}]}`:  "tools[0].name",
		`{"type":"mcp_approval_request","server_label":"d","name":"n"}`:   "id",
	} {
		var it Item
		err := json.Unmarshal([]byte(body), &it)
		var ae *Error
		require.ErrorAs(t, err, &ae, body)
		assert.Equal(t, param, ae.Param, body)
	}
}
