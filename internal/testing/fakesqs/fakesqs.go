// Package fakesqs is an Amazon SQS endpoint on loopback for tests: it
// answers SendMessage over the SQS JSON 1.0 protocol (POST / with
// X-Amz-Target AmazonSQS.SendMessage, signed for sqs), with the MD5 of the
// body the SDK checks, refuses what SQS refuses (no queue URL or body, a
// FIFO queue's message without group and deduplication ids), and keeps the
// messages for the test to deliver as the events.SQSEvent the Lambda event
// source mapping would send. Point a client at URL (AWS_ENDPOINT_URL_SQS
// or its BaseEndpoint). Its tests drive it with the SDK's SQS client and
// with pkg/awsjson's, which must send the same messages.
package fakesqs

import (
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"

	"github.com/aws/aws-lambda-go/events"
)

// Message is one message as sent.
type Message struct {
	QueueURL               string `json:"QueueUrl"`
	MessageBody            string `json:"MessageBody"`
	MessageGroupID         string `json:"MessageGroupId"`
	MessageDeduplicationID string `json:"MessageDeduplicationId"`
}

// Server is a running fake SQS endpoint.
type Server struct {
	*httptest.Server

	mu   sync.Mutex
	msgs []Message
}

// Start starts a Server on a loopback port.
func Start() *Server {
	s := &Server{}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serveHTTP))
	return s
}

// Take returns the messages sent since the last Take and forgets them.
func (s *Server) Take() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.msgs
	s.msgs = nil
	return m
}

// Event is the SQS event delivering msgs, as a Lambda event source
// mapping sends it (FIFO attributes included).
func Event(msgs ...Message) events.SQSEvent {
	var ev events.SQSEvent
	for i, m := range msgs {
		ev.Records = append(ev.Records, events.SQSMessage{
			MessageId:      fmt.Sprintf("00000000-0000-4000-8000-%012d", i),
			ReceiptHandle:  "receipt-" + strconv.Itoa(i),
			Body:           m.MessageBody,
			Md5OfBody:      md5Hex(m.MessageBody),
			EventSource:    "aws:sqs",
			EventSourceARN: "arn:aws:sqs:us-east-1:123456789012:lambent-websocket.fifo",
			AWSRegion:      "us-east-1",
			Attributes: map[string]string{
				"MessageGroupId": m.MessageGroupID, "MessageDeduplicationId": m.MessageDeduplicationID,
				"ApproximateReceiveCount": "1", "SequenceNumber": strconv.Itoa(i + 1),
			},
		})
	}
	return ev
}

func md5Hex(s string) string {
	sum := md5.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}

func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	fail := func(code, format string, a ...any) {
		w.WriteHeader(http.StatusBadRequest)
		m, _ := json.Marshal(fmt.Sprintf(format, a...))
		_, _ = fmt.Fprintf(w, `{"__type":"com.amazonaws.sqs#%s","message":%s}`, code, m)
	}
	auth := r.Header.Get("Authorization")
	switch {
	case r.Method != http.MethodPost || r.URL.Path != "/" || r.Header.Get("X-Amz-Target") != "AmazonSQS.SendMessage":
		fail("InvalidAction", "unsupported request %s %s, target %q", r.Method, r.URL.Path, r.Header.Get("X-Amz-Target"))
		return
	case r.Header.Get("Content-Type") != "application/x-amz-json-1.0":
		fail("InvalidParameterValue", "content type %q", r.Header.Get("Content-Type"))
		return
	case !strings.HasPrefix(auth, "AWS4-HMAC-SHA256 ") || !strings.Contains(auth, "/sqs/aws4_request"):
		fail("MissingAuthenticationToken", "the request is not signed for sqs")
		return
	}
	var m Message
	body, err := io.ReadAll(r.Body)
	if err == nil {
		err = json.Unmarshal(body, &m)
	}
	if err != nil || m.QueueURL == "" || m.MessageBody == "" {
		fail("MissingParameter", "bad SendMessage request (QueueUrl and MessageBody are required): %v", err)
		return
	}
	if strings.HasSuffix(m.QueueURL, ".fifo") && (m.MessageGroupID == "" || m.MessageDeduplicationID == "") {
		fail("MissingParameter", "a FIFO queue's message needs MessageGroupId and MessageDeduplicationId (the queue has no content-based deduplication)")
		return
	}
	s.mu.Lock()
	s.msgs = append(s.msgs, m)
	n := len(s.msgs)
	s.mu.Unlock()
	_, _ = fmt.Fprintf(w, `{"MD5OfMessageBody":%q,"MessageId":"00000000-0000-4000-8000-%012d","SequenceNumber":"%d"}`, md5Hex(m.MessageBody), n, n)
}
