package provider

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/lambent/lambent/pkg/api"
)

// Error codes of the *api.Error values providers return.
const (
	CodeUpstreamError       = "upstream_error"
	CodeUpstreamAuthFailed  = "upstream_auth_failed"
	CodeRateLimitExceeded   = "rate_limit_exceeded"
	CodeUpstreamUnreachable = "upstream_unreachable"
	CodeUpstreamTimeout     = "upstream_timeout"
	CodeUpstreamStreamCut   = "upstream_stream_cut"
	CodeUpstreamBadResponse = "upstream_bad_response"
	CodeRequestCancelled    = "request_cancelled"
	// CodeModelNotFound: the provider does not know the requested model.
	CodeModelNotFound = "model_not_found"
	// CodeModelAccessDenied: the gateway may not call the requested model.
	CodeModelAccessDenied = "model_access_denied"
	// CodeModelUnavailable: the model cannot answer now (not ready,
	// overloaded, timed out); retrying later may succeed.
	CodeModelUnavailable = "model_unavailable"
)

// StatusClientClosedRequest is the status of the error returned when the
// caller's context is cancelled (nginx's 499).
const StatusClientClosedRequest = 499

// StreamCut is the 502 of a model stream that broke off.
func StreamCut(err error, format string, args ...any) *api.Error {
	return UpstreamError(http.StatusBadGateway, CodeUpstreamStreamCut, err, format, args...)
}

// BadResponse is the 502 of a model answer that cannot be read.
func BadResponse(err error, format string, args ...any) *api.Error {
	return UpstreamError(http.StatusBadGateway, CodeUpstreamBadResponse, err, format, args...)
}

// UpstreamError is an upstream_error *api.Error with the given status and
// code wrapping err.
func UpstreamError(status int, code string, err error, format string, args ...any) *api.Error {
	return &api.Error{Status: status, Type: api.ErrTypeUpstream, Code: code, Message: fmt.Sprintf(format, args...), Err: err}
}

// ContextError is the error for a model call whose context is done: 504
// upstream_timeout on a passed deadline, 499 request_cancelled on
// cancellation, wrapping ctx.Err() either way (errors.Is(err,
// context.Canceled) tells a cancellation).
func ContextError(ctx context.Context) *api.Error {
	err := ctx.Err()
	if errors.Is(err, context.DeadlineExceeded) {
		return UpstreamError(http.StatusGatewayTimeout, CodeUpstreamTimeout, err, "the model provider did not answer in time")
	}
	return &api.Error{Status: StatusClientClosedRequest, Type: api.ErrTypeServer, Code: CodeRequestCancelled,
		Message: "the request was cancelled while calling the model provider", Err: err}
}
