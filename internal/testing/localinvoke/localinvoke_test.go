package localinvoke_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"
	"go.uber.org/goleak"

	"github.com/lambent/lambent/internal/testing/localinvoke"
	"github.com/lambent/lambent/pkg/awsjson"
	"github.com/lambent/lambent/pkg/tools"
	"github.com/lambent/lambent/pkg/tools/calculator"
	"github.com/lambent/lambent/pkg/tools/lambdaexec"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func serve(t *testing.T, s *localinvoke.Server) string {
	t.Helper()
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	return ts.URL
}

type answer struct {
	status int
	header http.Header
	body   string
}

func post(t *testing.T, url, body string, header ...string) answer {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return answer{resp.StatusCode, resp.Header, string(b)}
}

func invocations(base, fn string) string {
	return base + "/2015-03-31/functions/" + fn + "/invocations"
}

const calcEvent = `{"call_id":"call_1","name":"calculator","arguments":"{\"expression\":\"2+3\"}","response_id":"resp_1"}`

func TestInvokeHostedTool(t *testing.T) {
	base := serve(t, localinvoke.New(map[string]tools.Hosted{"calc": calculator.Tool()}))
	for _, fn := range []string{"calc", "calc:live", "123456789012:function:calc", "arn:aws:lambda:us-east-1:123456789012:function:calc", "arn:aws:lambda:us-east-1:123456789012:function:calc:3"} {
		a := post(t, invocations(base, fn), calcEvent)
		if a.status != 200 || a.body != `{"output":"5","is_error":false}` {
			t.Fatalf("%s: %d %s", fn, a.status, a.body)
		}
		if a.header.Get("X-Amz-Function-Error") != "" || a.header.Get("X-Amzn-Requestid") == "" {
			t.Fatalf("%s: headers %v", fn, a.header)
		}
		want := "$LATEST"
		if strings.HasSuffix(fn, ":3") {
			want = "3"
		}
		if v := a.header.Get("X-Amz-Executed-Version"); v != want {
			t.Fatalf("%s: X-Amz-Executed-Version = %q, want %q", fn, v, want)
		}
	}
	if a := post(t, invocations(base, "calc")+"?Qualifier=12", calcEvent); a.header.Get("X-Amz-Executed-Version") != "12" {
		t.Fatalf("?Qualifier: version %q", a.header.Get("X-Amz-Executed-Version"))
	}
	// A malformed tool request is the tool's is_error reply.
	if a := post(t, invocations(base, "calc"), `{"arguments":{"expression":"1"}}`); a.status != 200 || !strings.Contains(a.body, `"is_error":true`) {
		t.Fatalf("malformed request: %d %s", a.status, a.body)
	}
	if a := post(t, invocations(base, "calc"), calcEvent, "X-Amz-Invocation-Type", "DryRun"); a.status != http.StatusNoContent {
		t.Fatalf("DryRun: %d", a.status)
	}
	if a := post(t, invocations(base, "calc"), calcEvent, "X-Amz-Invocation-Type", "Event"); a.status != http.StatusAccepted || a.body != "" {
		t.Fatalf("Event: %d %q", a.status, a.body)
	}
}

func TestInvokeErrors(t *testing.T) {
	big := []byte(`"` + strings.Repeat("x", lambdaexec.MaxPayloadBytes) + `"`)
	base := serve(t, localinvoke.New(map[string]tools.Hosted{"calc": calculator.Tool()},
		localinvoke.WithFunction("big", func(context.Context, []byte) ([]byte, error) {
			return big, nil
		}),
		localinvoke.WithFunction("fails", func(context.Context, []byte) ([]byte, error) { return nil, errors.New("boom") }),
		localinvoke.WithFunction("panics", func(context.Context, []byte) ([]byte, error) { panic("oh no") }),
		localinvoke.WithFunction("slow", func(ctx context.Context, _ []byte) ([]byte, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		}),
		localinvoke.WithFunctionTimeout(time.Second),
	))
	awsErr := func(name string, a answer, status int, code string) {
		t.Helper()
		if a.status != status || a.header.Get("X-Amzn-ErrorType") != code {
			t.Fatalf("%s: %d %s %s, want %d %s", name, a.status, a.header.Get("X-Amzn-ErrorType"), a.body, status, code)
		}
		var body map[string]string
		if err := json.Unmarshal([]byte(a.body), &body); err != nil || body["message"] == "" || body["Type"] == "" {
			t.Fatalf("%s: body %s is not an AWS JSON error", name, a.body)
		}
	}
	awsErr("unknown", post(t, invocations(base, "nope"), calcEvent), 404, "ResourceNotFoundException")
	awsErr("invalid json", post(t, invocations(base, "calc"), `{"call_id":`), 400, "InvalidRequestContentException")
	awsErr("too large", post(t, invocations(base, "calc"), `"`+strings.Repeat("x", lambdaexec.MaxPayloadBytes)+`"`), 413, "RequestTooLargeException")
	awsErr("unknown operation", post(t, base+"/2015-03-31/functions", ""), 404, "UnknownOperationException")

	fnErr := func(fn, errorType, msg string) {
		t.Helper()
		a := post(t, invocations(base, fn), calcEvent)
		var body map[string]string
		_ = json.Unmarshal([]byte(a.body), &body)
		if a.status != 200 || a.header.Get("X-Amz-Function-Error") != "Unhandled" || body["errorType"] != errorType || !strings.Contains(body["errorMessage"], msg) {
			t.Fatalf("%s: %d %v %s, want Unhandled %s %q", fn, a.status, a.header.Get("X-Amz-Function-Error"), a.body, errorType, msg)
		}
	}
	fnErr("fails", "errorString", "boom")
	fnErr("panics", "string", "oh no")
	fnErr("slow", "Sandbox.Timedout", "Task timed out after")
	fnErr("big", "Function.ResponseSizeTooLarge", "Response payload size exceeded")
}

func TestInjectedFaults(t *testing.T) {
	s := localinvoke.New(map[string]tools.Hosted{"calc": calculator.Tool()}, localinvoke.WithThrottle(2))
	base := serve(t, s)
	for i := range 2 {
		a := post(t, invocations(base, "calc"), calcEvent)
		if a.status != 429 || a.header.Get("X-Amzn-ErrorType") != "TooManyRequestsException" {
			t.Fatalf("request %d: %d %s, want a throttle", i, a.status, a.body)
		}
	}
	if a := post(t, invocations(base, "calc"), calcEvent); a.status != 200 {
		t.Fatalf("after the throttles: %d %s", a.status, a.body)
	}
	if st := s.Stats(); st != (localinvoke.Stats{Requests: 3, Throttled: 2, Invocations: 1}) {
		t.Fatalf("stats = %+v", st)
	}

	release := make(chan struct{})
	held := localinvoke.New(map[string]tools.Hosted{"calc": calculator.Tool()}, localinvoke.WithHold(release))
	hbase := serve(t, held)
	done := make(chan answer, 1)
	go func() { done <- post(t, invocations(hbase, "calc"), calcEvent) }()
	for held.Stats().Requests == 0 {
		time.Sleep(time.Millisecond)
	}
	select {
	case a := <-done:
		t.Fatalf("a held invocation answered: %+v", a)
	case <-time.After(20 * time.Millisecond):
	}
	close(release)
	if a := <-done; a.status != 200 || !strings.Contains(a.body, `"output":"5"`) {
		t.Fatalf("released invocation: %+v", a)
	}
}

// TestSDKErrorShapes checks that the real SDK client decodes the endpoint's
// answers as it decodes the Lambda service's.
func TestSDKErrorShapes(t *testing.T) {
	s := localinvoke.New(map[string]tools.Hosted{"calc": calculator.Tool()}, localinvoke.WithThrottle(1))
	client := lambda.New(lambda.Options{
		BaseEndpoint: aws.String(serve(t, s)),
		Region:       "us-east-1",
		Credentials:  credentials.NewStaticCredentialsProvider("AKID", "secret", ""),
		Retryer:      aws.NopRetryer{},
	})
	ctx := context.Background()
	in := func(fn string) *lambda.InvokeInput {
		return &lambda.InvokeInput{FunctionName: aws.String(fn), Payload: []byte(calcEvent)}
	}
	_, err := client.Invoke(ctx, in("calc"))
	var tm *types.TooManyRequestsException
	if !errors.As(err, &tm) || tm.ErrorMessage() != "Rate Exceeded." {
		t.Fatalf("throttle: %v, want *types.TooManyRequestsException", err)
	}
	_, err = client.Invoke(ctx, in("missing"))
	var nf *types.ResourceNotFoundException
	if !errors.As(err, &nf) || !strings.Contains(nf.ErrorMessage(), "function:missing") {
		t.Fatalf("unknown function: %v, want *types.ResourceNotFoundException", err)
	}
	out, err := client.Invoke(ctx, in("arn:aws:lambda:us-east-1:123456789012:function:calc:5"))
	if err != nil {
		t.Fatal(err)
	}
	if out.StatusCode != 200 || out.FunctionError != nil || aws.ToString(out.ExecutedVersion) != "5" || string(out.Payload) != `{"output":"5","is_error":false}` {
		t.Fatalf("invoke: %+v %s", out, out.Payload)
	}
}

func TestParseFunctionName(t *testing.T) {
	for in, want := range map[string][2]string{
		"f":                                     {"f", ""},
		"f:live":                                {"f", "live"},
		"1:function:f":                          {"f", ""},
		"1:function:f:2":                        {"f", "2"},
		"arn:aws:lambda:us-east-1:1:function:f": {"f", ""},
		"arn:aws-cn:lambda:cn-north-1:1:function:f:$LATEST": {"f", "$LATEST"},
	} {
		if n, q := localinvoke.ParseFunctionName(in); n != want[0] || q != want[1] {
			t.Errorf("ParseFunctionName(%q) = %q, %q; want %q, %q", in, n, q, want[0], want[1])
		}
	}
}

// The executor's Lambda client (pkg/awsjson) reads the endpoint's answers
// as the SDK's client does: the same error codes and messages, status,
// function error, executed version and payload, for each kind of answer.
func TestAWSJSONReadsWhatTheSDKReads(t *testing.T) {
	ctx := context.Background()
	newServer := func() string {
		return serve(t, localinvoke.New(map[string]tools.Hosted{"calc": calculator.Tool()}, localinvoke.WithThrottle(1)))
	}
	cfg := func(url string) aws.Config {
		return aws.Config{BaseEndpoint: aws.String(url), Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("AKID", "secret", ""),
			Retryer: func() aws.Retryer { return aws.NopRetryer{} }}
	}
	sdk := lambda.NewFromConfig(cfg(newServer()))
	ours, err := awsjson.NewLambda(cfg(newServer()))
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		Code, Message, FunctionError, Version, Payload string
		Status                                         int
	}
	calls := []struct{ fn, qualifier, typ, payload string }{
		{"calc", "", "", calcEvent}, // throttled (the first invocation)
		{"missing", "", "", calcEvent},
		{"arn:aws:lambda:us-east-1:123456789012:function:calc:5", "", "", calcEvent},
		{"calc", "7", "RequestResponse", calcEvent},
		{"calc", "", "RequestResponse", `{"call_id":"c1","name":"calculator","arguments":"{"}`},
		{"calc", "", "Event", calcEvent},
		{"calc", "", "RequestResponse", `not json`},
	}
	for _, c := range calls {
		var want, got result
		in := &lambda.InvokeInput{FunctionName: aws.String(c.fn), InvocationType: types.InvocationType(c.typ), Payload: []byte(c.payload)}
		if c.qualifier != "" {
			in.Qualifier = aws.String(c.qualifier)
		}
		out, err := sdk.Invoke(ctx, in)
		var api interface {
			ErrorCode() string
			ErrorMessage() string
		}
		if errors.As(err, &api) {
			want.Code, want.Message = api.ErrorCode(), api.ErrorMessage()
		} else if err != nil {
			t.Fatalf("%+v: SDK: %v", c, err)
		} else {
			want = result{FunctionError: aws.ToString(out.FunctionError), Version: aws.ToString(out.ExecutedVersion), Payload: string(out.Payload), Status: int(out.StatusCode)}
		}
		o, err := ours.Invoke(ctx, awsjson.InvokeInput{FunctionName: c.fn, Qualifier: c.qualifier, InvocationType: c.typ, Payload: []byte(c.payload)})
		var ae *awsjson.Error
		if errors.As(err, &ae) {
			got.Code, got.Message = ae.Code, ae.Message
		} else if err != nil {
			t.Fatalf("%+v: awsjson: %v", c, err)
		} else {
			got = result{FunctionError: o.FunctionError, Version: o.ExecutedVersion, Payload: string(o.Payload), Status: o.StatusCode}
		}
		if got != want {
			t.Errorf("%+v:\nawsjson %+v\nSDK     %+v", c, got, want)
		}
	}
}
