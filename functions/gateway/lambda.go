package main

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/lambent/lambent/pkg/app"
	"github.com/lambent/lambent/pkg/lambdaio"
)

// serveLambda runs the gateway inside AWS Lambda: every invocation, from
// the function URL (response streaming), the REST API (streaming, or
// buffered when its stage says so) or an HTTP API (buffered), is served by
// the app's HTTP handler through lambdaio. Like lambda.Start it does not
// return: a failing runtime loop ends the process.
func serveLambda(a *app.App) error {
	lambda.Start(lambdaHandler(a))
	return errors.New("lambda runtime loop ended")
}

// lambdaHandler is the function's Lambda handler: the event's shape picks
// the adapter (see lambdaio.Detect); each invocation's log lines carry the
// Lambda fields (app.StartInvocation). Telemetry is flushed by the app's
// HTTP handler after each request, as a streamed reply outlives this
// handler.
func lambdaHandler(a *app.App) app.LambdaFunc {
	h := lambdaio.New(a.Handler, lambdaio.Config{})
	return func(ctx context.Context, payload json.RawMessage) (any, error) {
		return h.Handle(a.StartInvocation(ctx), payload)
	}
}
