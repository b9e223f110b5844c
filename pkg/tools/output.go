package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/lambent/lambent/pkg/tooldef"
)

// Hosted tools that serve validated output (docs/validated-output.md): a
// request's output tool names them as "validators" and "reflection". Both
// are called with the output as {"output": <the output>}; a validator
// replies {"valid": bool, "errors": [string]}, a reflection handler with
// the text the model reads. Like every hosted tool they run in-process
// (Registry) or as their own Lambda function (lambdatool.Serve).

// ValidatorFunc checks an output: it returns the problems it found, none
// when the output is valid. A returned error is a failure of the validator
// itself (the output counts as not validated).
type ValidatorFunc func(ctx context.Context, output json.RawMessage) (problems []string, err error)

// ReflectorFunc turns an output into the text the model reviews before it
// submits.
type ReflectorFunc func(ctx context.Context, output json.RawMessage) (string, error)

// outputParameters is the arguments schema of validator and reflection
// tools.
const outputParameters = `{"type":"object","properties":{"output":{"description":"The output to check."}},"required":["output"]}`

// ValidatorReply is a validator tool's reply.
type ValidatorReply struct {
	Valid  bool     `json:"valid"`
	Errors []string `json:"errors"`
}

// Validator returns a hosted validator tool named name that checks outputs
// with fn and replies with the validator contract.
func Validator(name, description string, fn ValidatorFunc) Hosted {
	return outputTool(name, description, func(ctx context.Context, output json.RawMessage) (string, error) {
		problems, err := fn(ctx, output)
		if err != nil {
			return "", err
		}
		b, err := json.Marshal(ValidatorReply{Valid: len(problems) == 0, Errors: append([]string{}, problems...)})
		if err != nil {
			return "", fmt.Errorf("encode validator reply: %w", err)
		}
		return string(b), nil
	})
}

// Reflector returns a hosted reflection tool named name whose text for
// each output fn writes.
func Reflector(name, description string, fn ReflectorFunc) Hosted {
	return outputTool(name, description, fn)
}

func outputTool(name, description string, fn func(ctx context.Context, output json.RawMessage) (string, error)) Hosted {
	return Hosted{
		Definition: tooldef.ToolDefinition{Name: name, Description: description, Parameters: json.RawMessage(outputParameters)},
		Handler: func(ctx context.Context, call ToolCall) (string, error) {
			var in struct {
				Output json.RawMessage `json:"output"`
			}
			if err := json.Unmarshal([]byte(call.Arguments), &in); err != nil {
				return "", fmt.Errorf("arguments must be {\"output\": …}: %w", err)
			}
			if len(in.Output) == 0 {
				return "", errors.New(`arguments must be {"output": …}: output is missing`)
			}
			return fn(ctx, in.Output)
		},
	}
}
