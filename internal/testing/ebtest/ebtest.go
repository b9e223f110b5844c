// Package ebtest is an EventBridge endpoint for tests: it speaks the
// PutEvents API (AWS JSON 1.1) and records the entries, so that code under
// test uses the real aws-sdk-go-v2 EventBridge client.
package ebtest

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
)

// Bus is an EventBridge endpoint that records PutEvents entries.
type Bus struct {
	mu      sync.Mutex
	entries []map[string]any
	// Client is an EventBridge client of the endpoint (NewServer).
	Client *eventbridge.Client
}

// ServeHTTP answers PutEvents.
func (b *Bus) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("X-Amz-Target") != "AWSEvents.PutEvents" {
		http.Error(w, "unexpected target "+r.Header.Get("X-Amz-Target"), http.StatusBadRequest)
		return
	}
	var in struct {
		Entries []map[string]any `json:"Entries"`
	}
	body, _ := io.ReadAll(r.Body)
	if err := json.Unmarshal(body, &in); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	b.mu.Lock()
	b.entries = append(b.entries, in.Entries...)
	b.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	_, _ = w.Write([]byte(`{"FailedEntryCount":0,"Entries":[{"EventId":"e-1"}]}`))
}

// All returns the entries recorded so far, in arrival order.
func (b *Bus) All() []map[string]any {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]map[string]any(nil), b.entries...)
}

// NewServer serves a Bus on a local test server (closed by t.Cleanup) and
// gives it a client.
func NewServer(t testing.TB) *Bus {
	t.Helper()
	b := &Bus{}
	srv := httptest.NewServer(b)
	t.Cleanup(srv.Close)
	b.Client = eventbridge.New(eventbridge.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(srv.URL),
		Credentials:  credentials.NewStaticCredentialsProvider("AKID", "SECRET", ""),
		HTTPClient:   srv.Client(),
	})
	return b
}
