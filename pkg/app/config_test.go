package app

import "testing"

// TestTenantWebSocketTurnsZeroIsNoBound: docs/configuration.md documents
// LAMBENT_LIMIT_TENANT_WEBSOCKET_TURNS=0 as no bound (its default), so
// setting it to 0 explicitly starts, without a bound; a negative value or
// one that is not a number still stops start-up.
func TestTenantWebSocketTurnsZeroIsNoBound(t *testing.T) {
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == "LAMBENT_LIMIT_TENANT_WEBSOCKET_TURNS" {
				return v
			}
			return ""
		}
	}
	c, err := FromEnv(env("0"))
	if err != nil {
		t.Fatalf("LAMBENT_LIMIT_TENANT_WEBSOCKET_TURNS=0: %v", err)
	}
	if got := c.Limits.TenantWebSocketTurns; got != 0 {
		t.Errorf("TenantWebSocketTurns = %d, want 0 (no bound)", got)
	}
	c, err = FromEnv(env("3"))
	if err != nil || c.Limits.TenantWebSocketTurns != 3 {
		t.Errorf("LAMBENT_LIMIT_TENANT_WEBSOCKET_TURNS=3: %d, %v", c.Limits.TenantWebSocketTurns, err)
	}
	for _, bad := range []string{"-1", "x"} {
		if _, err := FromEnv(env(bad)); err == nil {
			t.Errorf("LAMBENT_LIMIT_TENANT_WEBSOCKET_TURNS=%s: no error", bad)
		}
	}
}
