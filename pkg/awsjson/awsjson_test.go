package awsjson

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/aws/smithy-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/internal/testing/fakessm"
)

// The endpoint rules, as the SDK's generated resolvers of the services give
// them (service/ssm, secretsmanager, sqs and eventbridge endpoints.go: test
// dependencies only), for a region of every partition.
func TestEndpointsMatchTheSDK(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, region := range []string{"us-east-1", "eu-west-3", "ap-southeast-7", "mx-central-1", "cn-north-1", "cn-northwest-1",
		"us-gov-west-1", "us-gov-east-1", "us-iso-east-1", "us-isob-east-1", "us-isof-south-1", "eu-isoe-west-1", "eusc-de-east-1"} {
		for _, fips := range []bool{false, true} {
			for _, dual := range []bool{false, true} {
				name := fmt.Sprintf("%s fips=%v dualstack=%v", region, fips, dual)
				want, err := ssm.NewDefaultEndpointResolverV2().ResolveEndpoint(ctx, ssm.EndpointParameters{Region: &region, UseFIPS: &fips, UseDualStack: &dual})
				require.NoError(t, err, name)
				assert.Equal(t, want.URI.String(), ssmService.endpoint(region, partitionOf(region), fips, dual), "ssm "+name)
				wantSM, err := secretsmanager.NewDefaultEndpointResolverV2().ResolveEndpoint(ctx, secretsmanager.EndpointParameters{Region: &region, UseFIPS: &fips, UseDualStack: &dual})
				require.NoError(t, err, name)
				assert.Equal(t, wantSM.URI.String(), secretsManagerEndpoint(region, partitionOf(region), fips, dual), "secretsmanager "+name)
				wantSQS, err := sqs.NewDefaultEndpointResolverV2().ResolveEndpoint(ctx, sqs.EndpointParameters{Region: &region, UseFIPS: &fips, UseDualStack: &dual})
				require.NoError(t, err, name)
				assert.Equal(t, wantSQS.URI.String(), sqsService.endpoint(region, partitionOf(region), fips, dual), "sqs "+name)
				wantEB, err := eventbridge.NewDefaultEndpointResolverV2().ResolveEndpoint(ctx, eventbridge.EndpointParameters{Region: &region, UseFIPS: &fips, UseDualStack: &dual})
				require.NoError(t, err, name)
				assert.Equal(t, wantEB.URI.String(), ebService.endpoint(region, partitionOf(region), fips, dual), "eventbridge "+name)
			}
		}
	}
}

// The table docs/aws.md promises, spelled out.
func TestEndpointTable(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		region     string
		fips, dual bool
		ssm, sm    string
	}{
		{"us-east-1", false, false, "https://ssm.us-east-1.amazonaws.com", "https://secretsmanager.us-east-1.amazonaws.com"},
		{"us-east-1", false, true, "https://ssm.us-east-1.api.aws", "https://secretsmanager.us-east-1.amazonaws.com"},
		{"us-east-1", true, false, "https://ssm-fips.us-east-1.amazonaws.com", "https://secretsmanager-fips.us-east-1.amazonaws.com"},
		{"us-east-1", true, true, "https://ssm-fips.us-east-1.api.aws", "https://secretsmanager-fips.us-east-1.amazonaws.com"},
		{"cn-north-1", false, false, "https://ssm.cn-north-1.amazonaws.com.cn", "https://secretsmanager.cn-north-1.amazonaws.com.cn"},
		{"cn-north-1", false, true, "https://ssm.cn-north-1.api.amazonwebservices.com.cn", "https://secretsmanager.cn-north-1.amazonaws.com.cn"},
		{"cn-north-1", true, true, "https://ssm-fips.cn-north-1.api.amazonwebservices.com.cn", "https://secretsmanager-fips.cn-north-1.api.amazonwebservices.com.cn"},
		{"us-gov-west-1", false, false, "https://ssm.us-gov-west-1.amazonaws.com", "https://secretsmanager.us-gov-west-1.amazonaws.com"},
		{"us-gov-west-1", true, false, "https://ssm.us-gov-west-1.amazonaws.com", "https://secretsmanager-fips.us-gov-west-1.amazonaws.com"},
		{"us-gov-west-1", true, true, "https://ssm-fips.us-gov-west-1.api.aws", "https://secretsmanager-fips.us-gov-west-1.amazonaws.com"},
	} {
		p := partitionOf(c.region)
		assert.Equal(t, c.ssm, ssmService.endpoint(c.region, p, c.fips, c.dual), c)
		assert.Equal(t, c.sm, secretsManagerEndpoint(c.region, p, c.fips, c.dual), c)
	}
}

// isolate clears the AWS environment of the test process and points the
// shared files at dir.
func isolate(t *testing.T, dir string) {
	for _, k := range []string{"AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_SSM", "AWS_ENDPOINT_URL_SECRETS_MANAGER",
		"AWS_USE_FIPS_ENDPOINT", "AWS_USE_DUALSTACK_ENDPOINT", "AWS_SESSION_TOKEN", "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS"} {
		t.Setenv(k, "")
	}
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "config"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "credentials"))
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDTEST")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
}

// FIPS and dual-stack come from the SDK's loaded configuration: the
// environment before the shared config file; overrides win over both.
func TestEndpointFromLoadedConfig(t *testing.T) {
	dir := t.TempDir()
	isolate(t, dir)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "config"), []byte("[default]\nregion = cn-north-1\nuse_dualstack_endpoint = true\nuse_fips_endpoint = false\n"), 0o600))
	ctx := context.Background()
	endpoints := func() (string, string) {
		t.Helper()
		cfg, err := config.LoadDefaultConfig(ctx)
		require.NoError(t, err)
		s, err := NewSSM(cfg)
		require.NoError(t, err)
		sm, err := NewSecretsManager(cfg)
		require.NoError(t, err)
		return s.Endpoint(), sm.Endpoint()
	}
	s, sm := endpoints()
	assert.Equal(t, "https://ssm.cn-north-1.api.amazonwebservices.com.cn", s)
	assert.Equal(t, "https://secretsmanager.cn-north-1.amazonaws.com.cn", sm)

	t.Setenv("AWS_USE_FIPS_ENDPOINT", "true") // the environment wins over use_fips_endpoint = false
	s, sm = endpoints()
	assert.Equal(t, "https://ssm-fips.cn-north-1.api.amazonwebservices.com.cn", s)
	assert.Equal(t, "https://secretsmanager-fips.cn-north-1.api.amazonwebservices.com.cn", sm)

	t.Setenv("AWS_REGION", "us-gov-west-1")
	t.Setenv("AWS_USE_DUALSTACK_ENDPOINT", "false")
	s, sm = endpoints()
	assert.Equal(t, "https://ssm.us-gov-west-1.amazonaws.com", s)
	assert.Equal(t, "https://secretsmanager-fips.us-gov-west-1.amazonaws.com", sm)

	t.Setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:1")
	s, sm = endpoints()
	assert.Equal(t, "http://127.0.0.1:1", s)
	assert.Equal(t, "http://127.0.0.1:1", sm)
	t.Setenv("AWS_ENDPOINT_URL_SSM", "http://127.0.0.1:2")
	t.Setenv("AWS_ENDPOINT_URL_SECRETS_MANAGER", "http://127.0.0.1:3")
	s, sm = endpoints()
	assert.Equal(t, "http://127.0.0.1:2", s)
	assert.Equal(t, "http://127.0.0.1:3", sm)
}

func TestNeedsRegionAndCredentials(t *testing.T) {
	t.Parallel()
	_, err := NewSSM(aws.Config{Credentials: aws.AnonymousCredentials{}})
	assert.ErrorContains(t, err, "region")
	_, err = NewSecretsManager(aws.Config{Region: "us-east-1"})
	assert.ErrorContains(t, err, "credentials")
	// A Lambda client fails its invocations instead, as the SDK's does.
	l, err := NewLambda(aws.Config{})
	require.NoError(t, err)
	_, err = l.Invoke(context.Background(), InvokeInput{FunctionName: "f"})
	assert.ErrorContains(t, err, "region")
	l.CloseIdleConnections()
}

// *Error is a smithy.APIError, as the SDK's errors are: code, message and
// fault.
func TestErrorIsAnAPIError(t *testing.T) {
	t.Parallel()
	var api smithy.APIError = &Error{StatusCode: 429, Code: "TooManyRequestsException", Message: "Rate Exceeded."}
	assert.Equal(t, "TooManyRequestsException", api.ErrorCode())
	assert.Equal(t, "Rate Exceeded.", api.ErrorMessage())
	assert.Equal(t, smithy.FaultClient, api.ErrorFault())
	assert.Equal(t, smithy.FaultServer, (&Error{StatusCode: 503}).ErrorFault())
}

// Both calls over the wire, against the fake that checks the protocol and
// the signature's shape.
func TestCalls(t *testing.T) {
	t.Parallel()
	srv := fakessm.Start(fakessm.Options{Params: map[string]string{"/p": "v\n"}, Secrets: map[string]string{"s": `{"k":"x"}`}})
	defer srv.Close()
	ctx := context.Background()
	s, err := NewSSM(srv.Config())
	require.NoError(t, err)
	v, err := s.GetParameter(ctx, "/p")
	require.NoError(t, err)
	assert.Equal(t, "v\n", v)
	sm, err := NewSecretsManager(srv.Config())
	require.NoError(t, err)
	v, err = sm.GetSecretValue(ctx, "s")
	require.NoError(t, err)
	assert.Equal(t, `{"k":"x"}`, v)

	reqs := srv.Requests()
	require.Len(t, reqs, 2)
	assert.Equal(t, fakessm.Request{Target: "AmazonSSM.GetParameter", ContentType: "application/x-amz-json-1.1",
		Authorization: reqs[0].Authorization, Name: "/p", WithDecryption: true}, reqs[0])
	assert.Contains(t, reqs[0].Authorization, "/us-east-1/ssm/aws4_request")
	assert.Equal(t, "secretsmanager.GetSecretValue", reqs[1].Target)
	assert.Equal(t, "s", reqs[1].SecretID)
	assert.Contains(t, reqs[1].Authorization, "/us-east-1/secretsmanager/aws4_request")

	_, err = s.GetParameter(ctx, "/missing")
	var ae *Error
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, "ParameterNotFound", ae.Code)
	assert.Equal(t, http.StatusBadRequest, ae.StatusCode)
	_, err = sm.GetSecretValue(ctx, "missing")
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, "ResourceNotFoundException", ae.Code)
}

// The fake rejects what the services reject: an unsigned request, one
// signed for another service or leaving the target unsigned, a wrong
// content type.
func TestFakeIsStrict(t *testing.T) {
	t.Parallel()
	srv := fakessm.Start(fakessm.Options{Params: map[string]string{"/p": "v"}})
	defer srv.Close()
	post := func(contentType, auth string) (int, string) {
		req, err := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(`{"Name":"/p"}`))
		require.NoError(t, err)
		req.Header.Set("X-Amz-Target", "AmazonSSM.GetParameter")
		req.Header.Set("Content-Type", contentType)
		req.Header.Set("X-Amz-Date", "20261125T000000Z")
		req.Header.Set("Authorization", auth)
		resp, err := srv.Client().Do(req)
		require.NoError(t, err)
		defer func() { _ = resp.Body.Close() }()
		var body struct {
			Type string `json:"__type"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&body)
		return resp.StatusCode, body.Type
	}
	sig := func(service, signed string) string {
		return "AWS4-HMAC-SHA256 Credential=AKIDTEST/20261125/us-east-1/" + service + "/aws4_request, SignedHeaders=" + signed +
			", Signature=" + strings.Repeat("0f", 32)
	}
	const json11, all = "application/x-amz-json-1.1", "content-type;host;x-amz-date;x-amz-target"
	for _, c := range []struct {
		contentType, auth string
		status            int
		code              string
	}{
		{json11, sig("ssm", all), 200, ""},
		{json11, "", 400, "IncompleteSignatureException"},
		{json11, sig("secretsmanager", all), 400, "IncompleteSignatureException"},
		{json11, sig("ssm", "host;x-amz-date"), 400, "IncompleteSignatureException"},
		{"application/json", sig("ssm", all), 400, "UnknownOperationException"},
	} {
		status, code := post(c.contentType, c.auth)
		assert.Equal(t, c.status, status, c)
		assert.Equal(t, c.code, code, c)
	}
}

// errorServer answers each request with the next of its answers (the last
// one again when they run out), counting requests.
type errorServer struct {
	answers []func(http.ResponseWriter)
	n       atomic.Int32
}

func (e *errorServer) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	i := int(e.n.Add(1)) - 1
	e.answers[min(i, len(e.answers)-1)](w)
}

func answer(status int, header, body string) func(http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		if header != "" {
			w.Header().Set("X-Amzn-ErrorType", header)
		}
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}
}

// noDelay is the SDK's standard retryer without waits between attempts.
func noDelay() aws.Retryer {
	return retry.NewStandard(func(o *retry.StandardOptions) {
		o.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return 0, nil })
	})
}

func clientOf(t *testing.T, h http.Handler, retryer func() aws.Retryer) *SSM {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	cfg := aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("AKIDTEST", "secret", ""), BaseEndpoint: aws.String(srv.URL),
		HTTPClient: srv.Client(), Retryer: retryer}
	c, err := NewSSM(cfg)
	require.NoError(t, err)
	return c
}

// Error codes lose their namespace; throttling and 5xx answers are retried
// up to the retryer's attempts, client errors never.
func TestErrorsAndRetries(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ok := answer(http.StatusOK, "", `{"Parameter":{"Value":"v"}}`)

	h := &errorServer{answers: []func(http.ResponseWriter){answer(400, "", `{"__type":"com.amazonaws.ssm#ParameterNotFound","message":"no such"}`)}}
	_, err := clientOf(t, h, noDelay).GetParameter(ctx, "/p")
	var ae *Error
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, &Error{Operation: "AmazonSSM.GetParameter", StatusCode: 400, Code: "ParameterNotFound", Message: "no such"}, ae)
	assert.EqualValues(t, 1, h.n.Load(), "a client error is not retried")

	h = &errorServer{answers: []func(http.ResponseWriter){
		answer(400, "ThrottlingException:http://internal.amazon.com/coral/", `{"Message":"Rate exceeded"}`),
		answer(503, "", `{"__type":"ServiceUnavailable"}`), ok}}
	v, err := clientOf(t, h, noDelay).GetParameter(ctx, "/p")
	require.NoError(t, err)
	assert.Equal(t, "v", v)
	assert.EqualValues(t, 3, h.n.Load(), "throttled, then a 503, then the value")

	h = &errorServer{answers: []func(http.ResponseWriter){answer(500, "", `not json`)}}
	_, err = clientOf(t, h, noDelay).GetParameter(ctx, "/p")
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, 500, ae.StatusCode)
	assert.Equal(t, "Internal Server Error", ae.Code)
	assert.EqualValues(t, retry.DefaultMaxAttempts, h.n.Load(), "retried up to the retryer's attempts")

	h = &errorServer{answers: []func(http.ResponseWriter){answer(200, "", `{}`)}}
	_, err = clientOf(t, h, noDelay).GetParameter(ctx, "/p")
	assert.ErrorIs(t, err, ErrNoValue)
}

// A context ending during the wait before a retry ends the retries,
// however long the retryer would wait.
func TestRetriesStopWithTheContext(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h := &errorServer{answers: []func(http.ResponseWriter){answer(503, "", `{}`)}}
	slow := func() aws.Retryer {
		return retry.NewStandard(func(o *retry.StandardOptions) {
			o.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) {
				cancel()
				return time.Hour, nil
			})
		})
	}
	_, err := clientOf(t, h, slow).GetParameter(ctx, "/p")
	var ae *Error
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, 503, ae.StatusCode)
	assert.EqualValues(t, 1, h.n.Load(), "no retry after the context ended")
}

// SendMessage checks the MD5 of the body SQS answered, as the SDK does; the
// SQS and EventBridge requests are SQS's JSON 1.0 (in query mode) and
// EventBridge's JSON 1.1.
func TestSQSAndEventBridgeRequests(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Header.Get("X-Amz-Target")+" "+r.Header.Get("Content-Type")+" "+r.Header.Get("X-Amzn-Query-Mode"))
		switch r.Header.Get("X-Amz-Target") {
		case "AmazonSQS.SendMessage":
			_, _ = w.Write([]byte(`{"MD5OfMessageBody":"00000000000000000000000000000000","MessageId":"m-1"}`))
		default:
			_, _ = w.Write([]byte(`{"FailedEntryCount":1,"Entries":[{"ErrorCode":"InternalFailure","ErrorMessage":"try again"}]}`))
		}
	}))
	defer srv.Close()
	cfg := aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("AKIDTEST", "secret", ""), BaseEndpoint: aws.String(srv.URL), HTTPClient: srv.Client()}
	q, err := NewSQS(cfg)
	require.NoError(t, err)
	_, err = q.SendMessage(ctx, SendMessageInput{QueueURL: "https://sqs.us-east-1.amazonaws.com/1/q", MessageBody: "body"})
	assert.ErrorIs(t, err, ErrChecksum)
	_, err = q.SendMessage(ctx, SendMessageInput{QueueURL: "https://sqs.us-east-1.amazonaws.com/1/q"})
	assert.ErrorContains(t, err, "required")
	eb, err := NewEventBridge(cfg)
	require.NoError(t, err)
	out, err := eb.PutEvents(ctx, PutEventsInput{Entries: []PutEventsEntry{{Source: "lambent", DetailType: "t", Detail: "{}"}}})
	require.NoError(t, err)
	assert.Equal(t, &PutEventsOutput{FailedEntryCount: 1, Entries: []PutEventsResultEntry{{ErrorCode: "InternalFailure", ErrorMessage: "try again"}}}, out)
	assert.Equal(t, []string{"AmazonSQS.SendMessage application/x-amz-json-1.0 true", "AWSEvents.PutEvents application/x-amz-json-1.1 "}, got)
}

// TestHideIDsAllocations pins that HideIDs does not compile its pattern on
// every call: compiling it each time cost 62 allocations a call (with
// -race), replacing with the compiled one costs 9 (6 without -race).
func TestHideIDsAllocations(t *testing.T) {
	const msg = `User: arn:aws:sts::123456789012:assumed-role/lambent/fn is not authorized (account 123456789012)`
	want := `User: (hidden) is not authorized (account (hidden))`
	if got := HideIDs(msg); got != want {
		t.Fatalf("HideIDs = %q, want %q", got, want)
	}
	allocs := testing.AllocsPerRun(100, func() { _ = HideIDs(msg) })
	t.Logf("HideIDs: %.0f allocations a call", allocs)
	if allocs > 20 {
		t.Errorf("HideIDs made %.0f allocations a call, want at most 20 (is the pattern compiled on every call?)", allocs)
	}
}

// An answer's Retry-After is a delay whatever its size: a number of
// seconds beyond what a time.Duration holds is its largest (not a
// float conversion out of range, negative on amd64), and what is not a
// delay is none.
func TestErrorRetryAfter(t *testing.T) {
	for v, want := range map[string]time.Duration{
		"2":                    2 * time.Second,
		"1.5":                  1500 * time.Millisecond,
		"1e10":                 math.MaxInt64,
		"99999999999999999999": math.MaxInt64,
		"Inf":                  0,
		"NaN":                  0,
		"-3":                   0,
		"soon":                 0,
	} {
		resp := &http.Response{StatusCode: 429, Header: http.Header{"Retry-After": {v}}}
		var e *Error
		if !errors.As(decodeError("Invoke", resp, []byte(`{"__type":"TooManyRequestsException"}`)), &e) {
			t.Fatalf("%q: not an *Error", v)
		}
		if e.RetryAfter != want {
			t.Errorf("Retry-After %q: RetryAfter = %v, want %v", v, e.RetryAfter, want)
		}
	}
}
