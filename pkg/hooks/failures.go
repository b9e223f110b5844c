package hooks

import (
	"context"
	"errors"
	"net"
	"strconv"

	"github.com/aws/smithy-go"

	"github.com/lambent/lambent/pkg/egress"
	"github.com/lambent/lambent/pkg/eventbus"
)

// Failure codes: what a response's lambent.hook_errors says of a failed
// delivery, beside the hook's kind. The operator's configuration (a
// webhook's URL and its query token, a bus or function name or ARN) and
// what the hook answered (a webhook's reply, an AWS error message) never
// reach tenants: the log line "hook delivery failed" has them.
const (
	// CodeTimeout: the delivery took longer than its timeout.
	CodeTimeout = "timeout"
	// CodeUnreachable: the hook's host could not be resolved or reached.
	CodeUnreachable = "unreachable"
	// CodeThrottled: the AWS service throttled the delivery.
	CodeThrottled = "throttled"
	// CodeRefused: the SSRF guard refused the webhook's address (or a
	// redirect's).
	CodeRefused = "refused"
	// CodeRejected: the AWS service refused the event (an error code, an
	// EventBridge entry that failed, a Lambda status other than 202).
	CodeRejected = "rejected"
	// CodeError: any other failure.
	CodeError = "error"
	// CodeHTTPPrefix starts the code of a webhook's reply other than 2xx:
	// http_500, http_404...
	CodeHTTPPrefix = "http_"
)

// DeliveryError is a failed delivery whose code a Sink knows (a
// webhook's status, an entry the service refused).
type DeliveryError struct {
	// Code is one of the failure codes.
	Code string
	// Err is the cause, for the logs.
	Err error
}

// Error implements error.
func (e *DeliveryError) Error() string { return e.Code + ": " + e.Err.Error() }

// Unwrap returns the cause.
func (e *DeliveryError) Unwrap() error { return e.Err }

// httpCode is the failure code of a webhook's reply status.
func httpCode(status int) string { return CodeHTTPPrefix + strconv.Itoa(status) }

// throttleCodes are the AWS error codes of a throttled call.
var throttleCodes = map[string]bool{
	"ThrottlingException": true, "TooManyRequestsException": true, "Throttling": true,
	"RequestLimitExceeded": true, "EC2ThrottledException": true,
}

// FailureCode is the code of a delivery's failure err.
func FailureCode(err error) string {
	var de *DeliveryError
	var entry *eventbus.EntryError
	var api smithy.APIError
	var dns *net.DNSError
	var op *net.OpError
	var ne net.Error
	switch {
	case errors.As(err, &de):
		return de.Code
	case errors.As(err, &entry):
		if throttleCodes[entry.Code] {
			return CodeThrottled
		}
		return CodeRejected
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return CodeTimeout
	case egress.IsBlocked(err):
		return CodeRefused
	case errors.As(err, &api):
		if throttleCodes[api.ErrorCode()] {
			return CodeThrottled
		}
		return CodeRejected
	case errors.As(err, &dns), errors.As(err, &op) && op.Op == "dial":
		return CodeUnreachable
	}
	return CodeError
}
