package httpapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/engine"
	"github.com/lambent/lambent/pkg/httpapi"
	"github.com/lambent/lambent/pkg/requestid"
	"github.com/lambent/lambent/pkg/tenant"
)

// routedService answers every call with a 418 whose code is "routed" and
// whose message names the call and its response id: what a route reached.
type routedService struct{}

func routed(call, id string) error {
	if id != "" {
		call += " " + id
	}
	return &api.Error{Status: http.StatusTeapot, Type: "test", Code: "routed", Message: call}
}

func (routedService) CreateResponse(context.Context, *api.CreateResponseRequest, engine.ResponseWriter) error {
	return routed("create", "")
}
func (routedService) CreateBackground(context.Context, *api.CreateResponseRequest, engine.ResponseWriter) error {
	return routed("background", "")
}
func (routedService) GetResponse(_ context.Context, id string) (*api.Response, error) {
	return nil, routed("get", id)
}
func (routedService) DeleteResponse(_ context.Context, id string) (*api.DeleteResult, error) {
	return nil, routed("delete", id)
}
func (routedService) ListInputItems(_ context.Context, id string, _ api.ListOptions) (*api.ItemList, error) {
	return nil, routed("input_items", id)
}
func (routedService) CancelResponse(_ context.Context, id string) (*api.Response, error) {
	return nil, routed("cancel", id)
}
func (routedService) StreamResponse(_ context.Context, id string, _ int64, _ engine.ResponseWriter) error {
	return routed("stream", id)
}
func (routedService) Compact(context.Context, *api.CompactRequest) (*api.CompactResource, error) {
	return nil, routed("compact", "")
}
func (routedService) CountInputTokens(context.Context, *api.CreateResponseRequest) (*api.InputTokens, error) {
	return nil, routed("input_tokens", "")
}
func (routedService) CreateConversation(context.Context, *api.ConversationCreateRequest) (*api.Conversation, error) {
	return nil, routed("conversation.create", "")
}
func (routedService) GetConversation(_ context.Context, id string) (*api.Conversation, error) {
	return nil, routed("conversation.get", id)
}
func (routedService) UpdateConversation(_ context.Context, id string, _ map[string]string) (*api.Conversation, error) {
	return nil, routed("conversation.update", id)
}
func (routedService) DeleteConversation(_ context.Context, id string) (*api.ConversationDeleted, error) {
	return nil, routed("conversation.delete", id)
}
func (routedService) AddConversationItems(_ context.Context, id string, _ []api.Item) (*api.ItemList, error) {
	return nil, routed("items.create", id)
}
func (routedService) ListConversationItems(_ context.Context, id string, _ api.ListOptions) (*api.ItemList, error) {
	return nil, routed("items.list", id)
}
func (routedService) GetConversationItem(_ context.Context, id, itemID string) (*api.Item, error) {
	return nil, routed("items.get", id+" "+itemID)
}
func (routedService) DeleteConversationItem(_ context.Context, id, itemID string) (*api.Conversation, error) {
	return nil, routed("items.delete", id+" "+itemID)
}

// The Conversations API's routes reach their handlers with their ids (a
// body where the route takes one), and refuse other methods with a 405
// naming the path's methods.
func TestConversationRoutes(t *testing.T) {
	t.Parallel()
	h := httpapi.New(httpapi.Config{Service: routedService{}, Logger: slog.New(slog.DiscardHandler)})
	for _, c := range []struct{ method, target, body, call, allow string }{
		{"POST", "/v1/conversations", `{"metadata":{"a":"b"}}`, "conversation.create", "POST"},
		{"POST", "/v1/conversations/", "", "conversation.create", "POST"},
		{"GET", "/v1/conversations/conv_1", "", "conversation.get conv_1", "GET, POST, DELETE"},
		{"POST", "/v1/conversations/conv_1", `{"metadata":null}`, "conversation.update conv_1", "GET, POST, DELETE"},
		{"DELETE", "/v1/conversations/conv_1/", "", "conversation.delete conv_1", "GET, POST, DELETE"},
		{"POST", "/v1/conversations/conv_1/items?include=message.input_image.image_url", `{"items":[{"role":"user","content":"hi"}]}`, "items.create conv_1", "POST, GET"},
		{"GET", "/v1/conversations/conv_1/items?limit=5&order=asc&after=msg_1", "", "items.list conv_1", "POST, GET"},
		{"GET", "/v1/conversations/conv_1/items/msg_2", "", "items.get conv_1 msg_2", "GET, DELETE"},
		{"DELETE", "/v1/conversations/conv_1/items/msg_2", "", "items.delete conv_1 msg_2", "GET, DELETE"},
	} {
		rec := serveRaw(t, h, c.method, c.target, c.body)
		wantError(t, rec.Code, rec.Body.Bytes(), http.StatusTeapot, "", "routed")
		require.Equal(t, c.call, errorOf(t, rec).Message, c.target)
		rec = serveRaw(t, h, "PUT", c.target, "")
		wantError(t, rec.Code, rec.Body.Bytes(), http.StatusMethodNotAllowed, "", "method_not_allowed")
		require.Equal(t, c.allow, rec.Header().Get("Allow"), c.target)
	}
	// Bad queries and bodies are 400s before the service.
	for _, c := range []struct{ method, target, body, param string }{
		{"GET", "/v1/conversations/conv_1/items?limit=101", "", "limit"},
		{"GET", "/v1/conversations/conv_1/items?order=up", "", "order"},
		{"GET", "/v1/conversations/conv_1/items?include=nope", "", "include[0]"},
		{"POST", "/v1/conversations/conv_1/items", `{"items":[]}`, "items"},
		{"POST", "/v1/conversations/conv_1/items", `{"items":[{"type":"item_reference","id":"msg_1"}]}`, "items[0].type"},
		{"POST", "/v1/conversations/conv_1", `{}`, "metadata"},
		{"POST", "/v1/conversations", `{"metadata":{"k":` + strconv.Quote(strings.Repeat("v", 513)) + `}}`, "metadata.k"},
		{"POST", "/v1/conversations", `{"items":[{"role":"user","content":"hi"}],"extra":1}`, "extra"},
	} {
		rec := serveRaw(t, h, c.method, c.target, c.body)
		wantError(t, rec.Code, rec.Body.Bytes(), http.StatusBadRequest, c.param, "")
	}
}

// serveRaw serves the request of method and target (as a server reads
// it: the target is not cleaned) with header lines, with a JSON body when
// body is set.
func serveRaw(t *testing.T, h http.Handler, method, target, body string, header ...string) *httptest.ResponseRecorder {
	t.Helper()
	raw := method + " " + target + " HTTP/1.1\r\nHost: localhost\r\n"
	for _, l := range header {
		raw += l + "\r\n"
	}
	if body != "" {
		raw += fmt.Sprintf("Content-Type: application/json\r\nContent-Length: %d\r\n", len(body))
	}
	req, err := http.ReadRequest(bufio.NewReader(strings.NewReader(raw + "\r\n" + body)))
	require.NoError(t, err, "%s %s", method, target)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// errorOf decodes an OpenAI error body.
func errorOf(t *testing.T, rec *httptest.ResponseRecorder) *api.Error {
	t.Helper()
	var e api.ErrorBody
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &e), "%s", rec.Body)
	require.NotNil(t, e.Error, "%s", rec.Body)
	return e.Error
}

// The routes: each method on each path reaches its handler (with its id)
// or is refused in the OpenAI error shape: 404 unknown_url for a path of
// no route, 405 method_not_allowed with Allow for a method the path does
// not serve (HEAD on GET routes, lowercase and unknown methods too). A
// trailing slash is ignored; paths are never cleaned nor redirected; an
// escaped slash separates segments; "." and ".." are ids like others.
func TestRoutes(t *testing.T) {
	h := httpapi.New(httpapi.Config{Service: routedService{}, Logger: slog.New(slog.DiscardHandler)})
	const body = `{"input":"hi"}`
	otherMethods := []string{http.MethodPut, http.MethodPatch, http.MethodOptions, http.MethodTrace, http.MethodConnect, "BREW"}
	type want struct {
		status int
		call   string // the handler reached: "get resp_1"; "" for a refusal
		allow  string // a 405's Allow
	}
	cases := map[string]want{} // "METHOD target" → want
	add := func(methods []string, targets []string, w want) {
		for _, m := range methods {
			for _, target := range targets {
				cases[m+" "+target] = w
			}
		}
	}
	notAllowed := func(allow string) want { return want{status: http.StatusMethodNotAllowed, allow: allow} }
	notFound := want{status: http.StatusNotFound}

	// POST /v1/responses; GET is WebSocket mode's (a plain GET is a 405).
	// An escaped slash is a slash.
	create := []string{"/v1/responses", "/v1/responses/", "/v1%2Fresponses"}
	add([]string{"POST"}, create, want{status: http.StatusTeapot, call: "create"})
	add(append([]string{"GET", "HEAD", "DELETE", "get", "post"}, otherMethods...), create, notAllowed("POST"))
	// POST /v1/responses/compact: "compact" is no response id.
	add([]string{"POST"}, []string{"/v1/responses/compact", "/v1/responses/compact/", "/v1/responses/%63ompact"}, want{status: http.StatusTeapot, call: "compact"})
	add(append([]string{"GET", "HEAD", "DELETE", "get", "post"}, otherMethods...), []string{"/v1/responses/compact", "/v1/responses/compact/", "/v1/responses/%63ompact"}, notAllowed("POST"))
	// GET and DELETE /v1/responses/{id}.
	ids := map[string]string{"resp_1": "resp_1", "resp_1/": "resp_1", "..": "..", "%2e%2e": "..", ".": ".", "a%20b": "a b", "a%3Fb": "a?b", "%25": "%", "%C3%A9": "é", "compact%20": "compact "}
	for seg, id := range ids {
		add([]string{"GET"}, []string{"/v1/responses/" + seg}, want{status: http.StatusTeapot, call: "get " + id})
		add([]string{"DELETE"}, []string{"/v1/responses/" + seg}, want{status: http.StatusTeapot, call: "delete " + id})
		add(append([]string{"POST", "HEAD", "get", "delete"}, otherMethods...), []string{"/v1/responses/" + seg}, notAllowed("GET, DELETE"))
		add([]string{"GET"}, []string{"/v1/responses/" + seg + "?stream=true"}, want{status: http.StatusTeapot, call: "stream " + id})
	}
	// GET /v1/responses/{id}/input_items and POST /v1/responses/{id}/cancel.
	for _, id := range []string{"resp_1", "compact", ".."} {
		seg := strings.ReplaceAll(id, ".", "%2E")
		items := []string{"/v1/responses/" + seg + "/input_items", "/v1/responses/" + seg + "/input_items/", "/v1/responses/" + seg + "/%69nput_items"}
		add([]string{"GET"}, items, want{status: http.StatusTeapot, call: "input_items " + id})
		add(append([]string{"POST", "DELETE", "HEAD", "get"}, otherMethods...), items, notAllowed("GET"))
		cancel := []string{"/v1/responses/" + seg + "/cancel", "/v1/responses/" + seg + "/cancel/"}
		add([]string{"POST"}, cancel, want{status: http.StatusTeapot, call: "cancel " + id})
		add(append([]string{"GET", "DELETE", "HEAD", "post"}, otherMethods...), cancel, notAllowed("POST"))
	}
	// GET /healthz.
	add([]string{"GET"}, []string{"/healthz", "/healthz/", "/healthz?x=1"}, want{status: http.StatusOK})
	add(append([]string{"POST", "DELETE", "HEAD", "get"}, otherMethods...), []string{"/healthz", "/healthz/"}, notAllowed("GET"))
	// Paths of no route, whatever the method: unknown, empty segments,
	// unclean (never cleaned nor redirected), escaped slashes.
	add(append([]string{"GET", "POST", "DELETE", "HEAD", "get"}, otherMethods...), []string{
		"/", "/v1", "/v1/", "/V1/RESPONSES", "/v1/responses/x/y/z", "/metrics", "/healthz/x", "/healthz//",
		"/v1/responses//", "/v1/responses//input_items", "/v1/responses/resp_1//", "/v1/responses/resp_1/other",
		"/v1/responses/resp_1/cancel/extra", "/v1/responses/resp_1/input_items//", "/v1/responses/compact/x",
		"//v1/responses", "//v1/responses/resp_1", "/v1/../v1/responses", "/v1/./responses", "/./healthz",
		"/v1/responses/../healthz", "/v1/responses/resp_1/../cancel", "/v1/responses/a%2Fb", "/v1/responses/a%2fb/cancel",
		"/v1/responses/a%2Fb/input_items",
	}, notFound)

	for key, w := range cases {
		method, target, _ := strings.Cut(key, " ")
		for _, withBody := range []bool{false, true} {
			b := ""
			if withBody {
				b = body
			}
			rec := serveRaw(t, h, method, target, b)
			name := fmt.Sprintf("%s (body %v)", key, withBody)
			require.Regexp(t, requestIDRe, rec.Header().Get("X-Request-Id"), name)
			require.Equal(t, "application/json", rec.Header().Get("Content-Type"), name)
			require.Empty(t, rec.Header().Get("Location"), name)
			if w.status == http.StatusOK {
				require.Equal(t, http.StatusOK, rec.Code, "%s: %s", name, rec.Body)
				require.JSONEq(t, `{"status":"ok"}`, rec.Body.String(), name)
				continue
			}
			if w.call == "create" && !withBody || w.call == "compact" && !withBody {
				wantError(t, rec.Code, rec.Body.Bytes(), http.StatusBadRequest, "", "invalid_json")
				continue
			}
			wantError(t, rec.Code, rec.Body.Bytes(), w.status, "", "")
			e := errorOf(t, rec)
			u, err := url.ParseRequestURI(target)
			require.NoError(t, err)
			path := u.Path // the message names the decoded path
			switch w.status {
			case http.StatusNotFound:
				require.Equal(t, "unknown_url", e.Code, name)
				require.Equal(t, "Unknown request URL: "+method+" "+path+".", e.Message, name)
				require.Empty(t, rec.Header().Get("Allow"), name)
			case http.StatusMethodNotAllowed:
				require.Equal(t, "method_not_allowed", e.Code, name)
				require.Equal(t, "Method "+method+" is not allowed for "+path+"; allowed: "+w.allow+".", e.Message, name)
				require.Equal(t, w.allow, rec.Header().Get("Allow"), name)
			default:
				require.Equal(t, "routed", e.Code, name)
				require.Equal(t, w.call, e.Message, name)
			}
		}
	}

	// The WebSocket route is a GET's with an Upgrade header only.
	upgrade := []string{"Connection: Upgrade", "Upgrade: websocket"}
	rec := serveRaw(t, h, "POST", "/v1/responses", body, upgrade...)
	require.Equal(t, "create", errorOf(t, rec).Message)
	for _, m := range []string{"HEAD", "PUT"} {
		rec = serveRaw(t, h, m, "/v1/responses", "", upgrade...)
		wantError(t, rec.Code, rec.Body.Bytes(), http.StatusMethodNotAllowed, "-", "method_not_allowed")
		require.Equal(t, "POST", rec.Header().Get("Allow"))
	}
}

// Without an API key every path but /healthz's is a 401 first (a 404 or
// a 405 tells nothing to a caller without a key); /healthz answers any
// method without one.
func TestRoutesAuthenticateFirst(t *testing.T) {
	const key = "sk-routes-0123456789"
	h := httpapi.New(httpapi.Config{Service: routedService{}, Logger: slog.New(slog.DiscardHandler),
		Tenants: tenant.Rule{Keys: tenant.NewKeyring(map[string]string{key: "acme"})}})
	for _, c := range []struct {
		method, target string
		status         int
	}{
		{"GET", "/v1/responses/resp_1", http.StatusUnauthorized},
		{"PUT", "/v1/responses/resp_1", http.StatusUnauthorized},
		{"GET", "/nope", http.StatusUnauthorized},
		{"GET", "//v1/responses", http.StatusUnauthorized},
		{"GET", "/healthz", http.StatusOK},
		{"GET", "/healthz/", http.StatusOK},
		{"HEAD", "/healthz", http.StatusMethodNotAllowed},
		{"POST", "/healthz", http.StatusMethodNotAllowed},
	} {
		rec := serveRaw(t, h, c.method, c.target, "")
		assert.Equal(t, c.status, rec.Code, "%s %s: %s", c.method, c.target, rec.Body)
		if c.status == http.StatusUnauthorized {
			assert.Equal(t, `Bearer realm="lambent"`, rec.Header().Get("WWW-Authenticate"))
			assert.Equal(t, "invalid_api_key", errorOf(t, rec).Code)
			rec = serveRaw(t, h, c.method, c.target, "", "Authorization: Bearer "+key)
			assert.Contains(t, []int{http.StatusTeapot, http.StatusNotFound, http.StatusMethodNotAllowed}, rec.Code, "%s %s with the key: %s", c.method, c.target, rec.Body)
		}
	}
}

// Config.Routes are served beside the API through its checks (request id,
// panic recovery, Host, refusals) but outside the tenant rule.
func TestExtraRoutes(t *testing.T) {
	const key = "sk-routes-0123456789"
	extra := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = fmt.Fprintf(w, "extra %s tenant=%q", requestid.From(r.Context()), tenant.From(r.Context()))
	})
	h := httpapi.New(httpapi.Config{Service: routedService{}, Logger: slog.New(slog.DiscardHandler),
		Tenants: tenant.Rule{Keys: tenant.NewKeyring(map[string]string{key: "acme"})},
		Routes: []httpapi.Route{
			{Pattern: "GET /extra", Handler: extra},
			{Pattern: "GET /boom", Handler: http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("boom") })},
		}})

	for _, target := range []string{"/extra", "/extra/"} {
		rec := serveRaw(t, h, "GET", target, "")
		require.Equal(t, http.StatusOK, rec.Code, "%s", rec.Body)
		id := rec.Header().Get("X-Request-Id")
		require.Regexp(t, requestIDRe, id)
		require.Equal(t, "extra "+id+" tenant="+strconv.Quote(tenant.Default), rec.Body.String(), "the request's id; no API key asked, no tenant")
	}
	for _, m := range []string{"POST", "HEAD", "get"} {
		rec := serveRaw(t, h, m, "/extra", "")
		wantError(t, rec.Code, rec.Body.Bytes(), http.StatusMethodNotAllowed, "-", "method_not_allowed")
		require.Equal(t, "GET", rec.Header().Get("Allow"))
	}
	rec := serveRaw(t, h, "GET", "//extra", "")
	require.Equal(t, http.StatusUnauthorized, rec.Code, "no route: the API's 401, then its 404")
	rec = serveRaw(t, h, "GET", "//extra", "", "Authorization: Bearer "+key)
	wantError(t, rec.Code, rec.Body.Bytes(), http.StatusNotFound, "-", "unknown_url")
	rec = serveRaw(t, h, "GET", "/boom", "")
	wantError(t, rec.Code, rec.Body.Bytes(), http.StatusInternalServerError, "-", "")
	require.Contains(t, errorOf(t, rec).Message, rec.Header().Get("X-Request-Id"))

	// The Host check of a loopback listener applies.
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	for host, status := range map[string]int{"localhost": http.StatusOK, "evil.example": http.StatusMisdirectedRequest} {
		req, err := http.NewRequest(http.MethodGet, srv.URL+"/extra", nil)
		require.NoError(t, err)
		req.Host = host
		res, err := srv.Client().Do(req)
		require.NoError(t, err)
		b, err := io.ReadAll(res.Body)
		require.NoError(t, err)
		require.NoError(t, res.Body.Close())
		require.Equal(t, status, res.StatusCode, "Host %s: %s", host, b)
	}

	// A route is a method and a path of its own, without a trailing slash.
	for _, pattern := range []string{"/extra", "GET /extra/", "GET example.com/extra", "PUT /v1/responses", "GET /healthz", "GET /v1/responses/{id}"} {
		require.Panics(t, func() {
			httpapi.New(httpapi.Config{Service: routedService{}, Routes: []httpapi.Route{{Pattern: pattern, Handler: extra}}})
		}, pattern)
	}
}
