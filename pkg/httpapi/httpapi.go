// Package httpapi serves the OpenResponses HTTP API over net/http: routes
// (http.ServeMux patterns, refused in the OpenAI error shape), request
// decoding, the SSE writer and error mapping. The same handler runs
// as a local server and inside Lambda.
package httpapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"

	"github.com/lambent/lambent/internal/wirejson"
	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/engine"
	"github.com/lambent/lambent/pkg/pacing"
	"github.com/lambent/lambent/pkg/requestid"
	"github.com/lambent/lambent/pkg/tenant"
	"github.com/lambent/lambent/pkg/wsapi"
)

// Service is what the HTTP API needs of the engine.
type Service interface {
	// CreateResponse runs a request within the call.
	CreateResponse(ctx context.Context, req *api.CreateResponseRequest, w engine.ResponseWriter) error
	// CreateBackground queues a request with background=true for a worker.
	CreateBackground(ctx context.Context, req *api.CreateResponseRequest, w engine.ResponseWriter) error
	GetResponse(ctx context.Context, id string) (*api.Response, error)
	DeleteResponse(ctx context.Context, id string) (*api.DeleteResult, error)
	ListInputItems(ctx context.Context, id string, opts api.ListOptions) (*api.ItemList, error)
	CancelResponse(ctx context.Context, id string) (*api.Response, error)
	StreamResponse(ctx context.Context, id string, after int64, w engine.ResponseWriter) error
	// Compact summarises a conversation into a compacted window.
	Compact(ctx context.Context, req *api.CompactRequest) (*api.CompactResource, error)
	// CountInputTokens counts the input tokens of a create request's
	// first model call.
	CountInputTokens(ctx context.Context, req *api.CreateResponseRequest) (*api.InputTokens, error)
	// The Conversations API (/v1/conversations).
	CreateConversation(ctx context.Context, req *api.ConversationCreateRequest) (*api.Conversation, error)
	GetConversation(ctx context.Context, id string) (*api.Conversation, error)
	UpdateConversation(ctx context.Context, id string, metadata map[string]string) (*api.Conversation, error)
	DeleteConversation(ctx context.Context, id string) (*api.ConversationDeleted, error)
	AddConversationItems(ctx context.Context, id string, items []api.Item) (*api.ItemList, error)
	ListConversationItems(ctx context.Context, id string, opts api.ListOptions) (*api.ItemList, error)
	GetConversationItem(ctx context.Context, id, itemID string) (*api.Item, error)
	DeleteConversationItem(ctx context.Context, id, itemID string) (*api.Conversation, error)
}

// DefaultMaxBody is the default request body limit (8 MiB).
const DefaultMaxBody = 8 << 20

// Config configures the handler.
type Config struct {
	Service Service
	// MaxBody limits request bodies (default DefaultMaxBody); larger is 413.
	MaxBody int64
	// Logger receives access and error logs (default slog.Default()).
	Logger *slog.Logger
	// Tenants is the tenant rule: the API keys (API key → tenant) and how
	// IAM callers are named. Without keys, no key is required (local runs;
	// in AWS the function URL's or API Gateway's IAM auth guards the API).
	// Every response is stored under the tenant that created it and is
	// invisible to others. Requests that a front door authenticated with
	// AWS IAM (tenant.Caller) need no key: their tenant is the caller's IAM
	// identity.
	Tenants tenant.Rule
	// WebSocket configures WebSocket mode on /v1/responses (package
	// wsapi); its Service, Logger and ReadLimit default to this Config's.
	WebSocket wsapi.Config
	// AllowedHosts are the host names, beside the loopback ones, that a
	// request arriving on a socket of the server may name in its Host
	// header (LAMBENT_ALLOWED_HOSTS); "*" allows any. See Handler.
	AllowedHosts []string
	// Routes are served beside the API (the app's GET /metrics), through
	// the same checks and refusals, but outside the tenant rule: each
	// authenticates its own callers.
	Routes []Route
	// Models are the models GET /v1/models lists and /v1/models/{id}
	// knows (nil: none).
	Models ModelCatalog
	// Pacing paces the SSE streams: when buffered events are written and
	// the keep-alive comments while none come (zero values: the package's
	// defaults).
	Pacing pacing.Config
}

// ModelCatalog gives the models GET /v1/models lists and
// /v1/models/{id} knows, as they are when asked (a provider's listing may
// come after start-up). It is safe for concurrent use.
type ModelCatalog interface {
	Models() api.Models
}

// Route is a route served beside the API (Config.Routes).
type Route struct {
	// Pattern is a ServeMux pattern of a method and a path of its own,
	// without a trailing slash: "GET /metrics". As on the API's routes, a
	// trailing slash of a request's path is ignored, and a method the
	// path has no route for is a 405.
	Pattern string
	// Handler serves the route's requests, each with its request id. It
	// authenticates them itself, and writes its errors with WriteError.
	Handler http.Handler
}

// Handler is the HTTP API.
//
// It protects a local gateway from browsers. Every POST with a body must
// be application/json (415 otherwise), so a cross-site page cannot make a
// browser send one without a CORS preflight (which the gateway never
// grants). And against DNS rebinding (a page whose name resolves to
// 127.0.0.1 reading the local gateway as its own origin), a request that
// arrived on a loopback socket of the server must name a loopback host
// (localhost, *.localhost, 127.0.0.0/8, [::1]) in its Host header, or one of
// Config.AllowedHosts, which then apply to every socket; else it is a 421.
// Requests that came through no socket of the server (lambdaio hands it
// those of Lambda's front doors, which have their own hosts) are not
// checked.
type Handler struct {
	svc     Service
	maxBody int64
	log     *slog.Logger
	tenants tenant.Rule
	ws      *wsapi.Server
	hosts   hostAllowlist
	router  *router
	pacing  pacing.Config
	models  ModelCatalog
}

// New returns the API handler. It panics when a route of cfg.Routes is
// not a pattern of a method and a path, or conflicts with another route
// (as http.ServeMux.Handle does).
func New(cfg Config) *Handler {
	if cfg.MaxBody <= 0 {
		cfg.MaxBody = DefaultMaxBody
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	ws := cfg.WebSocket
	if ws.Service == nil {
		ws.Service = cfg.Service
	}
	if ws.Logger == nil {
		ws.Logger = cfg.Logger
	}
	if ws.ReadLimit <= 0 {
		ws.ReadLimit = cfg.MaxBody
	}
	h := &Handler{svc: cfg.Service, maxBody: cfg.MaxBody, log: cfg.Logger, tenants: cfg.Tenants, ws: wsapi.NewServer(ws), hosts: newHostAllowlist(cfg.AllowedHosts), models: cfg.Models,
		pacing: cfg.Pacing.WithDefaults()}
	routes := h.routes()
	for _, r := range cfg.Routes {
		routes = append(routes, route{pattern: r.Pattern, handler: r.Handler, open: true})
	}
	h.router = newRouter(routes)
	return h
}

// Shutdown closes the open WebSocket connections, each after its response
// in flight (http.Server.Shutdown does not see hijacked connections).
func (h *Handler) Shutdown(ctx context.Context) error {
	return h.ws.Shutdown(ctx)
}

// ServeHTTP serves a request through the checks every route shares, in
// this order: every reply carries the request's id in its x-request-id
// header (requestid.Serve: the id the request's context carries, else a
// new one), and every log line of the request repeats it; panics are
// recovered into a 500 in the OpenAI error shape; the Host check (see
// Handler); the tenant rule (authenticate), except on open routes
// (/healthz, Config.Routes); the Content-Encoding check
// (identityEncoding). Then the request is routed (route).
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	r, _ = requestid.Serve(w, r)
	defer h.recoverPanic(w, r)
	h.fail(w, r, h.serve(w, r))
}

// recoverPanic, deferred, answers a panic of the request's handler with a
// 500 (http.ErrAbortHandler goes on: it aborts the reply).
func (h *Handler) recoverPanic(w http.ResponseWriter, r *http.Request) {
	if p := recover(); p != nil {
		if p == http.ErrAbortHandler {
			panic(p)
		}
		h.log.ErrorContext(r.Context(), "panic serving request", "method", r.Method, "path", r.URL.Path, "panic", p)
		h.writeError(w, r, api.ServerError(fmt.Errorf("panic: %v", p), api.ServerErrorMessage))
	}
}

// serve checks r and routes it; it returns the error to answer with.
func (h *Handler) serve(w http.ResponseWriter, r *http.Request) error {
	if !h.hosts.allows(r) {
		return &api.Error{Status: http.StatusMisdirectedRequest, Type: api.ErrTypeInvalidRequest, Code: "host_not_allowed",
			Message: "This gateway does not serve the host " + strconv.Quote(r.Host) + " named by the request: on a loopback address it answers localhost, 127.0.0.1 and [::1] only (add names to LAMBENT_ALLOWED_HOSTS)."}
	}
	u, res := h.router.resolve(r)
	if res == nil || !res.open {
		var err error
		if r, err = h.authenticate(w, r); err != nil {
			return err
		}
	}
	if err := identityEncoding(w, r); err != nil {
		return err
	}
	return h.router.route(w, r, u, res)
}

// identityEncoding refuses a request body with a Content-Encoding other
// than identity (the gateway decodes none: a gzip body would otherwise be
// read as JSON) with a 415.
func identityEncoding(w http.ResponseWriter, r *http.Request) error {
	ce := strings.TrimSpace(r.Header.Get("Content-Encoding"))
	if ce == "" || strings.EqualFold(ce, "identity") || r.ContentLength == 0 {
		return nil
	}
	w.Header().Set("Accept-Encoding", "identity")
	return &api.Error{Status: http.StatusUnsupportedMediaType, Type: api.ErrTypeInvalidRequest, Code: "unsupported_content_encoding",
		Message: "Unsupported Content-Encoding " + strconv.Quote(ce) + "; send the request body uncompressed."}
}

// handlerFunc is a route's handler: it writes its answer, or returns the
// error to answer with, which handle writes.
type handlerFunc func(http.ResponseWriter, *http.Request) error

// handle adapts f to http.Handler: the error f returns is answered in the
// OpenAI error shape (fail), so that no handler writes its own errors.
func (h *Handler) handle(f handlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.fail(w, r, f(w, r))
	})
}

// fail answers err (nothing when nil) with WriteError, unless err only
// says that the client went away (the request's context was cancelled and
// the error is a context's): then there is no one to answer and nothing
// failed, so it stops. A request whose own deadline passed (a buffered
// front door's, lambdaio) still has its client waiting: it gets the error,
// a bare context deadline as a 504.
func (h *Handler) fail(w http.ResponseWriter, r *http.Request, err error) {
	if err == nil {
		return
	}
	if errors.Is(r.Context().Err(), context.Canceled) && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
		h.log.DebugContext(r.Context(), "client went away", "method", r.Method, "path", r.URL.Path, "err", err)
		return
	}
	var ae *api.Error
	if !errors.As(err, &ae) && errors.Is(err, context.DeadlineExceeded) {
		err = &api.Error{Status: http.StatusGatewayTimeout, Type: api.ErrTypeServer, Code: "timeout", Err: err,
			Message: "The request did not finish within its time limit. Retry it, or stream the response (\"stream\": true) to get its output as it comes."}
	}
	h.writeError(w, r, err)
}

// writeJSON writes v as the JSON body (followed by a newline, as
// json.Encoder writes it) with its Content-Length.
func (h *Handler) writeJSON(w http.ResponseWriter, status int, v any) {
	writeJSON(w, h.log, status, v)
}

func writeJSON(w http.ResponseWriter, log *slog.Logger, status int, v any) {
	var b []byte
	var err error
	if r, ok := v.(*api.Response); ok {
		// Its MarshalJSON writes wirejson's compact bytes: what Marshal
		// would give, without encoding the whole response a second time.
		b, err = r.MarshalJSON()
	} else {
		b, err = wirejson.Marshal(v)
	}
	if err != nil {
		log.Error("encode response", "err", err)
		status = http.StatusInternalServerError
		b = []byte(`{"error":{"message":"internal error: could not encode the response","type":"server_error","param":null,"code":"server_error"}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)+1))
	w.WriteHeader(status)
	// Two writes to the response's buffer rather than a copy of b with
	// the newline.
	_, _ = w.Write(b)
	_, _ = w.Write(newline)
}

var newline = []byte{'\n'}

func (h *Handler) writeError(w http.ResponseWriter, r *http.Request, err error) {
	WriteError(w, r, h.log, err)
}

// WriteError answers r with err in the OpenAI error shape (api.AsError's
// status, api.Error.WriteHTTP). A server error's message says what
// happened in general terms and names the request id
// (api.Error.ForClient); a server failure (api.Error.ServerFailure) goes
// to log at level error with that id.
func WriteError(w http.ResponseWriter, r *http.Request, log *slog.Logger, err error) {
	e := api.AsError(err)
	if e.ServerFailure() {
		log.ErrorContext(r.Context(), "request failed", "method", r.Method, "path", r.URL.Path, "status", e.Status, "code", e.Code, "err", err)
	}
	e.WriteHTTP(w, requestid.From(r.Context()))
}
