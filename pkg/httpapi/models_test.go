package httpapi_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/internal/testing/fakellm"
)

// GET /v1/models lists the default model, the exact routes' models and
// those the provider reported, in OpenAI's shape (openai-go decodes it);
// /v1/models/{id} knows them and the models of prefix routes, ids with a
// slash too, and answers others with a 404 model_not_found.
func TestE2EModels(t *testing.T) {
	t.Parallel()
	g := newGateway(t, fakellm.New(), map[string]string{"LAMBENT_MODEL_ROUTES": "gpt-4o=openai, meta-llama/*=openai, test-model=openai"})
	ctx := context.Background()
	page, err := g.client.Models.List(ctx)
	require.NoError(t, err)
	var ids []string
	for _, m := range page.Data {
		ids = append(ids, m.ID)
		assert.Equal(t, "openai", m.OwnedBy)
		assert.EqualValues(t, "model", m.Object)
	}
	assert.Equal(t, []string{"test-model", "gpt-4o"}, ids)

	m, err := g.client.Models.Get(ctx, "meta-llama/Llama-3.1-8B")
	require.NoError(t, err)
	assert.Equal(t, "meta-llama/Llama-3.1-8B", m.ID)
	m, err = g.client.Models.Get(ctx, "gpt-4o")
	require.NoError(t, err)
	assert.Equal(t, "gpt-4o", m.ID)

	_, err = g.client.Models.Get(ctx, "claude-9")
	e := wantAPIError(t, err, http.StatusNotFound)
	assert.Equal(t, "model_not_found", e.Code)

	// What the provider lists (local runs: its GET /models at start-up)
	// joins the list after the configured models.
	g.app.ReportModels("openai", []string{"llama3.2", "gpt-4o"})
	page, err = g.client.Models.List(ctx)
	require.NoError(t, err)
	ids = nil
	for _, m := range page.Data {
		ids = append(ids, m.ID)
	}
	assert.Equal(t, []string{"test-model", "gpt-4o", "llama3.2"}, ids)
	m, err = g.client.Models.Get(ctx, "llama3.2")
	require.NoError(t, err)
	assert.Equal(t, "openai", m.OwnedBy)

	status, hdr, _ := g.do(http.MethodPost, "/v1/models", "application/json", "{}")
	assert.Equal(t, http.StatusMethodNotAllowed, status)
	assert.Equal(t, "GET", hdr.Get("Allow"))
	assert.Equal(t, 0, g.fake.Calls())
}
