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

	"github.com/lambent/lambent/pkg/tools"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestBlockedAddresses(t *testing.T) {
	g := newGuard(nil, nil)
	blocked := []struct {
		ip     string
		reason string // substring of the reason
	}{
		{"127.0.0.1", "loopback"},
		{"127.1.2.3", "loopback"},
		{"10.0.0.1", "private"},
		{"10.255.255.255", "private"},
		{"172.16.0.1", "private"},
		{"172.31.255.255", "private"},
		{"192.168.1.1", "private"},
		{"169.254.169.254", "metadata"},
		{"169.254.0.1", "link-local"},
		{"100.64.0.1", "carrier-grade NAT"},
		{"100.127.255.255", "carrier-grade NAT"},
		{"100.100.100.200", "carrier-grade NAT"}, // Alibaba Cloud metadata
		{"0.0.0.0", "unspecified"},
		{"0.1.2.3", "unspecified"},
		{"224.0.0.1", "multicast"},
		{"239.255.255.250", "multicast"},
		{"240.0.0.1", "reserved"},
		{"255.255.255.255", "reserved"},
		{"192.0.0.170", "IETF"},
		{"198.18.0.1", "benchmarking"},
		{"::", "unspecified"},
		{"::1", "loopback"},
		{"fc00::1", "unique local"},
		{"fd12:3456:789a::1", "unique local"},
		{"fd00:ec2::254", "metadata"},
		{"fe80::1", "link-local"},
		{"fe80::1%eth0", "link-local"},
		{"febf:ffff::1", "link-local"},
		{"fec0::1", "site-local"},
		{"ff02::1", "multicast"},
		{"ff05::1:3", "multicast"},
		{"100::1", "discard"},
		{"::ffff:127.0.0.1", "IPv4-mapped loopback"},
		{"::ffff:10.0.0.1", "IPv4-mapped private"},
		{"::ffff:169.254.169.254", "IPv4-mapped cloud instance metadata"},
		{"::ffff:192.168.0.1", "IPv4-mapped private"},
		{"::ffff:100.64.0.1", "IPv4-mapped carrier-grade NAT"},
		{"::ffff:0.0.0.0", "IPv4-mapped unspecified"},
		{"::ffff:7f00:1", "IPv4-mapped loopback"},
		{"::127.0.0.1", "IPv4-compatible"},
		{"::a9fe:a9fe", "IPv4-compatible"},
		{"64:ff9b::7f00:1", "loopback (embedded"},
		{"64:ff9b::169.254.169.254", "metadata (embedded"},
		{"64:ff9b::10.1.2.3", "private (embedded"},
		{"64:ff9b:1::1", "local-use NAT64"},
		{"2002:7f00:1::1", "loopback (embedded"},
		{"2002:a9fe:a9fe::1", "metadata (embedded"},
		{"2002:c0a8:101::1", "private (embedded"},
	}
	for _, tt := range blocked {
		t.Run("blocked "+tt.ip, func(t *testing.T) {
			ip := netip.MustParseAddr(tt.ip)
			r := g.blockedReason(ip)
			if r == "" {
				t.Fatalf("%s is not blocked", tt.ip)
			}
			if !strings.Contains(r, tt.reason) {
				t.Errorf("reason for %s = %q, want it to contain %q", tt.ip, r, tt.reason)
			}
			err := g.check(tt.ip, "80", ip)
			var be *blockedError
			if !errors.As(err, &be) {
				t.Fatalf("check(%s) = %v, want *blockedError", tt.ip, err)
			}
		})
	}
	public := []string{
		"8.8.8.8", "1.1.1.1", "93.184.216.34", "11.0.0.1", "100.63.255.255", "100.128.0.0",
		"172.15.255.255", "172.32.0.0", "169.253.255.255", "169.255.0.1", "192.167.255.255",
		"192.169.0.1", "198.17.255.255", "198.20.0.0", "223.255.255.255",
		"2606:4700:4700::1111", "2001:4860:4860::8888", "2a00:1450:4001::200e",
		"::ffff:8.8.8.8", "64:ff9b::8.8.8.8", "2002:808:808::1",
	}
	for _, s := range public {
		t.Run("public "+s, func(t *testing.T) {
			if r := g.blockedReason(netip.MustParseAddr(s)); r != "" {
				t.Fatalf("%s blocked as %q, want allowed", s, r)
			}
		})
	}
}

func TestAllowList(t *testing.T) {
	g := newGuard([]string{
		"127.0.0.1:8080", "LOCALHOST", "10.0.0.0/8", "[::1]:9000", "fd00::1", "[fd00::2]",
		"internal.example:8443", "  ", "not a valid entry/99",
	}, nil)
	tests := []struct {
		host, port, ip string
		want           bool
	}{
		{"127.0.0.1", "8080", "127.0.0.1", true},
		{"127.0.0.1", "8081", "127.0.0.1", false},
		{"::ffff:127.0.0.1", "8080", "::ffff:127.0.0.1", true},
		{"localhost", "1234", "127.0.0.1", true},
		{"localhost.", "1234", "::1", true},
		{"evil.example", "1234", "127.0.0.1", false},
		{"10.9.8.7", "80", "10.9.8.7", true},
		{"ten.example", "443", "10.1.1.1", true},
		{"11.0.0.1", "80", "192.168.0.1", false},
		{"::1", "9000", "::1", true},
		{"::1", "9001", "::1", false},
		{"fd00::1", "443", "fd00::1", true},
		{"fd00::2", "443", "fd00::2", true},
		{"fd00::3", "443", "fd00::3", false},
		{"internal.example", "8443", "192.168.7.7", true},
		{"internal.example", "443", "192.168.7.7", false},
		{"169.254.169.254", "80", "169.254.169.254", false},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s:%s->%s", tt.host, tt.port, tt.ip), func(t *testing.T) {
			err := g.check(tt.host, tt.port, netip.MustParseAddr(tt.ip))
			if got := err == nil; got != tt.want {
				t.Fatalf("check = %v, want allowed=%v", err, tt.want)
			}
		})
	}
}

func TestCheckURL(t *testing.T) {
	g := newGuard([]string{"127.0.0.1:8080"}, nil)
	tests := []struct {
		url     string
		wantErr string
	}{
		{"http://example.com/", ""},
		{"https://example.com:8443/x", ""},
		{"http://127.0.0.1:8080/", ""},
		{"http://127.0.0.1/", "loopback"},
		{"https://[::1]/", "loopback"},
		{"http://[fe80::1%25eth0]/", "link-local"},
		{"http://169.254.169.254/latest/meta-data/", "metadata"},
		{"http://[::ffff:169.254.169.254]/", "metadata"},
		{"http://[fd00:ec2::254]/", "metadata"},
		{"ftp://example.com/", `unsupported URL scheme "ftp"`},
		{"file:///etc/passwd", `unsupported URL scheme "file"`},
		{"gopher://example.com/", `unsupported URL scheme "gopher"`},
		{"http:///path", "no host"},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			u, err := url.Parse(tt.url)
			if err != nil {
				t.Fatal(err)
			}
			err = g.checkURL(u)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("checkURL = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("checkURL = %v, want error containing %q", err, tt.wantErr)
			}
		})
	}
}

// fakeLookup resolves names from a fixed table, "localhost" with the real
// resolver (the hosts file), and fails for anything else, so tests never
// depend on DNS.
func fakeLookup(table map[string][]string) lookupFunc {
	return func(ctx context.Context, host string) ([]netip.Addr, error) {
		if strings.EqualFold(host, "localhost") {
			return defaultLookup(ctx, host)
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
		{"name resolving to loopback", "http://rebind.test:" + p + "/", "rebind.test resolves to 127.0.0.1, which is not allowed (loopback address)"},
		{"name resolving to metadata", "http://metadata.test/", "metadata.test resolves to 169.254.169.254"},
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
			if !strings.HasPrefix(tt.wantErr, "unsupported") {
				var be *blockedError
				if !errors.As(err, &be) {
					t.Errorf("error %v does not wrap *blockedError", err)
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
