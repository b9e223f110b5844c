package fetchurl

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"go.uber.org/goleak"

	"github.com/lambent/lambent/pkg/egress"
	"github.com/lambent/lambent/pkg/tools"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// fakeLookup resolves names from a fixed table, "localhost" with the real
// resolver (the hosts file), and fails for anything else, so tests never
// depend on DNS.
func fakeLookup(table map[string][]string) egress.LookupFunc {
	return func(ctx context.Context, host string) ([]netip.Addr, error) {
		if strings.EqualFold(host, "localhost") {
			return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		}
		addrs, ok := table[strings.ToLower(host)]
		if !ok {
			return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
		}
		out := make([]netip.Addr, len(addrs))
		for i, a := range addrs {
			out[i] = netip.MustParseAddr(a)
		}
		return out, nil
	}
}

// countingServer is an httptest server that counts the requests it serves.
func countingServer(t *testing.T, h http.HandlerFunc) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if h != nil {
			h(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write([]byte("secret"))
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

func port(t *testing.T, srv *httptest.Server) string {
	t.Helper()
	_, p, err := net.SplitHostPort(srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func call(t *testing.T, h tools.Hosted, rawURL string) (string, error) {
	t.Helper()
	args := fmt.Sprintf(`{"url":%q}`, rawURL)
	return h.Handler(context.Background(), tools.ToolCall{ID: "call_1", Name: Name, Arguments: args})
}

// TestGuardBlocksDestinations fetches URLs that point, directly, through DNS
// or through a redirect, at a live local server that is not allow-listed: the
// server must never see a request.
func TestGuardBlocksDestinations(t *testing.T) {
	target, targetHits := countingServer(t, nil)
	p := port(t, target)

	redirector, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, r.URL.Query().Get("to"), http.StatusFound)
	})
	lookup := fakeLookup(map[string][]string{
		"rebind.test":   {"127.0.0.1"},
		"metadata.test": {"169.254.169.254"},
		"mapped.test":   {"::ffff:127.0.0.1"},
		"v6.test":       {"::1"},
		"mixed.test":    {"10.0.0.1", "127.0.0.1"},
	})
	tool := newTool(Config{AllowHosts: []string{redirector.Listener.Addr().String()}}, lookup)
	via := func(to string) string { return redirector.URL + "/?to=" + url.QueryEscape(to) }

	tests := []struct {
		name    string
		url     string
		wantErr string
	}{
		{"loopback literal", "http://127.0.0.1:" + p + "/", "destination 127.0.0.1 is not allowed (loopback address)"},
		{"loopback other form", "http://127.1.1.1:" + p + "/", "loopback"},
		{"unspecified literal", "http://0.0.0.0:" + p + "/", "unspecified"},
		{"IPv6 loopback literal", "http://[::1]:" + p + "/", "loopback"},
		{"IPv4-mapped loopback literal", "http://[::ffff:127.0.0.1]:" + p + "/", "IPv4-mapped loopback"},
		{"metadata literal", "http://169.254.169.254/latest/meta-data/", "metadata"},
		{"localhost", "http://localhost:" + p + "/", "localhost resolves to"},
		{"localhost uppercase", "http://LOCALHOST:" + p + "/", "resolves to"},
		{"name resolving to loopback", "http://rebind.test:" + p + "/", "rebind.test resolves to an address that is not allowed (loopback address)"},
		{"name resolving to metadata", "http://metadata.test/", "metadata.test resolves to an address that is not allowed (cloud instance metadata address)"},
		{"name resolving to mapped loopback", "http://mapped.test:" + p + "/", "IPv4-mapped loopback"},
		{"name resolving to IPv6 loopback", "http://v6.test:" + p + "/", "loopback"},
		{"name resolving only to private addresses", "http://mixed.test:" + p + "/", "private"},
		{"redirect to loopback literal", via(target.URL + "/"), "destination 127.0.0.1 is not allowed (loopback address)"},
		{"redirect to localhost", via("http://localhost:" + p + "/"), "localhost resolves to"},
		{"redirect to rebinding name", via("http://rebind.test:" + p + "/"), "rebind.test resolves to"},
		{"redirect to metadata", via("http://169.254.169.254/latest/meta-data/"), "metadata"},
		{"redirect to IPv6 metadata", via("http://[fd00:ec2::254]/"), "metadata"},
		{"redirect to file scheme", via("file:///etc/passwd"), `unsupported URL scheme "file"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := call(t, tool, tt.url)
			if err == nil {
				t.Fatalf("fetch %s succeeded: %q", tt.url, out)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error = %q, want it to contain %q", err, tt.wantErr)
			}
			// A name's address is not told: it would map internal DNS.
			if strings.Contains(tt.name, "name resolving") && (strings.Contains(err.Error(), "127.0.0.1") || strings.Contains(err.Error(), "169.254") || strings.Contains(err.Error(), "::")) {
				t.Errorf("error %q tells the address a name resolves to", err)
			}
			if !strings.HasPrefix(tt.wantErr, "unsupported") {
				var be *egress.BlockedError
				if !errors.As(err, &be) {
					t.Errorf("error %v does not wrap *egress.BlockedError", err)
				}
			}
		})
	}
	if n := targetHits.Load(); n != 0 {
		t.Fatalf("blocked server received %d requests", n)
	}
}

// TestGuardAllowsListedHostName checks that an allow-listed name reaches a
// loopback server through the (fake) resolver, and only on the listed port.
func TestGuardAllowsListedHostName(t *testing.T) {
	srv, hits := countingServer(t, nil)
	p := port(t, srv)
	lookup := fakeLookup(map[string][]string{"svc.test": {"127.0.0.1"}})
	tool := newTool(Config{AllowHosts: []string{"svc.test:" + p}}, lookup)

	out, err := call(t, tool, "http://svc.test:"+p+"/x")
	if err != nil {
		t.Fatalf("fetch: %v", err)
	}
	if !strings.Contains(out, "secret") || !strings.HasPrefix(out, "URL: http://svc.test:"+p+"/x\n") {
		t.Fatalf("unexpected output %q", out)
	}
	if hits.Load() != 1 {
		t.Fatalf("hits = %d, want 1", hits.Load())
	}

	tool = newTool(Config{AllowHosts: []string{"127.0.0.0/8"}}, lookup)
	if _, err := call(t, tool, "http://svc.test:"+p+"/"); err != nil {
		t.Fatalf("fetch via CIDR allow-list: %v", err)
	}
}

func TestRedirectLimit(t *testing.T) {
	var srv *httptest.Server
	srv, _ = countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		var n int
		_, _ = fmt.Sscanf(r.URL.Path, "/hop/%d", &n)
		if n > 0 {
			http.Redirect(w, r, fmt.Sprintf("/hop/%d", n-1), http.StatusFound)
			return
		}
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write([]byte("arrived"))
	})
	tool := Tool(Config{AllowHosts: []string{srv.Listener.Addr().String()}})

	out, err := call(t, tool, srv.URL+"/hop/5")
	if err != nil {
		t.Fatalf("5 redirects: %v", err)
	}
	if !strings.HasPrefix(out, "URL: "+srv.URL+"/hop/0\n") || !strings.Contains(out, "arrived") {
		t.Fatalf("unexpected output %q", out)
	}

	_, err = call(t, tool, srv.URL+"/hop/6")
	if err == nil || !strings.Contains(err.Error(), "stopped after 5 redirects") {
		t.Fatalf("6 redirects: err = %v, want stopped after 5 redirects", err)
	}
}
