package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"

	"github.com/lambent/lambent/internal/chatwire"
	"github.com/lambent/lambent/pkg/api"
)

// Error codes of the errors this package returns.
const (
	CodeUpstreamError       = "upstream_error"
	CodeUpstreamAuthFailed  = "upstream_auth_failed"
	CodeRateLimitExceeded   = "rate_limit_exceeded"
	CodeUpstreamUnreachable = "upstream_unreachable"
	CodeUpstreamTimeout     = "upstream_timeout"
	CodeUpstreamStreamCut   = "upstream_stream_cut"
	CodeUpstreamBadResponse = "upstream_bad_response"
	CodeRequestCancelled    = "request_cancelled"
)

// StatusClientClosedRequest is the status of the error returned when the
// caller's context is cancelled (nginx's 499).
const StatusClientClosedRequest = 499

func upstreamErr(status int, code string, err error, format string, args ...any) *api.Error {
	return &api.Error{Status: status, Type: api.ErrTypeUpstream, Code: code, Message: fmt.Sprintf(format, args...), Err: err}
}

// ctxError is the error for a call whose context is done: 504 on deadline,
// 499 on cancellation, wrapping ctx.Err() either way.
func ctxError(ctx context.Context) *api.Error {
	err := ctx.Err()
	if errors.Is(err, context.DeadlineExceeded) {
		return upstreamErr(http.StatusGatewayTimeout, CodeUpstreamTimeout, err, "the model provider did not answer in time")
	}
	return &api.Error{Status: StatusClientClosedRequest, Type: api.ErrTypeServer, Code: CodeRequestCancelled,
		Message: "the request was cancelled while calling the model provider", Err: err}
}

func streamCut(err error, format string, args ...any) *api.Error {
	return upstreamErr(http.StatusBadGateway, CodeUpstreamStreamCut, err, format, args...)
}

func badResponse(err error, format string, args ...any) *api.Error {
	return upstreamErr(http.StatusBadGateway, CodeUpstreamBadResponse, err, format, args...)
}

// transportError maps an error of http.Client.Do.
func transportError(ctx context.Context, err error) *api.Error {
	if ctx.Err() != nil {
		return ctxError(ctx)
	}
	inner := err
	var ue *url.Error
	if errors.As(err, &ue) {
		inner = ue.Err
	}
	var dnsErr *net.DNSError
	var opErr *net.OpError
	switch {
	case errors.As(err, &dnsErr),
		errors.As(err, &opErr) && opErr.Op == "dial",
		errors.Is(err, syscall.ECONNREFUSED):
		return upstreamErr(http.StatusBadGateway, CodeUpstreamUnreachable, err, "the model provider is unreachable: %v", inner)
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return upstreamErr(http.StatusGatewayTimeout, CodeUpstreamTimeout, err, "the model provider did not answer in time: %v", inner)
	}
	return upstreamErr(http.StatusBadGateway, CodeUpstreamError, err, "calling the model provider failed: %v", inner)
}

// errorBody covers the error bodies of OpenAI-compatible servers:
// {"error":{"message",...}} (OpenAI, Ollama's /v1), {"error":"..."},
// {"object":"error","message":...,"code":400} (vLLM) and {"detail":...}
// (FastAPI-based servers).
type errorBody struct {
	Error   json.RawMessage `json:"error"`
	Message string          `json:"message"`
	Code    any             `json:"code"`
	Detail  json.RawMessage `json:"detail"`
}

// parseErrorBody extracts the message and the (string) code of an upstream
// error body; msg is empty when none is found.
func parseErrorBody(b []byte) (msg, code string) {
	b = bytes.TrimSpace(b)
	var eb errorBody
	if len(b) == 0 || b[0] != '{' || json.Unmarshal(b, &eb) != nil {
		return "", ""
	}
	if len(eb.Error) > 0 {
		switch eb.Error[0] {
		case '{':
			var ue chatwire.Error
			if json.Unmarshal(eb.Error, &ue) == nil {
				return ue.Message, codeString(ue.Code)
			}
		case '"':
			var s string
			if json.Unmarshal(eb.Error, &s) == nil {
				return s, codeString(eb.Code)
			}
		}
	}
	if eb.Message != "" {
		return eb.Message, codeString(eb.Code)
	}
	if len(eb.Detail) > 0 {
		var s string
		if json.Unmarshal(eb.Detail, &s) == nil {
			return s, ""
		}
		return string(eb.Detail), ""
	}
	return "", ""
}

// codeString is a string error code; numeric codes (an HTTP status
// repeated) are dropped.
func codeString(code any) string {
	s, _ := code.(string)
	return s
}

// statusError maps a non-2xx upstream response.
func statusError(status int, body []byte) *api.Error {
	msg, code := parseErrorBody(body)
	if msg == "" {
		msg = strings.TrimSpace(string(body))
		if len(msg) > 512 || !isPrintable(msg) {
			msg = ""
		}
		if msg == "" {
			msg = http.StatusText(status)
		}
	}
	cause := fmt.Errorf("upstream HTTP %d: %s", status, msg)
	switch status {
	case http.StatusBadRequest, http.StatusNotFound, http.StatusConflict, http.StatusUnprocessableEntity:
		if code == "" {
			code = CodeUpstreamError
		}
		return &api.Error{Status: status, Type: api.ErrTypeInvalidRequest, Code: code,
			Message: "model provider rejected the request: " + msg, Err: cause}
	case http.StatusUnauthorized, http.StatusForbidden:
		// The upstream message stays out of the client's view: OpenAI's
		// names part of the key.
		return upstreamErr(http.StatusBadGateway, CodeUpstreamAuthFailed, cause,
			"the model provider rejected the gateway's credentials (HTTP %d)", status)
	case http.StatusTooManyRequests:
		return &api.Error{Status: http.StatusTooManyRequests, Type: api.ErrTypeRateLimit, Code: CodeRateLimitExceeded,
			Message: "the model provider is rate limiting requests: " + msg, Err: cause}
	}
	return upstreamErr(http.StatusBadGateway, CodeUpstreamError, cause, "model provider error (HTTP %d): %s", status, msg)
}

// embeddedError maps the value of an "error" field sent with a 2xx status
// or mid-stream.
func embeddedError(raw json.RawMessage) *api.Error {
	msg, _ := parseErrorBody(append(append([]byte(`{"error":`), raw...), '}'))
	return messageError(msg)
}

// eventError maps the data of an SSE "error" event.
func eventError(data []byte) *api.Error {
	msg, _ := parseErrorBody(data)
	if msg == "" {
		msg = strings.TrimSpace(string(data))
		if len(msg) > 512 || !isPrintable(msg) {
			msg = ""
		}
	}
	return messageError(msg)
}

func messageError(msg string) *api.Error {
	if msg == "" {
		msg = "unknown error"
	}
	return upstreamErr(http.StatusBadGateway, CodeUpstreamError, errors.New("upstream error: "+msg),
		"model provider error: %s", msg)
}

func isPrintable(s string) bool {
	for _, r := range s {
		if r < 0x20 && r != '\n' && r != '\r' && r != '\t' {
			return false
		}
	}
	return true
}
