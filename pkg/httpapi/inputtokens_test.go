package httpapi_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/internal/testing/fakellm"
	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/httpapi"
)

// POST /v1/responses/input_tokens (OpenAI's input token count) is a 501
// input_tokens_unsupported in the OpenAI error shape, with x-should-retry:
// false, never reaching the model: the gateway has no tokenizer to count
// with. It was a 405 (the path read as the id of a response, which has no
// POST). openai-go's Responses.InputTokens.Count and the npm SDK's
// responses.inputTokens.count (with its default retries) surface it once.
func TestInputTokensUnsupported(t *testing.T) {
	t.Parallel()
	g := newGateway(t, fakellm.New(), nil)
	status, h, body := g.do(http.MethodPost, "/v1/responses/input_tokens", "application/json", `{"model":"m","input":"hi"}`)
	wantError(t, status, body, http.StatusNotImplemented, "-", "input_tokens_unsupported")
	require.Equal(t, "false", h.Get("X-Should-Retry"))

	_, err := g.client.Responses.InputTokens.Count(context.Background(), responses.InputTokenCountParams{
		Model: openai.String("m"), Input: responses.InputTokenCountParamsInputUnion{OfString: openai.String("hi")}})
	var ae *openai.Error
	require.True(t, errors.As(err, &ae), "%v", err)
	require.Equal(t, http.StatusNotImplemented, ae.StatusCode)
	require.Equal(t, "input_tokens_unsupported", ae.Code)

	var got struct {
		Status int
		Class  string
		Error  struct{ Code, Type, Message string }
	}
	runJS(t, jsClients(t), "openai_input_tokens.mjs", g.srv.URL+"/v1", &got)
	require.Equal(t, http.StatusNotImplemented, got.Status)
	require.Equal(t, "input_tokens_unsupported", got.Error.Code)
	require.Contains(t, got.Error.Message, "not supported")
	require.Equal(t, 0, g.fake.Calls(), "nothing reaches the model")
}

// A feature this gateway does not offer (a 501: compaction on Lambda
// without keys, conversations on a store without them) is an error no
// retry cures: x-should-retry: false, so the official SDKs, which retry
// every 5xx, ask once.
func TestNotImplementedNotRetried(t *testing.T) {
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodPost, "/v1/responses/compact", nil)
	httpapi.WriteError(rec, req, slog.New(slog.DiscardHandler), &api.Error{Status: http.StatusNotImplemented,
		Type: api.ErrTypeInvalidRequest, Code: "compaction_unavailable", Message: "Compaction is not configured."})
	require.Equal(t, http.StatusNotImplemented, rec.Code)
	require.Equal(t, "false", rec.Header().Get("X-Should-Retry"))
}
