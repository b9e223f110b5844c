package openai_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/provider"
	"github.com/lambent/lambent/pkg/provider/openai"
)

// call runs the request through Complete or Stream.
func call(p *openai.Provider, ctx context.Context, stream bool) (*provider.Result, error) {
	if stream {
		return p.Stream(ctx, hi, func(provider.Delta) error { return nil })
	}
	return p.Complete(ctx, hi)
}

func bothModes(t *testing.T, f func(t *testing.T, stream bool)) {
	t.Run("complete", func(t *testing.T) { f(t, false) })
	t.Run("stream", func(t *testing.T) { f(t, true) })
}

func TestUpstreamStatusErrors(t *testing.T) {
	cases := []struct {
		name       string
		status     int
		body       string
		wantStatus int
		wantType   string
		wantCode   string
		wantMsg    string
	}{
		{"400 openai", 400, `{"error":{"message":"Invalid 'messages[1].content': string too long.","type":"invalid_request_error","param":"messages[1].content","code":"string_above_max_length"}}`,
			400, api.ErrTypeInvalidRequest, "string_above_max_length", "model provider rejected the request: Invalid 'messages[1].content': string too long."},
		{"400 ollama", 400, `{"error":{"message":"invalid tool call arguments","type":"invalid_request_error","param":null,"code":null}}`,
			400, api.ErrTypeInvalidRequest, provider.CodeUpstreamError, "model provider rejected the request: invalid tool call arguments"},
		{"400 vllm", 400, `{"object":"error","message":"This model's maximum context length is 4096 tokens.","type":"BadRequestError","param":null,"code":400}`,
			400, api.ErrTypeInvalidRequest, provider.CodeContextLengthExceeded, "model provider rejected the request: This model's maximum context length is 4096 tokens."},
		{"404 model", 404, `{"error":{"message":"The model 'nope' does not exist","type":"invalid_request_error","param":"model","code":"model_not_found"}}`,
			404, api.ErrTypeInvalidRequest, "model_not_found", "model provider rejected the request: The model 'nope' does not exist"},
		{"422 fastapi", 422, `{"detail":"field required"}`,
			422, api.ErrTypeInvalidRequest, provider.CodeUpstreamError, "model provider rejected the request: field required"},
		{"401", 401, `{"error":{"message":"Incorrect API key provided: sk-xxx.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`,
			502, api.ErrTypeUpstream, provider.CodeUpstreamAuthFailed, "the model provider rejected the gateway's credentials (HTTP 401)"},
		{"403", 403, `forbidden`, 502, api.ErrTypeUpstream, provider.CodeUpstreamAuthFailed, ""},
		// A rate limit's, a server error's message stays in the cause (the
		// logs): OpenAI's 429 names the operator's organization, a proxy's
		// 500 may name internal hosts.
		{"429", 429, `{"error":{"message":"Rate limit reached for gpt-4o in organization org-operator on tokens per min","type":"requests","param":null,"code":"rate_limit_exceeded"}}`,
			429, api.ErrTypeRateLimit, provider.CodeRateLimitExceeded, "the model provider is rate limiting requests; please try again in 10s"},
		// An account out of quota is no rate limit: no retry helps the
		// client, the operator must act.
		{"429 quota", 429, `{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`,
			502, api.ErrTypeUpstream, provider.CodeUpstreamError, "the model provider refused the call: the gateway's account with it is out of quota (HTTP 429 insufficient_quota)"},
		{"500", 500, `{"error":{"message":"litellm.InternalServerError: connect to http://10.0.3.7:8000 failed","type":"server_error"}}`,
			502, api.ErrTypeUpstream, provider.CodeUpstreamError, "model provider error (HTTP 500)"},
		// A provider that says it is overloaded (a 503 or Anthropic's 529,
		// whatever the body; OpenAI's server_is_overloaded or Anthropic's
		// overloaded_error with another status) is a 503
		// server_is_overloaded, as OpenAI answers its own overload.
		{"503 plain", 503, "", 503, api.ErrTypeServiceUnavailable, provider.CodeServerOverloaded, "the model provider is overloaded (HTTP 503)"},
		{"503 openai", 503, `{"error":{"message":"Our servers are currently overloaded. Please try again later.","type":"service_unavailable_error","param":null,"code":"server_is_overloaded"}}`,
			503, api.ErrTypeServiceUnavailable, provider.CodeServerOverloaded, "the model provider is overloaded (HTTP 503)"},
		{"529 anthropic", 529, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`,
			503, api.ErrTypeServiceUnavailable, provider.CodeServerOverloaded, "the model provider is overloaded (HTTP 529)"},
		{"500 overloaded code", 500, `{"error":{"message":"Our servers are currently overloaded.","type":"server_error","code":"server_is_overloaded"}}`,
			503, api.ErrTypeServiceUnavailable, provider.CodeServerOverloaded, "the model provider is overloaded (HTTP 500)"},
		{"502 overloaded type", 502, `{"error":{"message":"Overloaded","type":"overloaded_error"}}`,
			503, api.ErrTypeServiceUnavailable, provider.CodeServerOverloaded, "the model provider is overloaded (HTTP 502)"},
		{"413", 413, `{"error":"too big"}`, 502, api.ErrTypeUpstream, provider.CodeUpstreamError, "model provider error (HTTP 413)"},
		// A 4xx without the API's JSON error is not the API's verdict on
		// the request: a proxy's page, or a wrong provider URL.
		{"404 html", 404, "<html>\r\n<head><title>404 Not Found</title></head>\r\n<body>\r\n<center><h1>404 Not Found</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>",
			502, api.ErrTypeUpstream, provider.CodeUpstreamError, "model provider error (HTTP 404)"},
		{"400 html", 400, "<html><head><title>400 The plain HTTP request was sent to HTTPS port</title></head></html>",
			502, api.ErrTypeUpstream, provider.CodeUpstreamError, "model provider error (HTTP 400)"},
		{"404 code only", 404, `{"error":{"code":"model_not_found"}}`, 404, api.ErrTypeInvalidRequest, "model_not_found", ""},
		{"404 text", 404, "404 page not found", 502, api.ErrTypeUpstream, provider.CodeUpstreamError, "model provider error (HTTP 404)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			bothModes(t, func(t *testing.T, stream bool) {
				p, _ := newBackend(t, openai.Config{}, jsonReply(tc.status, tc.body))
				_, err := call(p, context.Background(), stream)
				e := apiErr(t, err, tc.wantStatus, tc.wantType, tc.wantCode)
				if tc.wantMsg != "" && e.Message != tc.wantMsg {
					t.Errorf("message = %q, want %q", e.Message, tc.wantMsg)
				}
			})
		})
	}
}

// A 429 carries the provider's retry delay on (Retry-After, else OpenAI's
// retry-after-ms rounded up to seconds), and a default when it names none.
func TestRateLimitRetryAfter(t *testing.T) {
	const body = `{"error":{"message":"Rate limit reached","type":"requests","param":null,"code":"rate_limit_exceeded"}}`
	for name, c := range map[string]struct {
		header map[string]string
		want   string
	}{
		"Retry-After seconds":   {map[string]string{"Retry-After": "7"}, "7"},
		"Retry-After date":      {map[string]string{"Retry-After": "Wed, 21 Oct 2026 07:28:00 GMT"}, "Wed, 21 Oct 2026 07:28:00 GMT"},
		"retry-after-ms":        {map[string]string{"Retry-After-Ms": "1200"}, "2"},
		"both: Retry-After":     {map[string]string{"Retry-After": "3", "Retry-After-Ms": "9000"}, "3"},
		"none: the default":     {nil, api.RetryAfterSeconds(provider.DefaultRetryAfter)},
		"garbage: the default":  {map[string]string{"Retry-After": "soon\r\nX-Evil: 1"}, api.RetryAfterSeconds(provider.DefaultRetryAfter)},
		"negative: the default": {map[string]string{"Retry-After": "-5"}, api.RetryAfterSeconds(provider.DefaultRetryAfter)},
	} {
		t.Run(name, func(t *testing.T) {
			bothModes(t, func(t *testing.T, stream bool) {
				p, _ := newBackend(t, openai.Config{}, func(w http.ResponseWriter, r *http.Request) {
					for k, v := range c.header {
						w.Header().Set(k, v)
					}
					jsonReply(http.StatusTooManyRequests, body)(w, r)
				})
				_, err := call(p, context.Background(), stream)
				e := apiErr(t, err, http.StatusTooManyRequests, api.ErrTypeRateLimit, provider.CodeRateLimitExceeded)
				if e.RetryAfter != c.want {
					t.Errorf("RetryAfter = %q, want %q", e.RetryAfter, c.want)
				}
			})
		})
	}
}

// An overloaded provider's Retry-After (or retry-after-ms) is passed on
// with its 503 (the official SDKs wait that long before they retry); none
// is made up when it names none.
func TestOverloadedRetryAfter(t *testing.T) {
	for name, c := range map[string]struct {
		header map[string]string
		want   string
	}{
		"Retry-After": {map[string]string{"Retry-After": "3"}, "3"},
		"none":        {nil, ""},
	} {
		t.Run(name, func(t *testing.T) {
			bothModes(t, func(t *testing.T, stream bool) {
				p, _ := newBackend(t, openai.Config{}, func(w http.ResponseWriter, r *http.Request) {
					for k, v := range c.header {
						w.Header().Set(k, v)
					}
					jsonReply(http.StatusServiceUnavailable, `{"error":{"message":"Our servers are currently overloaded.","type":"service_unavailable_error","code":"server_is_overloaded"}}`)(w, r)
				})
				_, err := call(p, context.Background(), stream)
				e := apiErr(t, err, http.StatusServiceUnavailable, api.ErrTypeServiceUnavailable, provider.CodeServerOverloaded)
				if e.RetryAfter != c.want {
					t.Errorf("RetryAfter = %q, want %q", e.RetryAfter, c.want)
				}
				if e.NoRetry {
					t.Error("NoRetry: an overload is retried")
				}
			})
		})
	}
}

func TestConnectionRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	bothModes(t, func(t *testing.T, stream bool) {
		p := openai.New(openai.Config{BaseURL: "http://" + addr + "/v1"})
		defer p.CloseIdleConnections()
		_, err := call(p, context.Background(), stream)
		e := apiErr(t, err, http.StatusBadGateway, api.ErrTypeUpstream, provider.CodeUpstreamUnreachable)
		if strings.Contains(e.Message, addr) {
			t.Errorf("message %q names the provider's address (the cause has it)", e.Message)
		}
	})
}

// The cause of a transport error, which the logs show, names the
// provider's URL without its credentials (a user name alone may be a key).
func TestConnectionRefusedCauseHidesURLCredentials(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	for _, base := range []string{"http://s3cret@" + addr + "/v1", "http://u:s3cret@" + addr + "/v1"} {
		bothModes(t, func(t *testing.T, stream bool) {
			p := openai.New(openai.Config{BaseURL: base})
			defer p.CloseIdleConnections()
			_, err := call(p, context.Background(), stream)
			e := apiErr(t, err, http.StatusBadGateway, api.ErrTypeUpstream, provider.CodeUpstreamUnreachable)
			if cause := e.Err.Error(); strings.Contains(cause, "s3cret") || !strings.Contains(cause, addr) {
				t.Errorf("%s: cause %q", base, cause)
			}
		})
	}
}

// The backend never answers; the caller's deadline ends the call.
func TestDeadline(t *testing.T) {
	bothModes(t, func(t *testing.T, stream bool) {
		p, _ := newBackend(t, openai.Config{}, func(w http.ResponseWriter, r *http.Request) {
			<-r.Context().Done()
		})
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		_, err := call(p, ctx, stream)
		apiErr(t, err, http.StatusGatewayTimeout, api.ErrTypeUpstream, provider.CodeUpstreamTimeout)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("err = %v, want it to wrap context.DeadlineExceeded", err)
		}
	})
}

// The deadline passes mid-stream, after the headers.
func TestDeadlineMidStream(t *testing.T) {
	p, _ := newBackend(t, openai.Config{}, func(w http.ResponseWriter, r *http.Request) {
		sseHeaders(w)
		writeSSE(w, chunk(`{"index":0,"delta":{"content":"slow"},"finish_reason":null}`))
		<-r.Context().Done()
	})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := p.Stream(ctx, hi, func(provider.Delta) error { return nil })
	apiErr(t, err, http.StatusGatewayTimeout, api.ErrTypeUpstream, provider.CodeUpstreamTimeout)
}

func TestCancelled(t *testing.T) {
	bothModes(t, func(t *testing.T, stream bool) {
		started := make(chan struct{})
		p, _ := newBackend(t, openai.Config{}, func(w http.ResponseWriter, r *http.Request) {
			close(started)
			<-r.Context().Done()
		})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() {
			<-started
			cancel()
		}()
		_, err := call(p, ctx, stream)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
		apiErr(t, err, provider.StatusClientClosedRequest, api.ErrTypeServer, provider.CodeRequestCancelled)
	})
}

func TestAlreadyCancelled(t *testing.T) {
	p, b := newBackend(t, openai.Config{}, jsonReply(200, okCompletion))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := p.Complete(ctx, hi)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	if len(b.bodies) != 0 {
		t.Errorf("backend called with a cancelled context")
	}
}

func TestStreamCut(t *testing.T) {
	first := chunk(`{"index":0,"delta":{"content":"par"},"finish_reason":null}`)
	cases := map[string]http.HandlerFunc{
		// The handler aborts: the chunked body ends without its terminator.
		"abort": func(w http.ResponseWriter, r *http.Request) {
			sseHeaders(w)
			writeSSE(w, first)
			panic(http.ErrAbortHandler)
		},
		// The connection is closed under the response.
		"hijack": func(w http.ResponseWriter, r *http.Request) {
			sseHeaders(w)
			writeSSE(w, first)
			conn, _, err := http.NewResponseController(w).Hijack()
			if err != nil {
				t.Error(err)
				return
			}
			_ = conn.Close()
		},
		// The body ends cleanly but the answer never finished.
		"eof": func(w http.ResponseWriter, r *http.Request) {
			sseHeaders(w)
			writeSSE(w, first)
		},
		// Content-Length framing, closed early.
		"short body": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			w.Header().Set("Content-Length", "10000")
			w.WriteHeader(200)
			_, _ = io.WriteString(w, "data: "+first+"\n\n")
		},
	}
	for name, h := range cases {
		t.Run(name, func(t *testing.T) {
			p, _ := newBackend(t, openai.Config{}, h)
			var ds []provider.Delta
			_, err := p.Stream(context.Background(), hi, collect(&ds))
			apiErr(t, err, http.StatusBadGateway, api.ErrTypeUpstream, provider.CodeUpstreamStreamCut)
			if len(ds) != 1 || ds[0].Text != "par" {
				t.Errorf("deltas before the cut = %+v", ds)
			}
		})
	}
}

func TestCompleteCut(t *testing.T) {
	p, _ := newBackend(t, openai.Config{}, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", "10000")
		w.WriteHeader(200)
		_, _ = io.WriteString(w, `{"choices":[`)
	})
	_, err := p.Complete(context.Background(), hi)
	apiErr(t, err, http.StatusBadGateway, api.ErrTypeUpstream, provider.CodeUpstreamStreamCut)
}

func TestMalformedJSON(t *testing.T) {
	t.Run("complete", func(t *testing.T) {
		p, _ := newBackend(t, openai.Config{}, jsonReply(200, `{"choices":[{"index":0,"message":{"content":"x"`))
		_, err := p.Complete(context.Background(), hi)
		apiErr(t, err, http.StatusBadGateway, api.ErrTypeUpstream, provider.CodeUpstreamBadResponse)
	})
	t.Run("complete no choices", func(t *testing.T) {
		p, _ := newBackend(t, openai.Config{}, jsonReply(200, `{"choices":[]}`))
		_, err := p.Complete(context.Background(), hi)
		apiErr(t, err, http.StatusBadGateway, api.ErrTypeUpstream, provider.CodeUpstreamBadResponse)
	})
	t.Run("complete wrong type", func(t *testing.T) {
		p, _ := newBackend(t, openai.Config{}, jsonReply(200, `{"choices":"nope"}`))
		_, err := p.Complete(context.Background(), hi)
		apiErr(t, err, http.StatusBadGateway, api.ErrTypeUpstream, provider.CodeUpstreamBadResponse)
	})
	t.Run("complete error with 200", func(t *testing.T) {
		p, _ := newBackend(t, openai.Config{}, jsonReply(200, `{"error":{"message":"model crashed"}}`))
		_, err := p.Complete(context.Background(), hi)
		e := apiErr(t, err, http.StatusBadGateway, api.ErrTypeUpstream, provider.CodeUpstreamError)
		contains(t, "message", e.Message, "the model provider reported an error")
		contains(t, "cause", e.Err.Error(), "model crashed")
	})
	t.Run("stream", func(t *testing.T) {
		p, _ := newBackend(t, openai.Config{}, sseReply(
			chunk(`{"index":0,"delta":{"content":"ok"},"finish_reason":null}`),
			`{"choices":[{"index":0,"delta":{"content":`,
		))
		_, err := p.Stream(context.Background(), hi, func(provider.Delta) error { return nil })
		apiErr(t, err, http.StatusBadGateway, api.ErrTypeUpstream, provider.CodeUpstreamBadResponse)
	})
}
