package main

import (
	"context"
	"net/http/httptest"
	"os"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"go.uber.org/goleak"

	"github.com/lambent/lambent/internal/testing/localinvoke"
	"github.com/lambent/lambent/pkg/tools"
	"github.com/lambent/lambent/pkg/tools/calculator"
	"github.com/lambent/lambent/pkg/tools/lambdaexec"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// TestSampleEvent invokes the function with events/tool-calculator.json (the
// sample for `sam local invoke -e`) through the local Invoke endpoint and
// the real SDK client, as the gateway does.
func TestSampleEvent(t *testing.T) {
	event, err := os.ReadFile("../../../events/tool-calculator.json")
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(localinvoke.New(map[string]tools.Hosted{"CalculatorToolFunction": calculator.Tool()}))
	defer ts.Close()
	hc := lambdaexec.NewHTTPClient()
	defer hc.CloseIdleConnections()
	client := lambda.New(lambda.Options{
		BaseEndpoint: aws.String(ts.URL),
		Region:       "us-east-1",
		Credentials:  credentials.NewStaticCredentialsProvider("AKID", "secret", ""),
		HTTPClient:   hc,
	})
	out, err := client.Invoke(context.Background(), &lambda.InvokeInput{FunctionName: aws.String("CalculatorToolFunction"), Payload: event})
	if err != nil {
		t.Fatal(err)
	}
	if out.FunctionError != nil || string(out.Payload) != `{"output":"16","is_error":false}` {
		t.Fatalf("reply = %s (function error %v), want output 16", out.Payload, aws.ToString(out.FunctionError))
	}
}
