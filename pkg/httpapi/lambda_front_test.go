package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/internal/testing/fakellm"
	"github.com/lambent/lambent/pkg/lambdaio"
)

// httpAPIRequest is an HTTP API (payload 2.0) event as API Gateway sends
// it: the path decoded.
func httpAPIRequest(t *testing.T, method, path, body string) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(events.APIGatewayV2HTTPRequest{
		Version: "2.0", RouteKey: "$default", RawPath: path,
		Headers: map[string]string{"content-type": "application/json"},
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			AccountID: "123456789012", APIID: "r3pmxmplak", Stage: "$default", RequestID: "rid",
			DomainName: "r3pmxmplak.execute-api.us-east-1.amazonaws.com",
			HTTP:       events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: method, Path: path, Protocol: "HTTP/1.1", SourceIP: "192.0.2.1"},
		},
		Body: body,
	})
	require.NoError(t, err)
	return b
}

// A buffered front door (an HTTP API) gives a request 28 s, before API
// Gateway's 29 s cut: a compaction whose model call outlasts it answers a
// 504 in the OpenAI error shape, not an empty 200 (the handler took the
// passed deadline for a client gone away and wrote nothing).
func TestBufferedDeadlineAnswersA504(t *testing.T) {
	hold := make(chan struct{})
	defer close(hold)
	g := newGateway(t, fakellm.NewHandler(func(fakellm.Request) fakellm.Turn { return fakellm.Turn{Text: "s", Block: hold} }),
		map[string]string{"LAMBENT_COMPACTION_KEYS": compactionKeys("k1")})
	h := lambdaio.New(g.app.Handler, lambdaio.Config{BufferedTimeout: 300 * time.Millisecond})
	out, err := h.Handle(context.Background(), httpAPIRequest(t, http.MethodPost, "/v1/responses/compact", `{"model":"test-model","input":"hi"}`))
	require.NoError(t, err)
	resp := out.(events.APIGatewayV2HTTPResponse)
	wantError(t, resp.StatusCode, []byte(resp.Body), http.StatusGatewayTimeout, "", "")
}

// An HTTP API passes the path decoded: a client's "resp_a%25b" comes as
// "resp_a%b", which no URL parses. It reaches the router as it would
// locally (a 404 in the OpenAI shape) instead of failing the invocation
// (API Gateway's bare 500).
func TestDecodedPathReachesTheRouter(t *testing.T) {
	g := newGateway(t, fakellm.New(fakellm.Turn{Text: "s"}), nil)
	status, _, body := g.do(http.MethodGet, "/v1/responses/resp_a%25b", "", "")
	wantError(t, status, body, http.StatusNotFound, "id", "response_not_found")
	h := lambdaio.New(g.app.Handler, lambdaio.Config{})
	out, err := h.Handle(context.Background(), httpAPIRequest(t, http.MethodGet, "/v1/responses/resp_a%b", ""))
	require.NoError(t, err)
	resp := out.(events.APIGatewayV2HTTPResponse)
	wantError(t, resp.StatusCode, []byte(resp.Body), http.StatusNotFound, "id", "response_not_found")
}

// An HTTP API passes a client's "%23" as "#" too: the id "resp_x#" of
// DELETE /v1/responses/resp_x%23 is not resp_x, which stays stored (as
// locally, a 404), and the query after it is the query's, not a fragment's.
func TestDecodedHashIsPartOfThePath(t *testing.T) {
	g := newGateway(t, fakellm.New(fakellm.Turn{Text: "s"}), nil)
	status, _, body := g.do(http.MethodPost, "/v1/responses", "application/json", `{"input":"hi"}`)
	require.Equal(t, http.StatusOK, status, "%s", body)
	var created struct{ ID string }
	require.NoError(t, json.Unmarshal(body, &created))
	status, _, body = g.do(http.MethodDelete, "/v1/responses/"+created.ID+"%23", "", "")
	wantError(t, status, body, http.StatusNotFound, "id", "response_not_found")

	h := lambdaio.New(g.app.Handler, lambdaio.Config{})
	out, err := h.Handle(context.Background(), httpAPIRequest(t, http.MethodDelete, "/v1/responses/"+created.ID+"#", ""))
	require.NoError(t, err)
	resp := out.(events.APIGatewayV2HTTPResponse)
	wantError(t, resp.StatusCode, []byte(resp.Body), http.StatusNotFound, "id", "response_not_found")
	status, _, body = g.do(http.MethodGet, "/v1/responses/"+created.ID, "", "")
	require.Equal(t, http.StatusOK, status, "the response was deleted: %s", body)
}
