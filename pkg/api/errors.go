package api

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/lambent/lambent/internal/wirejson"
)

// Error types, as the OpenAI API names them.
const (
	ErrTypeInvalidRequest = "invalid_request_error"
	ErrTypeNotFound       = "not_found_error"
	ErrTypeServer         = "server_error"
	ErrTypeUpstream       = "upstream_error"
	ErrTypeRateLimit      = "rate_limit_error"
	ErrTypeConflict       = "conflict_error"
	// ErrTypeServiceUnavailable is the type of OpenAI's 503s (its servers
	// overloaded).
	ErrTypeServiceUnavailable = "service_unavailable_error"
)

// Error is an API error with the HTTP status it maps to. Its JSON form is
// the OpenAI error object: {"message","type","param","code"}.
type Error struct {
	// Status is the HTTP status code.
	Status int `json:"-"`
	// Type is the error type, e.g. invalid_request_error.
	Type string `json:"type"`
	// Code is a machine-readable code, empty when none.
	Code string `json:"code,omitempty"`
	// Param names the offending parameter path, empty when none.
	Param string `json:"param,omitempty"`
	// Message is a human-readable description.
	Message string `json:"message"`
	// RetryAfter is the value of the Retry-After header to answer with
	// (delay-seconds or an HTTP-date), empty when none; never serialized.
	RetryAfter string `json:"-"`
	// NoRetry marks an error that no retry cures (the operator must act):
	// the reply tells the official SDKs not to retry it (x-should-retry:
	// false), and its message does not ask the client to; never
	// serialized.
	NoRetry bool `json:"-"`
	// Err is the wrapped cause, if any; never serialized.
	Err error `json:"-"`
}

// Error implements the error interface.
func (e *Error) Error() string {
	if e.Param != "" {
		return fmt.Sprintf("%s (param %s): %s", e.Type, e.Param, e.Message)
	}
	return e.Type + ": " + e.Message
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// LogValue is e in log records: its text followed by its cause's, which
// clients never see (MarshalJSON leaves it out).
func (e *Error) LogValue() slog.Value {
	if e.Err == nil {
		return slog.StringValue(e.Error())
	}
	return slog.StringValue(e.Error() + ": " + e.Err.Error())
}

// MarshalJSON writes the error object {message, type, param, code} with
// param and code as null when empty.
func (e *Error) MarshalJSON() ([]byte, error) {
	return wirejson.Marshal(struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	}{e.Message, e.Type, nilIfEmpty(e.Param), nilIfEmpty(e.Code)})
}

// ErrorBody is the envelope of an error response: {"error":{...}}.
type ErrorBody struct {
	Error *Error `json:"error"`
}

// WriteHTTP answers w with e in the OpenAI error shape: e's status, its
// Retry-After (a 429's) as a header, x-should-retry: false for an error no
// retry cures (NoRetry, or a 501: a feature this gateway does not offer),
// which the official SDKs, retrying every 5xx, then do not retry, and the
// body of e.ForClient(requestID).
func (e *Error) WriteHTTP(w http.ResponseWriter, requestID string) {
	h := w.Header()
	if e.RetryAfter != "" {
		h.Set("Retry-After", e.RetryAfter)
	}
	if e.NoRetry || e.Status == http.StatusNotImplemented {
		h.Set("x-should-retry", "false")
	}
	b := append(e.Body(requestID), '\n')
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(e.Status)
	_, _ = w.Write(b)
}

// Body is the JSON of the reply of e: the envelope {"error":{...}} of
// e.ForClient(requestID), what every front door answers with (an HTTP
// reply, a buffered API Gateway reply, a refused WebSocket $connect).
func (e *Error) Body(requestID string) []byte {
	b, err := wirejson.Marshal(ErrorBody{Error: e.ForClient(requestID)})
	if err != nil {
		return []byte(`{"error":{"message":"internal error: could not encode the error","type":"server_error","param":null,"code":"server_error"}}`)
	}
	return b
}

func nilIfEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// InvalidRequest is a 400 naming the offending parameter.
func InvalidRequest(param, format string, args ...any) *Error {
	return &Error{Status: http.StatusBadRequest, Type: ErrTypeInvalidRequest, Param: param, Message: fmt.Sprintf(format, args...)}
}

// InvalidRequestCode is a 400 with a machine-readable code.
func InvalidRequestCode(param, code, format string, args ...any) *Error {
	e := InvalidRequest(param, format, args...)
	e.Code = code
	return e
}

// NotFound is a 404.
func NotFound(param, code, format string, args ...any) *Error {
	return &Error{Status: http.StatusNotFound, Type: ErrTypeInvalidRequest, Param: param, Code: code, Message: fmt.Sprintf(format, args...)}
}

// Unauthorized is the 401 of a request without a valid API key; message
// says what was wrong.
func Unauthorized(message string) *Error {
	return &Error{Status: http.StatusUnauthorized, Type: ErrTypeInvalidRequest, Code: "invalid_api_key", Message: message}
}

// CodeRateLimitExceeded is the code of a 429.
const CodeRateLimitExceeded = "rate_limit_exceeded"

// RateLimited is a 429 rate_limit_exceeded telling the client to retry
// after retryAfter (a Retry-After value), wrapping err (may be nil).
func RateLimited(retryAfter string, err error, format string, args ...any) *Error {
	return &Error{Status: http.StatusTooManyRequests, Type: ErrTypeRateLimit, Code: CodeRateLimitExceeded,
		Message: fmt.Sprintf(format, args...), RetryAfter: retryAfter, Err: err}
}

// RetryAfterSeconds is the Retry-After value (delay-seconds) of d, rounded
// up to a whole second, at least 1.
func RetryAfterSeconds(d time.Duration) string {
	return strconv.FormatInt(max(1, int64((d+time.Second-1)/time.Second)), 10)
}

// Conflict is a 409.
func Conflict(code, format string, args ...any) *Error {
	return &Error{Status: http.StatusConflict, Type: ErrTypeInvalidRequest, Code: code, Message: fmt.Sprintf(format, args...)}
}

// ServerErrorMessage is the message of a server error that says nothing
// more specific (AsError of an error that is not an *Error).
const ServerErrorMessage = "The server had an error while processing your request."

// ServerError is a 500 wrapping err. The message says what happened in
// general terms and never holds err's text (AWS SDK errors name ARNs,
// tables and hosts): the cause goes to the logs, with the request id that
// ForClient adds to the message.
func ServerError(err error, format string, args ...any) *Error {
	return &Error{Status: http.StatusInternalServerError, Type: ErrTypeServer, Code: "server_error", Message: fmt.Sprintf(format, args...), Err: err}
}

// AsError finds an *Error in err's chain, or wraps err as a 500 with the
// generic ServerErrorMessage.
func AsError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return ServerError(err, ServerErrorMessage)
}

// ServerFailure reports whether e is the server's failure, or a service's
// behind it, that its operator should find in the logs at level error: a
// 5xx, but a 501, which answers a request for a feature the deployment
// does not offer (the client's to change, as a 4xx).
func (e *Error) ServerFailure() bool {
	return e.Status >= 500 && e.Status != http.StatusNotImplemented
}

// Internal reports whether e is a failure of the server or of a service
// behind it (a 5xx with a cause, Err): its message is general, its cause
// is logged with the request id.
func (e *Error) Internal() bool { return e.Status >= 500 && e.Err != nil }

// ForClient returns e as a client sees it in a reply, an error event or a
// failed response: an Internal error's message is followed by what to do
// and the request id under which the logs hold its cause ("... Please
// retry; if the error persists, contact the operator with the request ID
// req_..."); any other error (a 4xx: the client's to fix, specific) is e
// itself. e is not changed.
func (e *Error) ForClient(requestID string) *Error {
	if !e.Internal() {
		return e
	}
	c := *e
	if e.NoRetry {
		c.Message = withAdvice(e.Message, "Contact the operator", requestID)
	} else {
		c.Message = WithRequestID(e.Message, requestID)
	}
	return &c
}

// WithRequestID is msg, a server error's, followed by what to do and the
// request id (when known).
func WithRequestID(msg, requestID string) string {
	return withAdvice(msg, "Please retry; if the error persists, contact the operator", requestID)
}

// withAdvice is msg followed by advice and the request id (when known).
func withAdvice(msg, advice, requestID string) string {
	if msg != "" && !strings.HasSuffix(msg, ".") {
		msg += "."
	}
	if requestID == "" {
		return msg + " " + advice + "."
	}
	return msg + " " + advice + " with the request ID " + requestID + "."
}
