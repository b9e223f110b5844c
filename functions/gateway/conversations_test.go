package main

import (
	"encoding/json"
	"io"
	"net/url"
	"strconv"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/internal/testing/fakellm"
	"github.com/lambent/lambent/internal/testing/lambdareply"
)

// frontDoor turns a request into the event of one of the gateway's front
// doors, from its sample event.
type frontDoor func(t *testing.T, method, target, body string) json.RawMessage

// restEvent is a REST API (proxy v1) event of method and target.
func restEvent(t *testing.T, method, target, body string) json.RawMessage {
	var ev map[string]any
	require.NoError(t, json.Unmarshal(readEvent(t, "gateway-rest-create-stream.json"), &ev))
	u, err := url.Parse(target)
	require.NoError(t, err)
	ev["path"], ev["httpMethod"], ev["body"] = u.Path, method, body
	ev["resource"] = u.Path
	q, mq := map[string]string{}, map[string][]string{}
	for k, v := range u.Query() {
		q[k], mq[k] = v[len(v)-1], v
	}
	ev["queryStringParameters"], ev["multiValueQueryStringParameters"] = q, mq
	rc := ev["requestContext"].(map[string]any)
	rc["httpMethod"], rc["path"], rc["resourcePath"] = method, "/prod"+u.Path, u.Path
	for _, h := range []string{"headers", "multiValueHeaders"} {
		delete(ev[h].(map[string]any), "content-length")
	}
	ev["headers"].(map[string]any)["Accept"] = "application/json"
	b, err := json.Marshal(ev)
	require.NoError(t, err)
	return b
}

// urlEvent is a function URL (payload v2) event of method and target.
func urlEvent(t *testing.T, method, target, body string) json.RawMessage {
	var ev map[string]any
	require.NoError(t, json.Unmarshal(readEvent(t, "gateway-url-create.json"), &ev))
	u, err := url.Parse(target)
	require.NoError(t, err)
	ev["rawPath"], ev["rawQueryString"], ev["body"] = u.Path, u.RawQuery, body
	rc := ev["requestContext"].(map[string]any)
	http := rc["http"].(map[string]any)
	http["method"], http["path"] = method, u.Path
	delete(ev["headers"].(map[string]any), "content-length")
	b, err := json.Marshal(ev)
	require.NoError(t, err)
	return b
}

// The Conversations API through the REST API's and the function URL's
// events: create a conversation, a response in it, list its items, delete
// it.
func TestConversationsThroughFrontDoors(t *testing.T) {
	t.Parallel()
	for name, door := range map[string]frontDoor{"rest": restEvent, "url": urlEvent} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			fake := fakellm.New(fakellm.Turn{Text: answer})
			defer fake.Close()
			h := lambdaHandler(newApp(t, fake))
			call := func(method, target, body string) (int, []byte) {
				t.Helper()
				out, err := h(testCtx(t), door(t, method, target, body))
				require.NoError(t, err)
				r, ok := out.(io.ReadCloser)
				require.True(t, ok, "a streaming response, got %T", out)
				s := lambdareply.ReadStreamed(t, r)
				return s.Prelude.StatusCode, s.Body()
			}
			status, body := call("POST", "/v1/conversations", `{"items":[{"role":"user","content":"Hi"}],"metadata":{"door":"`+name+`"}}`)
			require.Equal(t, 200, status, "%s", body)
			var conv struct{ ID, Object string }
			require.NoError(t, json.Unmarshal(body, &conv))
			require.Equal(t, "conversation", conv.Object)

			status, body = call("POST", "/v1/responses", `{"model":"gpt-4.1-mini","conversation":`+strconv.Quote(conv.ID)+`,"input":"Say hello"}`)
			require.Equal(t, 200, status, "%s", body)
			require.Equal(t, answer, requireCompleted(t, body).text())
			require.Len(t, fake.Requests()[0].Messages, 2, "the model saw the conversation's item")

			status, body = call("GET", "/v1/conversations/"+conv.ID+"/items?order=asc&limit=2", "")
			require.Equal(t, 200, status, "%s", body)
			var list struct {
				Data    []struct{ ID, Role string }
				HasMore bool `json:"has_more"`
			}
			require.NoError(t, json.Unmarshal(body, &list))
			require.Len(t, list.Data, 2)
			require.True(t, list.HasMore)
			status, body = call("GET", "/v1/conversations/"+conv.ID+"/items/"+list.Data[1].ID, "")
			require.Equal(t, 200, status, "%s", body)
			status, _ = call("DELETE", "/v1/conversations/"+conv.ID, "")
			require.Equal(t, 200, status)
			status, _ = call("GET", "/v1/conversations/"+conv.ID, "")
			require.Equal(t, 404, status)
		})
	}
}

var (
	_ io.ReadCloser = (*events.LambdaFunctionURLStreamingResponse)(nil)
	_ io.ReadCloser = (*events.APIGatewayProxyStreamingResponse)(nil)
)
