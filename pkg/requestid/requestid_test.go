package requestid_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"testing"

	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/pkg/requestid"
)

var idRe = regexp.MustCompile(`^req_[0-9a-f]{32}$`)

func TestNew(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		id := requestid.New()
		require.Regexp(t, idRe, id)
		require.False(t, seen[id])
		seen[id] = true
	}
}

// A record logged with a request's context carries its id and the front
// door's ids; one logged without gets nothing.
func TestHandler(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(requestid.NewHandler(slog.NewJSONHandler(&buf, nil))).With("component", "test")
	ctx := lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{AwsRequestID: "aws-1"})
	ctx = requestid.WithAttrs(requestid.WithLambda(ctx), slog.String("apigw_request_id", "gw-1"))
	ctx = requestid.With(ctx, "req_0123456789abcdef0123456789abcdef")
	log.InfoContext(ctx, "with")
	log.Info("without")
	dec := json.NewDecoder(&buf)
	var with, without map[string]any
	require.NoError(t, dec.Decode(&with))
	require.NoError(t, dec.Decode(&without))
	assert.Equal(t, "req_0123456789abcdef0123456789abcdef", with["request_id"])
	assert.Equal(t, "aws-1", with["aws_request_id"])
	assert.Equal(t, "gw-1", with["apigw_request_id"])
	assert.Equal(t, "test", with["component"])
	assert.NotContains(t, without, "request_id")
}

// Serve keeps the id a request's context carries (an outer front door's)
// and gives one to a request without.
func TestServe(t *testing.T) {
	var inner string
	h := requestid.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		inner = requestid.From(r.Context())
		_, again := requestid.Serve(w, r)
		assert.Equal(t, inner, again, "a second Serve keeps the id")
	}))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	assert.Regexp(t, idRe, inner)
	assert.Equal(t, inner, rec.Header().Get("X-Request-Id"))

	ctx, id := requestid.Ensure(context.Background())
	ctx2, id2 := requestid.Ensure(ctx)
	assert.Equal(t, id, id2)
	assert.Equal(t, ctx, ctx2)
}

// The request id of one request: a new id, the context that carries it,
// the header.
func BenchmarkServe(b *testing.B) {
	r := httptest.NewRequest("GET", "/", nil)
	w := httptest.NewRecorder()
	b.ReportAllocs()
	for b.Loop() {
		clear(w.Header())
		requestid.Serve(w, r)
	}
}

func BenchmarkNew(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		_ = requestid.New()
	}
}
