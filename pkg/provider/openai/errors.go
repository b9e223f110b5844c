package openai

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"syscall"

	"github.com/lambent/lambent/internal/chatwire"
	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/egress"
	"github.com/lambent/lambent/pkg/provider"
)

// transportError maps an error of http.Client.Do. The message names what
// failed, not how: the error's text names the provider's host and address
// (the cause, wrapped, goes to the logs, the URL in it as
// egress.ShownURL shows it: without its user information or query).
func transportError(ctx context.Context, err error) *api.Error {
	if ctx.Err() != nil {
		return provider.ContextError(ctx)
	}
	err = egress.ShownURLError(err)
	var dnsErr *net.DNSError
	var opErr *net.OpError
	switch {
	case errors.As(err, &dnsErr),
		errors.As(err, &opErr) && opErr.Op == "dial",
		errors.Is(err, syscall.ECONNREFUSED):
		return provider.UpstreamError(http.StatusBadGateway, provider.CodeUpstreamUnreachable, err, "the model provider is unreachable")
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return provider.UpstreamError(http.StatusGatewayTimeout, provider.CodeUpstreamTimeout, err, "the model provider did not answer in time")
	}
	return provider.UpstreamError(http.StatusBadGateway, provider.CodeUpstreamError, err, "calling the model provider failed")
}

// errorBody covers the error bodies of OpenAI-compatible servers:
// {"error":{"message",...}} (OpenAI, Ollama's /v1, Anthropic's
// {"type":"error","error":{"type","message"}}), {"error":"..."},
// {"object":"error","message":...,"code":400} (vLLM) and {"detail":...}
// (FastAPI-based servers).
type errorBody struct {
	Error   json.RawMessage `json:"error"`
	Message string          `json:"message"`
	Type    string          `json:"type"`
	Code    any             `json:"code"`
	Detail  json.RawMessage `json:"detail"`
}

// bodyError is what an upstream error body says: its message, (string)
// code and type, each empty when not found.
type bodyError struct {
	msg, code, typ string
}

// parseErrorBody extracts the message, code and type of an upstream error
// body.
func parseErrorBody(b []byte) bodyError {
	b = bytes.TrimSpace(b)
	var eb errorBody
	if len(b) == 0 || b[0] != '{' || json.Unmarshal(b, &eb) != nil {
		return bodyError{}
	}
	if len(eb.Error) > 0 {
		switch eb.Error[0] {
		case '{':
			var ue chatwire.Error
			if json.Unmarshal(eb.Error, &ue) == nil {
				return bodyError{ue.Message, codeString(ue.Code), ue.Type}
			}
		case '"':
			var s string
			if json.Unmarshal(eb.Error, &s) == nil {
				return bodyError{s, codeString(eb.Code), eb.Type}
			}
		}
	}
	if eb.Message != "" {
		return bodyError{eb.Message, codeString(eb.Code), eb.Type}
	}
	if len(eb.Detail) > 0 {
		var s string
		if json.Unmarshal(eb.Detail, &s) == nil {
			return bodyError{msg: s}
		}
		return bodyError{msg: string(eb.Detail)}
	}
	return bodyError{}
}

// statusOverloaded is Anthropic's status of its API overloaded.
const statusOverloaded = 529

// overloaded reports whether an upstream error says the provider is
// overloaded: its status (503, Anthropic's 529), or the code or type of its
// body (OpenAI's server_is_overloaded, Anthropic's overloaded_error);
// status is zero for an error inside a reply or a stream.
func overloaded(status int, be bodyError) bool {
	return status == http.StatusServiceUnavailable || status == statusOverloaded ||
		be.code == provider.CodeServerOverloaded || be.typ == "overloaded_error"
}

// codeString is a string error code; numeric codes (an HTTP status
// repeated) are dropped.
func codeString(code any) string {
	s, _ := code.(string)
	return s
}

// statusError maps a non-2xx upstream response: its status, header and
// body. The provider's message reaches the client only when it is about
// the request (400, 404, 409, 422 with the API's JSON error body: the
// client's to fix). A 429 is a rate limit, but for OpenAI's
// insufficient_quota (the gateway's account out of credit: a 502 which
// no retry cures, api.Error.NoRetry; so is a credentials error). A
// provider that says it is overloaded (see overloaded) gets
// provider.Overloaded, with its Retry-After. A rate limit's (OpenAI's
// names the organization), a credentials error's (it names part of the
// key), a server error's (a proxy's may name internal hosts, or hold a
// stack trace) and a 4xx's without a JSON error (a proxy's HTML page, a
// wrong provider URL's "404 page not found": the operator's to fix) stay
// in the cause, for the logs.
func statusError(status int, header http.Header, body []byte) *api.Error {
	be := parseErrorBody(body)
	msg, code := be.msg, be.code
	apiError := msg != "" || code != ""
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
		if !apiError {
			break
		}
		switch {
		case code == "" && provider.ContextWindowExceeded(msg):
			code = provider.CodeContextLengthExceeded
		case code == "":
			code = provider.CodeUpstreamError
		}
		return &api.Error{Status: status, Type: api.ErrTypeInvalidRequest, Code: code,
			Message: "model provider rejected the request: " + msg, Err: cause}
	case http.StatusUnauthorized, http.StatusForbidden:
		// The upstream message stays out of the client's view: OpenAI's
		// names part of the key.
		e := provider.UpstreamError(http.StatusBadGateway, provider.CodeUpstreamAuthFailed, cause,
			"the model provider rejected the gateway's credentials (HTTP %d)", status)
		e.NoRetry = true // the operator must act
		return e
	case http.StatusTooManyRequests:
		if code == "insufficient_quota" {
			// OpenAI's 429 of an account out of credit: no retry helps.
			e := provider.UpstreamError(http.StatusBadGateway, provider.CodeUpstreamError, cause,
				"the model provider refused the call: the gateway's account with it is out of quota (HTTP 429 insufficient_quota)")
			e.NoRetry = true
			return e
		}
		return provider.RateLimited(provider.RetryAfter(header), cause, "the model provider is rate limiting requests")
	}
	if overloaded(status, be) {
		return provider.Overloaded(provider.RetryAfter(header), cause, "the model provider is overloaded (HTTP %d)", status)
	}
	return provider.UpstreamError(http.StatusBadGateway, provider.CodeUpstreamError, cause, "model provider error (HTTP %d)", status)
}

// embeddedError maps the value of an "error" field sent with a 2xx status
// or mid-stream.
func embeddedError(raw json.RawMessage) *api.Error {
	return messageError(parseErrorBody(append(append([]byte(`{"error":`), raw...), '}')))
}

// eventError maps the data of an SSE "error" event.
func eventError(data []byte) *api.Error {
	be := parseErrorBody(data)
	if be.msg == "" {
		be.msg = strings.TrimSpace(string(data))
		if len(be.msg) > 512 || !isPrintable(be.msg) {
			be.msg = ""
		}
	}
	return messageError(be)
}

// messageError is the error the provider reported in a 2xx reply or
// mid-stream: a failure on its side (provider.Overloaded when it says it
// is overloaded), whose message stays in the cause.
func messageError(be bodyError) *api.Error {
	msg := cmp.Or(be.msg, "unknown error")
	cause := errors.New("upstream error: " + msg)
	if overloaded(0, be) {
		return provider.Overloaded("", cause, "the model provider is overloaded")
	}
	return provider.UpstreamError(http.StatusBadGateway, provider.CodeUpstreamError, cause, "the model provider reported an error")
}

func isPrintable(s string) bool {
	for _, r := range s {
		if r < 0x20 && r != '\n' && r != '\r' && r != '\t' {
			return false
		}
	}
	return true
}
