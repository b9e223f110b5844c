package lambdaio

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/internal/testing/lambdareply"
	"github.com/lambent/lambent/pkg/requestid"
)

// An event whose fields make no http.Request — a body that is not the
// base64 it claims to be, a method or a URL net/http refuses — is answered
// through every front door with a 400 in the OpenAI error shape, carrying a
// request id, in the front door's reply shape: not an invocation error,
// which the front door would pass on as a bare 502. The handler is not
// called.
func TestUnreadableEvents(t *testing.T) {
	// An HTTP API's payload 1.0 is a REST API's event with a version.
	type httpAPIV1 struct {
		*events.APIGatewayProxyRequest
		Version string `json:"version"`
	}
	badBase64 := func(ev any) {
		switch e := ev.(type) {
		case *events.LambdaFunctionURLRequest:
			e.Body, e.IsBase64Encoded = "%%%", true
		case *events.APIGatewayProxyRequest:
			e.Body, e.IsBase64Encoded = "%%%", true
		case httpAPIV1:
			e.Body, e.IsBase64Encoded = "%%%", true
		case *events.APIGatewayV2HTTPRequest:
			e.Body, e.IsBase64Encoded = "%%%", true
		}
	}
	bufferedREST := func() *events.APIGatewayProxyRequest {
		ev := restEvent("POST", "/v1/responses", "{}")
		ev.StageVariables = map[string]string{TransferModeStageVariable: "BUFFERED"}
		return ev
	}
	v2Query := httpAPIEvent("GET", "/v1/responses", "")
	v2Query.RawQueryString = "a=\x01"
	cases := map[string]any{
		"function URL, a bad base64 body":  urlEvent("POST", "/v1/responses", "", ""),
		"function URL, a bad method":       urlEvent("GE T", "/v1/responses", "", ""),
		"function URL, a control in query": urlEvent("GET", "/v1/responses", "a=\x01", ""),
		"streamed REST, a bad base64 body": restEvent("POST", "/v1/responses", ""),
		"streamed REST, a bad method":      restEvent("GE T", "/v1/responses", ""),
		"buffered REST, a bad base64 body": bufferedREST(),
		"HTTP API 1.0, a bad base64 body":  httpAPIV1{restEvent("POST", "/v1/responses", ""), "1.0"},
		"HTTP API 2.0, a bad base64 body":  httpAPIEvent("POST", "/v1/responses", ""),
		"HTTP API 2.0, a bad method":       httpAPIEvent("GE T", "/v1/responses", ""),
		"HTTP API 2.0, a control in query": v2Query,
	}
	for name, ev := range cases {
		if strings.Contains(name, "base64") {
			badBase64(ev)
		}
		t.Run(name, func(t *testing.T) {
			h := New(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
				t.Error("the handler was called")
			}), Config{Logger: quiet()})
			out, err := h.Handle(testCtx(t), mustJSON(t, ev))
			require.NoError(t, err, "an invocation error is the front door's 502")
			status, hd, body := lambdareply.Reply(t, out)
			assert.Equal(t, http.StatusBadRequest, status)
			assert.Equal(t, "application/json", hd.Get("Content-Type"))
			assert.NotEmpty(t, hd.Get(requestid.Header))
			assert.JSONEq(t, `{"error":{"message":"The request's method, URL or body could not be read.","type":"invalid_request_error","param":null,"code":null}}`, string(body))
		})
	}
}

// FuzzHandle feeds Handle events of every front door whose client-made
// fields (method, path, query, a header, the body and its base64 flag, a
// REST resource and its greedy path parameter) are arbitrary: it never
// fails the invocation or panics, and answers either the handler's 200 or
// the 400 of an unreadable event, in the front door's reply shape.
func FuzzHandle(f *testing.F) {
	f.Add(uint8(0), "POST", "/v1/responses", "a=1", "x-h", "v", `{"input":"hi"}`, false, "/{proxy+}")
	f.Add(uint8(1), "GET", "/openai/v1/responses/resp_1", "", "Host", "api.example.com", "", false, "/v1/responses/{id}")
	f.Add(uint8(2), "DELETE", "/prod/v1/responses/a%2Fb", "q=%zz", "cookie", "a=1", "e30=", true, "/{proxy+}")
	f.Add(uint8(3), "POST", "/v1/responses", "", "content-type", "application/json", "%%%", true, "")
	f.Add(uint8(4), "GE T", "/v1/res\x01ponses#x?y", "a=\x01", "", "", "", false, "/{a+}/{b}")
	f.Fuzz(func(t *testing.T, kind uint8, method, path, query, hk, hv, body string, b64 bool, resource string) {
		headers := map[string]string{hk: hv}
		var ev any
		switch kind % 5 {
		case 0:
			e := urlEvent(method, path, query, body)
			e.Headers[hk], e.IsBase64Encoded = hv, b64
			ev = e
		case 1, 2:
			e := restEvent(method, path, body)
			e.Resource, e.PathParameters = resource, map[string]string{"proxy": strings.TrimPrefix(path, "/")}
			e.Headers, e.MultiValueHeaders, e.IsBase64Encoded = headers, nil, b64
			e.MultiValueQueryStringParameters = map[string][]string{query: {hv}}
			e.RequestContext.DomainName = "api.example.com" // a custom domain: its base path is cut
			if kind%5 == 2 {
				e.StageVariables = map[string]string{TransferModeStageVariable: "BUFFERED"}
			}
			ev = e
		case 3:
			e := httpAPIEvent(method, path, body)
			e.Headers, e.RawQueryString, e.IsBase64Encoded = headers, query, b64
			e.RequestContext.Stage = "prod" // a named stage: its prefix is cut
			ev = e
		default:
			e := restEvent(method, path, body)
			e.Headers, e.IsBase64Encoded = headers, b64
			ev = struct {
				*events.APIGatewayProxyRequest
				Version string `json:"version"`
			}{e, "1.0"}
		}
		payload, err := json.Marshal(ev)
		if err != nil {
			t.Skip("not JSON: no front door sends it")
		}
		h := New(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			_, _ = io.WriteString(w, "ok")
		}), Config{Logger: quiet()})
		out, err := h.Handle(testCtx(t), payload)
		if Detect(payload) == EventUnknown {
			require.Error(t, err)
			return
		}
		require.NoError(t, err)
		status, _, got := lambdareply.Reply(t, out)
		switch status {
		case http.StatusOK:
			require.Equal(t, "ok", string(got))
		case http.StatusBadRequest:
			require.Contains(t, string(got), "could not be read")
		default:
			t.Fatalf("status %d: %s", status, got)
		}
	})
}
