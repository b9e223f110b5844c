package provider

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Route sends the models Pattern matches to the provider named Provider.
// A Pattern ending in "*" matches every model starting with what comes
// before the star; any other Pattern matches that exact model name.
type Route struct {
	Pattern  string
	Provider string
}

// ParseRoutes reads a routing setting: entries "pattern=provider"
// separated by commas or white space, e.g.
// "us.anthropic.*=bedrock, amazon.nova-*=bedrock, gpt-4o=openai". Model
// names and ARNs hold neither "=" nor ",", so every Bedrock model id,
// inference profile id and ARN can be written as a pattern.
func ParseRoutes(s string) ([]Route, error) {
	var out []Route
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' || r == '\t' || r == '\r' }) {
		pattern, name, ok := strings.Cut(f, "=")
		pattern, name = strings.TrimSpace(pattern), strings.TrimSpace(name)
		if !ok || pattern == "" || name == "" {
			return nil, fmt.Errorf("model route %q: want pattern=provider", f)
		}
		if i := strings.IndexByte(pattern, '*'); i >= 0 && i != len(pattern)-1 {
			return nil, fmt.Errorf("model route %q: a * may only end a pattern (a prefix)", f)
		}
		out = append(out, Route{Pattern: pattern, Provider: name})
	}
	return out, nil
}

// Router is a Provider that passes each call to the provider its model is
// routed to: an exact route first, else the longest matching prefix route,
// else the default provider. It is safe for concurrent use when its
// providers are.
type Router struct {
	exact    map[string]Provider
	prefixes []prefixRoute // longest prefix first
	def      Provider
}

type prefixRoute struct {
	prefix string
	p      Provider
}

var _ Provider = (*Router)(nil)

// NewRouter returns a Router over the named providers. def names the
// provider of models no route matches. Every name routes and def use must
// be in providers; two routes with the same pattern are an error.
func NewRouter(providers map[string]Provider, def string, routes []Route) (*Router, error) {
	lookup := func(name string) (Provider, error) {
		p, ok := providers[name]
		if !ok || p == nil {
			names := make([]string, 0, len(providers))
			for n := range providers {
				names = append(names, n)
			}
			slices.Sort(names)
			return nil, fmt.Errorf("unknown model provider %q (known: %s)", name, strings.Join(names, ", "))
		}
		return p, nil
	}
	r := &Router{exact: map[string]Provider{}}
	var err error
	if r.def, err = lookup(def); err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for _, rt := range routes {
		if seen[rt.Pattern] {
			return nil, fmt.Errorf("model route %q is given twice", rt.Pattern)
		}
		seen[rt.Pattern] = true
		p, err := lookup(rt.Provider)
		if err != nil {
			return nil, fmt.Errorf("model route %s=%s: %w", rt.Pattern, rt.Provider, err)
		}
		if prefix, ok := strings.CutSuffix(rt.Pattern, "*"); ok {
			r.prefixes = append(r.prefixes, prefixRoute{prefix: prefix, p: p})
		} else {
			r.exact[rt.Pattern] = p
		}
	}
	sort.SliceStable(r.prefixes, func(i, j int) bool { return len(r.prefixes[i].prefix) > len(r.prefixes[j].prefix) })
	return r, nil
}

// For returns the provider that serves model.
func (r *Router) For(model string) Provider {
	if p, ok := r.exact[model]; ok {
		return p
	}
	for _, pr := range r.prefixes {
		if strings.HasPrefix(model, pr.prefix) {
			return pr.p
		}
	}
	return r.def
}

// Complete passes the call to the model's provider.
func (r *Router) Complete(ctx context.Context, req *Request) (*Result, error) {
	return r.For(req.Model).Complete(ctx, req)
}

// Stream passes the call to the model's provider.
func (r *Router) Stream(ctx context.Context, req *Request, fn func(Delta) error) (*Result, error) {
	return r.For(req.Model).Stream(ctx, req, fn)
}
