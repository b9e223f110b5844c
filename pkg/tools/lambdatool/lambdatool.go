// Package lambdatool is the small SDK hosted tools are built with as their
// own AWS Lambda functions: Serve turns a tools.Hosted into a Lambda
// function in one line of main (functions/tools/<name>/main.go is
// `lambdatool.Serve(mytool.Tool())`).
//
// The payload is docs/architecture.md's "Tool Lambda payload": the request is a
// tools.ToolCall ({"call_id","name","arguments","response_id","tenant"}), the reply a
// tools.ToolResult ({"output","is_error"}). The function runs the very
// handler the in-process tools.Registry runs, through tools.RunHandler, so
// a handler error or panic becomes an is_error reply.
//
// The package links aws-lambda-go and pkg/tools only, none of the gateway's
// AWS clients, so a tool function stays small. The gateway's side (the
// executor that invokes tool functions) is package lambdaexec.
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

// Serve starts the Lambda runtime loop serving h: every invocation's
// tools.ToolCall runs h's handler and is answered with a tools.ToolResult.
// It is the whole of a tool function's main and does not return.
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

// Handle runs one invocation: it decodes payload as a tools.ToolCall, runs
// h's handler with tools.RunHandler and encodes the tools.ToolResult. Every
// failure of the tool (a malformed request, a handler error, a panic) is an
// is_error reply, never a Lambda function error; the returned error is
// reserved for failing to encode the reply and is nil in practice.
func Handle(ctx context.Context, h tools.Hosted, payload []byte) ([]byte, error) {
	b, err := json.Marshal(handle(ctx, h, payload))
	if err != nil {
		return nil, fmt.Errorf("lambdatool: encode reply: %w", err)
	}
	return b, nil
}

func handle(ctx context.Context, h tools.Hosted, payload []byte) *tools.ToolResult {
	call, err := decodeCall(payload)
	if err != nil {
		return &tools.ToolResult{CallID: call.ID, Output: "Error: malformed tool request: " + err.Error(), IsError: true}
	}
	if h.Handler == nil {
		return &tools.ToolResult{CallID: call.ID, Output: fmt.Sprintf("Error: tool %q has no handler", h.Definition.Name), IsError: true}
	}
	if call.Name == "" {
		call.Name = h.Definition.Name
	}
	return tools.RunHandler(ctx, h.Handler, call)
}

// decodeCall decodes a tools.ToolCall, which must be a JSON object whose
// arguments, when present, is a string. Unknown fields are ignored so that
// the payload can grow.
func decodeCall(payload []byte) (tools.ToolCall, error) {
	var call tools.ToolCall
	p := bytes.TrimSpace(payload)
	if len(p) == 0 || p[0] != '{' {
		return call, errors.New(`want a JSON object {"call_id","name","arguments","response_id","tenant"}`)
	}
	if err := json.Unmarshal(p, &call); err != nil {
		return call, fmt.Errorf("want {\"call_id\",\"name\",\"arguments\" (a JSON string),\"response_id\",\"tenant\"}: %w", err)
	}
	return call, nil
}
