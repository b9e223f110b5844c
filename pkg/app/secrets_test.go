package app

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
)

// fakeSSM speaks the SSM JSON 1.1 protocol for GetParameter: POST / with
// X-Amz-Target AmazonSSM.GetParameter, errors as {"__type","message"}.
type fakeSSM struct {
	params map[string]string // name -> value

	mu       sync.Mutex
	requests []fakeSSMRequest
}

type fakeSSMRequest struct {
	Target, ContentType, Authorization string
	Name                               string
	WithDecryption                     bool
}

func (f *fakeSSM) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var in struct {
		Name           string
		WithDecryption bool
	}
	_ = json.Unmarshal(body, &in)
	f.mu.Lock()
	f.requests = append(f.requests, fakeSSMRequest{
		Target:         r.Header.Get("X-Amz-Target"),
		ContentType:    r.Header.Get("Content-Type"),
		Authorization:  r.Header.Get("Authorization"),
		Name:           in.Name,
		WithDecryption: in.WithDecryption,
	})
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	if r.Method != http.MethodPost || r.Header.Get("X-Amz-Target") != "AmazonSSM.GetParameter" {
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, `{"__type":"UnknownOperationException","message":"unexpected request"}`)
		return
	}
	value, ok := f.params[in.Name]
	if !ok {
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, `{"__type":"ParameterNotFound","message":"Parameter `+in.Name+` not found."}`)
		return
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"Parameter": map[string]any{
		"Name":     in.Name,
		"Type":     "SecureString",
		"Value":    value,
		"Version":  1,
		"ARN":      "arn:aws:ssm:us-east-1:123456789012:parameter" + in.Name,
		"DataType": "text",
	}})
}

func (f *fakeSSM) calls() []fakeSSMRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]fakeSSMRequest(nil), f.requests...)
}

func newFakeSSM(t *testing.T, params map[string]string) (*fakeSSM, *httptest.Server) {
	t.Helper()
	f := &fakeSSM{params: params}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv
}

func ssmClient(srv *httptest.Server) *signedSSM {
	return &signedSSM{
		cfg:      aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("AKIDTEST", "secret", "")},
		endpoint: srv.URL,
		client:   srv.Client(),
	}
}

func envOf(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestResolveProviderKeyReadsSecureString(t *testing.T) {
	f, srv := newFakeSSM(t, map[string]string{"/lambent/provider-api-key": "sk-from-ssm\n"})
	cfg := &Config{}
	env := envOf(map[string]string{EnvProviderAPIKeySSM: "/lambent/provider-api-key"})
	if err := ResolveProviderKeyWith(context.Background(), cfg, env, ssmClient(srv)); err != nil {
		t.Fatal(err)
	}
	if cfg.ProviderAPIKey != "sk-from-ssm" {
		t.Fatalf("ProviderAPIKey = %q, want sk-from-ssm (trailing newline trimmed)", cfg.ProviderAPIKey)
	}
	calls := f.calls()
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
	if !strings.HasPrefix(c.Authorization, "AWS4-HMAC-SHA256 ") || !strings.Contains(c.Authorization, "/ssm/aws4_request") {
		t.Errorf("request not SigV4-signed for ssm: %q", c.Authorization)
	}
}

// The exported entry point: the SSM client comes from the SDK's default
// configuration, here pointed at the fake through AWS_ENDPOINT_URL_SSM.
func TestResolveProviderKeyDefaultConfig(t *testing.T) {
	f, srv := newFakeSSM(t, map[string]string{"/lambent/key": "sk-default-config"})
	dir := t.TempDir()
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "config"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "credentials"))
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDTEST")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	t.Setenv("AWS_SESSION_TOKEN", "")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "")
	t.Setenv("AWS_ENDPOINT_URL_SSM", srv.URL)

	cfg := &Config{}
	env := envOf(map[string]string{EnvProviderAPIKeySSM: "/lambent/key"})
	if err := ResolveProviderKey(context.Background(), cfg, env); err != nil {
		t.Fatal(err)
	}
	if cfg.ProviderAPIKey != "sk-default-config" {
		t.Fatalf("ProviderAPIKey = %q", cfg.ProviderAPIKey)
	}
	if n := len(f.calls()); n != 1 {
		t.Fatalf("%d SSM requests, want 1", n)
	}
}

func TestResolveProviderKeyExplicitKeyWins(t *testing.T) {
	f, srv := newFakeSSM(t, map[string]string{"/lambent/key": "sk-from-ssm"})
	ctx := context.Background()

	// Set in the configuration (FromEnv read LAMBENT_PROVIDER_API_KEY).
	cfg := &Config{ProviderAPIKey: "sk-explicit"}
	env := envOf(map[string]string{EnvProviderAPIKey: "sk-explicit", EnvProviderAPIKeySSM: "/lambent/key"})
	if err := ResolveProviderKeyWith(ctx, cfg, env, ssmClient(srv)); err != nil {
		t.Fatal(err)
	}
	if cfg.ProviderAPIKey != "sk-explicit" {
		t.Fatalf("ProviderAPIKey = %q, want the explicit key", cfg.ProviderAPIKey)
	}
	// Set in the environment only: still no SSM call, and the exported entry
	// point loads no AWS configuration either.
	cfg = &Config{}
	if err := ResolveProviderKey(ctx, cfg, env); err != nil {
		t.Fatal(err)
	}
	if cfg.ProviderAPIKey != "" {
		t.Fatalf("ProviderAPIKey = %q, want it left alone", cfg.ProviderAPIKey)
	}
	if n := len(f.calls()); n != 0 {
		t.Fatalf("%d SSM requests, want none when a key is set", n)
	}
}

func TestResolveProviderKeyNoParameterNamed(t *testing.T) {
	f, srv := newFakeSSM(t, nil)
	cfg := &Config{}
	for _, v := range []string{"", "  "} {
		env := envOf(map[string]string{EnvProviderAPIKeySSM: v})
		if err := ResolveProviderKeyWith(context.Background(), cfg, env, ssmClient(srv)); err != nil {
			t.Fatal(err)
		}
		if err := ResolveProviderKey(context.Background(), cfg, env); err != nil {
			t.Fatal(err)
		}
	}
	if cfg.ProviderAPIKey != "" || len(f.calls()) != 0 {
		t.Fatalf("key %q after %d requests, want nothing done", cfg.ProviderAPIKey, len(f.calls()))
	}
}

func TestResolveProviderKeyParameterNotFound(t *testing.T) {
	_, srv := newFakeSSM(t, map[string]string{})
	cfg := &Config{}
	env := envOf(map[string]string{EnvProviderAPIKeySSM: "/lambent/missing"})
	err := ResolveProviderKeyWith(context.Background(), cfg, env, ssmClient(srv))
	if err == nil {
		t.Fatal("no error for a missing parameter")
	}
	if !errors.Is(err, ErrParameterNotFound) {
		t.Fatalf("error %v (%T) does not wrap ErrParameterNotFound", err, err)
	}
	if !strings.Contains(err.Error(), EnvProviderAPIKeySSM) || !strings.Contains(err.Error(), "/lambent/missing") {
		t.Errorf("error %q does not name the variable and the parameter", err)
	}
	if cfg.ProviderAPIKey != "" {
		t.Errorf("ProviderAPIKey = %q after a failure", cfg.ProviderAPIKey)
	}
}

func TestResolveProviderKeyEmptyValue(t *testing.T) {
	_, srv := newFakeSSM(t, map[string]string{"/lambent/empty": " \n"})
	cfg := &Config{}
	env := envOf(map[string]string{EnvProviderAPIKeySSM: "/lambent/empty"})
	err := ResolveProviderKeyWith(context.Background(), cfg, env, ssmClient(srv))
	if !errors.Is(err, errEmptyParameter) {
		t.Fatalf("error %v, want errEmptyParameter", err)
	}
}

func TestResolveProviderKeyCanceledContext(t *testing.T) {
	_, srv := newFakeSSM(t, map[string]string{"/lambent/key": "sk"})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	cfg := &Config{}
	env := envOf(map[string]string{EnvProviderAPIKeySSM: "/lambent/key"})
	err := ResolveProviderKeyWith(ctx, cfg, env, ssmClient(srv))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want it to wrap context.Canceled", err)
	}
}
