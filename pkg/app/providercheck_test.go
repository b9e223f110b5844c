package app

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/lambent/lambent/internal/testing/conncount"
)

// provider serves GET /v1/models with handler h and returns its config.
func provider(t *testing.T, h http.HandlerFunc, key, model string) Config {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return Config{Provider: ProviderConfig{URL: srv.URL + "/v1", APIKey: key, DefaultModel: model}}
}

func models(ids ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/models" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		body := `{"object":"list","data":[`
		for i, id := range ids {
			if i > 0 {
				body += ","
			}
			body += `{"id":"` + id + `","object":"model"}`
		}
		_, _ = w.Write([]byte(body + "]}"))
	}
}

func TestCheckProvider(t *testing.T) {
	defer goleak.VerifyNone(t)
	ctx := context.Background()

	t.Run("unreachable", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		addr := ln.Addr().String()
		require.NoError(t, ln.Close())
		c := CheckProvider(ctx, Config{Provider: ProviderConfig{URL: "http://" + addr + "/v1"}}, nil)
		require.Equal(t, slog.LevelWarn, c.Level)
		require.Contains(t, c.Message, "no model provider reachable at http://"+addr+"/v1")
		for _, want := range []string{"LAMBENT_PROVIDER_URL", "LAMBENT_PROVIDER_API_KEY", "LAMBENT_DEFAULT_MODEL", "make demo"} {
			require.Contains(t, c.Hint, want)
		}
	})

	t.Run("credentials in the URL", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		addr := ln.Addr().String()
		require.NoError(t, ln.Close())
		for _, u := range []string{"http://u:s3cret@" + addr + "/v1", "http://s3cret@" + addr + "/v1", "http://" + addr + "/v1?key=s3cret"} {
			cfg := Config{Provider: ProviderConfig{URL: u}}
			c := CheckProvider(ctx, cfg, nil)
			require.Contains(t, c.Message, "no model provider reachable at http://", u)
			require.Contains(t, c.Message, addr+"/v1", u)
			require.NotContains(t, c.Message, "s3cret", u)
			require.NotContains(t, fmt.Sprint(c.LogAttrs(cfg)...), "s3cret", u)
		}
	})

	t.Run("no answer before the deadline", func(t *testing.T) {
		arrived := make(chan struct{})
		cfg := provider(t, func(w http.ResponseWriter, r *http.Request) {
			close(arrived)
			<-r.Context().Done()
		}, "", "")
		cctx, cancel := context.WithCancel(ctx)
		go func() { <-arrived; cancel() }()
		c := CheckProvider(cctx, cfg, nil)
		require.Equal(t, slog.LevelWarn, c.Level)
		require.Contains(t, c.Message, "no model provider reachable")
	})

	t.Run("key refused", func(t *testing.T) {
		var auth string
		cfg := provider(t, func(w http.ResponseWriter, r *http.Request) {
			auth = r.Header.Get("Authorization")
			w.WriteHeader(http.StatusUnauthorized)
		}, "sk-wrong", "")
		c := CheckProvider(ctx, cfg, nil)
		require.Equal(t, "Bearer sk-wrong", auth)
		require.Equal(t, slog.LevelWarn, c.Level)
		require.Contains(t, c.Message, "HTTP 401")
		require.Contains(t, c.Hint, "LAMBENT_PROVIDER_API_KEY")

		cfg.Provider.APIKey = ""
		c = CheckProvider(ctx, cfg, nil)
		require.Empty(t, auth)
		require.Contains(t, c.Hint, "needs a key")
	})

	t.Run("no model list", func(t *testing.T) {
		c := CheckProvider(ctx, provider(t, http.NotFound, "", "gpt-4o-mini"), nil)
		require.Equal(t, slog.LevelInfo, c.Level)
		require.Contains(t, c.Message, "HTTP 404")
		require.Empty(t, c.Hint)
	})

	t.Run("no default model", func(t *testing.T) {
		c := CheckProvider(ctx, provider(t, models("llama3.2:latest", "qwen3:8b"), "", ""), nil)
		require.Equal(t, slog.LevelInfo, c.Level)
		require.Equal(t, []string{"llama3.2:latest", "qwen3:8b"}, c.Models)
		require.Contains(t, c.Hint, "LAMBENT_DEFAULT_MODEL")
		require.Contains(t, c.Hint, "llama3.2:latest")
	})

	t.Run("default model offered", func(t *testing.T) {
		c := CheckProvider(ctx, provider(t, models("llama3.2:latest"), "", "llama3.2"), nil)
		require.Equal(t, slog.LevelInfo, c.Level)
		require.Empty(t, c.Hint)
		require.Equal(t, []any{"provider", "http://u/v1", "models", []string{"llama3.2:latest"}}, c.LogAttrs(Config{Provider: ProviderConfig{URL: "http://u/v1"}}))
	})

	t.Run("default model missing", func(t *testing.T) {
		c := CheckProvider(ctx, provider(t, models("qwen3:8b"), "", "llama3.2"), nil)
		require.Equal(t, slog.LevelWarn, c.Level)
		require.Contains(t, c.Message, `"llama3.2" is not among`)
	})

	t.Run("no models at all", func(t *testing.T) {
		c := CheckProvider(ctx, provider(t, models(), "", ""), nil)
		require.Equal(t, slog.LevelWarn, c.Level)
		require.Contains(t, c.Hint, "ollama pull")
	})
}

// A provider that does not list its models (a 404 page) leaves the
// connection the check opened for the model calls that follow: its answer
// is drained before it is closed, where closed unread it closed the
// connection.
func TestCheckProviderKeepsConnection(t *testing.T) {
	srv := conncount.Start(t, http.NotFoundHandler())
	hc := &http.Client{Transport: &http.Transport{}}
	defer hc.CloseIdleConnections()
	cfg := Config{Provider: ProviderConfig{URL: srv.URL + "/v1"}}
	for range 2 {
		c := CheckProvider(context.Background(), cfg, hc)
		require.Contains(t, c.Message, "HTTP 404")
	}
	require.Equal(t, 1, srv.Opened(), "connections of 2 checks answered 404")
}
