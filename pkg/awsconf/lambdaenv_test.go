package awsconf_test

import (
	"context"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/lambent/lambent/pkg/awsconf"
	"github.com/lambent/lambent/pkg/awsjson"
)

// lambdaEnv replaces the process's AWS_* variables with env (Lambda's
// environment, plus what a function may add) and gives the SDK an empty
// home: no shared config or credentials file.
func lambdaEnv(t *testing.T, env map[string]string) {
	t.Helper()
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "AWS_") {
			t.Setenv(k, "")
			os.Unsetenv(k)
		}
	}
	t.Setenv("HOME", t.TempDir())
	for k, v := range env {
		t.Setenv(k, v)
	}
}

// errSent ends a request once its URL is recorded.
var errSent = errors.New("sent")

// recorder is an HTTP client that records the URL of each request.
type recorder struct{ urls []string }

func (r *recorder) Do(req *http.Request) (*http.Response, error) {
	r.urls = append(r.urls, req.URL.Scheme+"://"+req.URL.Host)
	return nil, errSent
}

// resolved is what a configuration resolves to: its settings, its
// credentials, and the endpoint each client of the engine functions calls.
func resolved(t *testing.T, cfg aws.Config) string {
	t.Helper()
	ctx := context.Background()
	var b strings.Builder
	fmt.Fprintf(&b, "region=%q base=%v attempts=%d mode=%q account-mode=%q\n", cfg.Region, aws.ToString(cfg.BaseEndpoint), cfg.RetryMaxAttempts, cfg.RetryMode, cfg.AccountIDEndpointMode)
	creds, err := cfg.Credentials.Retrieve(ctx)
	if err != nil {
		t.Fatalf("credentials: %v", err)
	}
	fmt.Fprintf(&b, "creds=%s/%s/%s account=%q expires=%v\n", creds.AccessKeyID, creds.SecretAccessKey, creds.SessionToken, creds.AccountID, creds.CanExpire)
	rec := &recorder{}
	cfg.HTTPClient = rec
	one := func(attempts *int) { *attempts = 1 }
	ddb := dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) { one(&o.RetryMaxAttempts) })
	fmt.Fprintf(&b, "retryer attempts=%d\n", dynamodb.NewFromConfig(cfg).Options().Retryer.MaxAttempts())
	_, _ = ddb.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("t"), Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "k"}}})
	_, _ = bedrockruntime.NewFromConfig(cfg, func(o *bedrockruntime.Options) { one(&o.RetryMaxAttempts) }).Converse(ctx, &bedrockruntime.ConverseInput{ModelId: aws.String("m")})
	_, _ = lambda.NewFromConfig(cfg, func(o *lambda.Options) { one(&o.RetryMaxAttempts) }).Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String("f")})
	_, _ = sqs.NewFromConfig(cfg, func(o *sqs.Options) { one(&o.RetryMaxAttempts) }).SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String("q"), MessageBody: aws.String("b")})
	_, _ = eventbridge.NewFromConfig(cfg, func(o *eventbridge.Options) { one(&o.RetryMaxAttempts) }).PutEvents(ctx, &eventbridge.PutEventsInput{Entries: []ebtypes.PutEventsRequestEntry{{Source: aws.String("s"), DetailType: aws.String("d"), Detail: aws.String("{}")}}})
	if len(rec.urls) != 5 {
		t.Errorf("%d of the 5 clients sent their request: %v", len(rec.urls), rec.urls)
	}
	fmt.Fprintf(&b, "endpoints=%v\n", rec.urls)
	if ssm, err := awsjson.NewSSM(cfg); err != nil {
		fmt.Fprintf(&b, "ssm error=%v\n", err)
	} else {
		fmt.Fprintf(&b, "ssm=%s\n", ssm.Endpoint())
	}
	return b.String()
}

// In every environment a Lambda function may have, FromEnvironment resolves
// what the SDK's default chain resolves: region, credentials, retries and
// each client's endpoint (partitions, FIPS, dual-stack, overrides).
func TestFromEnvironmentMatchesTheSDK(t *testing.T) {
	creds := map[string]string{"AWS_ACCESS_KEY_ID": "AKIDLAMBDA", "AWS_SECRET_ACCESS_KEY": "secret", "AWS_SESSION_TOKEN": "token"}
	with := func(extra map[string]string) map[string]string {
		m := map[string]string{"AWS_REGION": "eu-west-1"}
		for k, v := range creds {
			m[k] = v
		}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "container-token" {
			http.Error(w, "no token", http.StatusForbidden)
			return
		}
		fmt.Fprint(w, `{"AccessKeyId":"AKIDCONTAINER","SecretAccessKey":"csecret","Token":"ctoken","Expiration":"2100-01-01T00:00:00Z","AccountId":"123456789012"}`)
	}))
	defer srv.Close()
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("container-token"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, env := range map[string]map[string]string{
		"lambda":                {"AWS_REGION": "eu-west-1", "AWS_DEFAULT_REGION": "eu-west-1", "AWS_ACCESS_KEY_ID": "AKIDLAMBDA", "AWS_SECRET_ACCESS_KEY": "secret", "AWS_SESSION_TOKEN": "token"},
		"default region":        {"AWS_DEFAULT_REGION": "ap-south-1", "AWS_ACCESS_KEY": "AKIDOLD", "AWS_SECRET_KEY": "old", "AWS_ACCOUNT_ID": "123456789012"},
		"fips us-gov":           with(map[string]string{"AWS_REGION": "us-gov-west-1", "AWS_USE_FIPS_ENDPOINT": "true"}),
		"fips dual-stack":       with(map[string]string{"AWS_REGION": "us-east-2", "AWS_USE_FIPS_ENDPOINT": "TRUE", "AWS_USE_DUALSTACK_ENDPOINT": "true"}),
		"china dual-stack":      with(map[string]string{"AWS_REGION": "cn-north-1", "AWS_USE_DUALSTACK_ENDPOINT": "true", "AWS_USE_FIPS_ENDPOINT": "false"}),
		"endpoint overrides":    with(map[string]string{"AWS_ENDPOINT_URL": "http://127.0.0.1:4566", "AWS_ENDPOINT_URL_DYNAMODB": "http://127.0.0.1:8000", "AWS_ENDPOINT_URL_BEDROCK_RUNTIME": "http://127.0.0.1:9000", "AWS_ENDPOINT_URL_SSM": "http://127.0.0.1:9100"}),
		"service override only": with(map[string]string{"AWS_ENDPOINT_URL_LAMBDA": "http://127.0.0.1:3001"}),
		"ignored overrides":     with(map[string]string{"AWS_IGNORE_CONFIGURED_ENDPOINT_URLS": "true", "AWS_ENDPOINT_URL": "http://127.0.0.1:4566", "AWS_ENDPOINT_URL_DYNAMODB": "http://127.0.0.1:8000"}),
		"retries":               with(map[string]string{"AWS_RETRY_MODE": "adaptive", "AWS_MAX_ATTEMPTS": "7"}),
		"account id endpoints":  with(map[string]string{"AWS_ACCOUNT_ID": "123456789012", "AWS_ACCOUNT_ID_ENDPOINT_MODE": "disabled"}),
		"account id preferred":  with(map[string]string{"AWS_ACCOUNT_ID": "123456789012"}),
		"snapstart container":   {"AWS_REGION": "eu-west-1", "AWS_CONTAINER_CREDENTIALS_FULL_URI": srv.URL + "/creds", "AWS_CONTAINER_AUTHORIZATION_TOKEN": "container-token"},
		"container token file":  {"AWS_REGION": "eu-west-1", "AWS_CONTAINER_CREDENTIALS_FULL_URI": srv.URL + "/creds", "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE": tokenFile},
	} {
		t.Run(name, func(t *testing.T) {
			lambdaEnv(t, env)
			sdk, err := config.LoadDefaultConfig(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			ours, err := awsconf.FromEnvironment(os.Getenv)
			if err != nil {
				t.Fatal(err)
			}
			want, got := resolved(t, sdk), resolved(t, ours)
			if got != want {
				t.Errorf("FromEnvironment resolves\n%s\nthe SDK\n%s", got, want)
			}
		})
	}
}

// What FromEnvironment cannot honour is an error that says why.
func TestFromEnvironmentRefuses(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct {
		env  map[string]string
		want string
	}{
		"no credentials":         {map[string]string{"AWS_REGION": "eu-west-1"}, "no credentials in the environment"},
		"a profile":              {map[string]string{"AWS_REGION": "eu-west-1", "AWS_PROFILE": "dev"}, "AWS_PROFILE is set"},
		"web identity":           {map[string]string{"AWS_WEB_IDENTITY_TOKEN_FILE": "/t", "AWS_ROLE_ARN": "arn"}, "AWS_WEB_IDENTITY_TOKEN_FILE is set"},
		"container over http":    {map[string]string{"AWS_CONTAINER_CREDENTIALS_FULL_URI": "http://203.0.113.7/creds"}, "only loopback"},
		"container scheme":       {map[string]string{"AWS_CONTAINER_CREDENTIALS_FULL_URI": "ftp://127.0.0.1/creds"}, "want https or http"},
		"bad fips":               {map[string]string{"AWS_USE_FIPS_ENDPOINT": "yes"}, "AWS_USE_FIPS_ENDPOINT=yes"},
		"bad attempts":           {map[string]string{"AWS_MAX_ATTEMPTS": "many"}, "AWS_MAX_ATTEMPTS=many"},
		"bad retry mode":         {map[string]string{"AWS_RETRY_MODE": "eager"}, "AWS_RETRY_MODE"},
		"bad account id mode":    {map[string]string{"AWS_ACCOUNT_ID_ENDPOINT_MODE": "always"}, "AWS_ACCOUNT_ID_ENDPOINT_MODE=always"},
		"missing CA bundle file": {map[string]string{"AWS_ACCESS_KEY_ID": "a", "AWS_SECRET_ACCESS_KEY": "b", "AWS_CA_BUNDLE": "/nonexistent/ca.pem"}, "AWS_CA_BUNDLE"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := awsconf.FromEnvironment(func(k string) string { return c.env[k] })
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one saying %q", err, c.want)
			}
		})
	}
}

// AWS_CA_BUNDLE: the SDK's HTTP client trusts the bundle's certificates
// (and only them, as the SDK's does): a TLS endpoint signed by it is
// reached.
func TestFromEnvironmentCABundle(t *testing.T) {
	t.Parallel()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "ok") }))
	defer srv.Close()
	bundle := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(bundle, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"AWS_ACCESS_KEY_ID": "a", "AWS_SECRET_ACCESS_KEY": "b", "AWS_REGION": "eu-west-1", "AWS_CA_BUNDLE": bundle}
	cfg, err := awsconf.FromEnvironment(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
	resp, err := cfg.HTTPClient.Do(req)
	if err != nil {
		t.Fatalf("the bundle's certificate is not trusted: %v", err)
	}
	resp.Body.Close()
}
