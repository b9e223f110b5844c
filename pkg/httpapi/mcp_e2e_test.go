package httpapi_test

// MCP tools end to end: openai-go and npm openai against the gateway
// (app.Build), MCP servers built with the official Go SDK (streamable
// HTTP, SSE, stdio) and TypeScript SDK, both stores.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/internal/testing/dynamotest"
	"github.com/lambent/lambent/internal/testing/fakellm"
	"github.com/lambent/lambent/internal/testing/fakessm"
	"github.com/lambent/lambent/internal/testing/mcptest"
	"github.com/lambent/lambent/internal/testing/ssecheck"
	"github.com/lambent/lambent/pkg/app"
	"github.com/lambent/lambent/pkg/awsjson"
)

// mcpModel is a fake model that answers by the conversation: after a tool
// result, "Result: <the result>"; for a user message `call <tool> <json>`,
// that call; else a greeting.
func mcpModel() *fakellm.Server {
	return fakellm.NewHandler(func(req fakellm.Request) fakellm.Turn {
		last := req.Messages[len(req.Messages)-1]
		if last.Role == "tool" {
			return fakellm.Turn{Text: "Result: " + last.Content.String()}
		}
		if turn, ok := callTurn(last.Content.String()); ok {
			return turn
		}
		return fakellm.Turn{Text: "Hello."}
	})
}

// callTurn is the call a user message `call <tool> <json>` asks for.
func callTurn(msg string) (fakellm.Turn, bool) {
	rest, ok := strings.CutPrefix(msg, "call ")
	if !ok {
		return fakellm.Turn{}, false
	}
	name, args, _ := strings.Cut(rest, " ")
	return fakellm.Turn{ToolCalls: []fakellm.ToolCall{{Name: name, Arguments: args}}}, true
}

// mcpGateway is a gateway that lets request-declared MCP servers reach
// loopback, on the memory store or (dynamo) on DynamoDB Local.
func mcpGateway(t *testing.T, dynamo bool, opts *app.Options) *gateway {
	t.Helper()
	if opts == nil {
		opts = &app.Options{}
	}
	if dynamo {
		opts.Store = dynamotest.NewStore(t, "")
	}
	return newGatewayWith(t, mcpModel(), map[string]string{"LAMBENT_FETCH_ALLOW_HOSTS": "127.0.0.1"}, opts)
}

func mcpToolParam(label, url, approval string) responses.ToolUnionParam {
	return responses.ToolUnionParam{OfMcp: &responses.ToolMcpParam{
		ServerLabel:     label,
		ServerURL:       openai.String(url),
		Headers:         map[string]string{"X-Api-Key": "e2e-header-secret"},
		Authorization:   openai.String("e2e-token-secret"),
		RequireApproval: responses.ToolMcpRequireApprovalUnionParam{OfMcpToolApprovalSetting: openai.String(approval)},
	}}
}

// create runs a create request through openai-go, streamed (events checked
// against the invariants and OpenAI's types) or not, and returns the final
// response and the event counts.
func create(t *testing.T, g *gateway, stream bool, params responses.ResponseNewParams) (*responses.Response, map[string]int) {
	t.Helper()
	ctx := context.Background()
	if stream {
		evs := readSDKStream(t, g.client.Responses.NewStreaming(ctx, params))
		last := evs[len(evs)-1].ev.AsResponseCompleted().Response
		require.NoError(t, ssecheck.CheckOpenAIResponse([]byte(last.RawJSON())))
		return &last, countTypes(evs)
	}
	r, err := g.client.Responses.New(ctx, params)
	require.NoError(t, err)
	require.NoError(t, ssecheck.CheckOpenAIResponse([]byte(r.RawJSON())))
	return r, nil
}

func outputTypes(r *responses.Response) []string {
	out := make([]string, len(r.Output))
	for i, it := range r.Output {
		out[i] = it.Type
	}
	return out
}

// noSecrets asserts that no secret of the e2e tools is in b.
func noSecrets(t *testing.T, b []byte) {
	t.Helper()
	for _, s := range []string{"e2e-header-secret", "e2e-token-secret"} {
		require.NotContains(t, string(b), s)
	}
}

// Through openai-go, streamed and not, on both stores: list and call
// without approval; an approval round trip whose continuation does not
// list again; secrets reach the server but no response and no record.
func TestE2EMCP(t *testing.T) {
	t.Parallel()
	for _, dynamo := range []bool{false, true} {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("dynamo=%v/stream=%v", dynamo, stream), func(t *testing.T) {
				srv := mcptest.StartStreamable(mcptest.Options{})
				defer srv.Close()
				g := mcpGateway(t, dynamo, nil)
				ctx := context.Background()

				params := textParams(`call echo {"text":"hi"}`)
				params.Tools = []responses.ToolUnionParam{mcpToolParam("docs", srv.Endpoint, "never")}
				r, n := create(t, g, stream, params)
				require.Equal(t, responses.ResponseStatusCompleted, r.Status)
				require.Equal(t, []string{"mcp_list_tools", "mcp_call", "message"}, outputTypes(r))
				list := r.Output[0].AsMcpListTools()
				require.Equal(t, "docs", list.ServerLabel)
				require.Len(t, list.Tools, 7)
				c := r.Output[1].AsMcpCall()
				require.Equal(t, "docs", c.ServerLabel)
				require.Equal(t, "echo", c.Name)
				require.Equal(t, "echo: hi", c.Output)
				require.Equal(t, "Result: echo: hi", r.OutputText())
				if stream {
					require.Equal(t, 1, n["response.mcp_list_tools.in_progress"])
					require.Equal(t, 1, n["response.mcp_list_tools.completed"])
					require.Equal(t, 1, n["response.mcp_call.completed"])
				}
				noSecrets(t, []byte(r.RawJSON()))
				for _, h := range srv.Headers() {
					require.Equal(t, "e2e-header-secret", h.Get("X-Api-Key"))
					require.Equal(t, "Bearer e2e-token-secret", h.Get("Authorization"))
				}

				// Approval: the turn pauses; the approval runs the call;
				// the continuation does not list again.
				params = textParams(`call add {"a":20,"b":22}`)
				params.Tools = []responses.ToolUnionParam{mcpToolParam("docs", srv.Endpoint, "always")}
				params.PreviousResponseID = openai.String(r.ID)
				paused, _ := create(t, g, stream, params)
				require.Equal(t, responses.ResponseStatus("requires_action"), paused.Status)
				require.Equal(t, []string{"mcp_approval_request"}, outputTypes(paused), "the conversation holds the list")
				ar := paused.Output[0].AsMcpApprovalRequest()
				require.Equal(t, "add", ar.Name)
				require.JSONEq(t, `{"a":20,"b":22}`, ar.Arguments)

				params = responses.ResponseNewParams{Model: "test-model", PreviousResponseID: openai.String(paused.ID),
					Tools: []responses.ToolUnionParam{mcpToolParam("docs", srv.Endpoint, "always")},
					Input: responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{
						{OfMcpApprovalResponse: &responses.ResponseInputItemMcpApprovalResponseParam{ApprovalRequestID: ar.ID, Approve: true}},
					}}}
				done, _ := create(t, g, stream, params)
				require.Equal(t, responses.ResponseStatusCompleted, done.Status)
				require.Equal(t, []string{"mcp_call", "message"}, outputTypes(done))
				require.Equal(t, ar.ID, done.Output[0].AsMcpCall().ApprovalRequestID)
				require.Equal(t, "Result: 42", done.OutputText())

				for _, id := range []string{r.ID, paused.ID, done.ID} {
					got, err := g.client.Responses.Get(ctx, id, responses.ResponseGetParams{})
					require.NoError(t, err)
					noSecrets(t, []byte(got.RawJSON()))
					rec, err := g.app.Store.Get(ctx, id)
					require.NoError(t, err)
					for _, tool := range rec.Response.Tools {
						require.Nil(t, tool.Headers)
						require.Empty(t, tool.Authorization)
					}
				}

				// An approval the conversation does not hold is a 400.
				params.PreviousResponseID = openai.String(done.ID)
				params.Input.OfInputItemList[0].OfMcpApprovalResponse.ApprovalRequestID = "mcpr_unknown"
				_, err := g.client.Responses.New(ctx, params)
				e := wantAPIError(t, err, 400)
				require.Equal(t, "approval_request_not_found", e.Code)
			})
		}
	}
}

// Background responses with MCP secrets run on the worker; the stored job
// holds the secrets sealed, on both stores.
func TestE2EMCPBackground(t *testing.T) {
	t.Parallel()
	for _, dynamo := range []bool{false, true} {
		t.Run(fmt.Sprintf("dynamo=%v", dynamo), func(t *testing.T) {
			srv := mcptest.StartStreamable(mcptest.Options{})
			defer srv.Close()
			g := mcpGateway(t, dynamo, nil)
			ctx := context.Background()
			params := textParams(`call echo {"text":"later"}`)
			params.Tools = []responses.ToolUnionParam{mcpToolParam("docs", srv.Endpoint, "never")}
			params.Background = openai.Bool(true)
			r, err := g.client.Responses.New(ctx, params)
			require.NoError(t, err)
			noSecrets(t, []byte(r.RawJSON()))
			rec, err := g.app.Store.Get(ctx, r.ID)
			require.NoError(t, err)
			require.NotNil(t, rec.Job)
			job, err := json.Marshal(rec.Job)
			require.NoError(t, err)
			noSecrets(t, job)
			// Polled as a client would, for up to a minute: a loaded CI
			// machine runs the worker slowly, and a passing run stops at once.
			var final *responses.Response
			for deadline := time.Now().Add(time.Minute); ; {
				final, err = g.client.Responses.Get(ctx, r.ID, responses.ResponseGetParams{})
				require.NoError(t, err)
				if final.Status == responses.ResponseStatusCompleted || final.Status == responses.ResponseStatusFailed || time.Now().After(deadline) {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
			require.Equal(t, responses.ResponseStatusCompleted, final.Status, final.RawJSON())
			require.Equal(t, "Result: echo: later", final.OutputText())
			noSecrets(t, []byte(final.RawJSON()))
		})
	}
}

// openai-go's ToolChoiceMcpParam forces the server's tool: the model's
// first Chat Completions call names the function it knows the tool by in
// tool_choice, the second is "auto" again; the response echoes the choice
// as OpenAI's ToolChoiceMcp, streamed and not. Without a name, the first
// call offers the server's tools alone, "required".
func TestE2EMCPToolChoice(t *testing.T) {
	t.Parallel()
	srv := mcptest.StartStreamable(mcptest.Options{})
	defer srv.Close()
	for _, c := range []struct {
		name, choice string
		offered      int
	}{{"echo", `{"type":"function","function":{"name":"echo"}}`, 3}, {"", `"required"`, 2}} {
		for _, stream := range []bool{false, true} {
			g := mcpGateway(t, false, nil)
			params := textParams(`call echo {"text":"hi"}`)
			tool := mcpToolParam("docs", srv.Endpoint, "never")
			tool.OfMcp.AllowedTools = responses.ToolMcpAllowedToolsUnionParam{OfMcpAllowedTools: []string{"echo", "add"}}
			params.Tools = []responses.ToolUnionParam{tool, {OfFunction: &responses.FunctionToolParam{Name: "f", Parameters: map[string]any{"type": "object"}}}}
			choice := &responses.ToolChoiceMcpParam{ServerLabel: "docs"}
			if c.name != "" {
				choice.Name = openai.String(c.name)
			}
			params.ToolChoice = responses.ResponseNewParamsToolChoiceUnion{OfMcpTool: choice}
			r, _ := create(t, g, stream, params)
			require.Equal(t, []string{"mcp_list_tools", "mcp_call", "message"}, outputTypes(r))
			require.Equal(t, "echo: hi", r.Output[1].AsMcpCall().Output)
			mc := r.ToolChoice.AsMcpTool()
			require.Equal(t, "mcp", string(mc.Type), r.ToolChoice.RawJSON())
			require.Equal(t, "docs", mc.ServerLabel)
			require.Equal(t, c.name, mc.Name)
			reqs := g.fake.Requests()
			require.Len(t, reqs, 2)
			require.JSONEq(t, c.choice, string(reqs[0].ToolChoice))
			require.Len(t, reqs[0].Tools, c.offered)
			require.JSONEq(t, `"auto"`, string(reqs[1].ToolChoice))
			require.Len(t, reqs[1].Tools, 3)
		}
	}
}

// openai-go's ToolChoiceMcpParam naming a tool the server does not offer
// (its allowed_tools keep none of its tools, so the model is offered no
// tool at all) is a 400 naming tool_choice.name, and the model is not
// called.
func TestE2EMCPToolChoiceNothingOffered(t *testing.T) {
	t.Parallel()
	srv := mcptest.StartStreamable(mcptest.Options{})
	defer srv.Close()
	g := mcpGateway(t, false, nil)
	params := textParams(`call echo {"text":"hi"}`)
	tool := mcpToolParam("docs", srv.Endpoint, "never")
	tool.OfMcp.AllowedTools = responses.ToolMcpAllowedToolsUnionParam{OfMcpAllowedTools: []string{"nope"}}
	params.Tools = []responses.ToolUnionParam{tool}
	params.ToolChoice = responses.ResponseNewParamsToolChoiceUnion{OfMcpTool: &responses.ToolChoiceMcpParam{ServerLabel: "docs", Name: openai.String("echo")}}
	_, err := g.client.Responses.New(context.Background(), params)
	apiErr := wantAPIError(t, err, 400)
	require.Equal(t, "tool_choice.name", apiErr.Param, apiErr.Message)
	require.Empty(t, g.fake.Requests(), "no model call")
}

// 100 function tools and an MCP server listing 40 offer the model 140
// tools, more than OpenAI's Chat Completions takes (128; the fake refuses
// them as OpenAI does). With the backend's limit known (OpenAI's hosts,
// or LAMBENT_PROVIDER_MAX_TOOLS as here): through openai-go, a 400
// limit_exceeded naming tools before any model call, streamed too: the
// listing joins the held opening, taken back with it.
func TestE2EMCPTooManyTools(t *testing.T) {
	t.Parallel()
	srv := mcptest.StartHostile(mcptest.Hostile{Tools: 40})
	defer srv.Close()
	g := newGatewayWith(t, mcpModel(), map[string]string{"LAMBENT_FETCH_ALLOW_HOSTS": "127.0.0.1", "LAMBENT_PROVIDER_MAX_TOOLS": "128"}, nil)
	params := textParams("hi")
	params.Tools = []responses.ToolUnionParam{mcpToolParam("big", srv.Endpoint, "never")}
	for i := range 100 {
		params.Tools = append(params.Tools, responses.ToolUnionParam{OfFunction: &responses.FunctionToolParam{
			Name: fmt.Sprintf("f%d", i), Parameters: map[string]any{"type": "object"}}})
	}
	_, err := g.client.Responses.New(context.Background(), params)
	apiErr := wantAPIError(t, err, 400)
	require.Equal(t, "limit_exceeded", apiErr.Code, apiErr.Message)
	require.Equal(t, "tools", apiErr.Param, apiErr.Message)
	require.Contains(t, apiErr.Message, "140 tools")

	stream := g.client.Responses.NewStreaming(context.Background(), params)
	for stream.Next() {
		t.Errorf("an event: %s", stream.Current().Type)
	}
	apiErr = wantAPIError(t, stream.Err(), 400)
	require.Equal(t, "limit_exceeded", apiErr.Code, apiErr.Message)
	require.Empty(t, g.fake.Requests(), "no model call")
}

// The official TypeScript SDK's server, started with node, through
// openai-go and the npm openai SDK (streamed and not, approval included).
func TestE2EMCPTypeScriptServer(t *testing.T) {
	dir := jsClients(t)
	url := startTSServer(t, dir)
	g := mcpGateway(t, false, nil)

	params := textParams(`call shout {"text":"go client"}`)
	params.Tools = []responses.ToolUnionParam{mcpToolParam("ts", url, "never")}
	r, _ := create(t, g, true, params)
	require.Equal(t, []string{"mcp_list_tools", "mcp_call", "message"}, outputTypes(r))
	names := []string{}
	for _, tl := range r.Output[0].AsMcpListTools().Tools {
		names = append(names, tl.Name)
	}
	require.ElementsMatch(t, []string{"shout", "broken"}, names)
	require.Equal(t, "GO CLIENT", r.Output[1].AsMcpCall().Output)

	type item struct {
		Type              string
		Name              *string
		Output            *string
		Error             json.RawMessage
		ApprovalRequestID *string `json:"approval_request_id"`
		Tools             []string
	}
	var got struct {
		Plain struct {
			Status, Text string
			Items        []item
			Tools        []map[string]any
		}
		Streamed struct {
			Status, Text string
			Items        []item
			Events       []string
		}
		Approval struct {
			Paused struct {
				Status string
				Items  []item
			}
			Request string
			Resumed struct {
				Status, Text string
				Items        []item
			}
		}
	}
	runJS(t, dir, "openai_mcp.mjs", g.srv.URL+"/v1", &got, url)
	require.Equal(t, "completed", got.Plain.Status)
	require.Equal(t, "Result: HELLO", got.Plain.Text)
	require.Len(t, got.Plain.Items, 3)
	require.Equal(t, "mcp_list_tools", got.Plain.Items[0].Type)
	require.ElementsMatch(t, []string{"shout", "broken"}, got.Plain.Items[0].Tools)
	require.Equal(t, "HELLO", *got.Plain.Items[1].Output)
	for _, tool := range got.Plain.Tools {
		require.NotContains(t, tool, "headers")
	}
	require.Equal(t, "completed", got.Streamed.Status)
	require.Equal(t, "Result: HELLO", got.Streamed.Text)
	require.Contains(t, got.Streamed.Events, "response.mcp_list_tools.completed")
	require.Contains(t, got.Streamed.Events, "response.mcp_call.completed")
	require.Equal(t, "requires_action", got.Approval.Paused.Status)
	require.Equal(t, "mcp_approval_request", got.Approval.Paused.Items[len(got.Approval.Paused.Items)-1].Type)
	require.Equal(t, "completed", got.Approval.Resumed.Status)
	require.Equal(t, "mcp_call", got.Approval.Resumed.Items[0].Type)
	require.Equal(t, got.Approval.Request, *got.Approval.Resumed.Items[0].ApprovalRequestID)
	require.Contains(t, string(got.Approval.Resumed.Items[0].Error), "broken on purpose")
	// The model read the MCP tool's isError result marked as an error.
	require.Equal(t, "Result: Error: broken on purpose", got.Approval.Resumed.Text)
}

// The Vercel AI SDK's openai.tools.mcp validates every item and event
// against OpenAI's shapes: the listing, the call and the answer come back,
// generated and streamed, with no validation error.
func TestClientAISDKMCP(t *testing.T) {
	dir := jsClients(t)
	url := startTSServer(t, dir)
	g := mcpGateway(t, false, nil)
	type part struct {
		Type, Name       string
		ProviderExecuted bool
		Output           json.RawMessage
	}
	var got struct {
		Errors           []string
		Generate, Stream *struct {
			Text  string
			Parts []part
		}
	}
	runJS(t, dir, "ai_sdk_mcp.mjs", g.srv.URL+"/v1", &got, url)
	require.Empty(t, got.Errors)
	for _, r := range []*struct {
		Text  string
		Parts []part
	}{got.Generate, got.Stream} {
		require.NotNil(t, r)
		require.Equal(t, "Result: HELLO", r.Text)
		require.Len(t, r.Parts, 2, "%+v", r.Parts)
		require.Equal(t, "tool-result", r.Parts[1].Type)
		require.True(t, r.Parts[1].ProviderExecuted)
		require.Contains(t, string(r.Parts[1].Output), "HELLO")
	}
}

// startTSServer starts testdata/clients/mcp_server.mjs and returns its URL;
// the server stops with the test.
func startTSServer(t *testing.T, dir string) string {
	t.Helper()
	cmd := exec.Command("node", filepath.Join(dir, "mcp_server.mjs"))
	cmd.Dir = dir
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = stdin.Close()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err)
	var ready struct{ URL string }
	require.NoError(t, json.Unmarshal([]byte(line), &ready), line)
	return ready.URL
}

// Manifest servers: secrets from SSM and Secrets Manager, enabled with
// {"type":"lambent:<name>"}, over streamable HTTP, SSE and stdio.
func TestE2EMCPManifest(t *testing.T) {
	t.Parallel()
	streamable := mcptest.StartStreamable(mcptest.Options{})
	defer streamable.Close()
	sse := mcptest.StartSSE(mcptest.Options{})
	defer sse.Close()
	secrets := fakessm.Start(fakessm.Options{
		Params:  map[string]string{"/lambent/mcp-key": "ssm-secret\n"},
		Secrets: map[string]string{"mcp-token": `{"token":"sm-secret"}`},
	})
	defer secrets.Close()
	ssmClient, err := awsjson.NewSSM(secrets.Config())
	require.NoError(t, err)
	smClient, err := awsjson.NewSecretsManager(secrets.Config())
	require.NoError(t, err)
	opts := &app.Options{SSM: ssmClient, SecretsManager: smClient}
	manifest := map[string]any{"tools": []map[string]any{
		{"name": "docs", "description": "Docs over streamable HTTP.", "backing": map[string]any{"type": "mcp", "url": streamable.Endpoint,
			"secret_headers": map[string]string{"X-Api-Key": "ssm:/lambent/mcp-key"}, "authorization": "secretsmanager:mcp-token#token",
			"require_approval": "never", "allowed_tools": []string{"echo"}}},
		{"name": "legacy", "backing": map[string]any{"type": "mcp", "transport": "sse", "url": sse.Endpoint, "require_approval": "never"}},
		{"name": "local", "backing": map[string]any{"type": "mcp", "transport": "stdio", "command": []string{stdioServer(t)}, "require_approval": "never"}},
	}}
	m, err := json.Marshal(manifest)
	require.NoError(t, err)
	g := newGatewayWith(t, mcpModel(), map[string]string{"LAMBENT_TOOLS": string(m)}, opts)
	require.Len(t, secrets.Requests(), 2, "each secret read once, at start-up")

	for _, c := range []struct{ tool, call, want string }{
		{"docs", `call echo {"text":"manifest"}`, "echo: manifest"},
		{"legacy", `call add {"a":1,"b":1}`, "2"},
		{"local", `call echo {"text":"stdio"}`, "echo: stdio"},
	} {
		params := textParams(c.call)
		r, err := g.client.Responses.New(context.Background(), params, option.WithJSONSet("tools", []map[string]any{{"type": "lambent:" + c.tool}}))
		require.NoError(t, err, c.tool)
		require.NoError(t, ssecheck.CheckOpenAIResponse([]byte(r.RawJSON())))
		require.Equal(t, []string{"mcp_list_tools", "mcp_call", "message"}, outputTypes(r), c.tool)
		require.Equal(t, c.tool, r.Output[1].AsMcpCall().ServerLabel)
		require.Equal(t, c.want, r.Output[1].AsMcpCall().Output, c.tool)
		require.Equal(t, "mcp", r.Tools[0].Type)
		require.Equal(t, c.tool, r.Tools[0].AsMcp().ServerLabel)
		require.NotContains(t, r.RawJSON(), "-secret")
	}
	for _, h := range streamable.Headers() {
		require.Equal(t, "ssm-secret", h.Get("X-Api-Key"))
		require.Equal(t, "Bearer sm-secret", h.Get("Authorization"))
	}
	_, err = g.client.Responses.New(context.Background(), textParams("x"), option.WithJSONSet("tools", []map[string]any{{"type": "lambent:nope"}}))
	wantAPIError(t, err, 400)
}

// stdioServer builds internal/testing/mcptest/stdioserver once.
func stdioServer(t *testing.T) string {
	t.Helper()
	bin, err := mcptest.StdioServer()
	require.NoError(t, err)
	return bin
}
