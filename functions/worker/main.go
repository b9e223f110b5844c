// Command worker runs background responses inside AWS Lambda: SQS batches
// (with partial batch failures), EventBridge events and direct
// invocations, all through the same engine as the gateway.
package main

import (
	"context"
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
	ctx := context.Background()
	a, cfg, log, err := app.BuildInLambda(ctx, "the worker runs inside AWS Lambda (AWS_LAMBDA_RUNTIME_API is not set); locally, `make run` runs background responses in-process")
	if err != nil {
		return err
	}
	h := &worker.Handler{Runner: a.Engine, Logger: log, RequireTenant: cfg.JobTenantRequired()}
	// Hook events and spans go out before Lambda freezes the process.
	lambda.Start(a.LambdaHandler(h.Invoke))
	return nil
}
