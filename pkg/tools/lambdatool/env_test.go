package lambdatool_test

import (
	"context"
	"net/http/httptest"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"go.uber.org/goleak"

	"github.com/lambent/lambent/pkg/tools"
	"github.com/lambent/lambent/pkg/tools/calculator"
	"github.com/lambent/lambent/pkg/tools/lambdatool"
	"github.com/lambent/lambent/pkg/tools/lambdatool/localinvoke"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// endpoint is a local Lambda Invoke endpoint on loopback and a real SDK
// Lambda client pointed at it.
type endpoint struct {
	srv    *localinvoke.Server
	url    string
	client *lambda.Client
}

// newEndpoint serves hosted on a local Invoke endpoint and returns the real
// aws-sdk-go-v2 Lambda client for it: BaseEndpoint = the server, static
// credentials, us-east-1, the executor's HTTP client and no SDK retries
// (as NewClient configures it), so the executor's own retries are tested.
func newEndpoint(t testing.TB, hosted map[string]tools.Hosted, opts ...localinvoke.Option) *endpoint {
	t.Helper()
	srv := localinvoke.New(hosted, opts...)
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	client := lambda.New(lambda.Options{
		BaseEndpoint: aws.String(ts.URL),
		Region:       "us-east-1",
		Credentials:  credentials.NewStaticCredentialsProvider("AKIDLOCAL", "secret", ""),
		Retryer:      aws.NopRetryer{},
		HTTPClient:   lambdatool.NewHTTPClient(),
	})
	return &endpoint{srv: srv, url: ts.URL, client: client}
}

// executor returns an Executor over e's client for manifest, with the
// built-in calculator as fallback definition.
func (e *endpoint) executor(t testing.TB, cfg lambdatool.Config, manifest *tools.Manifest) *lambdatool.Executor {
	t.Helper()
	calc := calculator.Tool()
	ex, err := lambdatool.New(e.client, cfg, manifest.Tools, map[string]tools.Definition{calc.Definition.Name: calc.Definition})
	if err != nil {
		t.Fatal(err)
	}
	return ex
}

// execute runs one call with a background context.
func execute(t testing.TB, ex *lambdatool.Executor, name, args string) *tools.ToolResult {
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
	return tools.Hosted{Definition: tools.Definition{Name: name, Description: "test tool " + name, Kind: tools.KindHosted}, Handler: h}
}

// manifestOf maps each tool to a lambda function and gives it a description.
func manifestOf(functions map[string]string) *tools.Manifest {
	m := lambdatool.ManifestFor(functions)
	for i := range m.Tools {
		if m.Tools[i].Name != calculator.Name {
			m.Tools[i].Description = "test tool " + m.Tools[i].Name
		}
	}
	return m
}
