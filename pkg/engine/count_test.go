package engine

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/internal/testing/mcptest"
	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/provider"
	"github.com/lambent/lambent/pkg/tenant"
)

// counter is a scripted provider that counts tokens (provider.Counter):
// each count is recorded and answers n.
type counter struct {
	*scripted
	n       int
	counted []*provider.Request
}

func (c *counter) CountTokens(_ context.Context, req *provider.Request) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.counted = append(c.counted, req)
	return c.n, nil
}

// withoutIDs returns a copy of req whose items have no ids (a count's
// input items get ids of a response that is never made).
func withoutIDs(req *provider.Request) provider.Request {
	c := *req
	c.Items = append([]api.Item(nil), req.Items...)
	for i := range c.Items {
		c.Items[i].ID = ""
	}
	return c
}

func decodeCount(t *testing.T, body string) *api.CreateResponseRequest {
	t.Helper()
	req, err := api.DecodeInputTokensRequest([]byte(body))
	require.NoError(t, err)
	return req
}

// CountInputTokens counts the model call the create request would make
// first, built by the create's own path: previous_response_id's
// conversation, the new instructions, hosted and function tools, the
// tenant-scoped values. The provider counts it; nothing reaches the
// model, nothing is stored. A previous response of another tenant is not
// found.
func TestCountInputTokens(t *testing.T) {
	forStores(t, testCountInputTokens)
}

func testCountInputTokens(t *testing.T, mk storeMaker) {
	p := &counter{scripted: script(text("Hi.", 1, 1), text("Later.", 1, 1)), n: 42}
	st := mk(t)
	e, _ := newEngine(t, p, newMock(echoTool, "lookup"), func(c *Config) { c.Store = st })
	rec, err := run1(t, e, `{"input":"hello","instructions":"Be brief.","tools":[{"type":"lambent:lookup"}]}`)
	require.NoError(t, err)
	prev := rec.response(t).ID
	body := `{"previous_response_id":"` + prev + `","input":"and now?","instructions":"Be terse.",` +
		`"tools":[{"type":"lambent:lookup"},{"type":"function","name":"f","parameters":{"type":"object"}}],"tool_choice":"required"}`
	ctx := context.Background()
	got, err := e.CountInputTokens(ctx, decodeCount(t, body))
	require.NoError(t, err)
	require.Equal(t, &api.InputTokens{Object: "response.input_tokens", InputTokens: 42}, got)
	require.Len(t, p.counted, 1)
	require.Len(t, p.requests(), 1, "no model call")

	// The create of the same request makes the call that was counted.
	rec = &recorder{}
	require.NoError(t, e.CreateResponse(ctx, decodeReq(t, body), rec))
	counted, called := withoutIDs(p.counted[0]), withoutIDs(p.requests()[1])
	require.Equal(t, called, counted)
	require.Equal(t, "Be terse.", counted.Instructions)
	require.Equal(t, []string{"message", "message", "message"}, types(counted.Items))
	require.Len(t, counted.Tools, 2)
	require.Equal(t, api.ToolChoiceRequired, counted.ToolChoice)

	_, err = e.CountInputTokens(tenant.With(ctx, "other"), decodeCount(t, body))
	var ae *api.Error
	require.True(t, errors.As(err, &ae), "%v", err)
	require.Equal(t, http.StatusNotFound, ae.Status)
	require.Equal(t, "previous_response_not_found", ae.Code)
	require.Len(t, p.counted, 1)
}

// A model whose provider counts no tokens is a 501
// input_tokens_unsupported naming it, which no retry cures, before
// anything is read; a request a create would refuse is refused first.
func TestCountInputTokensUnsupported(t *testing.T) {
	p := script()
	e, _ := newEngine(t, p, nil)
	_, err := e.CountInputTokens(context.Background(), decodeCount(t, `{"input":"hi","previous_response_id":"resp_unknown"}`))
	var ae *api.Error
	require.True(t, errors.As(err, &ae), "%v", err)
	require.Equal(t, http.StatusNotImplemented, ae.Status)
	require.Equal(t, provider.CodeInputTokensUnsupported, ae.Code)
	require.True(t, ae.NoRetry)
	require.Contains(t, ae.Message, `"test-model"`)
	require.Empty(t, p.requests())

	c := &counter{scripted: script()}
	e, _ = newEngine(t, c, nil)
	_, err = e.CountInputTokens(context.Background(), decodeCount(t, `{"input":"hi","tools":[{"type":"lambent:nope"}]}`))
	require.True(t, errors.As(err, &ae), "%v", err)
	require.Equal(t, "unknown_hosted_tool", ae.Code)
	require.Empty(t, c.counted)
}

// A count reads a conversation without taking its lock: it counts while
// a response runs in the conversation, and leaves that response's lock.
func TestCountInputTokensInLockedConversation(t *testing.T) {
	forStores(t, testCountInLockedConversation)
}

func testCountInLockedConversation(t *testing.T, mk storeMaker) {
	p := &counter{scripted: script(text("Hi.", 1, 1)), n: 7}
	st := mk(t)
	e, _ := newEngine(t, p, nil, func(c *Config) { c.Store = st })
	cs, conv := newConversation(t, st)
	ctx := context.Background()
	_, err := run1(t, e, `{"conversation":"`+conv.ID+`","input":"hello"}`)
	require.NoError(t, err)
	_, err = cs.LockConversation(ctx, conv.ID, "resp_running", time.Now().Add(time.Minute))
	require.NoError(t, err)
	got, err := e.CountInputTokens(ctx, decodeCount(t, `{"conversation":"`+conv.ID+`","input":"more"}`))
	require.NoError(t, err)
	require.Equal(t, 7, got.InputTokens)
	require.Equal(t, []string{"message", "message", "message"}, types(p.counted[0].Items), "the conversation, then the input")
	_, err = run1(t, e, `{"conversation":"`+conv.ID+`","input":"more"}`)
	var ae *api.Error
	require.True(t, errors.As(err, &ae), "%v", err)
	require.Equal(t, "conversation_locked", ae.Code, "the running response keeps its lock")
}

// A request's MCP server is listed for a count as the create's first turn
// lists it: its allowed tools are part of what the model reads. A
// continuation holding the list counts with it.
func TestCountInputTokensListsMCPTools(t *testing.T) {
	t.Parallel()
	srv := startMCP(t, mcptest.Options{})
	p := &counter{scripted: script(text("done", 1, 1)), n: 9}
	e, _ := newEngine(t, p, nil, withMCP)
	tool := mcpServerTool(srv.Endpoint, `,"require_approval":"never","allowed_tools":["echo","add"]`)
	_, err := e.CountInputTokens(context.Background(), decodeCount(t, `{"input":"x","tools":[`+tool+`]}`))
	require.NoError(t, err)
	require.Equal(t, []string{"add", "echo"}, toolNames(p.counted[0].Tools))
	require.Equal(t, []string{"message"}, types(p.counted[0].Items), "the listing is no item of the model's")

	rec, err := run1(t, e, `{"input":"x","tools":[`+tool+`]}`)
	require.NoError(t, err)
	_, err = e.CountInputTokens(context.Background(), decodeCount(t, `{"input":"y","previous_response_id":"`+rec.openAIResponse(t).ID+`","tools":[`+tool+`]}`))
	require.NoError(t, err)
	require.Equal(t, []string{"add", "echo"}, toolNames(p.counted[1].Tools))
}
