package lambdaexec_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"go.uber.org/goleak"

	"github.com/lambent/lambent/internal/testing/localinvoke"
	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/awsjson"
	"github.com/lambent/lambent/pkg/tools"
	"github.com/lambent/lambent/pkg/tools/calculator"
	"github.com/lambent/lambent/pkg/tools/lambdaexec"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// endpoint is a local Lambda Invoke endpoint on loopback and a real SDK
// Lambda client pointed at it.
type endpoint struct {
	srv    *localinvoke.Server
	url    string
	client *awsjson.Lambda
}

// newEndpoint serves hosted on a local Invoke endpoint and returns the
// executor's Lambda client for it: BaseEndpoint = the server, static
// credentials, us-east-1, the executor's HTTP client and no client retries
// (as NewClient configures it), so the executor's own retries are tested.
// (internal/testing/localinvoke's tests hold the endpoint to the SDK's
// client too.)
func newEndpoint(t testing.TB, hosted map[string]tools.Hosted, opts ...localinvoke.Option) *endpoint {
	t.Helper()
	srv := localinvoke.New(hosted, opts...)
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	return &endpoint{srv: srv, url: ts.URL, client: lambdaClient(t, ts.URL)}
}

// lambdaClient returns a Lambda client of url configured as NewClient's.
func lambdaClient(t testing.TB, url string) *awsjson.Lambda {
	t.Helper()
	client, err := awsjson.NewLambda(aws.Config{
		BaseEndpoint: aws.String(url),
		Region:       "us-east-1",
		Credentials:  credentials.NewStaticCredentialsProvider("AKIDLOCAL", "secret", ""),
		Retryer:      func() aws.Retryer { return aws.NopRetryer{} },
		HTTPClient:   lambdaexec.NewHTTPClient(),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.CloseIdleConnections)
	return client
}

// executor returns an Executor over e's client for manifest, with the
// built-in calculator as fallback definition.
func (e *endpoint) executor(t testing.TB, cfg lambdaexec.Config, manifest *tools.Manifest) *lambdaexec.Executor {
	t.Helper()
	calc := calculator.Tool()
	ex, err := lambdaexec.New(e.client, cfg, manifest.Tools, map[string]api.ToolDefinition{calc.Definition.Name: calc.Definition})
	if err != nil {
		t.Fatal(err)
	}
	return ex
}

// execute runs one call with a background context.
func execute(t testing.TB, ex *lambdaexec.Executor, name, args string) *tools.ToolResult {
	t.Helper()
	res, err := ex.Execute(context.Background(), tools.ToolCall{ID: "call_1", Name: name, Arguments: args, ResponseID: "resp_1"})
	if err != nil {
		t.Fatalf("Execute returned an error: %v", err)
	}
	if res == nil {
		t.Fatal("Execute returned no result")
	}
	if res.CallID != "call_1" {
		t.Errorf("CallID = %q, want call_1", res.CallID)
	}
	return res
}

// hosted returns a hosted tool named name with handler h and a definition.
func hosted(name string, h tools.Handler) tools.Hosted {
	return tools.Hosted{Definition: api.ToolDefinition{Name: name, Description: "test tool " + name}, Handler: h}
}

// manifestOf maps each tool to a lambda function and gives it a description.
func manifestOf(functions map[string]string) *tools.Manifest {
	m := lambdaexec.ManifestFor(functions)
	for i := range m.Tools {
		if m.Tools[i].Name != calculator.Name {
			m.Tools[i].Description = "test tool " + m.Tools[i].Name
		}
	}
	return m
}

// TestNewClient checks the client `make run` builds from the environment:
// AWS_ENDPOINT_URL_LAMBDA (honoured by the SDK itself) pointing at a local
// endpoint, no credentials and no region configured.
func TestNewClient(t *testing.T) {
	ts := httptest.NewServer(localinvoke.New(map[string]tools.Hosted{"CalculatorToolFunction": calculator.Tool()}))
	defer ts.Close()
	for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE", "AWS_ENDPOINT_URL"} {
		t.Setenv(k, "")
	}
	t.Setenv("AWS_CONFIG_FILE", t.TempDir()+"/none")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", t.TempDir()+"/none")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_ENDPOINT_URL_LAMBDA", ts.URL)
	client, err := lambdaexec.NewClient(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if client.Endpoint() != ts.URL {
		t.Errorf("endpoint = %q, want %s", client.Endpoint(), ts.URL)
	}
	ex, err := lambdaexec.New(client, lambdaexec.Config{}, lambdaexec.LocalManifest("calculator").Tools, map[string]api.ToolDefinition{"calculator": calculator.Tool().Definition})
	if err != nil {
		t.Fatal(err)
	}
	if res := execute(t, ex, "calculator", `{"expression":"40+2"}`); res.IsError || res.Output != "42" {
		t.Fatalf("result = %+v", res)
	}
	client.CloseIdleConnections()

	// No client retries: a 503 is one request, the executor's answer an
	// error result (it retries throttles itself, nothing else).
	var requests atomic.Int32
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		requests.Add(1)
		w.Header().Set("X-Amzn-ErrorType", "ServiceException")
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer failing.Close()
	t.Setenv("AWS_ENDPOINT_URL_LAMBDA", failing.URL)
	client, err = lambdaexec.NewClient(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer client.CloseIdleConnections()
	ex, err = lambdaexec.New(client, lambdaexec.Config{}, lambdaexec.LocalManifest("calculator").Tools, map[string]api.ToolDefinition{"calculator": calculator.Tool().Definition})
	if err != nil {
		t.Fatal(err)
	}
	if res := execute(t, ex, "calculator", `{"expression":"1"}`); !res.IsError || !strings.Contains(res.Output, "ServiceException") {
		t.Fatalf("result = %+v, want the ServiceException", res)
	}
	if n := requests.Load(); n != 1 {
		t.Errorf("%d requests, want 1 (no client retries)", n)
	}
}
