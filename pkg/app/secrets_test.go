package app

import (
	"context"
	"encoding/base64"
	"errors"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/lambent/lambent/internal/testing/fakessm"
	"github.com/lambent/lambent/pkg/awsjson"
)

func newFakeSSM(t *testing.T, params map[string]string) *fakessm.Server {
	t.Helper()
	srv := fakessm.Start(fakessm.Options{Params: params})
	t.Cleanup(srv.Close)
	return srv
}

// ssmClient is the app's SSM client pointed at srv, as newSSMClient makes
// it (standard retries, SigV4) but with fixed credentials and region.
func ssmClient(t *testing.T, srv *fakessm.Server) *awsjson.SSM {
	t.Helper()
	c, err := awsjson.NewSSM(srv.Config())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func envOf(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestResolveProviderKeyReadsSecureString(t *testing.T) {
	srv := newFakeSSM(t, map[string]string{"/lambent/provider-api-key": "sk-from-ssm\n"})
	cfg := &Config{}
	env := envOf(map[string]string{EnvProviderAPIKeySSM: "/lambent/provider-api-key"})
	if err := ResolveSecretsWith(context.Background(), cfg, env, ssmClient(t, srv)); err != nil {
		t.Fatal(err)
	}
	if cfg.Provider.APIKey != "sk-from-ssm" {
		t.Fatalf("ProviderAPIKey = %q, want sk-from-ssm (trailing newline trimmed)", cfg.Provider.APIKey)
	}
	calls := srv.Requests()
	if len(calls) != 1 {
		t.Fatalf("%d SSM requests, want 1", len(calls))
	}
	c := calls[0]
	if c.Target != "AmazonSSM.GetParameter" || c.ContentType != "application/x-amz-json-1.1" {
		t.Errorf("request target %q, content type %q", c.Target, c.ContentType)
	}
	if c.Name != "/lambent/provider-api-key" || !c.WithDecryption {
		t.Errorf("request Name %q WithDecryption %v, want the parameter with decryption", c.Name, c.WithDecryption)
	}
	if !strings.HasPrefix(c.Authorization, "AWS4-HMAC-SHA256 ") || !strings.Contains(c.Authorization, "/us-east-1/ssm/aws4_request") {
		t.Errorf("request not SigV4-signed for ssm in us-east-1: %q", c.Authorization)
	}
}

// The exported entry point: the SSM client comes from the SDK's default
// configuration, here pointed at the fake through AWS_ENDPOINT_URL_SSM, and
// retries a throttled request with the SDK's standard retryer.
func TestResolveProviderKeyDefaultConfig(t *testing.T) {
	var throttled atomic.Bool
	srv := fakessm.Start(fakessm.Options{
		Params: map[string]string{"/lambent/key": "sk-default-config"},
		Before: func(fakessm.Request) string {
			if throttled.CompareAndSwap(false, true) {
				return "ThrottlingException"
			}
			return ""
		},
	})
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "config"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "credentials"))
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_REGION", "eu-west-3")
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDTEST")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	t.Setenv("AWS_SESSION_TOKEN", "")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "")
	t.Setenv("AWS_RETRY_MODE", "")
	t.Setenv("AWS_MAX_ATTEMPTS", "")
	t.Setenv("AWS_ENDPOINT_URL", "")
	t.Setenv("AWS_ENDPOINT_URL_SSM", srv.URL)

	cfg := &Config{}
	env := envOf(map[string]string{EnvProviderAPIKeySSM: "/lambent/key"})
	if err := ResolveSecrets(context.Background(), cfg, env); err != nil {
		t.Fatal(err)
	}
	if cfg.Provider.APIKey != "sk-default-config" {
		t.Fatalf("ProviderAPIKey = %q", cfg.Provider.APIKey)
	}
	calls := srv.Requests()
	if len(calls) != 2 {
		t.Fatalf("%d SSM requests, want 2 (a throttled one and its retry)", len(calls))
	}
	for _, c := range calls {
		if c.Name != "/lambent/key" || !strings.Contains(c.Authorization, "/eu-west-3/ssm/aws4_request") {
			t.Errorf("request %+v: want the parameter, signed for ssm in AWS_REGION", c)
		}
	}
}

func TestResolveProviderKeyExplicitKeyWins(t *testing.T) {
	srv := newFakeSSM(t, map[string]string{"/lambent/key": "sk-from-ssm"})
	ctx := context.Background()

	// Set in the configuration (FromEnv read LAMBENT_PROVIDER_API_KEY).
	cfg := &Config{Provider: ProviderConfig{APIKey: "sk-explicit"}}
	env := envOf(map[string]string{EnvProviderAPIKey: "sk-explicit", EnvProviderAPIKeySSM: "/lambent/key"})
	if err := ResolveSecretsWith(ctx, cfg, env, ssmClient(t, srv)); err != nil {
		t.Fatal(err)
	}
	if cfg.Provider.APIKey != "sk-explicit" {
		t.Fatalf("ProviderAPIKey = %q, want the explicit key", cfg.Provider.APIKey)
	}
	// Set in the environment only: still no SSM call, and the exported entry
	// point loads no AWS configuration either.
	cfg = &Config{}
	if err := resolveSecrets(ctx, cfg, env, noSSM(t)); err != nil {
		t.Fatal(err)
	}
	if err := ResolveSecrets(ctx, cfg, env); err != nil {
		t.Fatal(err)
	}
	if cfg.Provider.APIKey != "" {
		t.Fatalf("ProviderAPIKey = %q, want it left alone", cfg.Provider.APIKey)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Fatalf("%d SSM requests, want none when a key is set", n)
	}
}

// noSSM is a client factory that fails the test when called.
func noSSM(t *testing.T) func(context.Context) (SSMClient, error) {
	return func(context.Context) (SSMClient, error) {
		t.Fatal("an SSM client was made with nothing to read")
		return nil, errors.New("unreachable")
	}
}

func TestResolveProviderKeyNoParameterNamed(t *testing.T) {
	srv := newFakeSSM(t, nil)
	cfg := &Config{}
	for _, v := range []string{"", "  "} {
		env := envOf(map[string]string{EnvProviderAPIKeySSM: v})
		if err := ResolveSecretsWith(context.Background(), cfg, env, ssmClient(t, srv)); err != nil {
			t.Fatal(err)
		}
		if err := resolveSecrets(context.Background(), cfg, env, noSSM(t)); err != nil {
			t.Fatal(err)
		}
		if err := ResolveSecrets(context.Background(), cfg, env); err != nil {
			t.Fatal(err)
		}
	}
	if cfg.Provider.APIKey != "" || len(srv.Requests()) != 0 {
		t.Fatalf("key %q after %d requests, want nothing done", cfg.Provider.APIKey, len(srv.Requests()))
	}
}

func TestResolveProviderKeyParameterNotFound(t *testing.T) {
	srv := newFakeSSM(t, map[string]string{})
	cfg := &Config{}
	env := envOf(map[string]string{EnvProviderAPIKeySSM: "/lambent/missing"})
	err := ResolveSecretsWith(context.Background(), cfg, env, ssmClient(t, srv))
	if err == nil {
		t.Fatal("no error for a missing parameter")
	}
	if !errors.Is(err, ErrParameterNotFound) {
		t.Fatalf("error %v (%T) does not wrap ErrParameterNotFound", err, err)
	}
	if ae := (*awsjson.Error)(nil); !errors.As(err, &ae) || ae.Code != "ParameterNotFound" {
		t.Errorf("error %v does not wrap SSM's ParameterNotFound", err)
	}
	if !strings.Contains(err.Error(), EnvProviderAPIKeySSM) || !strings.Contains(err.Error(), "/lambent/missing") {
		t.Errorf("error %q does not name the variable and the parameter", err)
	}
	if cfg.Provider.APIKey != "" {
		t.Errorf("ProviderAPIKey = %q after a failure", cfg.Provider.APIKey)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("%d SSM requests, want 1 (a missing parameter is not retried)", n)
	}
}

func TestResolveProviderKeyEmptyValue(t *testing.T) {
	srv := newFakeSSM(t, map[string]string{"/lambent/empty": " \n"})
	cfg := &Config{}
	env := envOf(map[string]string{EnvProviderAPIKeySSM: "/lambent/empty"})
	err := ResolveSecretsWith(context.Background(), cfg, env, ssmClient(t, srv))
	if !errors.Is(err, errEmptyParameter) {
		t.Fatalf("error %v, want errEmptyParameter", err)
	}
}

func TestResolveProviderKeyCanceledContext(t *testing.T) {
	srv := newFakeSSM(t, map[string]string{"/lambent/key": "sk"})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	cfg := &Config{}
	env := envOf(map[string]string{EnvProviderAPIKeySSM: "/lambent/key"})
	err := ResolveSecretsWith(ctx, cfg, env, ssmClient(t, srv))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want it to wrap context.Canceled", err)
	}
}

// The provider key, the API keys and the compaction keys are read at once:
// the fake holds each request until all three have arrived, so sequential
// reads never complete.
func TestResolveSecretsReadsInParallel(t *testing.T) {
	defer goleak.VerifyNone(t)
	var arrived atomic.Int32
	both, abandon := make(chan struct{}), make(chan struct{})
	srv := fakessm.Start(fakessm.Options{
		Params: map[string]string{"/lambent/provider-api-key": "sk-provider", "/lambent/api-keys": "acme=sk-acme-0123456789ab",
			"/lambent/compaction-keys": "k2=" + compactionKey + "\n"},
		Before: func(fakessm.Request) string {
			if arrived.Add(1) == 3 {
				close(both)
			}
			select {
			case <-both:
				return ""
			case <-abandon:
				return "InternalServerError"
			}
		},
	})
	defer srv.Close()
	defer close(abandon) // before Close: a held request must end for Close to return

	// The deadline only ends a hang (reads made one after the other); it
	// measures nothing.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg := &Config{}
	env := envOf(map[string]string{EnvProviderAPIKeySSM: "/lambent/provider-api-key", EnvAPIKeysSSM: "/lambent/api-keys", EnvCompactionKeysSSM: "/lambent/compaction-keys"})
	if err := ResolveSecretsWith(ctx, cfg, env, ssmClient(t, srv)); err != nil {
		t.Fatalf("the reads were not in flight together: %v", err)
	}
	if cfg.Provider.APIKey != "sk-provider" || cfg.Security.APIKeys["sk-acme-0123456789ab"] != "acme" {
		t.Fatalf("provider key %q, API keys %v", cfg.Provider.APIKey, cfg.Security.APIKeys)
	}
	if cfg.Security.CompactionKeys == nil || cfg.Security.CompactionKeys.SealingKeyID() != "k2" {
		t.Fatalf("compaction keys %v, want the SSM list (sealing key k2)", cfg.Security.CompactionKeys)
	}
	if n := len(srv.Requests()); n != 3 {
		t.Fatalf("%d SSM requests, want 3", n)
	}
}

// Both failing reads are reported, and cfg is left as it was.
func TestResolveSecretsReportsEveryFailure(t *testing.T) {
	srv := newFakeSSM(t, map[string]string{"/lambent/api-keys": "\n"})
	cfg := &Config{}
	env := envOf(map[string]string{EnvProviderAPIKeySSM: "/lambent/missing", EnvAPIKeysSSM: "/lambent/api-keys"})
	err := ResolveSecretsWith(context.Background(), cfg, env, ssmClient(t, srv))
	if !errors.Is(err, ErrParameterNotFound) || !errors.Is(err, errEmptyParameter) {
		t.Fatalf("error %v, want both the missing and the empty parameter", err)
	}
	for _, s := range []string{EnvProviderAPIKeySSM + "=/lambent/missing", EnvAPIKeysSSM + "=/lambent/api-keys"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not name %s", err, s)
		}
	}
	if cfg.Provider.APIKey != "" || cfg.Security.APIKeys != nil {
		t.Errorf("cfg changed by a failure: %+v", cfg)
	}
}

// compactionKey is a 32-byte key in base64.
var compactionKey = base64.StdEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef"))

// Compaction keys come from LAMBENT_COMPACTION_KEYS (no SSM read then) or
// the SSM parameter; a bad list is an error naming its source, never its
// key material; none leaves them nil.
func TestResolveCompactionKeys(t *testing.T) {
	ctx := context.Background()
	srv := newFakeSSM(t, map[string]string{"/lambent/ck": "new=" + compactionKey + ",old=" + compactionKey[:43], "/lambent/bad": "k=c2hvcnQ="})

	cfg := &Config{}
	env := envOf(map[string]string{EnvCompactionKeys: "env=" + compactionKey, EnvCompactionKeysSSM: "/lambent/ck"})
	if err := resolveSecrets(ctx, cfg, env, noSSM(t)); err != nil {
		t.Fatal(err)
	}
	if cfg.Security.CompactionKeys == nil || cfg.Security.CompactionKeys.SealingKeyID() != "env" {
		t.Fatalf("compaction keys %v, want the environment's", cfg.Security.CompactionKeys)
	}

	cfg = &Config{}
	if err := ResolveSecretsWith(ctx, cfg, envOf(map[string]string{EnvCompactionKeysSSM: "/lambent/ck"}), ssmClient(t, srv)); err != nil {
		t.Fatal(err)
	}
	if cfg.Security.CompactionKeys == nil || cfg.Security.CompactionKeys.SealingKeyID() != "new" {
		t.Fatalf("compaction keys %v, want the parameter's (first key seals)", cfg.Security.CompactionKeys)
	}
	blob, err := cfg.Security.CompactionKeys.Seal("t", "s")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := cfg.Security.CompactionKeys.Open("t", blob); err != nil || got != "s" {
		t.Fatalf("round trip %q, %v", got, err)
	}

	for env, source := range map[string]map[string]string{
		EnvCompactionKeysSSM + "=/lambent/bad": {EnvCompactionKeysSSM: "/lambent/bad"},
		EnvCompactionKeys:                      {EnvCompactionKeys: "k=c2hvcnQ="},
	} {
		cfg = &Config{}
		err := ResolveSecretsWith(ctx, cfg, envOf(source), ssmClient(t, srv))
		if err == nil || !strings.Contains(err.Error(), env) || strings.Contains(err.Error(), "c2hvcnQ") {
			t.Errorf("error %v: want one naming %s without the key", err, env)
		}
		if cfg.Security.CompactionKeys != nil {
			t.Errorf("compaction keys set by a failure")
		}
	}

	cfg = &Config{}
	if err := resolveSecrets(ctx, cfg, envOf(nil), noSSM(t)); err != nil || cfg.Security.CompactionKeys != nil {
		t.Fatalf("no keys configured: %v, %v", cfg.Security.CompactionKeys, err)
	}
}
