// Package tenant carries the tenant of a request in its context: the
// transport sets it (from the API key, or a background job), the stores key
// every record by it, and the engine hands it on to background jobs.
package tenant

import "context"

// Default is the tenant of requests without one.
const Default = "default"

type key struct{}

// With scopes ctx to tenant t.
func With(ctx context.Context, t string) context.Context {
	return context.WithValue(ctx, key{}, t)
}

// From returns ctx's tenant, Default when none.
func From(ctx context.Context) string {
	if t, ok := ctx.Value(key{}).(string); ok && t != "" {
		return t
	}
	return Default
}
