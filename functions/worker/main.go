// Command worker runs background responses inside AWS Lambda: SQS batches
// (with partial batch failures), EventBridge events and direct
// invocations, all through the same engine as the gateway.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/lambent/lambent/pkg/app"
	"github.com/lambent/lambent/pkg/worker"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "lambent worker:", err)
		os.Exit(1)
	}
}

func run() error {
	cfg, err := app.FromEnv(os.Getenv)
	if err != nil {
		return err
	}
	if !cfg.InLambda {
		return errors.New("the worker runs inside AWS Lambda (AWS_LAMBDA_RUNTIME_API is not set); locally, `make run` runs background responses in-process")
	}
	ctx := context.Background()
	if err := app.ResolveSecrets(ctx, &cfg, os.Getenv); err != nil {
		return err
	}
	log := app.Logger(cfg, os.Stderr)
	a, err := app.Build(ctx, cfg, log, nil)
	if err != nil {
		return err
	}
	h := &worker.Handler{Runner: a.Engine, Logger: log}
	lambda.Start(func(ctx context.Context, payload json.RawMessage) (any, error) {
		out, err := h.Invoke(ctx, payload)
		// Hook events and spans go out before Lambda freezes the process.
		a.AfterInvocation(ctx)
		return out, err
	})
	return nil
}
