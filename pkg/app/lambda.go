package app

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
)

// BuildInLambda is the start of a function that only runs inside AWS
// Lambda (the worker, the WebSocket function): the configuration from the
// environment, its secrets, the logger and the app. elsewhere is the error
// when AWS_LAMBDA_RUNTIME_API is not set (what to run locally instead).
func BuildInLambda(ctx context.Context, elsewhere string) (*App, Config, *slog.Logger, error) {
	cfg, err := FromEnv(os.Getenv)
	if err != nil {
		return nil, cfg, nil, err
	}
	if !cfg.InLambda {
		return nil, cfg, nil, errors.New(elsewhere)
	}
	if err := ResolveSecrets(ctx, &cfg, os.Getenv); err != nil {
		return nil, cfg, nil, err
	}
	log := Logger(cfg, os.Stderr)
	a, err := Build(ctx, cfg, log, nil)
	if err != nil {
		return nil, cfg, nil, err
	}
	return a, cfg, log, nil
}

// LambdaFunc is the handler of a Lambda function (lambda.Start).
type LambdaFunc = func(ctx context.Context, payload json.RawMessage) (any, error)

// StartInvocation returns ctx of a Lambda invocation whose log records
// carry the invocation's fields under Powertools' names
// (function_request_id, function_name, cold_start, xray_trace_id; see
// requestid.Invocations): the first invocation of the app is its cold
// start.
func (a *App) StartInvocation(ctx context.Context) context.Context {
	return a.invocations.Start(ctx)
}

// LambdaHandler wraps h, the handler of a function whose work ends when h
// returns (the worker, the WebSocket function): each invocation starts with
// StartInvocation and ends with AfterInvocation, so that hook events and
// spans leave before Lambda freezes the process. (The gateway's streamed
// replies outlive its handler: its HTTP handler flushes after each request.)
func (a *App) LambdaHandler(h LambdaFunc) LambdaFunc {
	return func(ctx context.Context, payload json.RawMessage) (any, error) {
		ctx = a.StartInvocation(ctx)
		defer a.AfterInvocation(ctx)
		return h(ctx, payload)
	}
}
