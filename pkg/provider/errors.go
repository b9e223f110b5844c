package provider

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/lambent/lambent/internal/wait"
	"github.com/lambent/lambent/pkg/api"
)

// Error codes of the *api.Error values providers return.
const (
	CodeUpstreamError       = "upstream_error"
	CodeUpstreamAuthFailed  = "upstream_auth_failed"
	CodeRateLimitExceeded   = api.CodeRateLimitExceeded
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
	// CodeServerOverloaded is OpenAI's code of its servers overloaded (a
	// 503, or a stream's response.failed): Codex reports the model at
	// capacity.
	CodeServerOverloaded = "server_is_overloaded"
	// CodeContextLengthExceeded is OpenAI's code of a request whose input
	// does not fit in the model's context window: no retry helps (Codex
	// tells its user so instead of retrying).
	CodeContextLengthExceeded = "context_length_exceeded"
)

// ContextWindowExceeded reports whether msg, a model server's message
// refusing a request, says the input is longer than the model's context
// window: OpenAI's and vLLM's words ("This model's maximum context length
// is 4096 tokens"; Mistral's and DeepSeek's too), vLLM V1's ("longer than
// the maximum model length"), llama.cpp's ("exceeds the available context
// size"), LiteLLM's (ContextWindowExceededError) or Bedrock's ("Input is
// too long for requested model", Claude's "prompt is too long", "too many
// input tokens").
func ContextWindowExceeded(msg string) bool {
	m := strings.ToLower(msg)
	for _, phrase := range [...]string{"maximum context length", "longer than the maximum model length",
		"exceeds the available context size", "contextwindowexceedederror", "context_length_exceeded",
		"input is too long", "prompt is too long", "too many input tokens"} {
		if strings.Contains(m, phrase) {
			return true
		}
	}
	return false
}

// StatusClientClosedRequest is the status of the error returned when the
// caller's context is cancelled (nginx's 499).
const StatusClientClosedRequest = 499

// DefaultRetryAfter is the Retry-After of a provider's 429 whose reply
// names no delay (Bedrock's never do): the SDK's own retries of throttling
// have already waited, so the client waits some seconds more.
const DefaultRetryAfter = 10 * time.Second

// RateLimited is the 429 rate_limit_exceeded of a provider's rate limit,
// telling the client to retry after retryAfter (a Retry-After value; empty:
// DefaultRetryAfter), wrapping err. Its message ends with that delay, as
// OpenAI's rate-limit messages do ("…; please try again in 17s"): a
// stream's response.failed has no Retry-After header, and Codex reads the
// delay of its retry from the message.
func RateLimited(retryAfter string, err error, format string, args ...any) *api.Error {
	retryAfter = cmp.Or(retryAfter, api.RetryAfterSeconds(DefaultRetryAfter))
	e := api.RateLimited(retryAfter, err, format, args...)
	e.Message += fmt.Sprintf("; please try again in %ds", retryAfterSeconds(retryAfter, time.Now()))
	return e
}

// retryAfterSeconds is the delay of a Retry-After value (delay-seconds or
// an HTTP-date, as RetryAfter returns) in whole seconds from now, at
// least 1.
func retryAfterSeconds(v string, now time.Time) int64 {
	d, _ := wait.RetryAfter(v, now)
	s := int64(d / time.Second)
	if d%time.Second != 0 {
		s++
	}
	return max(1, s)
}

// RetryAfter is the retry delay a provider's reply names in h: its
// Retry-After as sent (delay-seconds or an HTTP-date), else its
// retry-after-ms (OpenAI's) rounded up to whole seconds; empty when
// neither is there and valid.
func RetryAfter(h http.Header) string {
	if v := strings.TrimSpace(h.Get("Retry-After")); v != "" {
		if n, err := strconv.ParseUint(v, 10, 32); err == nil {
			return strconv.FormatUint(n, 10)
		}
		if _, err := http.ParseTime(v); err == nil {
			return v
		}
	}
	if ms, err := strconv.ParseFloat(strings.TrimSpace(h.Get("Retry-After-Ms")), 64); err == nil && ms >= 0 && ms < 1e12 {
		return api.RetryAfterSeconds(time.Duration(ms * float64(time.Millisecond)))
	}
	return ""
}

// Overloaded is the 503 of a model provider that says it is overloaded, in
// the shape of OpenAI's own overload (type service_unavailable_error, code
// server_is_overloaded), wrapping err: the official SDKs retry it as they
// retry OpenAI's (after retryAfter, the provider's Retry-After, when it
// names one), and Codex, reading the code from a 503's body or a stream's
// response.failed, reports the model at capacity.
func Overloaded(retryAfter string, err error, format string, args ...any) *api.Error {
	e := UpstreamError(http.StatusServiceUnavailable, CodeServerOverloaded, err, format, args...)
	e.Type = api.ErrTypeServiceUnavailable
	e.RetryAfter = retryAfter
	return e
}

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

// ImageOutsideUser is the 400 unsupported_content of an input_image in a
// message of role (system or developer): Chat Completions takes images in
// user messages only, and Converse's system prompt text only.
func ImageOutsideUser(role string) *api.Error {
	return api.InvalidRequestCode("input", "unsupported_content",
		"input_image is supported in user messages only by this model provider, not in %s messages", role)
}

// InputFile is the 400 unsupported_content of an input_file part, which
// no provider sends.
func InputFile() *api.Error {
	return api.InvalidRequestCode("input", "unsupported_content", "input_file content is not supported by this model provider")
}

// ImageFileID is the 400 unsupported_content of an input_image given by
// file_id, which no provider can read.
func ImageFileID() *api.Error {
	return api.InvalidRequestCode("input", "unsupported_content",
		"input_image by file_id is not supported by this model provider; use image_url")
}

// ContentChecker is a Provider that refuses some content parts of a
// model call's items as it converts the call. The engine asks it
// (CheckContentFor) before anything connects (an MCP server, the model),
// so that the refusal comes first, as every refusal of request input does.
type ContentChecker interface {
	// CheckContent returns the 400 a model call carrying items would
	// fail with for their content, nil when it would not.
	CheckContent(items []api.Item) error
}

// CheckContentFor checks each of itemss with the ContentChecker of
// model: p, or for a Router the provider model is routed to; nil when
// that provider checks nothing.
func CheckContentFor(p Provider, model string, itemss ...[]api.Item) error {
	if r, ok := p.(*Router); ok {
		p = r.For(model)
	}
	c, ok := p.(ContentChecker)
	if !ok {
		return nil
	}
	for _, items := range itemss {
		if err := c.CheckContent(items); err != nil {
			return err
		}
	}
	return nil
}

// CheckMessages returns the 400 of the first content part of items'
// messages that neither provider of this module takes: an input_file
// (InputFile), an input_image by file_id (ImageFileID), an input_image
// in a system or developer message (ImageOutsideUser; an assistant
// message's parts other than its text are not sent).
func CheckMessages(items []api.Item) error {
	for i := range items {
		if it := &items[i]; it.Type == api.ItemMessage && it.Role != api.RoleAssistant {
			if err := CheckParts(it.Role, it.Content); err != nil {
				return err
			}
		}
	}
	return nil
}

// CheckParts is CheckMessages of one message of role holding parts.
func CheckParts(role string, parts []api.ContentPart) error {
	for i := range parts {
		switch p := &parts[i]; p.Type {
		case api.PartInputFile:
			return InputFile()
		case api.PartInputImage:
			if p.ImageURL == "" {
				return ImageFileID()
			}
			if role == api.RoleSystem || role == api.RoleDeveloper {
				return ImageOutsideUser(role)
			}
		}
	}
	return nil
}
