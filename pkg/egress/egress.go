// Package egress is the SSRF guard of every outbound connection to a URL a
// request (or a tenant's MCP server) names: fetch_url, MCP servers,
// Bedrock's input image URLs and webhooks. It refuses private, loopback,
// link-local, metadata and other special-purpose addresses after DNS
// resolution, on every redirect hop, and dials only the address it
// checked, so DNS rebinding cannot pass. DrainClose ends a response so
// that its connection is reused.
package egress

import (
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"time"
)

// New returns a guard with the allow-list allow: host names, host:port
// pairs, IP addresses and CIDR ranges the guard lets through although they
// are private (local runs and tests); empty refuses every private address.
func New(allow []string) *Guard {
	return NewWithLookup(allow, nil)
}

// ConnectTimeout bounds the connection attempt to each address a host
// name resolves to, so that an address that never answers (a black hole)
// costs at most this much before the guard tries the next one, instead of
// the caller's whole timeout (a webhook's 5 s, fetch_url's 10 s).
const ConnectTimeout = 3 * time.Second

// MaxIdleConnsPerHost is how many idle connections to one host the
// clients of Client (keeping connections) and PooledTransport keep: a
// turn runs its calls concurrently (up to 32 to one MCP server or webhook
// host), each holding a connection over HTTP/1.1, and net/http's default
// of 2 closed the others after every turn, so the next dialed them again
// (a TLS handshake each).
const MaxIdleConnsPerHost = 64

// PooledTransport returns a copy of net/http's default transport (proxy
// from the environment, its timeouts, HTTP/2) keeping MaxIdleConnsPerHost
// idle connections a host.
func PooledTransport() *http.Transport {
	t := &http.Transport{}
	if dt, ok := http.DefaultTransport.(*http.Transport); ok {
		t = dt.Clone()
	}
	pool(t)
	return t
}

// pool sizes t's pool of idle connections for a turn's concurrent calls.
func pool(t *http.Transport) {
	t.MaxIdleConnsPerHost = MaxIdleConnsPerHost
	t.MaxIdleConns = max(t.MaxIdleConns, 4*MaxIdleConnsPerHost)
	if t.IdleConnTimeout == 0 {
		t.IdleConnTimeout = 90 * time.Second
	}
}

// Client returns an HTTP client whose every connection passes the guard:
// base (copied; nil for a fresh one) with the guarded dialer and redirect
// policy, as Config.Client describes. keepAlive keeps checked connections
// for reuse, MaxIdleConnsPerHost a host unless base's transport sets its
// own pool.
func (g *Guard) Client(base *http.Client, keepAlive bool) *http.Client {
	var c http.Client
	var t *http.Transport
	if base != nil {
		c = *base
		switch rt := base.Transport.(type) {
		case nil:
			t = PooledTransport()
		case *http.Transport:
			t = rt.Clone()
		default:
			c.Transport = rt
		}
	} else {
		t = &http.Transport{
			TLSHandshakeTimeout:    10 * time.Second,
			MaxResponseHeaderBytes: 64 << 10,
		}
		pool(t)
	}
	if t != nil {
		t.Proxy = nil // a proxy would make the dialer check the proxy, not the target
		t.DialContext = g.dialContext
		t.DialTLSContext = nil
		//lint:ignore SA1019 a deprecated dialer set by the caller must not bypass the guarded one
		t.DialTLS = nil
		//lint:ignore SA1019 a deprecated dialer set by the caller must not bypass the guarded one
		t.Dial = nil
		t.DisableKeepAlives = !keepAlive
		t.ForceAttemptHTTP2 = true
		c.Transport = t
	}
	c.CheckRedirect = g.checkRedirect
	return &c
}

// AllowsHost reports whether the allow-list names u's host: by name, by
// host:port, or as a literal IP address in an allowed address or range.
func (g *Guard) AllowsHost(u *url.URL) bool {
	host, port := u.Hostname(), u.Port()
	if port == "" {
		port = "80"
		if u.Scheme == "https" {
			port = "443"
		}
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		return g.allowed(host, port, ip)
	}
	h := normalizeHost(host)
	return g.exact[h] || g.exact[net.JoinHostPort(h, port)]
}
