package app

import (
	"context"
	"strings"
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
	if err := ResolveSecretsWith(context.Background(), cfg, env, ssmClient(t, srv)); err != nil {
		t.Fatal(err)
	}
	if cfg.Security.APIKeys["sk-acme-0123456789ab"] != "acme" {
		t.Fatalf("keys %v", cfg.Security.APIKeys)
	}
	// The plain variable wins and needs no SSM call.
	cfg = &Config{}
	env = envOf(map[string]string{EnvAPIKeys: "sk-local-0123456789ab", EnvAPIKeysSSM: "/lambent/api-keys"})
	if err := resolveSecrets(context.Background(), cfg, env, noSSM(t)); err != nil {
		t.Fatal(err)
	}
	if cfg.Security.APIKeys["sk-local-0123456789ab"] != "default" {
		t.Fatalf("keys %v", cfg.Security.APIKeys)
	}
}

// The worker refuses messages without a tenant when API keys are
// configured or LAMBENT_WORKER_REQUIRE_TENANT is set.
func TestJobTenantRequired(t *testing.T) {
	for name, c := range map[string]struct {
		env  map[string]string
		want bool
	}{
		"neither":  {map[string]string{}, false},
		"keys":     {map[string]string{EnvAPIKeys: "sk-local-0123456789ab"}, true},
		"setting":  {map[string]string{"LAMBENT_WORKER_REQUIRE_TENANT": "true"}, true},
		"explicit": {map[string]string{"LAMBENT_WORKER_REQUIRE_TENANT": "false"}, false},
	} {
		env := envOf(c.env)
		cfg, err := FromEnv(env)
		if err != nil {
			t.Fatal(err)
		}
		if err := ResolveSecrets(t.Context(), &cfg, env); err != nil {
			t.Fatal(err)
		}
		if got := cfg.JobTenantRequired(); got != c.want {
			t.Errorf("%s: JobTenantRequired = %v, want %v", name, got, c.want)
		}
	}
	if _, err := FromEnv(envOf(map[string]string{"LAMBENT_IAM_TENANT": "session"})); err == nil {
		t.Error("LAMBENT_IAM_TENANT=session: want an error")
	}
}

// A malformed LAMBENT_API_KEYS stops the start with an error that goes to
// the log (a Lambda's init error): it never quotes a key, not even a bare
// key with an '=' (base64) whose part before it is no tenant name.
func TestParseAPIKeysErrorHidesTheKey(t *testing.T) {
	for _, list := range []string{"c2VjcmV0+a2V5LXZhbHVl=", "sk/s3cret-0123456789=abc", "acme=s3cret-0123456789,s3cret key=x"} {
		_, err := ParseAPIKeys(list)
		if err == nil {
			t.Errorf("%q accepted", list)
			continue
		}
		for _, secret := range []string{"c2VjcmV0", "a2V5", "s3cret"} {
			if strings.Contains(err.Error(), secret) {
				t.Errorf("%q: the error quotes the key: %v", list, err)
			}
		}
	}
}
