package httpapi_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/internal/testing/fakellm"
)

// With LAMBENT_API_KEYS set, every API route needs a listed bearer key, and
// each key's tenant sees only its own responses.
func TestAPIKeysAndTenants(t *testing.T) {
	t.Parallel()
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

// The Bearer scheme name is case-insensitive (RFC 7235) and may be
// followed by several spaces; other schemes and a bare key are refused.
func TestBearerScheme(t *testing.T) {
	t.Parallel()
	const key = "sk-lambent-tenant-a-0123456789"
	g := newGateway(t, fakellm.NewHandler(func(fakellm.Request) fakellm.Turn { return fakellm.Turn{Text: "hi"} }),
		map[string]string{"LAMBENT_API_KEYS": "acme=" + key})
	for auth, want := range map[string]int{
		"Bearer " + key:        http.StatusOK,
		"bearer " + key:        http.StatusOK,
		"BEARER " + key:        http.StatusOK,
		"Bearer   " + key:      http.StatusOK,
		" Bearer " + key + " ": http.StatusOK,
		"Basic " + key:         http.StatusUnauthorized,
		key:                    http.StatusUnauthorized,
		"Bearer" + key:         http.StatusUnauthorized,
		"Bearer ":              http.StatusUnauthorized,
	} {
		req, err := http.NewRequest(http.MethodPost, g.srv.URL+"/v1/responses", strings.NewReader(`{"input":"x"}`))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", auth)
		res, err := g.http.Do(req)
		require.NoError(t, err)
		body, err := io.ReadAll(res.Body)
		require.NoError(t, err)
		require.NoError(t, res.Body.Close())
		if want == http.StatusOK {
			require.Equal(t, want, res.StatusCode, "%q: %s", auth, body)
		} else {
			wantError(t, res.StatusCode, body, want, "-", "invalid_api_key")
		}
	}
}

// A body in a Content-Encoding the gateway does not decode is a 415 in the
// OpenAI error shape, never read as JSON; identity is accepted.
func TestContentEncoding(t *testing.T) {
	t.Parallel()
	g := newGateway(t, fakellm.NewHandler(func(fakellm.Request) fakellm.Turn { return fakellm.Turn{Text: "hi"} }), nil)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, _ = zw.Write([]byte(`{"input":"x"}`))
	require.NoError(t, zw.Close())
	post := func(encoding string, body []byte) (int, http.Header, []byte) {
		req, err := http.NewRequest(http.MethodPost, g.srv.URL+"/v1/responses", bytes.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Content-Encoding", encoding)
		res, err := g.http.Do(req)
		require.NoError(t, err)
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		require.NoError(t, err)
		return res.StatusCode, res.Header, b
	}
	for _, enc := range []string{"gzip", "br", "deflate", "zstd", "gzip, identity"} {
		status, hdr, body := post(enc, gz.Bytes())
		wantError(t, status, body, http.StatusUnsupportedMediaType, "-", "unsupported_content_encoding")
		require.Equal(t, "identity", hdr.Get("Accept-Encoding"))
	}
	require.Zero(t, g.fake.Calls())
	status, _, body := post("identity", []byte(`{"input":"x"}`))
	require.Equal(t, http.StatusOK, status, "%s", body)
}
