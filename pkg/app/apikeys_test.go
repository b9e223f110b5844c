package app

import (
	"context"
	"testing"
)

func TestParseAPIKeys(t *testing.T) {
	keys, err := ParseAPIKeys("sk-0123456789abcdef, acme=sk-acme-0123456789ab\nglobex = sk-globex-012345678\n")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"sk-0123456789abcdef": "default", "sk-acme-0123456789ab": "acme", "sk-globex-012345678": "globex"}
	if len(keys) != len(want) {
		t.Fatalf("keys %v", keys)
	}
	for k, tenant := range want {
		if keys[k] != tenant {
			t.Errorf("%s: tenant %q, want %q", k, keys[k], tenant)
		}
	}
	for _, bad := range []string{"short", "bad tenant=sk-0123456789abcdef", "a=sk-0123456789abcdef,b=sk-0123456789abcdef", "a#b=sk-0123456789abcdef"} {
		if _, err := ParseAPIKeys(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if keys, err := ParseAPIKeys(""); err != nil || len(keys) != 0 {
		t.Errorf("empty list: %v, %v", keys, err)
	}
}

func TestResolveAPIKeysFromSSM(t *testing.T) {
	srv := newFakeSSM(t, map[string]string{"/lambent/api-keys": "acme=sk-acme-0123456789ab\n"})
	cfg := &Config{}
	env := envOf(map[string]string{EnvAPIKeysSSM: "/lambent/api-keys"})
	if err := ResolveSecretsWith(context.Background(), cfg, env, ssmClient(srv)); err != nil {
		t.Fatal(err)
	}
	if cfg.APIKeys["sk-acme-0123456789ab"] != "acme" {
		t.Fatalf("keys %v", cfg.APIKeys)
	}
	// The plain variable wins and needs no SSM call.
	cfg = &Config{}
	env = envOf(map[string]string{EnvAPIKeys: "sk-local-0123456789ab", EnvAPIKeysSSM: "/lambent/api-keys"})
	if err := resolveSecrets(context.Background(), cfg, env, noSSM(t)); err != nil {
		t.Fatal(err)
	}
	if cfg.APIKeys["sk-local-0123456789ab"] != "default" {
		t.Fatalf("keys %v", cfg.APIKeys)
	}
}
