package awsconf

import (
	"context"
	"testing"
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
