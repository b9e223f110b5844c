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
