// Package fakessm is an AWS Systems Manager Parameter Store endpoint on
// loopback for tests and local measurements: it answers GetParameter over
// the SSM JSON 1.1 protocol (POST / with X-Amz-Target
// AmazonSSM.GetParameter; errors as {"__type","message"} with HTTP 400), as
// the SDK's SSM client speaks it (point the client at Server.URL with
// AWS_ENDPOINT_URL_SSM or its BaseEndpoint). It answers Secrets Manager's
// GetSecretValue (X-Amz-Target secretsmanager.GetSecretValue, the same
// protocol) too, from Options.Secrets.
//
// It is as strict as the services about the request's shape: POST with
// Content-Type application/x-amz-json-1.1, a known X-Amz-Target, an
// X-Amz-Date, and a SigV4 Authorization header for the target's service
// ("ssm" or "secretsmanager") that signs host, x-amz-date and x-amz-target
// (the signature itself is not checked). A request that fails these is
// answered as the services answer it (400 with a JSON error).
package fakessm

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
)

// Request is a GetParameter request as the server received it.
type Request struct {
	// Target, ContentType and Authorization are the request's headers.
	Target, ContentType, Authorization string
	// Name and WithDecryption are the request's fields (GetParameter);
	// SecretID is GetSecretValue's.
	Name           string
	WithDecryption bool
	SecretID       string
}

// Options configure a Server.
type Options struct {
	// Params maps parameter names to their values.
	Params map[string]string
	// Secrets maps Secrets Manager secret ids to their SecretString.
	Secrets map[string]string
	// Before, when set, is called with each GetParameter request before it
	// is answered. It may block (a barrier); a non-empty return is an SSM
	// error code, such as ThrottlingException, the request then fails with.
	Before func(Request) (errorCode string)
}

// Server is a running fake SSM endpoint: URL is its address, Client an
// HTTP client for it, Close stops it.
type Server struct {
	*httptest.Server

	opts     Options
	mu       sync.Mutex
	requests []Request
}

// Start starts a Server on a loopback port.
func Start(opts Options) *Server {
	s := &Server{opts: opts}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serveHTTP))
	return s
}

// Config returns an AWS configuration pointed at s: region us-east-1,
// static credentials, s's HTTP client and URL as its base endpoint.
func (s *Server) Config() aws.Config {
	return aws.Config{
		Region:       "us-east-1",
		Credentials:  credentials.NewStaticCredentialsProvider("AKIDTEST", "secret", ""),
		BaseEndpoint: aws.String(s.URL),
		HTTPClient:   s.Client(),
	}
}

// authorization is the shape of a SigV4 Authorization header.
var authorization = regexp.MustCompile(`^AWS4-HMAC-SHA256 Credential=[A-Z0-9]+/\d{8}/([a-z0-9-]+)/([a-z0-9]+)/aws4_request, SignedHeaders=([a-z0-9;-]+), Signature=[0-9a-f]{64}$`)

// checkSigned returns why r is not a well-formed SigV4-signed request for
// service, or "".
func checkSigned(r *http.Request, service string) string {
	m := authorization.FindStringSubmatch(r.Header.Get("Authorization"))
	switch {
	case m == nil:
		return "Authorization header is not a SigV4 signature"
	case m[2] != service:
		return "Credential should be scoped to a valid service: '" + service + "'"
	case r.Header.Get("X-Amz-Date") == "":
		return "X-Amz-Date header missing"
	}
	signed := strings.Split(m[3], ";")
	for _, h := range []string{"host", "x-amz-date", "x-amz-target"} {
		if !slices.Contains(signed, h) {
			return "SignedHeaders does not include " + h
		}
	}
	return ""
}

// Requests returns the requests received so far, in order of arrival.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Name           string
		WithDecryption bool
		SecretID       string `json:"SecretId"`
	}
	body, err := io.ReadAll(r.Body)
	if err == nil {
		err = json.Unmarshal(body, &in)
	}
	req := Request{
		Target:         r.Header.Get("X-Amz-Target"),
		ContentType:    r.Header.Get("Content-Type"),
		Authorization:  r.Header.Get("Authorization"),
		Name:           in.Name,
		WithDecryption: in.WithDecryption,
		SecretID:       in.SecretID,
	}
	s.mu.Lock()
	s.requests = append(s.requests, req)
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	switch {
	case r.Method != http.MethodPost || req.Target != "AmazonSSM.GetParameter" && req.Target != "secretsmanager.GetSecretValue":
		fail(w, "UnknownOperationException", "unexpected request "+r.Method+" "+req.Target)
		return
	case req.ContentType != "application/x-amz-json-1.1":
		fail(w, "UnknownOperationException", "unexpected Content-Type "+req.ContentType)
		return
	case err != nil:
		fail(w, "SerializationException", "bad request body: "+err.Error())
		return
	}
	service := "ssm"
	if req.Target == "secretsmanager.GetSecretValue" {
		service = "secretsmanager"
	}
	if msg := checkSigned(r, service); msg != "" {
		fail(w, "IncompleteSignatureException", msg)
		return
	}
	if s.opts.Before != nil {
		if code := s.opts.Before(req); code != "" {
			fail(w, code, "injected by fakessm")
			return
		}
	}
	if req.Target == "secretsmanager.GetSecretValue" {
		secret, ok := s.opts.Secrets[in.SecretID]
		if !ok {
			fail(w, "ResourceNotFoundException", "Secrets Manager can't find the specified secret.")
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{
			"ARN":          "arn:aws:secretsmanager:us-east-1:123456789012:secret:" + in.SecretID,
			"Name":         in.SecretID,
			"SecretString": secret,
			"VersionId":    "v1",
		})
		return
	}
	value, ok := s.opts.Params[in.Name]
	if !ok {
		fail(w, "ParameterNotFound", "Parameter "+in.Name+" not found.")
		return
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"Parameter": map[string]any{
		"Name":     in.Name,
		"Type":     "SecureString",
		"Value":    value,
		"Version":  1,
		"ARN":      "arn:aws:ssm:us-east-1:123456789012:parameter" + in.Name,
		"DataType": "text",
	}})
}

// fail answers with an SSM error.
func fail(w http.ResponseWriter, code, message string) {
	w.WriteHeader(http.StatusBadRequest)
	_ = json.NewEncoder(w).Encode(map[string]string{"__type": code, "message": message})
}
