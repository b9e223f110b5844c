package awsconf

import (
	"context"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
)

func TestEndpoint(t *testing.T) {
	t.Setenv("AWS_ENDPOINT_URL", "")
	t.Setenv("AWS_ENDPOINT_URL_DYNAMODB", "")
	if ep := Endpoint("dynamodb"); ep != nil {
		t.Fatalf("no override: got %q", *ep)
	}
	t.Setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:4566")
	if ep := Endpoint("dynamodb"); ep == nil || *ep != "http://127.0.0.1:4566" {
		t.Fatalf("global override not used: %v", ep)
	}
	t.Setenv("AWS_ENDPOINT_URL_DYNAMODB", "http://127.0.0.1:8000")
	if ep := Endpoint("dynamodb"); ep == nil || *ep != "http://127.0.0.1:8000" {
		t.Fatalf("service override does not win: %v", ep)
	}
}

func TestLoadFromEnvironment(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDTEST")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	t.Setenv("AWS_SESSION_TOKEN", "token")
	t.Setenv("AWS_REGION", "eu-west-1")
	t.Setenv("AWS_CONFIG_FILE", t.TempDir()+"/none")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", t.TempDir()+"/none")
	cfg, err := Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Region != "eu-west-1" {
		t.Errorf("region %q", cfg.Region)
	}
	creds, err := cfg.Credentials.Retrieve(context.Background())
	if err != nil || creds.AccessKeyID != "AKIDTEST" || creds.SessionToken != "token" {
		t.Errorf("credentials %+v, %v", creds, err)
	}
}

// recorder records whether the bodies it is given have WriteTo.
type recorder struct{ writerTo []bool }

func (r *recorder) Do(req *http.Request) (*http.Response, error) {
	_, ok := req.Body.(io.WriterTo)
	r.writerTo = append(r.writerTo, ok)
	return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody}, nil
}

// Every AWS client of Load's and FromEnvironment's configuration hands
// net/http its request bodies without WriteTo (ReadOnlyBodies: with it, a
// fast answer makes net/http close the connection under the response), and
// wrapping twice changes nothing.
func TestReadOnlyBodies(t *testing.T) {
	rec := &recorder{}
	hc := ReadOnlyBodies(ReadOnlyBodies(rec))
	for _, body := range []io.ReadCloser{io.NopCloser(strings.NewReader("x")), struct{ io.ReadCloser }{io.NopCloser(nil)}} {
		req, err := http.NewRequest(http.MethodPost, "http://127.0.0.1:9/", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Body = body
		if _, err := hc.Do(req); err != nil {
			t.Fatal(err)
		}
	}
	if len(rec.writerTo) != 2 || rec.writerTo[0] || rec.writerTo[1] {
		t.Errorf("bodies with WriteTo: %v, want [false false]", rec.writerTo)
	}

	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDTEST")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	t.Setenv("AWS_REGION", "eu-west-1")
	t.Setenv("AWS_CONFIG_FILE", t.TempDir()+"/none")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", t.TempDir()+"/none")
	loaded, err := Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	fromEnv, err := FromEnvironment(os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	for name, cfg := range map[string]aws.Config{"Load": loaded, "FromEnvironment": fromEnv} {
		if _, ok := cfg.HTTPClient.(readOnlyBodies); !ok {
			t.Errorf("%s: HTTP client %T, want ReadOnlyBodies'", name, cfg.HTTPClient)
		}
	}
}

func TestLoopbackHost(t *testing.T) {
	for host, want := range map[string]bool{"localhost": true, "127.0.0.1": true, "127.1.2.3": true, "::1": true,
		"": false, "example.com": false, "10.0.0.1": false, "169.254.170.2": false, "localhost.example.com": false} {
		if got := LoopbackHost(host); got != want {
			t.Errorf("LoopbackHost(%q) = %v, want %v", host, got, want)
		}
	}
}
