package lambdaexec

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/lambent/lambent/pkg/awsconf"
	"github.com/lambent/lambent/pkg/awsjson"
)

// MaxConcurrentInvocations is how many invocations to one endpoint the
// client of NewHTTPClient keeps connections for: every call of a turn is in
// flight at once, each on its own connection over HTTP/1.1 (where the
// endpoint negotiates HTTP/2, they share one).
const MaxConcurrentInvocations = 64

// HTTPClient is the SDK HTTP client (aws.HTTPClient) the executor's Lambda
// client uses; create it with NewHTTPClient. It is safe for concurrent use.
type HTTPClient struct {
	client    *http.Client
	transport *http.Transport
}

// NewHTTPClient returns the HTTP client for the executor's Lambda client:
//
//   - the SDK's default transport (timeouts, TLS 1.2+, proxy from the
//     environment) with a connection pool sized for MaxConcurrentInvocations
//     concurrent invocations per host (the SDK keeps only 10 idle
//     connections per host, so a turn of 16 calls would dial anew every
//     turn) and no connection limit;
//   - no read or overall timeout: a tool may run silent until its deadline,
//     and the call's context bounds it;
//   - redirects returned, not followed, as the SDK's own client does;
//   - each request body handed to the transport as an in-memory copy. The
//     SDK closes the request body as soon as the response headers arrive;
//     net/http may still read it once more (for trailing bytes) after
//     sending it, and the SDK's closed body then fails that read, which
//     makes the transport close the connection under the response body
//     still being read ("deserialization failed ... use of closed network
//     connection", aws/aws-sdk-go-v2#2737). The SDK retries such errors,
//     but an Invoke must not be retried once the function may have run.
func NewHTTPClient() *HTTPClient {
	return newHTTPClient(awshttp.NewBuildableClient().GetTransport())
}

func newHTTPClient(tr *http.Transport) *HTTPClient {
	tr.MaxIdleConns = 4 * MaxConcurrentInvocations
	tr.MaxIdleConnsPerHost = MaxConcurrentInvocations
	tr.MaxConnsPerHost = 0 // no limit
	return &HTTPClient{
		transport: tr,
		client: &http.Client{
			Transport:     tr,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
	}
}

// Do sends an HTTP request (aws.HTTPClient).
func (c *HTTPClient) Do(req *http.Request) (*http.Response, error) {
	if req.Body != nil && req.Body != http.NoBody {
		body, err := io.ReadAll(req.Body)
		_ = req.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("lambdaexec: read request body: %w", err)
		}
		req = req.Clone(req.Context())
		req.ContentLength = int64(len(body))
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	}
	return c.client.Do(req)
}

// CloseIdleConnections closes the pooled connections not in use.
func (c *HTTPClient) CloseIdleConnections() {
	c.transport.CloseIdleConnections()
}

// NewClient returns the Lambda client for an Executor (awsjson.Lambda, not
// the SDK's service/lambda, for cold starts), from the AWS configuration of
// awsconf.Load (in Lambda: the function's role from the environment) with:
//
//   - an HTTPClient as NewHTTPClient's;
//   - no SDK retries: the Executor retries throttled invocations itself,
//     within the call's deadline, and never retries an invocation that may
//     have run (Invoke is not idempotent);
//   - the endpoint override AWS_ENDPOINT_URL_LAMBDA (or AWS_ENDPOINT_URL),
//     e.g. http://127.0.0.1:3001 for `make lambdas` or `sam local
//     start-lambda`. When it names a loopback host and AWS_ACCESS_KEY_ID is
//     not set, placeholder credentials and region us-east-1 (unless
//     AWS_REGION is set) are used, so local runs need no AWS account.
//
// opts adjust the client (awsjson.WithTraceHeader).
func NewClient(ctx context.Context, opts ...awsjson.Option) (*awsjson.Lambda, error) {
	var cfg aws.Config
	if isLoopbackEndpoint() && os.Getenv("AWS_ACCESS_KEY_ID") == "" {
		cfg = aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("local", "local", "")}
		if r := os.Getenv("AWS_REGION"); r != "" {
			cfg.Region = r
		}
	} else {
		var err error
		if cfg, err = awsconf.Load(ctx); err != nil {
			return nil, fmt.Errorf("lambdaexec: load AWS config: %w", err)
		}
	}
	cfg.Retryer = func() aws.Retryer { return aws.NopRetryer{} }
	switch hc := cfg.HTTPClient.(type) {
	case nil:
		cfg.HTTPClient = NewHTTPClient()
	case *awshttp.BuildableClient:
		cfg.HTTPClient = newHTTPClient(hc.GetTransport())
	}
	c, err := awsjson.NewLambda(cfg, opts...)
	if err != nil {
		return nil, fmt.Errorf("lambdaexec: %w", err)
	}
	return c, nil
}

// isLoopbackEndpoint reports whether the Lambda endpoint override points at
// this machine.
func isLoopbackEndpoint() bool {
	ep := awsconf.Endpoint("LAMBDA")
	if ep == nil {
		return false
	}
	u, err := url.Parse(*ep)
	return err == nil && awsconf.LoopbackHost(u.Hostname())
}
