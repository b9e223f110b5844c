package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/awsjson"
	"github.com/lambent/lambent/pkg/engine"
	"github.com/lambent/lambent/pkg/eventbus"
	"github.com/lambent/lambent/pkg/tenant"
	"github.com/lambent/lambent/pkg/tools"
)

// SQSAPI is the part of the SQS client the queue uses (*awsjson.SQS).
type SQSAPI interface {
	SendMessage(ctx context.Context, in awsjson.SendMessageInput) (string, error)
}

// SQSQueue enqueues jobs on an SQS queue.
type SQSQueue struct {
	Client   SQSAPI
	QueueURL string
}

// Enqueue sends the job as the message body.
func (q *SQSQueue) Enqueue(ctx context.Context, j engine.Job) error {
	body, err := json.Marshal(j)
	if err != nil {
		return err
	}
	if _, err := q.Client.SendMessage(ctx, awsjson.SendMessageInput{QueueURL: q.QueueURL, MessageBody: string(body)}); err != nil {
		return fmt.Errorf("worker: enqueue %s: %w", j.ResponseID, err)
	}
	return nil
}

// Publisher publishes "lambent.response.<status>" events on an event bus.
type Publisher struct {
	Client eventbus.API
	Bus    string
}

// maxDetailMessage bounds the error message a published event carries.
const maxDetailMessage = 16 << 10

// Detail is the detail of a published response event.
type Detail struct {
	ID string `json:"id"`
	// Tenant is the tenant the response belongs to (tenant.Default when
	// the gateway has no API keys).
	Tenant            string                 `json:"tenant"`
	Status            api.Status             `json:"status"`
	Model             string                 `json:"model"`
	Usage             *api.Usage             `json:"usage"`
	Error             *api.ResponseError     `json:"error,omitempty"`
	IncompleteDetails *api.IncompleteDetails `json:"incomplete_details,omitempty"`
	Metadata          map[string]string      `json:"metadata,omitempty"`
	CompletedAt       *int64                 `json:"completed_at,omitempty"`
}

// Publish sends one event for r.
func (p *Publisher) Publish(ctx context.Context, r *api.Response) error {
	rerr := r.Error
	if rerr != nil && len(rerr.Message) > maxDetailMessage {
		// The event must fit EventBridge's 256 KB, or it is never
		// published; the response keeps the whole message.
		c := *rerr
		c.Message = tools.Truncate(c.Message, maxDetailMessage)
		rerr = &c
	}
	detail, err := json.Marshal(Detail{ID: r.ID, Tenant: tenant.From(ctx), Status: r.Status, Model: r.Model, Usage: r.Usage, Error: rerr, IncompleteDetails: r.IncompleteDetails, Metadata: r.Metadata, CompletedAt: r.CompletedAt})
	if err != nil {
		return err
	}
	if err := eventbus.Put(ctx, p.Client, p.Bus, "lambent.response."+string(r.Status), detail, time.Now()); err != nil {
		return fmt.Errorf("worker: publish %s: %w", r.ID, err)
	}
	return nil
}
