package fetchurl

import (
	"net"
	"net/http"
	"net/netip"
	"net/url"
)

// Guard is fetch_url's SSRF guard for other clients that connect to URLs a
// request names (the MCP executor): the same refused ranges, the same
// allow-list semantics (Config.AllowHosts), the same checks after DNS
// resolution and on every redirect.
type Guard struct {
	g *guard
}

// NewGuard returns a guard with the allow-list allow (see Config.AllowHosts).
func NewGuard(allow []string) *Guard {
	return &Guard{g: newGuard(allow, defaultLookup)}
}

// Client returns an HTTP client whose every connection passes the guard:
// base (copied; nil for a fresh one) with the guarded dialer and redirect
// policy, as Config.Client describes. keepAlive keeps checked connections
// for reuse.
func (g *Guard) Client(base *http.Client, keepAlive bool) *http.Client {
	return newClient(base, g.g, keepAlive)
}

// CheckURL validates a URL before any connection: http or https, a host,
// and no literal IP address the guard refuses. Host names are checked after
// resolution, when the client dials.
func (g *Guard) CheckURL(u *url.URL) error {
	return g.g.checkURL(u)
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
		return g.g.allowed(host, port, ip)
	}
	h := normalizeHost(host)
	return g.g.exact[h] || g.g.exact[net.JoinHostPort(h, port)]
}
