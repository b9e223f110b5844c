package requestid_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/pkg/requestid"
	"github.com/lambent/lambent/pkg/tenant"
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
	assert.Equal(t, "aws-1", with["function_request_id"])
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

// An invocation's log records carry Powertools' fields: the Lambda
// request id, the function's name, the X-Ray trace root, and cold_start,
// true for a process's first invocation only; the tenant of the context
// too. An inner WithLambda adds nothing more.
func TestInvocations(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(requestid.NewHandler(slog.NewJSONHandler(&buf, nil)))
	var inv requestid.Invocations
	for _, id := range []string{"aws-1", "aws-2"} {
		ctx := lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{AwsRequestID: id})
		//lint:ignore SA1029 the key aws-lambda-go uses
		ctx = context.WithValue(ctx, "x-amzn-trace-id", "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1")
		ctx = requestid.WithLambda(inv.Start(ctx))
		ctx = tenant.With(requestid.With(ctx, requestid.New()), "acme")
		log.InfoContext(ctx, "line")
	}
	assert.Equal(t, 2, strings.Count(buf.String(), `"`+requestid.LambdaKey+`"`), "once a line, though WithLambda ran twice")
	dec := json.NewDecoder(&buf)
	for i, cold := range []bool{true, false} {
		var l map[string]any
		require.NoError(t, dec.Decode(&l))
		assert.Equal(t, fmt.Sprintf("aws-%d", i+1), l[requestid.LambdaKey])
		assert.Equal(t, cold, l[requestid.ColdStartKey])
		assert.Equal(t, "1-5759e988-bd862e3fe1be46a994272793", l[requestid.TraceKey])
		assert.Equal(t, "acme", l[requestid.TenantKey])
	}

	// No Lambda context: nothing Lambda's.
	buf.Reset()
	log.InfoContext(inv.Start(requestid.With(context.Background(), "req_1")), "local")
	var l map[string]any
	require.NoError(t, json.Unmarshal(buf.Bytes(), &l))
	assert.NotContains(t, l, requestid.LambdaKey)
	assert.NotContains(t, l, requestid.ColdStartKey)
	assert.NotContains(t, l, requestid.TenantKey, "no tenant named")
}
