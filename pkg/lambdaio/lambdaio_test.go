package lambdaio

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func mustJSON(t *testing.T, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

func urlEvent(method, path, query, body string) *events.LambdaFunctionURLRequest {
	return &events.LambdaFunctionURLRequest{
		Version:        "2.0",
		RawPath:        path,
		RawQueryString: query,
		Headers:        map[string]string{"content-type": "application/json", "host": "abcdefghij.lambda-url.us-east-1.on.aws"},
		RequestContext: events.LambdaFunctionURLRequestContext{
			AccountID:    "123456789012",
			RequestID:    "req-1",
			APIID:        "abcdefghij",
			DomainName:   "abcdefghij.lambda-url.us-east-1.on.aws",
			DomainPrefix: "abcdefghij",
			HTTP: events.LambdaFunctionURLRequestContextHTTPDescription{
				Method: method, Path: path, Protocol: "HTTP/1.1", SourceIP: "203.0.113.7", UserAgent: "test",
			},
		},
		Body: body,
	}
}

func restEvent(method, path, body string) *events.APIGatewayProxyRequest {
	return &events.APIGatewayProxyRequest{
		Resource:          path,
		Path:              path,
		HTTPMethod:        method,
		Headers:           map[string]string{"Content-Type": "application/json", "Host": "a1b2c3d4e5.execute-api.us-east-1.amazonaws.com"},
		MultiValueHeaders: map[string][]string{"Content-Type": {"application/json"}, "Host": {"a1b2c3d4e5.execute-api.us-east-1.amazonaws.com"}, "X-Multi": {"a", "b"}},
		RequestContext: events.APIGatewayProxyRequestContext{
			AccountID: "123456789012", Stage: "prod", DomainName: "a1b2c3d4e5.execute-api.us-east-1.amazonaws.com",
			APIID: "a1b2c3d4e5", HTTPMethod: method, Path: "/prod" + path, ResourcePath: path,
			Identity: events.APIGatewayRequestIdentity{SourceIP: "198.51.100.9"},
		},
		Body: body,
	}
}

func httpAPIEvent(method, path, body string) *events.APIGatewayV2HTTPRequest {
	return &events.APIGatewayV2HTTPRequest{
		Version:  "2.0",
		RouteKey: "ANY /{proxy+}",
		RawPath:  path,
		Headers:  map[string]string{"content-type": "application/json"},
		Cookies:  []string{"a=1"},
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			AccountID: "123456789012", APIID: "r3pmxmplak", Stage: "$default",
			DomainName: "r3pmxmplak.execute-api.us-east-1.amazonaws.com",
			HTTP:       events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: method, Path: path, Protocol: "HTTP/1.1", SourceIP: "192.0.2.1"},
		},
		Body: body,
	}
}

// chunk reads what one Read returns: one flush of the handler (or the
// prelude), as the runtime client's io.Copy sees it.
func chunk(t *testing.T, r io.Reader) []byte {
	t.Helper()
	b := make([]byte, 64<<10)
	n, err := r.Read(b)
	require.NoError(t, err)
	return b[:n]
}

// prelude reads the first chunk of a streamed reply and decodes its JSON
// prelude, checking the 8 zero bytes after it.
func prelude(t *testing.T, r io.Reader) map[string]any {
	t.Helper()
	c := chunk(t, r)
	require.True(t, bytes.HasSuffix(c, make([]byte, 8)), "prelude must end with 8 zero bytes: %q", c)
	var m map[string]any
	require.NoError(t, json.Unmarshal(c[:len(c)-8], &m))
	return m
}

func TestDetect(t *testing.T) {
	for _, tc := range []struct {
		name string
		ev   any
		want EventKind
	}{
		{"function URL", urlEvent("GET", "/healthz", "", ""), EventFunctionURL},
		{"REST", restEvent("POST", "/v1/responses", "{}"), EventREST},
		{"HTTP API 2.0", httpAPIEvent("POST", "/v1/responses", "{}"), EventHTTPAPIV2},
		{"HTTP API 1.0", map[string]any{"version": "1.0", "httpMethod": "GET", "path": "/", "requestContext": map[string]any{"domainName": "x.execute-api.us-east-1.amazonaws.com"}}, EventHTTPAPIV1},
		{"ALB", map[string]any{"httpMethod": "GET", "path": "/", "requestContext": map[string]any{"elb": map[string]any{"targetGroupArn": "arn"}}}, EventUnknown},
		{"SQS", events.SQSEvent{Records: []events.SQSMessage{{MessageId: "1", Body: "x"}}}, EventUnknown},
		{"not JSON", json.RawMessage(`nope`), EventUnknown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var raw []byte
			if r, ok := tc.ev.(json.RawMessage); ok {
				raw = r
			} else {
				raw = mustJSON(t, tc.ev)
			}
			require.Equal(t, tc.want, Detect(raw))
		})
	}
	require.Equal(t, "function URL", EventFunctionURL.String())
	require.Equal(t, "unknown", EventKind(99).String())
}

func TestUnsupportedEvent(t *testing.T) {
	h := New(http.NotFoundHandler(), Config{})
	_, err := h.Handle(testCtx(t), json.RawMessage(`{"Records":[]}`))
	require.ErrorContains(t, err, "unsupported event")
}

func TestFunctionURLRequest(t *testing.T) {
	ev := urlEvent("POST", "/v1/responses", "a=1&a=2&b=x%20y", base64.StdEncoding.EncodeToString([]byte(`{"in":"put"}`)))
	ev.IsBase64Encoded = true
	ev.Cookies = []string{"c1=v1", "c2=v2"}
	ev.Headers["x-multi"] = "a,b"
	ev.Headers["authorization"] = "Bearer sk-test"

	ctx, cancel := context.WithDeadline(testCtx(t), time.Now().Add(time.Hour))
	defer cancel()
	wantDeadline, _ := ctx.Deadline()
	got := make(chan *http.Request, 1)
	var body []byte
	h := New(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ = io.ReadAll(r.Body)
		got <- r
		w.WriteHeader(http.StatusNoContent)
	}), Config{})
	out, err := h.Handle(ctx, mustJSON(t, ev))
	require.NoError(t, err)
	resp := out.(*events.LambdaFunctionURLStreamingResponse)
	rest, err := io.ReadAll(resp)
	require.NoError(t, err)
	require.NoError(t, resp.Close())
	require.Equal(t, `{"statusCode":204}`+strings.Repeat("\x00", 8), string(rest))

	r := <-got
	require.Equal(t, "POST", r.Method)
	require.Equal(t, "https://abcdefghij.lambda-url.us-east-1.on.aws/v1/responses?a=1&a=2&b=x%20y", r.URL.String())
	require.Equal(t, []string{"1", "2"}, r.URL.Query()["a"])
	require.Equal(t, "x y", r.URL.Query().Get("b"))
	require.Equal(t, "/v1/responses?a=1&a=2&b=x%20y", r.RequestURI)
	require.Equal(t, "abcdefghij.lambda-url.us-east-1.on.aws", r.Host)
	require.Empty(t, r.Header.Get("Host"))
	require.Equal(t, "203.0.113.7", r.RemoteAddr)
	require.Equal(t, "HTTP/1.1", r.Proto)
	require.Equal(t, "application/json", r.Header.Get("Content-Type"))
	require.Equal(t, "Bearer sk-test", r.Header.Get("Authorization"))
	require.Equal(t, "a,b", r.Header.Get("X-Multi"))
	require.Equal(t, "c1=v1; c2=v2", r.Header.Get("Cookie"))
	c, err := r.Cookie("c2")
	require.NoError(t, err)
	require.Equal(t, "v2", c.Value)
	require.Equal(t, `{"in":"put"}`, string(body))
	require.Equal(t, int64(len(`{"in":"put"}`)), r.ContentLength)
	d, ok := r.Context().Deadline()
	require.True(t, ok)
	require.Equal(t, wantDeadline, d, "the request's deadline is the invocation's")
	require.ErrorIs(t, r.Context().Err(), context.Canceled, "closing the reply ends the request's context")
}

// TestFunctionURLStreamsEachFlush checks that the head comes back before the
// body, and that each flush is one chunk the reader gets while the handler
// is still running (it waits for the test between flushes).
func TestFunctionURLStreamsEachFlush(t *testing.T) {
	step := make(chan struct{})
	h := New(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("Content-Type", "text/event-stream")
		hd.Set("Cache-Control", "no-cache")
		hd.Set("Content-Length", "999")
		hd.Add("X-Multi", "a")
		hd.Add("X-Multi", "b")
		hd.Add("Set-Cookie", "s1=1")
		hd.Add("Set-Cookie", "s2=2")
		w.WriteHeader(http.StatusAccepted)
		hd.Set("X-Too-Late", "ignored")
		rc := http.NewResponseController(w)
		assert.NoError(t, rc.Flush())
		for i := range 3 {
			<-step
			_, _ = w.Write([]byte("event: e\n"))
			_, _ = w.Write([]byte("data: " + string(rune('0'+i)) + "\n\n"))
			assert.NoError(t, rc.Flush())
		}
	}), Config{})
	out, err := h.Handle(testCtx(t), mustJSON(t, urlEvent("POST", "/v1/responses", "", "{}")))
	require.NoError(t, err, "Handle returns once the head is flushed, with the handler still running")
	resp := out.(*events.LambdaFunctionURLStreamingResponse)
	defer resp.Close()
	require.Equal(t, http.StatusAccepted, resp.StatusCode)
	require.Equal(t, map[string]string{"Content-Type": "text/event-stream", "Cache-Control": "no-cache", "X-Multi": "a,b"}, resp.Headers)
	require.Equal(t, []string{"s1=1", "s2=2"}, resp.Cookies)
	require.Equal(t, "application/vnd.awslambda.http-integration-response", resp.ContentType())

	p := prelude(t, resp)
	require.EqualValues(t, 202, p["statusCode"])
	require.Equal(t, []any{"s1=1", "s2=2"}, p["cookies"])
	for i := range 3 {
		step <- struct{}{}
		require.Equal(t, "event: e\ndata: "+string(rune('0'+i))+"\n\n", string(chunk(t, resp)), "flush %d is one chunk", i)
	}
	n, err := resp.Read(make([]byte, 10))
	require.Equal(t, 0, n)
	require.ErrorIs(t, err, io.EOF)
}

func TestStreamDefaults(t *testing.T) {
	t.Run("sniffed content type and 200 on first write", func(t *testing.T) {
		h := New(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.WriteString(w, "<!DOCTYPE html><html></html>")
		}), Config{})
		out, err := h.Handle(testCtx(t), mustJSON(t, urlEvent("GET", "/", "", "")))
		require.NoError(t, err)
		resp := out.(*events.LambdaFunctionURLStreamingResponse)
		defer resp.Close()
		require.Equal(t, 200, resp.StatusCode)
		require.Equal(t, "text/html; charset=utf-8", resp.Headers["Content-Type"])
		b, err := io.ReadAll(resp)
		require.NoError(t, err)
		require.True(t, bytes.HasSuffix(b, []byte("\x00\x00\x00\x00\x00\x00\x00\x00<!DOCTYPE html><html></html>")))
	})
	t.Run("a handler writing nothing answers 200", func(t *testing.T) {
		h := New(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}), Config{})
		out, err := h.Handle(testCtx(t), mustJSON(t, urlEvent("GET", "/", "", "")))
		require.NoError(t, err)
		resp := out.(*events.LambdaFunctionURLStreamingResponse)
		defer resp.Close()
		require.Equal(t, 200, resp.StatusCode)
		require.Nil(t, resp.Headers)
	})
	t.Run("no body with 204", func(t *testing.T) {
		werr := make(chan error, 1)
		h := New(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusNoContent)
			_, err := w.Write([]byte("x"))
			werr <- err
		}), Config{})
		out, err := h.Handle(testCtx(t), mustJSON(t, urlEvent("DELETE", "/x", "", "")))
		require.NoError(t, err)
		resp := out.(*events.LambdaFunctionURLStreamingResponse)
		_, _ = io.ReadAll(resp)
		require.NoError(t, resp.Close())
		require.ErrorIs(t, <-werr, http.ErrBodyNotAllowed)
	})
	t.Run("1xx is dropped", func(t *testing.T) {
		h := New(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusEarlyHints)
			w.WriteHeader(http.StatusCreated)
		}), Config{})
		out, err := h.Handle(testCtx(t), mustJSON(t, urlEvent("POST", "/", "", "")))
		require.NoError(t, err)
		resp := out.(*events.LambdaFunctionURLStreamingResponse)
		require.NoError(t, resp.Close())
		require.Equal(t, http.StatusCreated, resp.StatusCode)
	})
}

// TestCloseCancelsAndWaits: the runtime closes the reply (client gone, send
// failed, or simply done); the handler's context ends, its writes fail, and
// Close returns only once the handler has.
func TestCloseCancelsAndWaits(t *testing.T) {
	returned := make(chan error, 1)
	h := New(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte("data: first\n\n"))
		w.(http.Flusher).Flush()
		<-r.Context().Done()
		_, err := w.Write([]byte("data: after close\n\n"))
		if err == nil {
			err = http.NewResponseController(w).Flush()
		}
		returned <- err
	}), Config{})
	out, err := h.Handle(testCtx(t), mustJSON(t, urlEvent("POST", "/v1/responses", "", "{}")))
	require.NoError(t, err)
	resp := out.(*events.LambdaFunctionURLStreamingResponse)
	prelude(t, resp)
	require.Equal(t, "data: first\n\n", string(chunk(t, resp)))
	require.NoError(t, resp.Close())
	select {
	case err := <-returned:
		require.ErrorIs(t, err, io.ErrClosedPipe)
	default:
		t.Fatal("Close returned before the handler did")
	}
}

// TestInvocationCancelEndsHandler: the invocation's context ending (the
// deadline) reaches the handler while it waits on something else.
func TestInvocationCancelEndsHandler(t *testing.T) {
	ctx, cancel := context.WithCancel(testCtx(t))
	h := New(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
		_, _ = w.Write([]byte("stopped: " + r.Context().Err().Error()))
	}), Config{})
	out, err := h.Handle(ctx, mustJSON(t, urlEvent("POST", "/", "", "")))
	require.NoError(t, err)
	resp := out.(*events.LambdaFunctionURLStreamingResponse)
	defer resp.Close()
	prelude(t, resp)
	cancel()
	b, err := io.ReadAll(resp)
	require.NoError(t, err)
	require.Equal(t, "stopped: context canceled", string(b))
}

func TestPanics(t *testing.T) {
	t.Run("before the head: an invocation error", func(t *testing.T) {
		h := New(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("boom") }), Config{Logger: quiet()})
		_, err := h.Handle(testCtx(t), mustJSON(t, urlEvent("GET", "/", "", "")))
		require.ErrorContains(t, err, "handler panicked: boom")
	})
	t.Run("midway: the stream fails", func(t *testing.T) {
		h := New(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = w.Write([]byte("partial"))
			w.(http.Flusher).Flush()
			panic("boom")
		}), Config{Logger: quiet()})
		out, err := h.Handle(testCtx(t), mustJSON(t, urlEvent("GET", "/", "", "")))
		require.NoError(t, err)
		resp := out.(*events.LambdaFunctionURLStreamingResponse)
		defer resp.Close()
		b, err := io.ReadAll(resp)
		require.ErrorContains(t, err, "handler panicked: boom")
		require.True(t, bytes.HasSuffix(b, []byte("partial")))
	})
	t.Run("ErrAbortHandler", func(t *testing.T) {
		h := New(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler)
		}), Config{})
		out, err := h.Handle(testCtx(t), mustJSON(t, urlEvent("GET", "/", "", "")))
		require.NoError(t, err)
		resp := out.(*events.LambdaFunctionURLStreamingResponse)
		defer resp.Close()
		_, err = io.ReadAll(resp)
		require.ErrorIs(t, err, http.ErrAbortHandler)
	})
}

func TestRESTStream(t *testing.T) {
	ev := restEvent("POST", "/v1/responses", base64.StdEncoding.EncodeToString([]byte("payload")))
	ev.IsBase64Encoded = true
	ev.MultiValueQueryStringParameters = map[string][]string{"q": {"1", "2"}}
	step := make(chan struct{})
	got := make(chan *http.Request, 1)
	var body []byte
	h := New(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ = io.ReadAll(r.Body)
		got <- r
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Add("Set-Cookie", "s=1")
		w.Header().Add("X-Multi", "a")
		w.Header().Add("X-Multi", "b")
		for i := range 2 {
			_, _ = w.Write([]byte("data: " + string(rune('a'+i)) + "\n\n"))
			w.(http.Flusher).Flush()
			<-step
		}
	}), Config{})
	out, err := h.Handle(testCtx(t), mustJSON(t, ev))
	require.NoError(t, err)
	resp := out.(*events.APIGatewayProxyStreamingResponse)
	defer resp.Close()
	require.Equal(t, "application/vnd.awslambda.http-integration-response", resp.ContentType())
	p := prelude(t, resp)
	require.Equal(t, map[string]any{
		"statusCode":        float64(200),
		"headers":           map[string]any{"Content-Type": "text/event-stream"},
		"multiValueHeaders": map[string]any{"Set-Cookie": []any{"s=1"}, "X-Multi": []any{"a", "b"}},
	}, p)
	require.Equal(t, "data: a\n\n", string(chunk(t, resp)))
	step <- struct{}{}
	require.Equal(t, "data: b\n\n", string(chunk(t, resp)))
	step <- struct{}{}
	_, err = resp.Read(make([]byte, 1))
	require.ErrorIs(t, err, io.EOF)

	r := <-got
	require.Equal(t, "POST", r.Method)
	require.Equal(t, "/v1/responses", r.URL.Path)
	require.Equal(t, []string{"1", "2"}, r.URL.Query()["q"])
	require.Equal(t, "a1b2c3d4e5.execute-api.us-east-1.amazonaws.com", r.Host)
	require.Equal(t, []string{"a", "b"}, r.Header.Values("X-Multi"))
	require.Equal(t, "198.51.100.9", r.RemoteAddr)
	require.Equal(t, "payload", string(body))
}

func TestRESTBuffered(t *testing.T) {
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, s := range []string{"data: a\n\n", "data: b\n\n"} {
			_, _ = io.WriteString(w, s)
			require.NoError(t, http.NewResponseController(w).Flush())
		}
	})
	t.Run("stage variable", func(t *testing.T) {
		ev := restEvent("POST", "/v1/responses", "{}")
		ev.StageVariables = map[string]string{TransferModeStageVariable: "buffered"}
		out, err := New(handler, Config{}).Handle(testCtx(t), mustJSON(t, ev))
		require.NoError(t, err)
		resp := out.(events.APIGatewayProxyResponse)
		require.Equal(t, 200, resp.StatusCode)
		require.Equal(t, "data: a\n\ndata: b\n\n", resp.Body)
		require.Equal(t, []string{"text/event-stream"}, resp.MultiValueHeaders["Content-Type"])
	})
	t.Run("configured", func(t *testing.T) {
		cfg := Config{BufferedREST: func(ev *events.APIGatewayProxyRequest) bool { return ev.HTTPMethod == "GET" }}
		out, err := New(handler, cfg).Handle(testCtx(t), mustJSON(t, restEvent("GET", "/v1/responses/x", "")))
		require.NoError(t, err)
		require.IsType(t, events.APIGatewayProxyResponse{}, out)
		out, err = New(handler, cfg).Handle(testCtx(t), mustJSON(t, restEvent("POST", "/v1/responses", "{}")))
		require.NoError(t, err)
		resp := out.(*events.APIGatewayProxyStreamingResponse)
		_, _ = io.ReadAll(resp)
		require.NoError(t, resp.Close())
	})
	t.Run("HTTP API payload 1.0", func(t *testing.T) {
		ev := map[string]any{
			"version": "1.0", "resource": "/v1/responses", "path": "/v1/responses", "httpMethod": "POST",
			"headers": map[string]string{"Content-Type": "application/json"}, "body": "{}",
			"requestContext": map[string]any{"domainName": "r3pmxmplak.execute-api.us-east-1.amazonaws.com", "stage": "$default"},
		}
		out, err := New(handler, Config{}).Handle(testCtx(t), mustJSON(t, ev))
		require.NoError(t, err)
		require.Equal(t, "data: a\n\ndata: b\n\n", out.(events.APIGatewayProxyResponse).Body)
	})
}

func TestHTTPAPIBuffered(t *testing.T) {
	var ctxDeadline time.Time
	h := New(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctxDeadline, _ = r.Context().Deadline()
		c, err := r.Cookie("a")
		require.NoError(t, err)
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Add("Set-Cookie", "s=1")
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, "cookie "+c.Value+", body "+string(b)+"\n")
		// The proxy's v2 writer cannot flush; a streaming handler must not
		// see that as a failure.
		require.NoError(t, http.NewResponseController(w).Flush())
		_, _ = io.WriteString(w, "more\n")
	}), Config{})
	ctx, cancel := context.WithDeadline(testCtx(t), time.Now().Add(time.Hour))
	defer cancel()
	out, err := h.Handle(ctx, mustJSON(t, httpAPIEvent("POST", "/v1/responses", `{"x":1}`)))
	require.NoError(t, err)
	resp := out.(events.APIGatewayV2HTTPResponse)
	require.Equal(t, http.StatusCreated, resp.StatusCode)
	require.Equal(t, "cookie 1, body {\"x\":1}\nmore\n", resp.Body)
	require.Equal(t, "text/event-stream", resp.Headers["Content-Type"])
	require.Equal(t, []string{"s=1"}, resp.Cookies)
	// The buffered bound (TestBufferedRequestsEndBeforeTheIntegrationTimeout)
	// comes before the invocation's deadline.
	want, _ := ctx.Deadline()
	require.True(t, ctxDeadline.Before(want), "deadline %v, invocation's %v", ctxDeadline, want)
}

func TestBufferedEdgeCases(t *testing.T) {
	t.Run("a handler writing nothing answers 200", func(t *testing.T) {
		out, err := New(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}), Config{}).
			Handle(testCtx(t), mustJSON(t, httpAPIEvent("GET", "/", "")))
		require.NoError(t, err)
		require.Equal(t, 200, out.(events.APIGatewayV2HTTPResponse).StatusCode)
	})
	t.Run("later status codes are ignored", func(t *testing.T) {
		out, err := New(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.WriteString(w, "x")
			w.WriteHeader(http.StatusTeapot)
		}), Config{}).Handle(testCtx(t), mustJSON(t, httpAPIEvent("GET", "/", "")))
		require.NoError(t, err)
		require.Equal(t, 200, out.(events.APIGatewayV2HTTPResponse).StatusCode)
	})
	t.Run("a panic is an invocation error", func(t *testing.T) {
		h := New(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic(errors.New("boom")) }), Config{Logger: quiet()})
		_, err := h.Handle(testCtx(t), mustJSON(t, httpAPIEvent("GET", "/", "")))
		require.ErrorContains(t, err, "handler panicked: boom")
		ev := restEvent("GET", "/", "")
		ev.StageVariables = map[string]string{TransferModeStageVariable: "BUFFERED"}
		_, err = h.Handle(testCtx(t), mustJSON(t, ev))
		require.ErrorContains(t, err, "handler panicked: boom")
	})
}
