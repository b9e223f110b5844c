// Package fakeapigw is an API Gateway Management API endpoint on loopback
// for tests: it speaks the protocol the SDK's apigatewaymanagementapi
// client speaks (REST-JSON: POST /{stage}/@connections/{id} with the
// message as the raw body, DELETE and GET of the same path; errors as
// {"message"} with the X-Amzn-ErrorType header: GoneException 410 for a
// connection that is not open, PayloadTooLargeException 413 for a message
// over 128 KB, ForbiddenException 403 for an unsigned request). Point a
// client at URL + "/" + stage.
package fakeapigw

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
)

// MaxMessage is API Gateway's WebSocket message limit (128 KB).
const MaxMessage = 128 << 10

// Server is a running fake Management API.
type Server struct {
	*httptest.Server

	mu       sync.Mutex
	open     map[string]bool
	messages map[string][][]byte
	deleted  []string
	onPost   func(id string)
}

// OnPost sets fn to be called after each message posted to a connection
// (its id), once Messages holds it, and after each DeleteConnection: a
// test relaying the messages to a client learns when to read them. fn
// runs with the Server locked: it must not call the Server, nor block.
func (s *Server) OnPost(fn func(id string)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.onPost = fn
}

// Start starts a Server on a loopback port with no connection open.
func Start() *Server {
	s := &Server{open: map[string]bool{}, messages: map[string][][]byte{}}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serveHTTP))
	return s
}

// Connect opens connection id (what $connect does in API Gateway).
func (s *Server) Connect(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.open[id] = true
}

// Disconnect closes connection id: later posts to it get 410.
func (s *Server) Disconnect(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.open, id)
}

// Messages returns the messages posted to connection id, in order.
func (s *Server) Messages(id string) [][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([][]byte(nil), s.messages[id]...)
}

// Deleted returns the connections the client deleted (DeleteConnection).
func (s *Server) Deleted() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.deleted...)
}

func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	_, id, ok := strings.Cut(r.URL.Path, "/@connections/")
	if !ok || id == "" || strings.Contains(id, "/") {
		fail(w, http.StatusNotFound, "NotFoundException", "unknown path "+r.URL.Path)
		return
	}
	if !strings.HasPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 ") {
		fail(w, http.StatusForbidden, "ForbiddenException", "Missing Authentication Token")
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		fail(w, http.StatusBadRequest, "BadRequestException", err.Error())
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.open[id] {
		fail(w, http.StatusGone, "GoneException", fmt.Sprintf("connection %s is gone", id))
		return
	}
	switch r.Method {
	case http.MethodPost:
		if len(body) > MaxMessage {
			fail(w, http.StatusRequestEntityTooLarge, "PayloadTooLargeException", fmt.Sprintf("message of %d bytes is over %d", len(body), MaxMessage))
			return
		}
		s.messages[id] = append(s.messages[id], body)
		if s.onPost != nil {
			s.onPost(id)
		}
		w.WriteHeader(http.StatusOK)
	case http.MethodDelete:
		delete(s.open, id)
		s.deleted = append(s.deleted, id)
		if s.onPost != nil {
			s.onPost(id)
		}
		w.WriteHeader(http.StatusNoContent)
	case http.MethodGet:
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"connectedAt":"2026-04-24T10:00:00Z","identity":{"sourceIp":"192.0.2.44","userAgent":"test"},"lastActiveAt":"2026-04-24T10:00:01Z"}`))
	default:
		fail(w, http.StatusMethodNotAllowed, "BadRequestException", "method "+r.Method)
	}
}

func fail(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Amzn-ErrorType", typ)
	w.WriteHeader(status)
	_, _ = fmt.Fprintf(w, `{"message":%q}`, msg)
}
