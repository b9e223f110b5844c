package tenant_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/lambent/lambent/pkg/tenant"
)

func TestFrom(t *testing.T) {
	ctx := context.Background()
	assert.Equal(t, tenant.Default, tenant.From(ctx), "no tenant")
	assert.Equal(t, "alice", tenant.From(tenant.With(ctx, "alice")))
	assert.Equal(t, tenant.Default, tenant.From(tenant.With(ctx, "")), "an empty tenant is the default one")
	assert.Equal(t, "bob", tenant.From(tenant.With(tenant.With(ctx, "alice"), "bob")), "the innermost tenant wins")
}

func TestCaller(t *testing.T) {
	ctx := context.Background()
	_, ok := tenant.Caller(ctx)
	assert.False(t, ok, "no caller")
	_, ok = tenant.Caller(tenant.WithCaller(ctx, ""))
	assert.False(t, ok, "an empty caller is none")
	arn := "arn:aws:iam::111122223333:user/alice"
	got, ok := tenant.Caller(tenant.WithCaller(ctx, arn))
	assert.True(t, ok)
	assert.Equal(t, arn, got)
	assert.Equal(t, tenant.Default, tenant.From(tenant.WithCaller(ctx, arn)), "a caller is not a tenant until the API makes it one")
}
