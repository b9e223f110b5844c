package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/engine"
)

// SQSAPI is the part of the SQS client the queue uses.
type SQSAPI interface {
	SendMessage(ctx context.Context, in *sqs.SendMessageInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
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
	if _, err := q.Client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(q.QueueURL), MessageBody: aws.String(string(body))}); err != nil {
		return fmt.Errorf("worker: enqueue %s: %w", j.ResponseID, err)
	}
	return nil
}

// EventBridgeAPI is the part of the EventBridge client the publisher uses.
type EventBridgeAPI interface {
	PutEvents(ctx context.Context, in *eventbridge.PutEventsInput, optFns ...func(*eventbridge.Options)) (*eventbridge.PutEventsOutput, error)
}

// Source is the EventBridge source of Lambent's events.
const Source = "lambent"

// Publisher publishes "lambent.response.<status>" events on an event bus.
type Publisher struct {
	Client EventBridgeAPI
	Bus    string
}

// Detail is the detail of a published response event.
type Detail struct {
	ID                string                 `json:"id"`
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
	detail, err := json.Marshal(Detail{ID: r.ID, Status: r.Status, Model: r.Model, Usage: r.Usage, Error: r.Error, IncompleteDetails: r.IncompleteDetails, Metadata: r.Metadata, CompletedAt: r.CompletedAt})
	if err != nil {
		return err
	}
	if err := PutEvent(ctx, p.Client, p.Bus, "lambent.response."+string(r.Status), detail, time.Now()); err != nil {
		return fmt.Errorf("worker: publish %s: %w", r.ID, err)
	}
	return nil
}

// PutEvent puts one event (source "lambent") on bus; an entry EventBridge
// refused is an error naming its code.
func PutEvent(ctx context.Context, client EventBridgeAPI, bus, detailType string, detail []byte, at time.Time) error {
	out, err := client.PutEvents(ctx, &eventbridge.PutEventsInput{Entries: []ebtypes.PutEventsRequestEntry{{
		EventBusName: aws.String(bus),
		Source:       aws.String(Source),
		DetailType:   aws.String(detailType),
		Detail:       aws.String(string(detail)),
		Resources:    []string{},
		Time:         aws.Time(at),
	}}})
	if err != nil {
		return fmt.Errorf("put event: %w", err)
	}
	if out.FailedEntryCount > 0 {
		for _, e := range out.Entries {
			if e.ErrorCode != nil {
				return &EntryError{Code: aws.ToString(e.ErrorCode), Message: aws.ToString(e.ErrorMessage)}
			}
		}
		return &EntryError{Message: "the entry failed"}
	}
	return nil
}

// EntryError is an event EventBridge refused although the PutEvents call
// succeeded: its entry's error code and message.
type EntryError struct {
	Code, Message string
}

// Error implements error.
func (e *EntryError) Error() string {
	if e.Code == "" {
		return "put event: " + e.Message
	}
	return "put event: " + e.Code + ": " + e.Message
}
