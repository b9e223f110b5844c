// Package tenant carries the tenant of a request in its context: the
// transport sets it (from the API key, the caller's AWS IAM identity, or a
// background job), the stores key every record by it, and the engine hands
// it on to background jobs.
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
