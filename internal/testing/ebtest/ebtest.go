// Package ebtest is an EventBridge endpoint for tests: it speaks the
// PutEvents API (AWS JSON 1.1) as strictly as EventBridge checks what
// Lambent sends (a signed request, 1 to 10 entries, each with a source, a
// detail type and a JSON object as detail) and records the entries. Its
// tests drive it with the SDK's EventBridge client and with
// pkg/awsjson's, which must send the same entries.
package ebtest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/lambent/lambent/pkg/awsjson"
)

// Bus is an EventBridge endpoint that records PutEvents entries.
type Bus struct {
	mu      sync.Mutex
	entries []map[string]any
	// Client is an EventBridge client of the endpoint (NewServer): the
	// one Lambent's functions use.
	Client *awsjson.EventBridge
	// URL is the endpoint's.
	URL string
}

// ServeHTTP answers PutEvents.
func (b *Bus) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	fail := func(code, format string, a ...any) {
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		w.WriteHeader(http.StatusBadRequest)
		m, _ := json.Marshal(fmt.Sprintf(format, a...))
		_, _ = fmt.Fprintf(w, `{"__type":"%s","message":%s}`, code, m)
	}
	switch {
	case r.Method != http.MethodPost || r.URL.Path != "/":
		fail("UnknownOperationException", "%s %s", r.Method, r.URL.Path)
		return
	case r.Header.Get("X-Amz-Target") != "AWSEvents.PutEvents":
		fail("UnknownOperationException", "unexpected target %q", r.Header.Get("X-Amz-Target"))
		return
	case r.Header.Get("Content-Type") != "application/x-amz-json-1.1":
		fail("SerializationException", "content type %q", r.Header.Get("Content-Type"))
		return
	case !strings.HasPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 ") || !strings.Contains(r.Header.Get("Authorization"), "/events/aws4_request"):
		fail("MissingAuthenticationTokenException", "the request is not signed for events")
		return
	}
	var in struct {
		Entries []map[string]any `json:"Entries"`
	}
	body, _ := io.ReadAll(r.Body)
	if err := json.Unmarshal(body, &in); err != nil {
		fail("SerializationException", "%v", err)
		return
	}
	if len(in.Entries) == 0 || len(in.Entries) > 10 {
		fail("ValidationException", "%d entries: want 1 to 10", len(in.Entries))
		return
	}
	for i, e := range in.Entries {
		detail, _ := e["Detail"].(string)
		var obj map[string]any
		if e["Source"] == "" || e["Source"] == nil || e["DetailType"] == "" || e["DetailType"] == nil || json.Unmarshal([]byte(detail), &obj) != nil {
			fail("ValidationException", "entry %d: Source, DetailType and a JSON object as Detail are required", i)
			return
		}
	}
	b.mu.Lock()
	n := len(b.entries)
	b.entries = append(b.entries, in.Entries...)
	b.mu.Unlock()
	ids := make([]string, len(in.Entries))
	for i := range ids {
		ids[i] = fmt.Sprintf(`{"EventId":"e-%d"}`, n+i+1)
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	_, _ = fmt.Fprintf(w, `{"FailedEntryCount":0,"Entries":[%s]}`, strings.Join(ids, ","))
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
	b.URL = srv.URL
	client, err := awsjson.NewEventBridge(aws.Config{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(srv.URL),
		Credentials:  credentials.NewStaticCredentialsProvider("AKID", "SECRET", ""),
		HTTPClient:   srv.Client(),
	})
	if err != nil {
		t.Fatal(err)
	}
	b.Client = client
	return b
}
