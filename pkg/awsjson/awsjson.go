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
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

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
}

var (
	ssmService = service{envID: "SSM", signingName: "ssm", targetPrefix: "AmazonSSM", jsonVersion: "1.1", endpoint: standardEndpoint("ssm", govFIPSPlainUnlessDualStack)}
	smService  = service{envID: "SECRETS_MANAGER", signingName: "secretsmanager", targetPrefix: "secretsmanager", jsonVersion: "1.1", endpoint: secretsManagerEndpoint}
	sqsService = service{envID: "SQS", signingName: "sqs", targetPrefix: "AmazonSQS", jsonVersion: "1.0", queryMode: true, endpoint: standardEndpoint("sqs", govFIPSPlainUnlessDualStack)}
	ebService  = service{envID: "EVENTBRIDGE", signingName: "events", targetPrefix: "AWSEvents", jsonVersion: "1.1", endpoint: standardEndpoint("events", govFIPSPlain)}
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
}

func newClient(cfg aws.Config, svc service) (*client, error) {
	if cfg.Region == "" {
		return nil, fmt.Errorf("awsjson: %s: no region configured (AWS_REGION)", svc.signingName)
	}
	if cfg.Credentials == nil {
		return nil, fmt.Errorf("awsjson: %s: no credentials provider configured", svc.signingName)
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
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s: HTTP %d %s: %s", e.Operation, e.StatusCode, e.Code, e.Message)
}

// ErrorCode returns e.Code (the SDK's retryers read it).
func (e *Error) ErrorCode() string { return e.Code }

// HTTPStatusCode returns e.StatusCode (the SDK's retryers read it).
func (e *Error) HTTPStatusCode() int { return e.StatusCode }

// call sends op with the JSON body in and decodes the answer into out,
// retrying what the retryer deems retryable.
func (c *client) call(ctx context.Context, op string, in, out any) error {
	target := c.svc.targetPrefix + "." + op
	body, err := json.Marshal(in)
	if err != nil {
		return fmt.Errorf("%s: %w", target, err)
	}
	sum := sha256.Sum256(body)
	payloadHash := hex.EncodeToString(sum[:])
	for attempt := 1; ; attempt++ {
		err = c.attempt(ctx, target, body, payloadHash, out)
		if err == nil || ctx.Err() != nil || attempt >= c.retryer.MaxAttempts() || !c.retryer.IsErrorRetryable(err) {
			return err
		}
		delay, derr := c.retryer.RetryDelay(attempt, err)
		if derr != nil {
			return err
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
	}
}

func (c *client) attempt(ctx context.Context, target string, body []byte, payloadHash string, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.endpoint, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("%s: %w", target, err)
	}
	req.Header.Set("Content-Type", "application/x-amz-json-"+c.svc.jsonVersion)
	req.Header.Set("X-Amz-Target", target)
	if c.svc.queryMode {
		req.Header.Set("X-Amzn-Query-Mode", "true")
	}
	creds, err := c.creds.Retrieve(ctx)
	if err != nil {
		return fmt.Errorf("%s: retrieve credentials: %w", target, err)
	}
	if err := c.signer.SignHTTP(ctx, creds, req, payloadHash, c.svc.signingName, c.region, time.Now()); err != nil {
		return fmt.Errorf("%s: sign: %w", target, err)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("%s: %w", target, err)
	}
	defer func() { _ = resp.Body.Close() }()
	data, err := io.ReadAll(io.LimitReader(resp.Body, MaxResponseBytes+1))
	if err != nil {
		return fmt.Errorf("%s: read answer: %w", target, err)
	}
	if len(data) > MaxResponseBytes {
		return fmt.Errorf("%s: answer over %d bytes", target, MaxResponseBytes)
	}
	if resp.StatusCode/100 != 2 {
		return decodeError(target, resp, data)
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("%s: decode answer: %w", target, err)
	}
	return nil
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
