// Package lambdaio serves an [http.Handler] inside AWS Lambda, for one
// function that may be invoked by any HTTP front door:
//
//   - a Lambda function URL with InvokeMode RESPONSE_STREAM: the reply is an
//     [events.LambdaFunctionURLStreamingResponse] whose body streams what the
//     handler writes, each Flush reaching Lambda as one chunk at once;
//   - an API Gateway REST API (payload 1.0) whose integration has
//     ResponseTransferMode STREAM: the reply is an
//     [events.APIGatewayProxyStreamingResponse], streamed the same way;
//   - a buffered REST API, an HTTP API with payload 2.0 or 1.0: the whole
//     response is collected and returned as one proxy response, through
//     github.com/awslabs/aws-lambda-go-api-proxy's request and response
//     conversions.
//
// An event whose fields make no http.Request (a body that is not the base64
// it claims to be, a method or URL net/http refuses) is answered, in the
// reply shape of its front door, with a 400 in the OpenAI error shape rather
// than failing the invocation, which the front door would turn into a bare
// 502.
//
// [Handler.Handle] tells the shapes apart from the raw event ([Detect]). A
// REST API sends the same event whether its integration streams or not, so
// the deployment says which: see [Config.BufferedREST].
//
// Streaming runs the handler in a goroutine that writes into an [io.Pipe]
// read by the Lambda runtime client. The status code and headers go first
// (the JSON prelude, then 8 zero bytes), so Handle returns once the handler
// has written its header (its first Write or Flush, or its return). The
// request's context is the invocation's: its deadline is the Lambda
// deadline, and it is cancelled when the runtime closes the response (the
// runtime client does so before it asks for the next invocation, whether the
// response was sent or the send failed). Closing the response also waits for
// the handler goroutine, so none outlives its invocation.
//
// A request that the front door authenticated with AWS_IAM carries the
// caller's IAM ARN in its context ([tenant.Caller]), taken from the event.
// Its log records carry the Lambda invocation's request id and the front
// door's (package requestid); the handler gives the request its own id.
package lambdaio

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"runtime/debug"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/lambent/lambent/pkg/requestid"
	"github.com/lambent/lambent/pkg/tenant"
)

// TransferModeStageVariable is the API Gateway stage variable that
// [DefaultBufferedREST] reads: a REST API stage whose integrations use the
// buffered response transfer mode sets it to "BUFFERED". Any other value, or
// none, means the integration streams (ResponseTransferMode STREAM).
const TransferModeStageVariable = "lambentTransferMode"

// Config configures a [Handler]. The zero Config is ready to use.
type Config struct {
	// BufferedREST reports whether a REST API request (payload 1.0) came
	// through an integration with the default BUFFERED response transfer
	// mode, to be answered with one APIGatewayProxyResponse, rather than a
	// streaming one (ResponseTransferMode STREAM, answered with a response
	// stream). API Gateway sends the same event in both modes and each needs
	// its own reply, so the deployment must say. Nil means
	// [DefaultBufferedREST].
	BufferedREST func(*events.APIGatewayProxyRequest) bool
	// Logger receives panics recovered from the handler (default
	// slog.Default()).
	Logger *slog.Logger
	// BufferedTimeout bounds a buffered request (an HTTP API's, a buffered
	// REST API's): its context ends that long after it arrived, so that
	// the engine ends the response (incomplete, reason deadline) before API
	// Gateway's integration timeout answers the client with a bare 504
	// (default DefaultBufferedTimeout; negative: only the invocation's
	// deadline).
	BufferedTimeout time.Duration
}

// DefaultBufferedREST is the default [Config.BufferedREST]: a REST API
// request is buffered when its stage variable [TransferModeStageVariable] is
// "BUFFERED" (any case), else streamed.
func DefaultBufferedREST(ev *events.APIGatewayProxyRequest) bool {
	return strings.EqualFold(ev.StageVariables[TransferModeStageVariable], "BUFFERED")
}

// Handler serves an http.Handler to Lambda invocations. Create it with
// [New]; it is safe for concurrent use (Lambda managed instances run several
// invocations at once).
type Handler struct {
	h               http.Handler
	bufferedREST    func(*events.APIGatewayProxyRequest) bool
	log             *slog.Logger
	bufferedTimeout time.Duration
}

// New returns a Handler serving h.
func New(h http.Handler, cfg Config) *Handler {
	if cfg.BufferedREST == nil {
		cfg.BufferedREST = DefaultBufferedREST
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.BufferedTimeout == 0 {
		cfg.BufferedTimeout = DefaultBufferedTimeout
	}
	return &Handler{h: h, bufferedREST: cfg.BufferedREST, log: cfg.Logger, bufferedTimeout: cfg.BufferedTimeout}
}

// Start serves h to Lambda invocations with [lambda.StartWithOptions]. Like
// [lambda.Start] it does not return: when the runtime loop fails it logs the
// error and exits the process.
func Start(h http.Handler, cfg Config, opts ...lambda.Option) {
	lambda.StartWithOptions(New(h, cfg).Handle, opts...)
}

// Handle serves one invocation whose event is payload. The reply is a
// *events.LambdaFunctionURLStreamingResponse for a function URL, a
// *events.APIGatewayProxyStreamingResponse for a streamed REST API request,
// an events.APIGatewayProxyResponse for a buffered REST API or an HTTP API
// payload 1.0 request, and an events.APIGatewayV2HTTPResponse for an HTTP
// API payload 2.0 request. An event of any other shape is an error.
//
// A streamed reply must be read to its end or closed: closing it cancels the
// request's context and waits for the handler to return. The Lambda runtime
// client does both.
func (h *Handler) Handle(ctx context.Context, payload json.RawMessage) (any, error) {
	kind := Detect(payload)
	ctx = requestid.WithLambda(ctx)
	switch kind {
	case EventFunctionURL:
		var ev events.LambdaFunctionURLRequest
		if err := json.Unmarshal(payload, &ev); err != nil {
			return nil, fmt.Errorf("lambdaio: decoding %s event: %w", kind, err)
		}
		ctx = withEventID(ctx, FunctionURLRequestKey, ev.RequestContext.RequestID)
		return h.serveFunctionURL(withCaller(ctx, functionURLCaller(&ev)), &ev)
	case EventREST, EventHTTPAPIV1:
		var ev events.APIGatewayProxyRequest
		if err := json.Unmarshal(payload, &ev); err != nil {
			return nil, fmt.Errorf("lambdaio: decoding %s event: %w", kind, err)
		}
		ctx = withEventID(ctx, GatewayRequestKey, ev.RequestContext.RequestID)
		ctx = withCaller(ctx, restCaller(&ev))
		ev.Path = parsablePath(ev.Path)
		if kind == EventHTTPAPIV1 {
			ev.Path = stagelessPath(ev.Path, ev.RequestContext.Stage, ev.RequestContext.DomainName)
		} else {
			ev.Path = resourcePath(&ev)
		}
		if kind == EventREST && !h.bufferedREST(&ev) {
			return h.serveRESTStream(ctx, &ev)
		}
		return h.serveV1(ctx, &ev)
	case EventHTTPAPIV2:
		var ev events.APIGatewayV2HTTPRequest
		if err := json.Unmarshal(payload, &ev); err != nil {
			return nil, fmt.Errorf("lambdaio: decoding %s event: %w", kind, err)
		}
		ctx = withEventID(ctx, GatewayRequestKey, ev.RequestContext.RequestID)
		ev.RawPath, ev.RequestContext.HTTP.Path = parsablePath(ev.RawPath), parsablePath(ev.RequestContext.HTTP.Path)
		rc := &ev.RequestContext
		ev.RawPath, rc.HTTP.Path = stagelessPath(ev.RawPath, rc.Stage, rc.DomainName), stagelessPath(rc.HTTP.Path, rc.Stage, rc.DomainName)
		return h.serveV2(withCaller(ctx, httpAPICaller(&ev)), &ev)
	}
	return nil, errors.New("lambdaio: unsupported event: not a function URL, API Gateway REST API or HTTP API request")
}

// parsablePath returns the path of an event as a URL holds it. An HTTP API
// passes the path decoded (a client's "%25" as "%", "%00" as a NUL byte,
// "%23" as "#"), which no URL parses and which failed the invocation (API
// Gateway's bare 500) instead of reaching the gateway's router (a 404 in
// the OpenAI shape), or which a URL splits at its "?" or "#" (so that
// DELETE /v1/responses/resp_x%23 deleted resp_x): such a path is escaped
// again. A path that parses as a path alone stays as it is (the other front
// doors pass it encoded, where "?" and "#" cannot appear).
func parsablePath(p string) string {
	if p == "" {
		return p
	}
	if _, err := url.ParseRequestURI(p); err == nil && !strings.ContainsAny(p, "?#") {
		return p
	}
	return (&url.URL{Path: p}).EscapedPath()
}

// stagelessPath returns the path of an HTTP API event (either payload
// format) without its stage. An HTTP API serves a stage other than $default
// under /<stage> of its execute-api domain and leaves that prefix in the
// event's path (a REST API takes it out), where no route of the handler
// matches it. A custom domain's path carries no stage (its API mapping
// names it) and stays as it is.
func stagelessPath(p, stage, domain string) string {
	if stage == "" || stage == "$default" || !strings.Contains(domain, ".execute-api.") {
		return p
	}
	rest, ok := strings.CutPrefix(p, "/"+stage)
	switch {
	case !ok || (rest != "" && rest[0] != '/'):
		return p
	case rest == "":
		return "/"
	}
	return rest
}

// resourcePath returns the path of a REST API event without the base path
// of the custom domain's API mapping it came through: API Gateway leaves
// that base path in the event's path (/openai/v1/responses through the
// mapping "openai"), where no route of the handler matches it. The path
// keeps as many segments as the matched resource (the event's resource, a
// greedy {name+} counting the segments of its value), in their original
// encoding. On the execute-api domain the path has no base path and stays
// as it is.
func resourcePath(ev *events.APIGatewayProxyRequest) string {
	p := ev.Path
	if ev.Resource == "" || strings.Contains(ev.RequestContext.DomainName, ".execute-api.") {
		return p
	}
	n := strings.Count(strings.TrimSuffix(ev.Resource, "/"), "/")
	for name, v := range ev.PathParameters {
		if strings.Contains(ev.Resource, "{"+name+"+}") {
			n += strings.Count(v, "/")
		}
	}
	trimmed := strings.TrimSuffix(p, "/")
	segs := strings.Split(trimmed, "/") // segs[0] is the empty one before the first "/"
	switch {
	case len(segs)-1 <= n:
		return p
	case n == 0:
		return "/"
	}
	return "/" + strings.Join(segs[len(segs)-n:], "/") + p[len(trimmed):]
}

// Log attributes of the front door's own request id (the event's
// requestContext.requestId), beside the Lambda invocation's
// (requestid.LambdaKey) and the gateway's request id (requestid.LogKey).
const (
	GatewayRequestKey     = "apigw_request_id"
	FunctionURLRequestKey = "function_url_request_id"
)

// withEventID returns ctx whose log records carry the event's request id
// under key.
func withEventID(ctx context.Context, key, id string) context.Context {
	if id == "" {
		return ctx
	}
	return requestid.WithAttrs(ctx, slog.String(key, id))
}

// The caller's IAM identity, when the front door authenticated the request
// with AWS_IAM (SigV4), is in the event's request context; it becomes the
// request's [tenant.Caller]. An event from a front door with auth NONE
// carries none.

// functionURLCaller is requestContext.authorizer.iam of a function URL event.
func functionURLCaller(ev *events.LambdaFunctionURLRequest) string {
	if a := ev.RequestContext.Authorizer; a != nil && a.IAM != nil {
		return tenant.CallerOf(a.IAM.UserARN, a.IAM.CallerID)
	}
	return ""
}

// restCaller is requestContext.identity of a REST API (or HTTP API payload
// 1.0) event.
func restCaller(ev *events.APIGatewayProxyRequest) string {
	id := &ev.RequestContext.Identity
	return tenant.CallerOf(id.UserArn, id.Caller)
}

// httpAPICaller is requestContext.authorizer.iam of an HTTP API payload 2.0
// event.
func httpAPICaller(ev *events.APIGatewayV2HTTPRequest) string {
	if a := ev.RequestContext.Authorizer; a != nil && a.IAM != nil {
		return tenant.CallerOf(a.IAM.UserARN, a.IAM.CallerID)
	}
	return ""
}

func withCaller(ctx context.Context, arn string) context.Context {
	if arn == "" {
		return ctx
	}
	return tenant.WithCaller(ctx, arn)
}

// EventKind is the shape of an invocation event, as told by [Detect].
type EventKind int

const (
	// EventUnknown is any other event.
	EventUnknown EventKind = iota
	// EventFunctionURL is a Lambda function URL request (payload 2.0 whose
	// requestContext.domainName is a "<url-id>.lambda-url.<region>.on.aws"
	// name).
	EventFunctionURL
	// EventREST is an API Gateway REST API proxy request (payload 1.0
	// without a "version" field).
	EventREST
	// EventHTTPAPIV1 is an API Gateway HTTP API request with payload format
	// 1.0 ("version": "1.0").
	EventHTTPAPIV1
	// EventHTTPAPIV2 is an API Gateway HTTP API request with payload format
	// 2.0 (requestContext.http set, any other domain name).
	EventHTTPAPIV2
)

// String returns a short name of k.
func (k EventKind) String() string {
	switch k {
	case EventFunctionURL:
		return "function URL"
	case EventREST:
		return "REST API"
	case EventHTTPAPIV1:
		return "HTTP API payload 1.0"
	case EventHTTPAPIV2:
		return "HTTP API payload 2.0"
	}
	return "unknown"
}

// probe is the part of an event Detect reads.
type probe struct {
	Version        string `json:"version"`
	HTTPMethod     string `json:"httpMethod"`
	RequestContext struct {
		DomainName string          `json:"domainName"`
		HTTP       json.RawMessage `json:"http"`
		ELB        json.RawMessage `json:"elb"`
	} `json:"requestContext"`
}

// Detect tells the shape of a raw invocation event. Function URL and HTTP
// API payload 2.0 events share their shape; they differ by the domain name
// (function URLs have no custom domains, so theirs is always a
// "lambda-url" one).
func Detect(payload []byte) EventKind {
	var p probe
	if err := json.Unmarshal(payload, &p); err != nil {
		return EventUnknown
	}
	rc := &p.RequestContext
	switch {
	case present(rc.HTTP):
		if strings.Contains(rc.DomainName, ".lambda-url.") {
			return EventFunctionURL
		}
		return EventHTTPAPIV2
	case p.HTTPMethod != "" && !present(rc.ELB):
		if p.Version == "1.0" {
			return EventHTTPAPIV1
		}
		return EventREST
	}
	return EventUnknown
}

func present(raw json.RawMessage) bool {
	return len(raw) > 0 && string(raw) != "null"
}

// panicError records a panic recovered from the handler, logging it unless
// it is http.ErrAbortHandler (the handler's way to abort a response quietly).
func (h *Handler) panicError(p any, r *http.Request) error {
	if p == http.ErrAbortHandler {
		return http.ErrAbortHandler
	}
	h.log.ErrorContext(r.Context(), "lambdaio: panic serving request", "method", r.Method, "path", r.URL.Path, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
	return fmt.Errorf("lambdaio: handler panicked: %v", p)
}
