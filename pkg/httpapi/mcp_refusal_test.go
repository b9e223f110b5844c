package httpapi_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/internal/testing/mcptest"
)

// A request whose input the model provider cannot take (an input_file
// part, an input_image by file_id) is refused with its 400 before anything
// connects: its MCP server is never contacted, the model never called.
func TestMCPUnsupportedContentRefusedFirst(t *testing.T) {
	t.Parallel()
	for name, part := range map[string]string{
		"input_file":    `{"type":"input_file","file_data":"data:application/pdf;base64,JVBERi0=","filename":"a.pdf"}`,
		"image_file_id": `{"type":"input_image","file_id":"file_123"}`,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := mcptest.StartStreamable(mcptest.Options{})
			defer srv.Close()
			g := mcpGateway(t, false, nil)
			for _, stream := range []bool{false, true} {
				body := fmt.Sprintf(`{"model":"test-model","stream":%v,"input":[{"role":"user","content":[{"type":"input_text","text":"read this"},%s]}],`+
					`"tools":[{"type":"mcp","server_label":"docs","server_url":%q,"require_approval":"never"}]}`, stream, part, srv.Endpoint)
				status, _, out := g.do(http.MethodPost, "/v1/responses", "application/json", body)
				require.Equal(t, http.StatusBadRequest, status, "%s", out)
				require.Contains(t, string(out), `"code":"unsupported_content"`)
				require.Contains(t, string(out), `"param":"input"`)
				srv.Idle()
				require.Zero(t, len(srv.Headers()), "requests the MCP server received before the refusal")
				require.Zero(t, srv.Connections(), "the MCP server was connected to before the refusal")
			}
		})
	}
}
