package httpapi

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/wsapi"
)

// routes are the API's routes.
func (h *Handler) routes() []route {
	return []route{
		{pattern: "POST /v1/responses", handler: h.handle(h.create)},
		// WebSocket mode: a plain GET is refused as a method not allowed.
		{pattern: "GET /v1/responses", handler: http.HandlerFunc(h.upgrade), when: wsapi.IsUpgrade},
		{pattern: "POST /v1/responses/compact", handler: h.handle(h.compact)},
		{pattern: "POST /v1/responses/input_tokens", handler: h.handle(h.inputTokens)},
		{pattern: "GET /v1/responses/{id}", handler: h.handle(h.get)},
		{pattern: "DELETE /v1/responses/{id}", handler: h.handle(h.delete)},
		{pattern: "GET /v1/responses/{id}/input_items", handler: h.handle(h.inputItems)},
		{pattern: "POST /v1/responses/{id}/cancel", handler: h.handle(h.cancel)},
		{pattern: "GET /v1/models", handler: h.handle(h.listModels)},
		{pattern: "GET /v1/models/{id...}", handler: h.handle(h.getModel)},
		{pattern: "POST /v1/conversations", handler: h.handle(h.createConversation)},
		{pattern: "GET /v1/conversations/{id}", handler: h.handle(h.getConversation)},
		{pattern: "POST /v1/conversations/{id}", handler: h.handle(h.updateConversation)},
		{pattern: "DELETE /v1/conversations/{id}", handler: h.handle(h.deleteConversation)},
		{pattern: "POST /v1/conversations/{id}/items", handler: h.handle(h.addConversationItems)},
		{pattern: "GET /v1/conversations/{id}/items", handler: h.handle(h.listConversationItems)},
		{pattern: "GET /v1/conversations/{id}/items/{item_id}", handler: h.handle(h.getConversationItem)},
		{pattern: "DELETE /v1/conversations/{id}/items/{item_id}", handler: h.handle(h.deleteConversationItem)},
		{pattern: "GET /healthz", handler: h.handle(h.health), open: true},
	}
}

// route is one route: an http.ServeMux pattern ("METHOD /path") and its
// handler.
type route struct {
	pattern string
	handler http.Handler
	// when, if set, is a condition beyond the method and the path (the
	// Upgrade header of WebSocket mode): a request that fails it is
	// refused as a method its path does not allow, and the route is not
	// listed in the 405's Allow header.
	when func(*http.Request) bool
	// open routes are outside the tenant rule: /healthz, and
	// Config.Routes.
	open bool
}

// resource is a path that routes serve.
type resource struct {
	path  string // the path of the routes' patterns
	allow string // the Allow header of a 405: the methods of its unconditional routes
	open  bool   // outside the tenant rule
}

// router routes requests with http.ServeMux patterns, and answers in the
// OpenAI error shape the requests for which ServeMux would write its own
// text/plain replies or redirect:
//
//   - A trailing slash is ignored, and ServeMux sees a path with each
//     segment escaped, "." and ".." too, so it neither cleans the path nor
//     redirects. A path with an empty segment names no resource. As the
//     path is the decoded one, an escaped slash (%2F) separates segments:
//     no id holds a slash.
//   - A path no route serves is a 404 unknown_url; a method its path has
//     no route for (HEAD on a GET route included: ServeMux would let a
//     GET route serve it) is a 405 method_not_allowed whose Allow header
//     lists the path's methods. The path decides first: GET
//     /v1/responses/compact is a 405, not the GET of a response "compact".
type router struct {
	mux       *http.ServeMux // the routes, by method and path
	paths     *http.ServeMux // the routes' paths, without a method: which resource a path names
	resources map[string]*resource
	when      map[string]func(*http.Request) bool // the conditions of routes, by pattern
}

// newRouter returns the router of routes. It panics when a pattern is not
// a method and a path without a trailing slash, or conflicts with another,
// or when open and other routes share a path.
func newRouter(routes []route) *router {
	rt := &router{mux: http.NewServeMux(), paths: http.NewServeMux(), resources: map[string]*resource{}, when: map[string]func(*http.Request) bool{}}
	for _, r := range routes {
		method, path, ok := strings.Cut(r.pattern, " ")
		if !ok || !strings.HasPrefix(path, "/") || strings.HasSuffix(path, "/") {
			panic("httpapi: route " + strconv.Quote(r.pattern) + ` is not "METHOD /path" without a trailing slash`)
		}
		rt.mux.Handle(r.pattern, r.handler)
		res := rt.resources[path]
		if res == nil {
			res = &resource{path: path, open: r.open}
			rt.resources[path] = res
			rt.paths.Handle(path, http.NotFoundHandler()) // only looked up
		}
		if res.open != r.open {
			panic("httpapi: route " + strconv.Quote(r.pattern) + " shares its path with routes of the API")
		}
		if r.when != nil {
			rt.when[r.pattern] = r.when
		} else if res.allow == "" {
			res.allow = method
		} else {
			res.allow += ", " + method
		}
	}
	return rt
}

// resolve returns the URL that r is routed by (see router) and the
// resource its path names; nil when none.
func (rt *router) resolve(r *http.Request) (*url.URL, *resource) {
	path := strings.TrimSuffix(r.URL.Path, "/")
	if !strings.HasPrefix(path, "/") || strings.Contains(path, "//") {
		return nil, nil
	}
	raw := path
	if !plainPath(path) {
		segs := strings.Split(path[1:], "/")
		for i, s := range segs {
			if s == "." || s == ".." {
				segs[i] = strings.Repeat("%2E", len(s))
			} else {
				segs[i] = url.PathEscape(s)
			}
		}
		raw = "/" + strings.Join(segs, "/")
	}
	u := &url.URL{Path: path, RawPath: raw, RawQuery: r.URL.RawQuery}
	_, pattern := rt.paths.Handler(&http.Request{Method: r.Method, URL: u, Host: r.Host})
	return u, rt.resources[pattern]
}

// plainPath reports whether path has only letters, digits, '_', '-' and
// '/': its escaped form is itself (the API's paths and ids are such).
func plainPath(path string) bool {
	for i := range len(path) {
		switch c := path[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '_', c == '-', c == '/':
		default:
			return false
		}
	}
	return true
}

// route serves r by the route of its method and of res, its resource
// (URL u: resolve), or refuses it (404, 405).
func (rt *router) route(w http.ResponseWriter, r *http.Request, u *url.URL, res *resource) error {
	if res == nil {
		return &api.Error{Status: http.StatusNotFound, Type: api.ErrTypeInvalidRequest, Code: "unknown_url",
			Message: "Unknown request URL: " + r.Method + " " + r.URL.Path + "."}
	}
	routed := r.WithContext(r.Context())
	routed.URL = u
	_, pattern := rt.mux.Handler(routed)
	if when := rt.when[pattern]; pattern != r.Method+" "+res.path || when != nil && !when(r) {
		w.Header().Set("Allow", res.allow)
		return &api.Error{Status: http.StatusMethodNotAllowed, Type: api.ErrTypeInvalidRequest, Code: "method_not_allowed",
			Message: "Method " + r.Method + " is not allowed for " + r.URL.Path + "; allowed: " + res.allow + "."}
	}
	rt.mux.ServeHTTP(w, routed)
	return nil
}
