package hooks

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/lambent/lambent/pkg/awsjson"
	"github.com/lambent/lambent/pkg/egress"
	"github.com/lambent/lambent/pkg/eventbus"
)

// EventBridge puts each event on a bus: source "lambent", detail-type the
// event's type, detail the event.
type EventBridge struct {
	Client eventbus.API
	// Bus is the event bus name or ARN.
	Bus string
}

// Name implements Sink.
func (*EventBridge) Name() string { return "eventbridge" }

// Deliver implements Sink.
func (s *EventBridge) Deliver(ctx context.Context, ev *Event, body []byte) error {
	return eventbus.Put(ctx, s.Client, s.Bus, ev.Type, body, ev.Timestamp)
}

// LambdaInvoker is the part of the Lambda client (*awsjson.Lambda) Lambda
// uses.
type LambdaInvoker interface {
	Invoke(ctx context.Context, in awsjson.InvokeInput) (*awsjson.InvokeOutput, error)
}

// Lambda invokes a function asynchronously (InvocationType Event) with
// each event as its payload: Lambda queues the event, so the delivery ends
// as soon as Lambda has accepted it.
type Lambda struct {
	Client LambdaInvoker
	// Function is the function's name or ARN.
	Function string
}

// Name implements Sink.
func (*Lambda) Name() string { return "lambda" }

// Deliver implements Sink. An invocation that provably never reached
// Lambda (awsjson.Undelivered: a stale pooled connection, a failed dial)
// is sent once more; one that may have reached it is not.
func (s *Lambda) Deliver(ctx context.Context, _ *Event, body []byte) error {
	in := awsjson.InvokeInput{FunctionName: s.Function, InvocationType: awsjson.InvocationEvent, Payload: body}
	out, err := s.Client.Invoke(ctx, in)
	if err != nil && awsjson.Undelivered(err) {
		out, err = s.Client.Invoke(ctx, in)
	}
	if err != nil {
		return fmt.Errorf("invoke %s: %w", s.Function, err)
	}
	if out.StatusCode != http.StatusAccepted {
		return &DeliveryError{Code: CodeRejected, Err: fmt.Errorf("invoke %s: status %d, want 202", s.Function, out.StatusCode)}
	}
	return nil
}

// maxReply bounds what is read of a webhook's reply for its error; the
// rest is drained (egress.DrainClose) to reuse the connection.
const maxReply = 4 << 10

// Webhook posts each event as JSON to a URL, through fetch_url's SSRF
// guard: every connection, redirects included, must reach a public address
// or one the guard's allow-list names. A reply other than 2xx is a failure
// (code http_<status>). Its errors name the URL without its query (which
// may hold a token).
type Webhook struct {
	url    string
	client *http.Client
	// shown is the URL as errors name it (egress.ShownURL).
	shown string
}

// NewWebhook returns the webhook for rawURL (http or https), with the SSRF
// guard's allow-list allow (LAMBENT_FETCH_ALLOW_HOSTS). Its errors name
// rawURL without its query, fragment and user information.
func NewWebhook(rawURL string, allow []string) (*Webhook, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // without the URL
		}
		return nil, fmt.Errorf("hooks: webhook URL %s: %w", egress.ShownURL(rawURL), err)
	}
	g := egress.New(allow)
	if err := g.CheckURL(u); err != nil {
		return nil, fmt.Errorf("hooks: webhook URL %s: %w", egress.ShownURL(rawURL), err)
	}
	return &Webhook{url: u.String(), client: g.Client(nil, true), shown: egress.ShownURL(rawURL)}, nil
}

// Name implements Sink.
func (*Webhook) Name() string { return "webhook" }

// Deliver implements Sink.
func (s *Webhook) Deliver(ctx context.Context, ev *Event, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "lambent-hooks")
	req.Header.Set("X-Lambent-Event", ev.Type)
	resp, err := s.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			ue.URL = s.shown
		}
		return err
	}
	defer func() { _ = egress.DrainClose(resp.Body) }()
	reply, _ := io.ReadAll(io.LimitReader(resp.Body, maxReply))
	if resp.StatusCode/100 != 2 {
		return &DeliveryError{Code: httpCode(resp.StatusCode), Err: fmt.Errorf("POST %s: %s: %s", s.shown, resp.Status, strings.TrimSpace(string(reply)))}
	}
	return nil
}

// CloseIdleConnections closes the webhook's idle connections.
func (s *Webhook) CloseIdleConnections() { s.client.CloseIdleConnections() }
