// Package eventbus puts Lambent's events on an Amazon EventBridge bus: the
// terminal states of background responses (package worker) and the tool
// call hooks (package hooks) share it.
package eventbus

import (
	"context"
	"fmt"
	"time"

	"github.com/lambent/lambent/pkg/awsjson"
)

// API is the part of the EventBridge client Put uses (*awsjson.EventBridge).
type API interface {
	PutEvents(ctx context.Context, in awsjson.PutEventsInput) (*awsjson.PutEventsOutput, error)
}

// Source is the EventBridge source of Lambent's events.
const Source = "lambent"

// Put puts one event (source "lambent") on bus; an entry EventBridge
// refused is an error naming its code.
func Put(ctx context.Context, client API, bus, detailType string, detail []byte, at time.Time) error {
	out, err := client.PutEvents(ctx, awsjson.PutEventsInput{Entries: []awsjson.PutEventsEntry{{
		EventBusName: bus,
		Source:       Source,
		DetailType:   detailType,
		Detail:       string(detail),
		Time:         at,
	}}})
	if err != nil {
		return fmt.Errorf("put event: %w", err)
	}
	if out.FailedEntryCount > 0 {
		for _, e := range out.Entries {
			if e.ErrorCode != "" {
				return &EntryError{Code: e.ErrorCode, Message: e.ErrorMessage}
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
