// Package httpapi serves the OpenResponses HTTP API over net/http: routes,
// request decoding, the SSE writer and error mapping. The same handler runs
// as a local server and inside Lambda.
package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"mime"
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
	// Pacing paces the SSE streams: when buffered events are written and
	// the keep-alive comments while none come (zero values: the package's
	// defaults).
	Pacing pacing.Config
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
	pacing  pacing.Config
}

// New returns the API handler.
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
	return &Handler{svc: cfg.Service, maxBody: cfg.MaxBody, log: cfg.Logger, tenants: cfg.Tenants, ws: wsapi.NewServer(ws), hosts: newHostAllowlist(cfg.AllowedHosts),
		pacing: cfg.Pacing.WithDefaults()}
}

// Shutdown closes the open WebSocket connections, each after its response
// in flight (http.Server.Shutdown does not see hijacked connections).
func (h *Handler) Shutdown(ctx context.Context) error {
	return h.ws.Shutdown(ctx)
}

// ServeHTTP routes a request. Every reply carries the request's id in
// its x-request-id header (requestid.Serve: the id the request's context
// carries, else a new one), and every log line of the request repeats it.
// Panics are recovered into a 500 in the OpenAI error shape.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	r, _ = requestid.Serve(w, r)
	h.route(w, r)
}

// route serves a request that has its request id.
func (h *Handler) route(w http.ResponseWriter, r *http.Request) {
	defer func() {
		if p := recover(); p != nil {
			if p == http.ErrAbortHandler {
				panic(p)
			}
			h.log.ErrorContext(r.Context(), "panic serving request", "method", r.Method, "path", r.URL.Path, "panic", p)
			h.writeError(w, r, api.ServerError(fmt.Errorf("panic: %v", p), api.ServerErrorMessage))
		}
	}()
	if !h.hosts.allows(r) {
		h.writeError(w, r, &api.Error{Status: http.StatusMisdirectedRequest, Type: api.ErrTypeInvalidRequest, Code: "host_not_allowed",
			Message: "This gateway does not serve the host " + strconv.Quote(r.Host) + " named by the request: on a loopback address it answers localhost, 127.0.0.1 and [::1] only (add names to LAMBENT_ALLOWED_HOSTS)."})
		return
	}
	path := strings.TrimSuffix(r.URL.Path, "/")
	if path != "/healthz" {
		var ok bool
		if r, ok = h.authenticate(w, r); !ok {
			return
		}
	}
	if !h.identityEncoding(w, r) {
		return
	}
	switch {
	case path == "/healthz":
		h.only(w, r, http.MethodGet, func() { h.writeJSON(w, http.StatusOK, map[string]string{"status": "ok"}) })
	case path == "/v1/responses" && wsapi.IsUpgrade(r):
		h.ws.ServeHTTP(w, r)
	case path == "/v1/responses":
		h.only(w, r, http.MethodPost, func() { h.create(w, r) })
	case path == "/v1/responses/compact":
		h.only(w, r, http.MethodPost, func() { h.compact(w, r) })
	case strings.HasPrefix(path, "/v1/responses/"):
		rest := strings.TrimPrefix(path, "/v1/responses/")
		id, sub, _ := strings.Cut(rest, "/")
		if id == "" || strings.Contains(sub, "/") {
			h.notFoundRoute(w, r)
			return
		}
		switch sub {
		case "":
			switch r.Method {
			case http.MethodGet:
				h.get(w, r, id)
			case http.MethodDelete:
				h.delete(w, r, id)
			default:
				h.methodNotAllowed(w, r, "GET, DELETE")
			}
		case "input_items":
			h.only(w, r, http.MethodGet, func() { h.inputItems(w, r, id) })
		case "cancel":
			h.only(w, r, http.MethodPost, func() { h.cancel(w, r, id) })
		default:
			h.notFoundRoute(w, r)
		}
	default:
		h.notFoundRoute(w, r)
	}
}

// identityEncoding refuses a request body with a Content-Encoding other
// than identity (the gateway decodes none: a gzip body would otherwise be
// read as JSON) with a 415. It writes the error itself.
func (h *Handler) identityEncoding(w http.ResponseWriter, r *http.Request) bool {
	ce := strings.TrimSpace(r.Header.Get("Content-Encoding"))
	if ce == "" || strings.EqualFold(ce, "identity") || r.ContentLength == 0 {
		return true
	}
	w.Header().Set("Accept-Encoding", "identity")
	h.writeError(w, r, &api.Error{Status: http.StatusUnsupportedMediaType, Type: api.ErrTypeInvalidRequest, Code: "unsupported_content_encoding",
		Message: "Unsupported Content-Encoding " + strconv.Quote(ce) + "; send the request body uncompressed."})
	return false
}

func (h *Handler) only(w http.ResponseWriter, r *http.Request, method string, fn func()) {
	if r.Method != method {
		h.methodNotAllowed(w, r, method)
		return
	}
	fn()
}

func (h *Handler) methodNotAllowed(w http.ResponseWriter, r *http.Request, allow string) {
	w.Header().Set("Allow", allow)
	h.writeError(w, r, &api.Error{Status: http.StatusMethodNotAllowed, Type: api.ErrTypeInvalidRequest, Code: "method_not_allowed",
		Message: "Method " + r.Method + " is not allowed for " + r.URL.Path + "; allowed: " + allow + "."})
}

func (h *Handler) notFoundRoute(w http.ResponseWriter, r *http.Request) {
	h.writeError(w, r, &api.Error{Status: http.StatusNotFound, Type: api.ErrTypeInvalidRequest, Code: "unknown_url",
		Message: "Unknown request URL: " + r.Method + " " + r.URL.Path + "."})
}

// body reads a JSON request body within the size limit; on failure it
// writes the error (415, 413, 400) and returns false. A body must come as
// application/json: without a Content-Type it is refused too (see
// Handler), an empty body is not.
func (h *Handler) body(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	if ct := r.Header.Get("Content-Type"); ct != "" || r.ContentLength != 0 {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || mt != "application/json" {
			msg := "Unsupported Content-Type " + strconv.Quote(ct) + "; send application/json."
			if ct == "" {
				msg = "The request body has no Content-Type; send it as application/json."
			}
			h.writeError(w, r, &api.Error{Status: http.StatusUnsupportedMediaType, Type: api.ErrTypeInvalidRequest, Code: "unsupported_media_type", Message: msg})
			return nil, false
		}
	}
	body, err := api.ReadLimited(http.MaxBytesReader(w, r.Body, h.maxBody+1), h.maxBody)
	if err != nil {
		h.writeError(w, r, err)
		return nil, false
	}
	return body, true
}

func (h *Handler) create(w http.ResponseWriter, r *http.Request) {
	body, ok := h.body(w, r)
	if !ok {
		return
	}
	req, err := api.DecodeCreateRequest(body)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	create := h.svc.CreateResponse
	if req.Background {
		create = h.svc.CreateBackground
	}
	rw := &responseWriter{h: h, w: w}
	pw := pacing.New(rw, h.pacing)
	err = create(r.Context(), req, pw)
	// The pacing stops: what rw still buffers (the terminal event) goes
	// out with the end of the stream.
	pw.Close()
	if err != nil {
		if rw.started {
			h.log.WarnContext(r.Context(), "error after the response started", "err", err)
			_ = rw.Flush()
			return
		}
		if errors.Is(err, context.Canceled) {
			return
		}
		h.writeError(w, r, err)
		return
	}
	if rw.started && req.Stream {
		rw.done()
	}
}

func (h *Handler) compact(w http.ResponseWriter, r *http.Request) {
	body, ok := h.body(w, r)
	if !ok {
		return
	}
	req, err := api.DecodeCompactRequest(body)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	res, err := h.svc.Compact(r.Context(), req)
	if err != nil {
		if !errors.Is(err, context.Canceled) {
			h.writeError(w, r, err)
		}
		return
	}
	h.writeJSON(w, http.StatusOK, res)
}

func (h *Handler) get(w http.ResponseWriter, r *http.Request, id string) {
	q := r.URL.Query()
	if q.Get("stream") == "true" || streamInBody(r) {
		after := int64(-1)
		if v := q.Get("starting_after"); v != "" {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 {
				h.writeError(w, r, api.InvalidRequest("starting_after", "starting_after must be a non-negative integer"))
				return
			}
			after = n
		}
		rw := &responseWriter{h: h, w: w}
		pw := pacing.New(rw, h.pacing)
		err := h.svc.StreamResponse(r.Context(), id, after, pw)
		pw.Close()
		if err != nil {
			if rw.started {
				_ = rw.Flush()
			} else {
				h.fail(w, r, err)
			}
			return
		}
		rw.done()
		return
	}
	resp, err := h.svc.GetResponse(r.Context(), id)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.writeJSON(w, http.StatusOK, resp)
}

// streamInBody reports whether a GET carries {"stream": true} as a JSON
// body, as the official SDKs' retrieve-streaming helpers send it.
func streamInBody(r *http.Request) bool {
	if r.Body == nil || r.ContentLength == 0 {
		return false
	}
	var b struct {
		Stream bool `json:"stream"`
	}
	data, err := api.ReadLimited(r.Body, 4096)
	return err == nil && json.Unmarshal(data, &b) == nil && b.Stream
}

func (h *Handler) delete(w http.ResponseWriter, r *http.Request, id string) {
	res, err := h.svc.DeleteResponse(r.Context(), id)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.writeJSON(w, http.StatusOK, res)
}

func (h *Handler) cancel(w http.ResponseWriter, r *http.Request, id string) {
	res, err := h.svc.CancelResponse(r.Context(), id)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.writeJSON(w, http.StatusOK, res)
}

func (h *Handler) inputItems(w http.ResponseWriter, r *http.Request, id string) {
	q := r.URL.Query()
	opts := api.ListOptions{After: q.Get("after"), Order: q.Get("order"), Limit: api.DefaultListLimit}
	if !validCursor(opts.After) {
		h.writeError(w, r, api.InvalidRequest("after", "after must be the id of an input item: at most %d printable ASCII characters", maxCursor))
		return
	}
	switch opts.Order {
	case "":
		opts.Order = "desc"
	case "asc", "desc":
	default:
		h.writeError(w, r, api.InvalidRequest("order", "invalid value %q for order; expected \"asc\" or \"desc\"", opts.Order))
		return
	}
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > api.MaxListLimit {
			h.writeError(w, r, api.InvalidRequest("limit", "limit must be an integer between 1 and %d", api.MaxListLimit))
			return
		}
		opts.Limit = n
	}
	list, err := h.svc.ListInputItems(r.Context(), id, opts)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.writeJSON(w, http.StatusOK, list)
}

// maxCursor bounds the length of input_items' after (an item id).
const maxCursor = 256

// validCursor reports whether after can be an item id: at most maxCursor
// printable ASCII characters (or empty: no cursor). Nothing else reaches
// a store.
func validCursor(after string) bool {
	if len(after) > maxCursor {
		return false
	}
	for i := 0; i < len(after); i++ {
		if after[i] <= ' ' || after[i] > '~' {
			return false
		}
	}
	return true
}

// fail answers err, unless err only says that the client went away (the
// request's context ended and the error is that context's): then there
// is no one to answer and nothing failed, so it stops.
func (h *Handler) fail(w http.ResponseWriter, r *http.Request, err error) {
	if r.Context().Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
		h.log.DebugContext(r.Context(), "client went away", "method", r.Method, "path", r.URL.Path, "err", err)
		return
	}
	h.writeError(w, r, err)
}

// writeJSON writes v as the JSON body (followed by a newline, as
// json.Encoder writes it) with its Content-Length.
func (h *Handler) writeJSON(w http.ResponseWriter, status int, v any) {
	writeJSON(w, h.log, status, v)
}

func writeJSON(w http.ResponseWriter, log *slog.Logger, status int, v any) {
	b, err := wirejson.Marshal(v)
	if err != nil {
		log.Error("encode response", "err", err)
		status = http.StatusInternalServerError
		b = []byte(`{"error":{"message":"internal error: could not encode the response","type":"server_error","param":null,"code":"server_error"}}`)
	}
	b = append(b, '\n')
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

func (h *Handler) writeError(w http.ResponseWriter, r *http.Request, err error) {
	WriteError(w, r, h.log, err)
}

// WriteError answers r with err in the OpenAI error shape (api.AsError's
// status), with its Retry-After (a 429's) as a header. A server error's
// message says what happened in general terms and names the request id
// (api.Error.ForClient); its cause goes to log with that id.
func WriteError(w http.ResponseWriter, r *http.Request, log *slog.Logger, err error) {
	e := api.AsError(err)
	if e.Status >= 500 {
		log.ErrorContext(r.Context(), "request failed", "method", r.Method, "path", r.URL.Path, "status", e.Status, "code", e.Code, "err", err)
	}
	if e.RetryAfter != "" {
		w.Header().Set("Retry-After", e.RetryAfter)
	}
	writeJSON(w, log, e.Status, api.ErrorBody{Error: e.ForClient(requestid.From(r.Context()))})
}
