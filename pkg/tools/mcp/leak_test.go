package mcp

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/lambent/lambent/internal/testing/mcptest"
	"github.com/lambent/lambent/pkg/tools"
)

// The query of server_url may hold a key (docs/tools.md): a redirect to
// another origin does not carry it there in Referer, which http.Client
// sets to the URL before it.
func TestQueryKeyNotInRefererOfARedirect(t *testing.T) {
	other := mcptest.StartStreamable(mcptest.Options{})
	defer other.Close()
	target := strings.Replace(other.Endpoint, "127.0.0.1", "localhost", 1) // another origin
	rec := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target, http.StatusTemporaryRedirect)
	}))
	defer rec.Close()
	c := New(Config{AllowHosts: []string{"127.0.0.1", "localhost"}})
	s := c.Open(&tools.MCPServer{Label: "s", URL: rec.URL + "/mcp?key=SECRETKEY", Transport: tools.MCPStreamableHTTP}, tools.MCPBounds{})
	defer s.Close()
	if _, err := s.ListTools(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(other.Headers()) == 0 {
		t.Fatal("the redirect was not followed")
	}
	for _, h := range other.Headers() {
		if strings.Contains(h.Get("Referer"), "SECRETKEY") {
			t.Fatalf("the other origin received the server_url key: Referer: %s", h.Get("Referer"))
		}
	}
}

// A transport error's text holds the server URL quoted (%q): a query with
// '"' or '\' is redacted there too, and so is a fragment (which
// tools.RedactMCPURL drops), as written or as url.URL.String escapes it.
func TestQueryKeyRedactedWhenQuoted(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens: connection refused
	c := New(Config{AllowHosts: []string{"127.0.0.1"}})
	for _, q := range []string{`?key=SECRET`, `?key=SECRET"x`, `?key=SECRET\x`, `#SECRET`, `#SECRET"x`, `#SE%20CRET`, `#SE CRET`,
		`?key=SECRET#SECRET`, `?R`} {
		srv := &tools.MCPServer{Label: "s", URL: "http://" + addr + "/mcp" + q, Transport: tools.MCPStreamableHTTP}
		if err := c.Check(srv); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		s := c.Open(srv, tools.MCPBounds{})
		_, err := s.ListTools(context.Background())
		_ = s.Close()
		if err == nil || strings.Contains(err.Error(), "SECRET") || strings.Contains(err.Error(), "CRET") ||
			strings.Contains(err.Error(), "EDACTEDEDACTED") {
			t.Errorf("query %q: %v", q, err)
		}
	}
}
