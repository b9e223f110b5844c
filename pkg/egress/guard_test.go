package egress

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestBlockedAddresses(t *testing.T) {
	g := NewWithLookup(nil, nil)
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
			var be *BlockedError
			if !errors.As(err, &be) {
				t.Fatalf("check(%s) = %v, want *BlockedError", tt.ip, err)
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
	g := NewWithLookup([]string{
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
	g := NewWithLookup([]string{"127.0.0.1:8080"}, nil)
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
			err = g.CheckURL(u)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("CheckURL = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("CheckURL = %v, want error containing %q", err, tt.wantErr)
			}
		})
	}
}

// A failed lookup's error does not name the resolver (its address is the
// deployment's, e.g. a VPC's resolver: the error reaches the model and the
// tenant, as "lookup x on 10.0.0.2:53: no such host" used to).
func TestLookupErrorHidesTheResolver(t *testing.T) {
	_, err := defaultLookup(t.Context(), "nonexistent-lambent.invalid")
	var de *net.DNSError
	if !errors.As(err, &de) {
		t.Fatalf("lookup error %v is not a *net.DNSError", err)
	}
	if de.Server != "" || strings.Contains(err.Error(), ":53") {
		t.Errorf("lookup error %q names the resolver", err)
	}
	if !strings.Contains(err.Error(), "nonexistent-lambent.invalid") {
		t.Errorf("lookup error %q does not name the host", err)
	}
}

// A host name whose first address never answers (a black hole) costs
// that address's connect timeout, not the caller's whole deadline: the
// guard goes on to the next address, in the resolver's order, skipping an
// address it refuses. The black hole is simulated by a dial that waits
// for its context; the caller's context has no deadline of its own but
// the test's.
func TestBlackHoledAddressFallsBackToTheNext(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan struct{})
	go func() {
		defer close(accepted)
		if c, err := ln.Accept(); err == nil {
			c.Close()
		}
	}()
	_, port, _ := net.SplitHostPort(ln.Addr().String())

	blackHole := netip.MustParseAddr("203.0.113.7")
	lookup := func(context.Context, string) ([]netip.Addr, error) {
		return []netip.Addr{blackHole, netip.MustParseAddr("10.1.2.3"), netip.MustParseAddr("127.0.0.1")}, nil
	}
	g := NewWithLookup([]string{"127.0.0.1"}, lookup)
	g.connectTimeout = time.Millisecond
	var mu sync.Mutex
	var dialed []string
	realDial := g.dial
	g.dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
		mu.Lock()
		dialed = append(dialed, addr)
		mu.Unlock()
		if addr == net.JoinHostPort(blackHole.String(), port) {
			<-ctx.Done()
			return nil, ctx.Err()
		}
		return realDial(ctx, network, addr)
	}

	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second) // a safety net only
	defer cancel()
	conn, err := g.dialContext(ctx, "tcp", net.JoinHostPort("multi.example", port))
	if err != nil {
		t.Fatalf("dial: %v (dialed %v)", err, dialed)
	}
	conn.Close()
	<-accepted
	want := []string{net.JoinHostPort(blackHole.String(), port), ln.Addr().String()}
	if fmt.Sprint(dialed) != fmt.Sprint(want) {
		t.Errorf("dialed %v, want %v (in order, the private address skipped)", dialed, want)
	}
}

// The last address a name resolves to (a one-address host's only one) is
// not capped by the connect timeout: it has the caller's whole time, as
// it had before the cap, since no other address waits for its turn.
func TestLastAddressKeepsTheCallersTime(t *testing.T) {
	lookup := func(context.Context, string) ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	}
	g := NewWithLookup([]string{"127.0.0.1"}, lookup)
	g.connectTimeout = time.Millisecond
	ctx, cancel := context.WithTimeout(t.Context(), time.Hour)
	defer cancel()
	want, _ := ctx.Deadline()
	errDialed := errors.New("dialed")
	g.dial = func(dctx context.Context, _, _ string) (net.Conn, error) {
		if got, ok := dctx.Deadline(); !ok || !got.Equal(want) {
			t.Errorf("the only address dialed with deadline %v (set %v), want the caller's %v", got, ok, want)
		}
		return nil, errDialed
	}
	if _, err := g.dialContext(ctx, "tcp", "one.example:443"); !errors.Is(err, errDialed) {
		t.Fatalf("dial: %v, want the dial's own error", err)
	}
}
