// Package lambdatool runs hosted tools as separate AWS Lambda functions.
//
// It has two sides that share one payload (DESIGN.md, "Tool Lambda
// payload"):
//
//   - For tool authors, Serve turns a tools.Hosted into a Lambda function in
//     one line of main: functions/tools/<name>/main.go is
//     `lambdatool.Serve(mytool.Tool())`. The function runs the very handler
//     the in-process tools.LocalExecutor runs, through tools.RunHandler, so
//     a handler error or panic becomes an is_error reply.
//   - For the gateway, Executor is a tools.ToolExecutor that invokes those
//     functions with the Lambda Invoke API (RequestResponse), all calls of a
//     turn concurrently, and maps every failure (function error, timeout,
//     throttling, oversize payloads, malformed replies) to an is_error tool
//     result for the model rather than a failed response.
//
// The request payload is Request, the reply is Reply. Package localinvoke
// serves the same functions on a local Lambda Invoke endpoint, so the whole
// path runs without AWS.
package lambdatool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/lambent/lambent/pkg/tools"
)

// MaxPayloadBytes is the Lambda limit on a synchronous (RequestResponse)
// invocation's request and response payloads: 6 MB.
const MaxPayloadBytes = 6 << 20

// Request is the payload a tool function receives.
type Request struct {
	// CallID is the model's call_id.
	CallID string `json:"call_id"`
	// Name is the tool (function) name the model called.
	Name string `json:"name"`
	// Arguments is the JSON-encoded arguments object, as a string.
	Arguments string `json:"arguments"`
	// ResponseID is the response the call belongs to.
	ResponseID string `json:"response_id"`
}

// Reply is the payload a tool function answers with.
type Reply struct {
	// Output is the text the model receives.
	Output string `json:"output"`
	// IsError marks Output as an error message.
	IsError bool `json:"is_error"`
}

// Serve starts the Lambda runtime loop serving h: every invocation's
// Request runs h's handler and is answered with a Reply. It is the whole of
// a tool function's main and does not return.
func Serve(h tools.Hosted) {
	lambda.Start(LambdaHandler(h))
}

// LambdaHandler returns h as an aws-lambda-go Handler (what Serve starts),
// for mains that need lambda.StartWithOptions.
func LambdaHandler(h tools.Hosted) lambda.Handler {
	return lambdaHandler{h: h}
}

type lambdaHandler struct{ h tools.Hosted }

// Invoke implements lambda.Handler.
func (l lambdaHandler) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	return Handle(ctx, l.h, payload)
}

// Handle runs one invocation: it decodes payload as a Request, runs h's
// handler with tools.RunHandler and encodes the Reply. Every failure of the
// tool (a malformed request, a handler error, a panic) is an is_error
// Reply, never a Lambda function error; the returned error is reserved for
// failing to encode the reply and is nil in practice.
func Handle(ctx context.Context, h tools.Hosted, payload []byte) ([]byte, error) {
	reply := handle(ctx, h, payload)
	b, err := json.Marshal(reply)
	if err != nil {
		return nil, fmt.Errorf("lambdatool: encode reply: %w", err)
	}
	return b, nil
}

func handle(ctx context.Context, h tools.Hosted, payload []byte) Reply {
	req, err := decodeRequest(payload)
	if err != nil {
		return Reply{Output: "Error: malformed tool request: " + err.Error(), IsError: true}
	}
	if h.Handler == nil {
		return Reply{Output: fmt.Sprintf("Error: tool %q has no handler", h.Definition.Name), IsError: true}
	}
	call := tools.ToolCall{ID: req.CallID, Name: req.Name, Arguments: req.Arguments, ResponseID: req.ResponseID}
	if call.Name == "" {
		call.Name = h.Definition.Name
	}
	res := tools.RunHandler(ctx, h.Handler, call)
	return Reply{Output: res.Output, IsError: res.IsError}
}

// decodeRequest decodes a Request, which must be a JSON object whose
// arguments, when present, is a string. Unknown fields are ignored so that
// the payload can grow.
func decodeRequest(payload []byte) (Request, error) {
	var req Request
	p := bytes.TrimSpace(payload)
	if len(p) == 0 || p[0] != '{' {
		return req, errors.New(`want a JSON object {"call_id","name","arguments","response_id"}`)
	}
	if err := json.Unmarshal(p, &req); err != nil {
		return req, fmt.Errorf("want {\"call_id\",\"name\",\"arguments\" (a JSON string),\"response_id\"}: %w", err)
	}
	return req, nil
}
