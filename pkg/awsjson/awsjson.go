// Package awsjson is a small client of AWS's JSON protocols for the calls
// Lambent's engine functions make besides DynamoDB and Bedrock: Systems
// Manager's GetParameter (with decryption) and Secrets Manager's
// GetSecretValue at start-up and for the MCP manifest, SQS's SendMessage
// (background responses, WebSocket turns) and EventBridge's PutEvents
// (response events, hooks). It replaces the SDK's clients of those
// services, whose package initialisation (their schemas and endpoint
// tables: about 5 ms for SSM, 0.5 ms for SQS and EventBridge) and size
// (about 0.8 MB of the zipped bootstrap for SSM and Secrets Manager, 0.2 MB
// for SQS and EventBridge) every cold start paid (docs/aws.md).
//
// It is built on the SDK's own parts: the aws.Config that awsconf.Load
// returns supplies the region, the credentials provider, the HTTP client
// and the retryer, and requests are signed with the SDK's SigV4 signer.
// Endpoints follow the SDK's rules for each service: an override
// (AWS_ENDPOINT_URL_<SERVICE>, AWS_ENDPOINT_URL, or aws.Config.BaseEndpoint),
// else the region's partition (aws, aws-cn, aws-us-gov and the isolated
// ones) with FIPS and dual-stack as the environment (AWS_USE_FIPS_ENDPOINT,
// AWS_USE_DUALSTACK_ENDPOINT) or the shared config file
// (use_fips_endpoint, use_dualstack_endpoint) ask.
//
// Errors are *Error: the service's error code (the "__type" of its JSON
// body, namespace stripped) and message. Throttling, 5xx answers and
// connection errors are retried with the configuration's retryer (the
// SDK's standard one by default) within the context.
package awsjson

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/smithy-go"

	"github.com/lambent/lambent/internal/bounded"
	"github.com/lambent/lambent/internal/wait"
	"github.com/lambent/lambent/pkg/awsconf"
)

// MaxResponseBytes bounds the body of an answer read: an SSM parameter
// holds at most 8 KB, a secret 64 KB.
const MaxResponseBytes = 1 << 20

// service describes one AWS service spoken to over JSON 1.1.
type service struct {
	// envID names its endpoint override, AWS_ENDPOINT_URL_<envID>.
	envID string
	// signingName is its SigV4 service name.
	signingName string
	// targetPrefix prefixes the operation in X-Amz-Target.
	targetPrefix string
	// jsonVersion is its protocol's version: "1.0" or "1.1".
	jsonVersion string
	// queryMode marks a service that also speaks the Query protocol
	// (SQS): the SDK asks for JSON answers with X-Amzn-Query-Mode.
	queryMode bool
	// endpoint is its default endpoint in region.
	endpoint func(region string, p partition, fips, dualStack bool) string
	// maxResponse bounds the answers read (default MaxResponseBytes).
	maxResponse int64
}

var (
	ssmService = service{envID: "SSM", signingName: "ssm", targetPrefix: "AmazonSSM", jsonVersion: "1.1", endpoint: standardEndpoint("ssm", govFIPSPlainUnlessDualStack)}
	smService  = service{envID: "SECRETS_MANAGER", signingName: "secretsmanager", targetPrefix: "secretsmanager", jsonVersion: "1.1", endpoint: secretsManagerEndpoint}
	sqsService = service{envID: "SQS", signingName: "sqs", targetPrefix: "AmazonSQS", jsonVersion: "1.0", queryMode: true, endpoint: standardEndpoint("sqs", govFIPSPlainUnlessDualStack)}
	ebService  = service{envID: "EVENTBRIDGE", signingName: "events", targetPrefix: "AWSEvents", jsonVersion: "1.1", endpoint: standardEndpoint("events", govFIPSPlain)}
	// Lambda speaks REST-JSON: no target, the operation is in the path.
	lambdaService = service{envID: "LAMBDA", signingName: "lambda", targetPrefix: "Lambda", endpoint: standardEndpoint("lambda", govFIPSHost),
		maxResponse: MaxInvokePayloadBytes + 1<<20}
)

// client calls one service's operations.
type client struct {
	svc      service
	endpoint string
	region   string
	creds    aws.CredentialsProvider
	http     aws.HTTPClient
	retryer  aws.Retryer
	signer   *v4.Signer
	// traceHeader gives the X-Amzn-Trace-Id of a request's context
	// (WithTraceHeader).
	traceHeader func(context.Context) string
}

// errIncomplete: the configuration lacks a region or credentials.
var errIncomplete = errors.New("incomplete AWS configuration")

// Option adjusts a client.
type Option func(*client)

// WithTraceHeader sets the X-Amzn-Trace-Id header of each request to what
// f returns for its context, when not empty (the span of a tool call, so
// that the tool Lambda's trace continues it). Without it, or when f
// returns nothing, requests made inside Lambda carry the invocation's
// _X_AMZN_TRACE_ID, as the SDK's recursion detection does.
func WithTraceHeader(f func(context.Context) string) Option {
	return func(c *client) { c.traceHeader = f }
}

func newClient(cfg aws.Config, svc service, opts ...Option) (*client, error) {
	if cfg.Region == "" {
		return nil, fmt.Errorf("awsjson: %s: %w: no region configured (AWS_REGION)", svc.signingName, errIncomplete)
	}
	if cfg.Credentials == nil {
		return nil, fmt.Errorf("awsjson: %s: %w: no credentials provider configured", svc.signingName, errIncomplete)
	}
	endpoint, err := resolveEndpoint(cfg, svc)
	if err != nil {
		return nil, err
	}
	c := &client{svc: svc, endpoint: endpoint, region: cfg.Region, creds: cfg.Credentials,
		http: cfg.HTTPClient, signer: v4.NewSigner()}
	if c.http == nil {
		c.http = http.DefaultClient
	}
	if cfg.Retryer != nil {
		c.retryer = cfg.Retryer()
	}
	if c.retryer == nil {
		c.retryer = retry.NewStandard()
	}
	if c.svc.maxResponse == 0 {
		c.svc.maxResponse = MaxResponseBytes
	}
	for _, o := range opts {
		o(c)
	}
	return c, nil
}

// Error is an error answer of the service.
type Error struct {
	// Operation is the call, such as "AmazonSSM.GetParameter".
	Operation string
	// StatusCode is the HTTP status of the answer.
	StatusCode int
	// Code is the error's type without its namespace, such as
	// "ParameterNotFound" or "ThrottlingException".
	Code string
	// Message is the service's message.
	Message string
	// RetryAfter is the Retry-After of the answer, when it has one (a
	// throttled Lambda Invoke).
	RetryAfter time.Duration
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s: HTTP %d %s: %s", e.Operation, e.StatusCode, e.Code, e.Message)
}

// ErrorCode returns e.Code (the SDK's retryers read it; with ErrorMessage
// and ErrorFault, *Error is a smithy.APIError as the SDK's errors are).
func (e *Error) ErrorCode() string { return e.Code }

// ErrorMessage returns e.Message.
func (e *Error) ErrorMessage() string { return e.Message }

// ErrorFault tells a client error (4xx) from a server's (5xx).
func (e *Error) ErrorFault() smithy.ErrorFault {
	switch {
	case e.StatusCode >= 500:
		return smithy.FaultServer
	case e.StatusCode >= 400:
		return smithy.FaultClient
	}
	return smithy.FaultUnknown
}

// HTTPStatusCode returns e.StatusCode (the SDK's retryers read it).
func (e *Error) HTTPStatusCode() int { return e.StatusCode }

// request is one call: what each attempt sends.
type request struct {
	// op names the call in errors ("AmazonSSM.GetParameter", "Lambda.Invoke").
	op string
	// path and query (escaped) follow the endpoint; path is "/" for the
	// JSON protocols.
	path, rawPath, query string
	header               http.Header
	body                 []byte
}

// call sends op with the JSON body in and decodes the answer into out,
// retrying what the retryer deems retryable.
func (c *client) call(ctx context.Context, op string, in, out any) error {
	target := c.svc.targetPrefix + "." + op
	body, err := json.Marshal(in)
	if err != nil {
		return fmt.Errorf("%s: %w", target, err)
	}
	h := http.Header{}
	h.Set("Content-Type", "application/x-amz-json-"+c.svc.jsonVersion)
	h.Set("X-Amz-Target", target)
	if c.svc.queryMode {
		h.Set("X-Amzn-Query-Mode", "true")
	}
	ans, err := c.send(ctx, request{op: target, path: "/", header: h, body: body})
	if err != nil {
		return err
	}
	if err := json.Unmarshal(ans.body, out); err != nil {
		return fmt.Errorf("%s: decode answer: %w", target, err)
	}
	return nil
}

// reply is a successful answer.
type reply struct {
	status int
	header http.Header
	body   []byte
}

// send sends r, retrying what the retryer deems retryable, and returns the
// successful answer.
func (c *client) send(ctx context.Context, r request) (reply, error) {
	sum := sha256.Sum256(r.body)
	payloadHash := hex.EncodeToString(sum[:])
	for attempt := 1; ; attempt++ {
		ans, err := c.attempt(ctx, r, payloadHash)
		if err == nil || ctx.Err() != nil || attempt >= c.retryer.MaxAttempts() || !c.retryer.IsErrorRetryable(err) {
			return ans, err
		}
		delay, derr := c.retryer.RetryDelay(attempt, err)
		if derr != nil {
			return reply{}, err
		}
		if !wait.Sleep(ctx, delay) {
			return reply{}, err
		}
	}
}

func (c *client) attempt(ctx context.Context, r request, payloadHash string) (reply, error) {
	u, err := url.Parse(c.endpoint)
	if err != nil {
		return reply{}, fmt.Errorf("%s: endpoint: %w", r.op, err)
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + r.path
	if r.rawPath != "" {
		u.RawPath = strings.TrimSuffix(u.EscapedPath(), "/") + r.rawPath
	}
	u.RawQuery = r.query
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(r.body))
	if err != nil {
		return reply{}, fmt.Errorf("%s: %w", r.op, err)
	}
	for k, v := range r.header {
		req.Header[k] = v
	}
	if h := c.traceID(ctx); h != "" {
		req.Header.Set("X-Amzn-Trace-Id", h)
	}
	creds, err := c.creds.Retrieve(ctx)
	if err != nil {
		return reply{}, fmt.Errorf("%s: retrieve credentials: %w", r.op, err)
	}
	if err := c.signer.SignHTTP(ctx, creds, req, payloadHash, c.svc.signingName, c.region, time.Now()); err != nil {
		return reply{}, fmt.Errorf("%s: sign: %w", r.op, err)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return reply{}, fmt.Errorf("%s: %w", r.op, err)
	}
	defer func() { _ = resp.Body.Close() }()
	data, over, err := bounded.Read(resp.Body, resp.ContentLength, c.svc.maxResponse)
	if err != nil {
		return reply{}, fmt.Errorf("%s: read answer: %w", r.op, err)
	}
	if over {
		return reply{}, fmt.Errorf("%s: answer over %d bytes", r.op, c.svc.maxResponse)
	}
	if resp.StatusCode/100 != 2 {
		return reply{}, decodeError(r.op, resp, data)
	}
	return reply{status: resp.StatusCode, header: resp.Header, body: data}, nil
}

// traceID is the X-Amzn-Trace-Id of a request: the client's trace header
// of ctx, else inside Lambda the invocation's (the SDK's recursion
// detection).
func (c *client) traceID(ctx context.Context) string {
	if c.traceHeader != nil {
		if h := c.traceHeader(ctx); h != "" {
			return h
		}
	}
	if os.Getenv("AWS_LAMBDA_FUNCTION_NAME") != "" {
		return os.Getenv("_X_AMZN_TRACE_ID")
	}
	return ""
}

// decodeError reads an error answer: {"__type": "[namespace#]Code",
// "message": ...} (or "Message"), the code also in X-Amzn-ErrorType.
func decodeError(target string, resp *http.Response, data []byte) error {
	var body struct {
		Type         string `json:"__type"`
		Code         string `json:"code"`
		Message      string `json:"message"`
		MessageUpper string `json:"Message"`
	}
	_ = json.Unmarshal(data, &body)
	code := resp.Header.Get("X-Amzn-ErrorType")
	if code == "" {
		code = body.Type
	}
	if code == "" {
		code = body.Code
	}
	e := &Error{Operation: target, StatusCode: resp.StatusCode, Code: sanitizeCode(code), Message: body.Message}
	if d, ok := wait.RetryAfter(resp.Header.Get("Retry-After"), time.Now()); ok {
		e.RetryAfter = d
	}
	if e.Message == "" {
		e.Message = body.MessageUpper
	}
	if e.Code == "" {
		e.Code = http.StatusText(resp.StatusCode)
	}
	return e
}

// sanitizeCode strips a namespace ("com.amazonaws.ssm#ParameterNotFound")
// and any ":"-suffix ("ThrottlingException:http://...") from an error code.
func sanitizeCode(code string) string {
	if i := strings.LastIndexByte(code, '#'); i >= 0 {
		code = code[i+1:]
	}
	code, _, _ = strings.Cut(code, ":")
	return strings.TrimSpace(code)
}

// resolveEndpoint returns the service's endpoint for cfg.
func resolveEndpoint(cfg aws.Config, svc service) (string, error) {
	if v := awsconf.Endpoint(svc.envID); v != nil {
		return *v, nil
	}
	if cfg.BaseEndpoint != nil && *cfg.BaseEndpoint != "" {
		return *cfg.BaseEndpoint, nil
	}
	fips, dualStack, err := endpointModes(cfg.ConfigSources)
	if err != nil {
		return "", fmt.Errorf("awsjson: %s: %w", svc.signingName, err)
	}
	return svc.endpoint(cfg.Region, partitionOf(cfg.Region), fips, dualStack), nil
}

// endpointModes reads FIPS and dual-stack from the configuration's sources
// (config.EnvConfig before config.SharedConfig, as the SDK loads them): the
// first source that sets each wins.
func endpointModes(sources []any) (fips, dualStack bool, err error) {
	var fipsFound, dualFound bool
	for _, s := range sources {
		if src, ok := s.(interface {
			GetUseFIPSEndpoint(context.Context) (aws.FIPSEndpointState, bool, error)
		}); ok && !fipsFound {
			v, found, err := src.GetUseFIPSEndpoint(context.Background())
			if err != nil {
				return false, false, err
			}
			fipsFound, fips = found, v == aws.FIPSEndpointStateEnabled
		}
		if src, ok := s.(interface {
			GetUseDualStackEndpoint(context.Context) (aws.DualStackEndpointState, bool, error)
		}); ok && !dualFound {
			v, found, err := src.GetUseDualStackEndpoint(context.Background())
			if err != nil {
				return false, false, err
			}
			dualFound, dualStack = found, v == aws.DualStackEndpointStateEnabled
		}
	}
	return fips, dualStack, nil
}

// partition is an AWS partition's DNS suffixes.
type partition struct {
	name, dnsSuffix, dualStackSuffix string
}

// partitionOf returns region's partition, as the SDK's partitions.json
// matches it; a region matching none is in "aws".
func partitionOf(region string) partition {
	for _, p := range []struct {
		prefix string
		p      partition
	}{
		{"us-gov-", partition{"aws-us-gov", "amazonaws.com", "api.aws"}},
		{"cn-", partition{"aws-cn", "amazonaws.com.cn", "api.amazonwebservices.com.cn"}},
		{"eusc-", partition{"aws-eusc", "amazonaws.eu", "api.amazonwebservices.eu"}},
		{"us-isob-", partition{"aws-iso-b", "sc2s.sgov.gov", "api.aws.scloud"}},
		{"us-isof-", partition{"aws-iso-f", "csp.hci.ic.gov", "api.aws.hci.ic.gov"}},
		{"us-iso-", partition{"aws-iso", "c2s.ic.gov", "api.aws.ic.gov"}},
		{"eu-isoe-", partition{"aws-iso-e", "cloud.adc-e.uk", "api.cloud-aws.adc-e.uk"}},
	} {
		if strings.HasPrefix(region, p.prefix) {
			return p.p
		}
	}
	return partition{"aws", "amazonaws.com", "api.aws"}
}

// govFIPS is what FIPS names in aws-us-gov, whose amazonaws.com endpoints
// are FIPS already for some services.
type govFIPS int

const (
	// govFIPSHost: <host>-fips, as elsewhere.
	govFIPSHost govFIPS = iota
	// govFIPSPlainUnlessDualStack: the plain host, but <host>-fips with
	// dual-stack (SSM, SQS).
	govFIPSPlainUnlessDualStack
	// govFIPSPlain: the plain host (EventBridge).
	govFIPSPlain
)

// standardEndpoint is the endpoint rule of SSM, SQS and EventBridge:
// <host>[-fips].<region>.<suffix>, the dual-stack suffix with dual-stack,
// FIPS in aws-us-gov as gov says.
func standardEndpoint(host string, gov govFIPS) func(region string, p partition, fips, dualStack bool) string {
	return func(region string, p partition, fips, dualStack bool) string {
		h, suffix := host, p.dnsSuffix
		if dualStack {
			suffix = p.dualStackSuffix
		}
		if fips && (p.name != "aws-us-gov" || gov == govFIPSHost || (gov == govFIPSPlainUnlessDualStack && dualStack)) {
			h = host + "-fips"
		}
		return "https://" + h + "." + region + "." + suffix
	}
}

// secretsManagerEndpoint is Secrets Manager's endpoint rule: its
// amazonaws.com endpoints are dual-stack already in aws and aws-us-gov
// (and without FIPS in aws-cn), so only the other partitions use the
// dual-stack suffix.
func secretsManagerEndpoint(region string, p partition, fips, dualStack bool) string {
	host, suffix := "secretsmanager", p.dnsSuffix
	if fips {
		host = "secretsmanager-fips"
	}
	if dualStack && p.name != "aws" && p.name != "aws-us-gov" && (p.name != "aws-cn" || fips) {
		suffix = p.dualStackSuffix
	}
	return "https://" + host + "." + region + "." + suffix
}

// SSM reads Systems Manager parameters.
type SSM struct{ c *client }

// NewSSM returns an SSM client from cfg (see the package doc).
func NewSSM(cfg aws.Config) (*SSM, error) {
	c, err := newClient(cfg, ssmService)
	if err != nil {
		return nil, err
	}
	return &SSM{c}, nil
}

// Endpoint returns the URL the client calls.
func (s *SSM) Endpoint() string { return s.c.endpoint }

// ErrNoValue: the service's answer held no value.
var ErrNoValue = errors.New("the answer holds no value")

// GetParameter returns the value of the parameter name, decrypted
// (AmazonSSM.GetParameter with WithDecryption). A missing parameter is an
// *Error with Code "ParameterNotFound".
func (s *SSM) GetParameter(ctx context.Context, name string) (string, error) {
	in := struct {
		Name           string
		WithDecryption bool
	}{Name: name, WithDecryption: true}
	var out struct {
		Parameter *struct{ Value *string }
	}
	if err := s.c.call(ctx, "GetParameter", in, &out); err != nil {
		return "", err
	}
	if out.Parameter == nil || out.Parameter.Value == nil {
		return "", fmt.Errorf("%s.GetParameter: %w", ssmService.targetPrefix, ErrNoValue)
	}
	return *out.Parameter.Value, nil
}

// SecretsManager reads Secrets Manager secrets.
type SecretsManager struct{ c *client }

// NewSecretsManager returns a Secrets Manager client from cfg (see the
// package doc).
func NewSecretsManager(cfg aws.Config) (*SecretsManager, error) {
	c, err := newClient(cfg, smService)
	if err != nil {
		return nil, err
	}
	return &SecretsManager{c}, nil
}

// Endpoint returns the URL the client calls.
func (s *SecretsManager) Endpoint() string { return s.c.endpoint }

// GetSecretValue returns the SecretString of the secret id (its current
// version). A missing secret is an *Error with Code
// "ResourceNotFoundException"; a binary secret has no SecretString and is
// ErrNoValue.
func (s *SecretsManager) GetSecretValue(ctx context.Context, id string) (string, error) {
	in := struct {
		SecretID string `json:"SecretId"`
	}{id}
	var out struct {
		SecretString *string
	}
	if err := s.c.call(ctx, "GetSecretValue", in, &out); err != nil {
		return "", err
	}
	if out.SecretString == nil {
		return "", fmt.Errorf("%s.GetSecretValue: %w", smService.targetPrefix, ErrNoValue)
	}
	return *out.SecretString, nil
}

// SQS sends messages to Amazon SQS queues.
type SQS struct{ c *client }

// NewSQS returns an SQS client from cfg (see the package doc).
func NewSQS(cfg aws.Config) (*SQS, error) {
	c, err := newClient(cfg, sqsService)
	if err != nil {
		return nil, err
	}
	return &SQS{c}, nil
}

// Endpoint returns the URL the client calls.
func (s *SQS) Endpoint() string { return s.c.endpoint }

// SendMessageInput is a message to send.
type SendMessageInput struct {
	// QueueURL is the queue's URL (required).
	QueueURL string `json:"QueueUrl"`
	// MessageBody is the message (required).
	MessageBody string
	// MessageGroupID and MessageDeduplicationID are a FIFO queue's.
	MessageGroupID         string `json:"MessageGroupId,omitempty"`
	MessageDeduplicationID string `json:"MessageDeduplicationId,omitempty"`
}

// ErrChecksum: the MD5 of the message body SQS answered is not the body's
// (the SDK checks it too).
var ErrChecksum = errors.New("the answer's MD5 of the message body does not match the body sent")

// SendMessage sends in (AmazonSQS.SendMessage) and returns the message's
// id, once SQS has answered with the MD5 of the body sent.
func (s *SQS) SendMessage(ctx context.Context, in SendMessageInput) (string, error) {
	if in.QueueURL == "" || in.MessageBody == "" {
		return "", errors.New("AmazonSQS.SendMessage: QueueUrl and MessageBody are required")
	}
	var out struct {
		MD5OfMessageBody string
		MessageID        string `json:"MessageId"`
	}
	if err := s.c.call(ctx, "SendMessage", in, &out); err != nil {
		return "", err
	}
	sum := md5.Sum([]byte(in.MessageBody))
	if out.MD5OfMessageBody != hex.EncodeToString(sum[:]) {
		return "", fmt.Errorf("AmazonSQS.SendMessage: %w", ErrChecksum)
	}
	return out.MessageID, nil
}

// EventBridge puts events on Amazon EventBridge buses.
type EventBridge struct{ c *client }

// NewEventBridge returns an EventBridge client from cfg (see the package
// doc).
func NewEventBridge(cfg aws.Config) (*EventBridge, error) {
	c, err := newClient(cfg, ebService)
	if err != nil {
		return nil, err
	}
	return &EventBridge{c}, nil
}

// Endpoint returns the URL the client calls.
func (e *EventBridge) Endpoint() string { return e.c.endpoint }

// PutEventsEntry is one event to put.
type PutEventsEntry struct {
	// EventBusName is the bus's name or ARN.
	EventBusName string
	// Source, DetailType and Detail (a JSON object) are the event's.
	Source     string
	DetailType string
	Detail     string
	// Time is the event's time (EventBridge's when zero).
	Time time.Time
}

// PutEventsInput is the events to put (at most 10).
type PutEventsInput struct {
	Entries []PutEventsEntry
}

// PutEventsResultEntry is the fate of one entry: its event id, or the
// error EventBridge refused it with.
type PutEventsResultEntry struct {
	EventID      string `json:"EventId"`
	ErrorCode    string
	ErrorMessage string
}

// PutEventsOutput is PutEvents' answer: how many entries failed, and each
// entry's fate in the order sent.
type PutEventsOutput struct {
	FailedEntryCount int
	Entries          []PutEventsResultEntry
}

// PutEvents puts in's entries (AWSEvents.PutEvents). An entry EventBridge
// refuses is not an error of the call: see the output's entries.
func (e *EventBridge) PutEvents(ctx context.Context, in PutEventsInput) (*PutEventsOutput, error) {
	type entry struct {
		Detail       string
		DetailType   string
		EventBusName string   `json:",omitempty"`
		Resources    []string `json:"Resources"`
		Source       string
		Time         *float64 `json:",omitempty"`
	}
	body := struct{ Entries []entry }{Entries: make([]entry, len(in.Entries))}
	for i, en := range in.Entries {
		body.Entries[i] = entry{Detail: en.Detail, DetailType: en.DetailType, EventBusName: en.EventBusName, Resources: []string{}, Source: en.Source}
		if !en.Time.IsZero() {
			// Epoch seconds to the millisecond, as the SDK sends it.
			secs := float64(en.Time.UnixMilli()) / 1e3
			body.Entries[i].Time = &secs
		}
	}
	var out PutEventsOutput
	if err := e.c.call(ctx, "PutEvents", body, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// MaxInvokePayloadBytes is Lambda's limit on a synchronous invocation's
// request and response payloads: 6 MB.
const MaxInvokePayloadBytes = 6 << 20

// Lambda invokes AWS Lambda functions.
type Lambda struct {
	c *client
	// err is the configuration's error (no region, no credentials): each
	// invocation returns it, as the SDK's client does, so that an app whose
	// tools are never called in a place without AWS still starts.
	err error
}

// NewLambda returns a Lambda client from cfg (see the package doc). A
// configuration without a region or credentials gives a client whose
// invocations fail with that error; an endpoint that does not resolve is
// an error.
func NewLambda(cfg aws.Config, opts ...Option) (*Lambda, error) {
	c, err := newClient(cfg, lambdaService, opts...)
	if errors.Is(err, errIncomplete) {
		return &Lambda{c: &client{svc: lambdaService}, err: err}, nil
	}
	if err != nil {
		return nil, err
	}
	return &Lambda{c: c}, nil
}

// Endpoint returns the URL the client calls.
func (l *Lambda) Endpoint() string { return l.c.endpoint }

// CloseIdleConnections closes the pooled connections of the client's HTTP
// client not in use, when it has such a method.
func (l *Lambda) CloseIdleConnections() {
	if c, ok := l.c.http.(interface{ CloseIdleConnections() }); ok && l.err == nil {
		c.CloseIdleConnections()
	}
}

// Invocation types of InvokeInput.
const (
	InvocationRequestResponse = "RequestResponse"
	InvocationEvent           = "Event"
)

// InvokeInput is an invocation.
type InvokeInput struct {
	// FunctionName is the function's name or ARN (required); Qualifier
	// its version or alias, if any.
	FunctionName, Qualifier string
	// InvocationType is InvocationRequestResponse (the default) or
	// InvocationEvent (asynchronous).
	InvocationType string
	// Payload is the event (JSON).
	Payload []byte
}

// InvokeOutput is an invocation's result.
type InvokeOutput struct {
	// StatusCode is 200 for a synchronous invocation, 202 for an
	// asynchronous one.
	StatusCode int
	// FunctionError is set ("Unhandled") when the function failed; Payload
	// then holds its error.
	FunctionError string
	// Payload is the function's reply (synchronous invocations).
	Payload []byte
	// ExecutedVersion is the version that ran.
	ExecutedVersion string
}

// Invoke invokes a function (POST /2015-03-31/functions/{FunctionName}/
// invocations). An error answer of the Lambda API (ResourceNotFoundException,
// TooManyRequestsException with its Retry-After...) is an *Error; a
// function that failed is not an error: see FunctionError.
func (l *Lambda) Invoke(ctx context.Context, in InvokeInput) (*InvokeOutput, error) {
	const op = "Lambda.Invoke"
	if l.err != nil {
		return nil, fmt.Errorf("%s: %w", op, l.err)
	}
	if in.FunctionName == "" {
		return nil, errors.New(op + ": FunctionName is required")
	}
	h := http.Header{}
	h.Set("Content-Type", "application/octet-stream")
	if in.InvocationType != "" {
		h.Set("X-Amz-Invocation-Type", in.InvocationType)
	}
	path := "/2015-03-31/functions/" + in.FunctionName + "/invocations"
	raw := "/2015-03-31/functions/" + escapeLabel(in.FunctionName) + "/invocations"
	var query string
	if in.Qualifier != "" {
		query = "Qualifier=" + url.QueryEscape(in.Qualifier)
	}
	ans, err := l.c.send(ctx, request{op: op, path: path, rawPath: raw, query: query, header: h, body: in.Payload})
	if err != nil {
		return nil, err
	}
	return &InvokeOutput{StatusCode: ans.status, FunctionError: ans.header.Get("X-Amz-Function-Error"), Payload: ans.body,
		ExecutedVersion: ans.header.Get("X-Amz-Executed-Version")}, nil
}

// escapeLabel escapes a path label as the SDK does: every byte but the
// unreserved ones (A-Z a-z 0-9 - . _ ~) percent-encoded.
func escapeLabel(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~' {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", c)
	}
	return b.String()
}

// idPattern matches an ARN (up to a space, quote or bracket) or a
// 12-digit AWS account id. It is compiled once and never changed: a
// *regexp.Regexp is safe for concurrent use.
var idPattern = regexp.MustCompile(`\barn:aws[a-zA-Z-]*:[^\s"'<>()\[\]{},]*|\b[0-9]{12}\b`)

// HideIDs replaces the ARNs and account ids of s, AWS error text that a
// client or a model is to see, with "(hidden)": AWS messages name roles,
// resources and the account (the logs keep them).
func HideIDs(s string) string {
	return idPattern.ReplaceAllString(s, "(hidden)")
}

// serverClosedIdle is the text of net/http's unexported errServerClosedIdle:
// the pooled connection a request was given had been closed by the server
// (a keep-alive timeout) before any of the request was written on it. The
// transport replays only idempotent requests after it, never an Invoke.
const serverClosedIdle = "http: server closed idle connection"

// Undelivered reports whether err, from a call of a client here, proves
// that the request never reached the service, so that sending it again
// cannot run it twice (a Lambda Invoke, which is not idempotent): its
// connection could not be dialed, or was found closed as idle before the
// request was written (serverClosedIdle). Any other transport error (EOF,
// a reset, a timeout) may come after the request was sent, and the call
// may have run. (A request the transport could not write at all on a
// pooled connection it replays itself: every request here has GetBody.)
func Undelivered(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	var ue *url.Error
	return errors.As(err, &ue) && ue.Err != nil && ue.Err.Error() == serverClosedIdle
}
