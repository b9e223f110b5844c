package bedrock

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/awsjson"
	"github.com/lambent/lambent/pkg/provider"
)

// apiError maps an error of a Converse call, or of its event stream, to an
// *api.Error wrapping it:
//
//	ThrottlingException, ServiceQuotaExceededException, 429 rate_limit_exceeded, Retry-After
//	a ModelErrorException or ModelStreamErrorException   as Bedrock's reply names it, else
//	relaying the model's own 429 (originalStatusCode)    provider.DefaultRetryAfter
//	ValidationException                                  400 with Bedrock's message; an input over
//	                                                     the context window: 400
//	                                                     context_length_exceeded, param input;
//	                                                     "The provided model identifier is
//	                                                     invalid." (an unknown id, or a model
//	                                                     retired from the region): 404
//	                                                     model_not_found
//	AccessDeniedException                                403 model_access_denied, naming the model,
//	                                                     x-should-retry: false
//	ResourceNotFoundException                            404 model_not_found with Bedrock's message
//	                                                     (a legacy model, a use case form to fill)
//	UnrecognizedClientException and the other refusals  502 upstream_auth_failed,
//	of the gateway's credentials                         x-should-retry: false
//	ModelTimeoutException                                504 upstream_timeout
//	ServiceUnavailableException (Bedrock overloaded)     503 service_unavailable_error
//	                                                     server_is_overloaded (provider.Overloaded)
//	ModelNotReadyException                               503 model_unavailable once the retryer
//	                                                     has given up
//	another ModelErrorException or
//	ModelStreamErrorException, InternalServerException,
//	any other                                            502 upstream_error
//
// A done context gives provider.ContextError; a connection failure 502
// upstream_unreachable. The SDK's retryer has already retried what it
// retries (throttling, ModelNotReadyException, transient errors) when the
// error gets here.
//
// Only the messages of a ValidationException (about the request: the
// client's to fix) and of a ResourceNotFoundException (about the model)
// reach the client, their ARNs and account ids hidden (awsjson.HideIDs);
// the others are named by their code and the model, as the client gave it
// (an ARN too: the response's model field echoes it anyway), their message
// (an AccessDeniedException's names the gateway's role and account, a
// ModelErrorException's the account and its logs, others name ARNs) and
// the SDK's error text (the endpoint) stay in the cause, for the logs.
func (p *Provider) apiError(ctx context.Context, model string, err error) *api.Error {
	if ctx.Err() != nil {
		return provider.ContextError(ctx)
	}
	var (
		throttle  *types.ThrottlingException
		quota     *types.ServiceQuotaExceededException
		invalid   *types.ValidationException
		denied    *types.AccessDeniedException
		notFound  *types.ResourceNotFoundException
		timeout   *types.ModelTimeoutException
		notReady  *types.ModelNotReadyException
		down      *types.ServiceUnavailableException
		stream    *types.ModelStreamErrorException
		modelErr  *types.ModelErrorException
		apiErr    smithy.APIError
		opErr     *net.OpError
		dnsErr    *net.DNSError
		mapped    *api.Error
		rateLimit = func(e smithy.APIError) *api.Error {
			return provider.RateLimited(retryAfter(err), err, "Bedrock is limiting requests to model %q (%s)", model, e.ErrorCode())
		}
	)
	switch {
	case errors.As(err, &throttle):
		mapped = rateLimit(throttle)
	case errors.As(err, &quota):
		mapped = rateLimit(quota)
	case errors.As(err, &stream) && throttled(stream.OriginalStatusCode):
		mapped = rateLimit(stream)
	case errors.As(err, &modelErr) && throttled(modelErr.OriginalStatusCode):
		mapped = rateLimit(modelErr)
	case errors.As(err, &invalid) && strings.Contains(invalid.ErrorMessage(), "model identifier is invalid"):
		mapped = api.NotFound("model", provider.CodeModelNotFound, "Bedrock has no model %q in this region (ValidationException: %s)", model, invalid.ErrorMessage())
		mapped.Err = err
	case errors.As(err, &invalid) && provider.ContextWindowExceeded(invalid.ErrorMessage()):
		mapped = &api.Error{Status: http.StatusBadRequest, Type: api.ErrTypeInvalidRequest, Code: provider.CodeContextLengthExceeded, Param: "input",
			Message: fmt.Sprintf("the input exceeds the context window of the Bedrock model %q: %s", model, awsjson.HideIDs(invalid.ErrorMessage())), Err: err}
	case errors.As(err, &invalid):
		mapped = &api.Error{Status: http.StatusBadRequest, Type: api.ErrTypeInvalidRequest, Code: "invalid_request",
			Message: "Bedrock rejected the request: " + awsjson.HideIDs(invalid.ErrorMessage()), Err: err}
	case errors.As(err, &denied):
		mapped = &api.Error{Status: http.StatusForbidden, Type: api.ErrTypeInvalidRequest, Code: provider.CodeModelAccessDenied, Param: "model",
			Message: fmt.Sprintf("the gateway may not call the Bedrock model %q (AccessDeniedException; the operator enables access to the model in the Bedrock console's Model access page "+
				"for this account and region, and grants the gateway's role bedrock:InvokeModel and bedrock:InvokeModelWithResponseStream on it)", model),
			Err: err, NoRetry: true}
	case errors.As(err, &notFound):
		mapped = api.NotFound("model", provider.CodeModelNotFound, "Bedrock cannot serve the model %q (ResourceNotFoundException: %s)", model, awsjson.HideIDs(notFound.ErrorMessage()))
		mapped.Err = err
	case errors.As(err, &apiErr) && credentialsRefused(apiErr.ErrorCode()):
		mapped = provider.UpstreamError(http.StatusBadGateway, provider.CodeUpstreamAuthFailed, err, "Bedrock refused the gateway's credentials (%s) calling model %q", apiErr.ErrorCode(), model)
		mapped.NoRetry = true // the operator must act
	case errors.As(err, &timeout):
		mapped = provider.UpstreamError(http.StatusGatewayTimeout, provider.CodeUpstreamTimeout, err, "the Bedrock model %q timed out (ModelTimeoutException)", model)
	case errors.As(err, &notReady):
		mapped = provider.UpstreamError(http.StatusServiceUnavailable, provider.CodeModelUnavailable, err, "the Bedrock model %q is not ready (ModelNotReadyException)", model)
	case errors.As(err, &down):
		mapped = provider.Overloaded(retryAfter(err), err, "Bedrock is overloaded (ServiceUnavailableException) calling model %q", model)
	case errors.As(err, &apiErr):
		mapped = provider.UpstreamError(http.StatusBadGateway, provider.CodeUpstreamError, err, "Bedrock error (%s) from model %q", apiErr.ErrorCode(), model)
	case errors.As(err, &dnsErr), errors.As(err, &opErr) && opErr.Op == "dial":
		mapped = provider.UpstreamError(http.StatusBadGateway, provider.CodeUpstreamUnreachable, err, "Bedrock is unreachable")
	default:
		mapped = provider.UpstreamError(http.StatusBadGateway, provider.CodeUpstreamError, err, "calling Bedrock failed")
	}
	p.log.DebugContext(ctx, "bedrock: call failed", "model", model, "status", mapped.Status, "error", err)
	return mapped
}

// retryAfter is the retry delay the HTTP reply behind err names (see
// provider.RetryAfter); empty when there is none (an exception inside an
// event stream has no reply of its own).
func retryAfter(err error) string {
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) && re.Response != nil && re.Response.Response != nil {
		return provider.RetryAfter(re.Response.Header)
	}
	return ""
}

// throttled reports whether the originalStatusCode of an exception
// relaying the model's own failure (a ModelErrorException, or a
// ModelStreamErrorException inside a ConverseStream) is the model's
// throttling, 429.
func throttled(originalStatusCode *int32) bool {
	return originalStatusCode != nil && *originalStatusCode == http.StatusTooManyRequests
}

// credentialsRefused reports whether an AWS error code says the gateway's
// credentials or signature were refused.
func credentialsRefused(code string) bool {
	switch code {
	case "UnrecognizedClientException", "InvalidSignatureException", "IncompleteSignatureException",
		"MissingAuthenticationTokenException", "ExpiredTokenException", "InvalidClientTokenId":
		return true
	}
	return false
}
