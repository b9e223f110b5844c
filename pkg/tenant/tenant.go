// Package tenant names the tenant of a request and carries it in the
// request's context. Every front door names it by one rule ([Rule]: the
// caller's AWS IAM identity, else the API key), a worker takes it from its
// job; the stores key every record by it, and the engine hands it on to
// background jobs. MayQueue is a tenant's share of a queue the tenants
// share (the hook queues, the local job queue). The package imports no
// other package of the project.
package tenant

import "context"

// Default is the tenant of requests without one.
const Default = "default"

type key struct{}

// With scopes ctx to tenant t.
func With(ctx context.Context, t string) context.Context {
	return context.WithValue(ctx, key{}, t)
}

// Named returns the tenant ctx names, and whether it names one (From
// falls back to Default).
func Named(ctx context.Context) (string, bool) {
	t, ok := ctx.Value(key{}).(string)
	return t, ok && t != ""
}

// From returns ctx's tenant, Default when none.
func From(ctx context.Context) string {
	if t, ok := ctx.Value(key{}).(string); ok && t != "" {
		return t
	}
	return Default
}

type callerKey struct{}

// WithCaller records in ctx the identity that the front door (a function
// URL or API Gateway with AWS_IAM auth) authenticated the request as: the
// caller's IAM ARN. Only the Lambda adapter sets it, from the invocation
// event's request context, which clients cannot forge.
func WithCaller(ctx context.Context, arn string) context.Context {
	return context.WithValue(ctx, callerKey{}, arn)
}

// Caller returns the IAM identity the front door authenticated, and whether
// there is one (false for requests on a NONE-auth front door and local runs).
func Caller(ctx context.Context) (string, bool) {
	arn, ok := ctx.Value(callerKey{}).(string)
	return arn, ok && arn != ""
}
