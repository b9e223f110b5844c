package httpapi_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/internal/fakellm"
)

// With LAMBENT_API_KEYS set, every API route needs a listed bearer key, and
// each key's tenant sees only its own responses.
func TestAPIKeysAndTenants(t *testing.T) {
	const keyA, keyB = "sk-lambent-tenant-a-0123456789", "sk-lambent-tenant-b-0123456789"
	g := newGateway(t, fakellm.NewHandler(func(fakellm.Request) fakellm.Turn { return fakellm.Turn{Text: "hi"} }),
		map[string]string{"LAMBENT_API_KEYS": "acme=" + keyA + ", globex=" + keyB})
	ctx := context.Background()
	clientFor := func(key string) openai.Client {
		return openai.NewClient(option.WithBaseURL(g.srv.URL+"/v1/"), option.WithAPIKey(key), option.WithMaxRetries(0), option.WithHTTPClient(g.srv.Client()))
	}

	status, hdr, body := g.do(http.MethodPost, "/v1/responses", "application/json", `{"input":"x"}`)
	wantError(t, status, body, http.StatusUnauthorized, "-", "invalid_api_key")
	require.Contains(t, hdr.Get("WWW-Authenticate"), "Bearer")

	wrong := clientFor("sk-wrong-key-00000000000000")
	_, err := wrong.Responses.New(ctx, textParams("x"))
	wantAPIError(t, err, http.StatusUnauthorized)

	status, _, _ = g.do(http.MethodGet, "/healthz", "", "")
	require.Equal(t, http.StatusOK, status, "health checks need no key")

	a, b := clientFor(keyA), clientFor(keyB)
	created, err := a.Responses.New(ctx, textParams("hello"))
	require.NoError(t, err)
	got, err := a.Responses.Get(ctx, created.ID, responses.ResponseGetParams{})
	require.NoError(t, err)
	require.Equal(t, created.ID, got.ID)

	_, err = b.Responses.Get(ctx, created.ID, responses.ResponseGetParams{})
	wantAPIError(t, err, http.StatusNotFound)
	cont := textParams("again")
	cont.PreviousResponseID = openai.String(created.ID)
	_, err = b.Responses.New(ctx, cont)
	wantAPIError(t, err, http.StatusNotFound)
	require.Error(t, b.Responses.Delete(ctx, created.ID))
	_, err = a.Responses.New(ctx, cont)
	require.NoError(t, err, "the owner continues its own response")
}
