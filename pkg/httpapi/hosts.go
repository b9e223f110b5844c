package httpapi

import (
	"net"
	"net/http"
	"strings"
)

// hostAllowlist is the Host check against DNS rebinding (see Handler).
type hostAllowlist struct {
	any   bool            // "*": every host
	names map[string]bool // canonical names beside the loopback ones; nil: none configured
}

// newHostAllowlist reads Config.AllowedHosts: names with or without a
// port, case-insensitive; "*" allows any host.
func newHostAllowlist(list []string) hostAllowlist {
	var a hostAllowlist
	for _, n := range list {
		if n = strings.TrimSpace(n); n == "*" {
			return hostAllowlist{any: true}
		}
		if n = hostName(n); n != "" {
			if a.names == nil {
				a.names = make(map[string]bool)
			}
			a.names[n] = true
		}
	}
	return a
}

// allows reports whether r may be served: it came through no socket of
// the server, or through a non-loopback one with no names configured, or
// its Host names a loopback host or a configured name. An empty Host (an
// HTTP/1.0 request; browsers always send one) is not checked.
func (a hostAllowlist) allows(r *http.Request) bool {
	if a.any || r.Host == "" {
		return true
	}
	local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok {
		return true
	}
	if a.names == nil && !loopbackAddr(local) {
		return true
	}
	host := hostName(r.Host)
	return loopbackHost(host) || a.names[host]
}

// hostName is the canonical host of a Host header value: without its port
// or IPv6 brackets, lower case, without a trailing dot.
func hostName(hostport string) string {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	return strings.TrimSuffix(strings.ToLower(host), ".")
}

// loopbackHost reports whether host names the loopback interface:
// localhost and its subdomains (RFC 6761; browsers resolve them to
// loopback themselves), or a loopback IP.
func loopbackHost(host string) bool {
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func loopbackAddr(a net.Addr) bool {
	if tcp, ok := a.(*net.TCPAddr); ok {
		return tcp.IP.IsLoopback()
	}
	host, _, err := net.SplitHostPort(a.String())
	return err == nil && loopbackHost(host)
}
