package egress

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"
)

// LookupFunc resolves a host name to IP addresses. Tests replace it to
// simulate DNS answers (rebinding, metadata addresses) without a network.
type LookupFunc func(ctx context.Context, host string) ([]netip.Addr, error)

func defaultLookup(ctx context.Context, host string) ([]netip.Addr, error) {
	ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if de, ok := errors.AsType[*net.DNSError](err); ok && de.Server != "" {
		// The resolver's address is the deployment's (a VPC's resolver):
		// the error reaches the model and the tenant.
		c := *de
		c.Server = ""
		err = &c
	}
	return ips, err
}

// blockedRange is one address range the tool must never connect to.
type blockedRange struct {
	prefix netip.Prefix
	reason string
}

// blockedRanges lists the destinations refused by the SSRF guard. More
// specific entries come first so that the reported reason is precise. It is
// built per guard so that the package holds no mutable state.
func blockedRanges() []blockedRange {
	list := []struct{ cidr, reason string }{
		// IPv4
		{"0.0.0.0/8", "unspecified (this-network)"},
		{"10.0.0.0/8", "private"},
		{"100.64.0.0/10", "carrier-grade NAT (shared address space)"},
		{"127.0.0.0/8", "loopback"},
		{"169.254.169.254/32", "cloud instance metadata"},
		{"169.254.0.0/16", "link-local"},
		{"172.16.0.0/12", "private"},
		{"192.0.0.0/24", "IETF protocol assignment"},
		{"192.168.0.0/16", "private"},
		{"198.18.0.0/15", "benchmarking"},
		{"224.0.0.0/4", "multicast"},
		{"240.0.0.0/4", "reserved"},
		// IPv6
		{"::/128", "unspecified"},
		{"::1/128", "loopback"},
		{"::/96", "IPv4-compatible (deprecated)"},
		{"100::/64", "discard-only"},
		{"64:ff9b:1::/48", "local-use NAT64"},
		{"fd00:ec2::254/128", "cloud instance metadata"},
		{"fc00::/7", "private (unique local)"},
		{"fe80::/10", "link-local"},
		{"fec0::/10", "site-local (deprecated)"},
		{"ff00::/8", "multicast"},
	}
	out := make([]blockedRange, len(list))
	for i, b := range list {
		out[i] = blockedRange{prefix: netip.MustParsePrefix(b.cidr), reason: b.reason}
	}
	return out
}

// Guard is the SSRF guard of every client that connects to a URL a request
// names (fetch_url, MCP servers, Bedrock's image URLs, webhooks): it
// decides which addresses may be dialed and performs the dialing itself, so
// that every connection — first request, every redirect hop, every DNS
// answer — is checked after resolution.
type Guard struct {
	blocked   []blockedRange
	nat64     netip.Prefix    // 64:ff9b::/96, embeds an IPv4 address in its last 4 bytes
	sixToFour netip.Prefix    // 2002::/16 (6to4), embeds an IPv4 address in bytes 2..5
	exact     map[string]bool // allowed "host" and "host:port" keys, normalized
	prefixes  []netip.Prefix  // allowed CIDR ranges
	lookup    LookupFunc
	// dial connects to one checked address (a net.Dialer's; tests replace
	// it to simulate an address that never answers).
	dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// connectTimeout bounds each address's connection attempt
	// (ConnectTimeout; tests shorten it).
	connectTimeout time.Duration
}

// NewWithLookup returns a guard with the allow-list allow (see New) that
// resolves host names with lookup (nil: the system resolver).
func NewWithLookup(allow []string, lookup LookupFunc) *Guard {
	if lookup == nil {
		lookup = defaultLookup
	}
	g := &Guard{
		blocked:        blockedRanges(),
		nat64:          netip.MustParsePrefix("64:ff9b::/96"),
		sixToFour:      netip.MustParsePrefix("2002::/16"),
		exact:          map[string]bool{},
		lookup:         lookup,
		dial:           (&net.Dialer{}).DialContext,
		connectTimeout: ConnectTimeout,
	}
	for _, e := range allow {
		e = strings.ToLower(strings.TrimSpace(e))
		if e == "" {
			continue
		}
		if p, err := netip.ParsePrefix(e); err == nil {
			g.prefixes = append(g.prefixes, p.Masked())
			continue
		}
		if a, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(e, "["), "]")); err == nil {
			g.exact[canonicalAddr(a)] = true
			continue
		}
		if h, p, err := net.SplitHostPort(e); err == nil {
			g.exact[net.JoinHostPort(normalizeHost(h), p)] = true
			continue
		}
		g.exact[normalizeHost(e)] = true
	}
	return g
}

// normalizeHost lower-cases a host, drops a trailing dot and renders IP
// literals canonically (unmapped, without zone).
func normalizeHost(h string) string {
	h = strings.TrimSuffix(strings.ToLower(h), ".")
	if a, err := netip.ParseAddr(h); err == nil {
		return canonicalAddr(a)
	}
	return h
}

func canonicalAddr(a netip.Addr) string { return a.WithZone("").Unmap().String() }

// allowed reports whether the allow-list lets a dial to host:port reach ip.
func (g *Guard) allowed(host, port string, ip netip.Addr) bool {
	host = normalizeHost(host)
	ipStr := canonicalAddr(ip)
	for _, k := range []string{host, net.JoinHostPort(host, port), ipStr, net.JoinHostPort(ipStr, port)} {
		if g.exact[k] {
			return true
		}
	}
	plain := ip.WithZone("").Unmap()
	for _, p := range g.prefixes {
		if p.Contains(plain) {
			return true
		}
	}
	return false
}

// blockedReason reports why ip is not a public unicast destination, or ""
// when it is. IPv4-mapped, IPv4-compatible, NAT64 and 6to4 IPv6 forms are
// judged by the IPv4 address they embed.
func (g *Guard) blockedReason(ip netip.Addr) string {
	ip = ip.WithZone("")
	if ip.Is4In6() {
		if r := g.blockedReason(ip.Unmap()); r != "" {
			return "IPv4-mapped " + r
		}
		return ""
	}
	if ip.Is6() {
		b := ip.As16()
		var embedded netip.Addr
		switch {
		case g.nat64.Contains(ip):
			embedded = netip.AddrFrom4([4]byte(b[12:16]))
		case g.sixToFour.Contains(ip):
			embedded = netip.AddrFrom4([4]byte(b[2:6]))
		}
		if embedded.IsValid() {
			if r := g.blockedReason(embedded); r != "" {
				return r + " (embedded in IPv6 address)"
			}
		}
	}
	for _, b := range g.blocked {
		if b.prefix.Contains(ip) {
			return b.reason
		}
	}
	// Belt and braces: the standard library's own classification.
	switch {
	case ip.IsLoopback():
		return "loopback"
	case ip.IsPrivate():
		return "private"
	case ip.IsLinkLocalUnicast():
		return "link-local"
	case ip.IsMulticast(), ip.IsLinkLocalMulticast(), ip.IsInterfaceLocalMulticast():
		return "multicast"
	case ip.IsUnspecified():
		return "unspecified"
	}
	return ""
}

// BlockedError reports a destination refused by the SSRF guard.
type BlockedError struct {
	host   string
	ip     netip.Addr
	reason string
}

func (e *BlockedError) Error() string {
	ip := e.ip.WithZone("").String()
	if normalizeHost(e.host) == canonicalAddr(e.ip) {
		return fmt.Sprintf("destination %s is not allowed (%s address); only public internet addresses can be fetched", ip, e.reason)
	}
	// The address a name resolves to is not told: it would map the
	// deployment's internal DNS for whoever reads the error (the model,
	// the tenant).
	return fmt.Sprintf("destination %s resolves to an address that is not allowed (%s address); only public internet addresses can be fetched", e.host, e.reason)
}

// check returns a *BlockedError when a dial to host:port must not reach ip.
func (g *Guard) check(host, port string, ip netip.Addr) error {
	r := g.blockedReason(ip)
	if r == "" || g.allowed(host, port, ip) {
		return nil
	}
	return &BlockedError{host: host, ip: ip, reason: r}
}

// dialContext is the transport's dialer. It resolves the host itself, checks
// every address and connects only to an address it has checked, so a DNS
// answer that changes between check and use (rebinding) cannot slip through.
// It tries the addresses one by one in the resolver's order; each but the
// last for at most ConnectTimeout, so that one that never answers (a black
// hole) leaves the next its turn, and the last for the caller's whole time.
func (g *Guard) dialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	var ips []netip.Addr
	if ip, err := netip.ParseAddr(host); err == nil {
		ips = []netip.Addr{ip}
	} else {
		ips, err = g.lookup(ctx, host)
		if err != nil {
			return nil, fmt.Errorf("resolve %s: %w", host, err)
		}
	}
	var blockedErr error
	checked := make([]netip.Addr, 0, len(ips))
	for _, ip := range ips {
		plain := ip.Unmap()
		if (network == "tcp4" && !plain.Is4()) || (network == "tcp6" && !plain.Is6()) {
			continue
		}
		if err := g.check(host, port, ip); err != nil {
			if blockedErr == nil {
				blockedErr = err
			}
			continue
		}
		checked = append(checked, ip)
	}
	var dialErr error
	for i, ip := range checked {
		conn, err := g.dialOne(ctx, network, net.JoinHostPort(ip.String(), port), i < len(checked)-1)
		if err == nil {
			return conn, nil
		}
		dialErr = err
		if ctx.Err() != nil {
			break
		}
	}
	switch {
	case dialErr != nil:
		return nil, dialErr
	case blockedErr != nil:
		return nil, blockedErr
	default:
		return nil, fmt.Errorf("resolve %s: no usable %s address", host, network)
	}
}

// dialOne connects to one checked address; when another address follows
// (capped), it gives up after the guard's connect timeout so that the next
// gets its turn.
func (g *Guard) dialOne(ctx context.Context, network, addr string, capped bool) (net.Conn, error) {
	if capped {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, g.connectTimeout)
		defer cancel()
	}
	return g.dial(ctx, network, addr)
}

// checkURL validates a request URL (the first one and every redirect
// target): http or https, a host, and no literal IP address the guard would
// refuse. Host names are checked after resolution, in dialContext.
func (g *Guard) CheckURL(u *url.URL) error {
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("unsupported URL scheme %q: only http and https URLs can be fetched", u.Scheme)
	}
	host := u.Hostname()
	if host == "" {
		return errors.New("URL has no host")
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		port := u.Port()
		if port == "" {
			port = "80"
			if u.Scheme == "https" {
				port = "443"
			}
		}
		return g.check(host, port, ip)
	}
	return nil
}

// MaxRedirects is the most redirects a guarded client follows.
const MaxRedirects = 5

// checkRedirect is the client's redirect policy: at most MaxRedirects hops,
// each one re-validated (the dialer re-checks the resolved address as well).
func (g *Guard) checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) > MaxRedirects {
		return fmt.Errorf("stopped after %d redirects", MaxRedirects)
	}
	return g.CheckURL(req.URL)
}

// IsBlocked reports whether err is, or wraps, the guard's refusal of a
// destination.
func IsBlocked(err error) bool {
	var be *BlockedError
	return errors.As(err, &be)
}
