// Package store defines where responses are kept: the ResponseStore
// interface, its domain errors, and tenant scoping. Implementations: memory
// (this package) and dynamodb (sub-package).
package store

import (
	"context"
	"errors"
	"time"

	"github.com/lambent/lambent/pkg/api"
)

// Domain errors. Implementations wrap them with %w.
var (
	// ErrNotFound: no such response (or it expired, or was deleted).
	ErrNotFound = errors.New("response not found")
	// ErrConflict: a create found the id taken, or a conditional update found
	// a different status than expected.
	ErrConflict = errors.New("response changed concurrently")
)

// Record is one stored response with what a continuation needs.
type Record struct {
	// Response is the response object as returned to the client.
	Response *api.Response
	// Input holds this request's own input items, with ids assigned.
	Input []api.Item
	// Context holds the conversation before Input (the whole previous chain:
	// its inputs and outputs), so continuing from this response needs one read.
	Context []api.Item
	// ExpiresAt is when the record stops being readable; zero means the
	// store's default retention.
	ExpiresAt time.Time
}

// Conversation returns the full conversation of the record: Context, Input
// and the response's Output, in order.
func (r *Record) Conversation() []api.Item {
	out := make([]api.Item, 0, len(r.Context)+len(r.Input)+len(r.Response.Output))
	out = append(out, r.Context...)
	out = append(out, r.Input...)
	return append(out, r.Response.Output...)
}

// ListOptions page through input items.
type ListOptions struct {
	// After is an item id; listing starts after it.
	After string
	// Limit is the page size (1..100, default 20).
	Limit int
	// Order is "asc" or "desc" (default "desc", as the OpenAI API).
	Order string
}

// ItemPage is one page of input items.
type ItemPage struct {
	Items   []api.Item
	HasMore bool
}

// ResponseStore keeps responses. Every method is safe for concurrent use.
type ResponseStore interface {
	// Create stores a new record; ErrConflict when the id exists.
	Create(ctx context.Context, rec *Record) error
	// Get returns the record; ErrNotFound when absent or expired.
	Get(ctx context.Context, id string) (*Record, error)
	// Update replaces the record if its stored status is still expect and
	// the transition expect → rec.Response.Status is allowed (or the status
	// is unchanged and not terminal, for progress checkpoints); else
	// ErrConflict (ErrNotFound when absent).
	Update(ctx context.Context, rec *Record, expect api.Status) error
	// Delete removes the record and every part of it; ErrNotFound when absent.
	Delete(ctx context.Context, id string) error
	// ListInputItems pages through the record's Input.
	ListInputItems(ctx context.Context, id string, opts ListOptions) (*ItemPage, error)
}

type tenantKey struct{}

// DefaultTenant is the tenant of requests without one.
const DefaultTenant = "default"

// WithTenant scopes ctx to a tenant: stores key records by it.
func WithTenant(ctx context.Context, tenant string) context.Context {
	return context.WithValue(ctx, tenantKey{}, tenant)
}

// Tenant returns ctx's tenant, DefaultTenant when none.
func Tenant(ctx context.Context) string {
	if t, ok := ctx.Value(tenantKey{}).(string); ok && t != "" {
		return t
	}
	return DefaultTenant
}
