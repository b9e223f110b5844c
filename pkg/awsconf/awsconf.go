// Package awsconf loads the AWS SDK configuration of Lambent's functions,
// so that regions and partitions (aws-cn, aws-us-gov), FIPS and dual-stack
// endpoints (AWS_USE_FIPS_ENDPOINT, AWS_USE_DUALSTACK_ENDPOINT), retries
// (AWS_RETRY_MODE, AWS_MAX_ATTEMPTS) and credentials work as AWS users
// expect: the SDK's default chain (config.LoadDefaultConfig: shared config
// files, profiles, SSO...) in local builds, and in Lambda builds (tag
// lambent_lambda) the same settings read from the environment Lambda sets
// (FromEnvironment), without the config package and the clients of every
// credential source it links. The SDK's clients made from its
// configuration honour the endpoint overrides AWS_ENDPOINT_URL and
// AWS_ENDPOINT_URL_<SERVICE> themselves; pkg/awsjson (SSM and Secrets
// Manager) reads them through Endpoint. Its HTTP client keeps
// MaxIdleConnsPerHost idle connections to each endpoint.
package awsconf

import (
	"io"
	"net"
	"net/http"
	"os"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
)

// MaxIdleConnsPerHost is how many idle connections to one AWS endpoint the
// HTTP client of Load's configuration keeps. A turn runs its calls
// concurrently (up to 32 hosted calls, each of which may store, put events
// or invoke a hook), and the endpoints Lambent calls speak HTTP/1.1: with
// the SDK's default of 10 (net/http's 2, the default client of a
// configuration without one), every turn closed the connections above it
// and the next dialed them again, a TLS handshake each.
const MaxIdleConnsPerHost = 64

// withPool returns hc (nil: the SDK's default client) with its connection
// pool sized by MaxIdleConnsPerHost; a client that is not the SDK's
// buildable one is returned as it is. The SDK's clients made from the
// configuration copy its transport, keeping the pool's size.
func withPool(hc aws.HTTPClient) aws.HTTPClient {
	b, ok := hc.(*awshttp.BuildableClient)
	switch {
	case hc == nil:
		b = awshttp.NewBuildableClient()
	case !ok:
		return hc
	}
	return b.WithTransportOptions(func(tr *http.Transport) {
		tr.MaxIdleConnsPerHost = MaxIdleConnsPerHost
		tr.MaxIdleConns = max(tr.MaxIdleConns, 4*MaxIdleConnsPerHost)
	})
}

// ReadOnlyBodies returns hc sending each request's body to net/http as a
// plain io.ReadCloser. smithy-go's request body wrapper has a WriteTo that
// returns io.EOF once the SDK has closed the body, which it does as soon
// as the response headers arrive; net/http's HTTP/1.1 writer copies a body
// of known length and then checks for extra bytes with io.Copy, which
// takes that io.EOF for a write error and closes the connection under the
// response being read. A ConverseStream then fails mid-stream, and any
// other call's answer is lost ("use of closed network connection"; the
// SDK retries such a call, and a conditional write retried after it
// succeeded fails its condition) whenever the server answers before that
// check, as a fast endpoint (DynamoDB, a local endpoint) or a
// CPU-starved Lambda makes likely. Hiding WriteTo makes the check a plain
// Read, whose io.EOF ends the copy as it should. Every client of Load's
// and FromEnvironment's configuration has it.
func ReadOnlyBodies(hc aws.HTTPClient) aws.HTTPClient {
	if _, ok := hc.(readOnlyBodies); ok {
		return hc
	}
	return readOnlyBodies{hc}
}

type readOnlyBodies struct{ aws.HTTPClient }

// Do sends r with its body reduced to an io.ReadCloser.
func (c readOnlyBodies) Do(r *http.Request) (*http.Response, error) {
	if _, ok := r.Body.(io.WriterTo); ok {
		r.Body = struct{ io.ReadCloser }{r.Body}
	}
	return c.HTTPClient.Do(r)
}

// Endpoint returns the endpoint override for a service ("DYNAMODB",
// "LAMBDA", "SQS", "EVENTBRIDGE", "SSM", "SECRETS_MANAGER"):
// AWS_ENDPOINT_URL_<SERVICE>, else AWS_ENDPOINT_URL; nil when neither is
// set. The SDK's clients made from Load's configuration apply it already;
// it serves configurations built by hand and pkg/awsjson.
func Endpoint(service string) *string {
	for _, k := range []string{"AWS_ENDPOINT_URL_" + strings.ToUpper(service), "AWS_ENDPOINT_URL"} {
		if v := os.Getenv(k); v != "" {
			return &v
		}
	}
	return nil
}

// LoopbackHost reports whether host (a URL's Hostname) is this machine:
// localhost or a loopback IP.
func LoopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
