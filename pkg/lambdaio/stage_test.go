package lambdaio

import (
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestHTTPAPINamedStage: an HTTP API serves a stage other than $default at
// https://<api>.execute-api.<region>.amazonaws.com/<stage>/..., and puts
// that stage in the event's path (rawPath and requestContext.http.path of
// payload 2.0, path of payload 1.0), unlike a REST API. The handler must
// see the API's own path, /v1/responses, as on every other front door; a
// custom domain's path carries no stage and stays as it is.
func TestHTTPAPINamedStage(t *testing.T) {
	var got string
	h := New(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.URL.Path
	}), Config{})
	serve := func(t *testing.T, ev any) string {
		t.Helper()
		got = ""
		_, err := h.Handle(testCtx(t), mustJSON(t, ev))
		require.NoError(t, err)
		return got
	}
	t.Run("payload 2.0", func(t *testing.T) {
		ev := httpAPIEvent("POST", "/prod/v1/responses", "{}")
		ev.RequestContext.Stage = "prod"
		require.Equal(t, "/v1/responses", serve(t, ev))
		ev.RawPath = "/prod"
		ev.RequestContext.HTTP.Path = "/prod"
		require.Equal(t, "/", serve(t, ev))
	})
	t.Run("payload 1.0", func(t *testing.T) {
		ev := map[string]any{
			"version": "1.0", "resource": "/v1/responses", "path": "/prod/v1/responses", "httpMethod": "POST", "body": "{}",
			"requestContext": map[string]any{"domainName": "r3pmxmplak.execute-api.us-east-1.amazonaws.com", "apiId": "r3pmxmplak", "stage": "prod", "path": "/prod/v1/responses"},
		}
		require.Equal(t, "/v1/responses", serve(t, ev))
	})
	t.Run("$default stage", func(t *testing.T) {
		ev := httpAPIEvent("POST", "/prod/v1/responses", "{}")
		require.Equal(t, "/prod/v1/responses", serve(t, ev))
	})
	t.Run("custom domain", func(t *testing.T) {
		ev := httpAPIEvent("POST", "/prod/v1/responses", "{}")
		ev.RequestContext.Stage = "prod"
		ev.RequestContext.DomainName = "api.example.com"
		require.Equal(t, "/prod/v1/responses", serve(t, ev))
	})
	t.Run("REST API", func(t *testing.T) {
		ev := restEvent("POST", "/prod/v1/responses", "{}")
		ev.StageVariables = map[string]string{TransferModeStageVariable: "BUFFERED"}
		require.Equal(t, "/prod/v1/responses", serve(t, ev))
	})
}

// TestRESTCustomDomainBasePath: a REST API reached through a custom
// domain's API mapping with a base path (https://api.example.com/openai/v1/
// responses) gets events whose path keeps that base path
// (/openai/v1/responses), while its resources (the event's resource) name
// /v1/responses. The handler must see the API's path, as on the
// execute-api domain; a mapping without base path changes nothing.
func TestRESTCustomDomainBasePath(t *testing.T) {
	var got string
	h := New(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.URL.Path
	}), Config{})
	serve := func(t *testing.T, path, resource string, params map[string]string) string {
		t.Helper()
		ev := restEvent("GET", path, "")
		ev.Resource, ev.PathParameters = resource, params
		ev.RequestContext.DomainName, ev.RequestContext.ResourcePath, ev.RequestContext.Path = "api.example.com", resource, path
		ev.Headers["Host"], ev.MultiValueHeaders["Host"] = "api.example.com", []string{"api.example.com"}
		got = ""
		out, err := h.Handle(testCtx(t), mustJSON(t, ev))
		require.NoError(t, err)
		require.NoError(t, out.(io.Closer).Close())
		return got
	}
	require.Equal(t, "/v1/responses/resp_1", serve(t, "/openai/v1/responses/resp_1", "/v1/responses/{id}", map[string]string{"id": "resp_1"}))
	require.Equal(t, "/v1/responses", serve(t, "/team/openai/v1/responses", "/v1/responses", nil))
	require.Equal(t, "/v1/models/meta-llama/Llama-3.1-8B", serve(t, "/openai/v1/models/meta-llama/Llama-3.1-8B", "/v1/models/{id+}", map[string]string{"id": "meta-llama/Llama-3.1-8B"}))
	require.Equal(t, "/v1/responses/", serve(t, "/openai/v1/responses/", "/v1/responses", nil))
	require.Equal(t, "/v1/responses/resp_1", serve(t, "/v1/responses/resp_1", "/v1/responses/{id}", map[string]string{"id": "resp_1"}))
	require.Equal(t, "/", serve(t, "/openai/", "/", nil))
}
