// Command websocket serves WebSocket mode on AWS: the Lambda function of
// the API Gateway WebSocket API ($connect, $default, $disconnect) and of
// the SQS FIFO queue its $default route fills (see package
// pkg/wsapi/apigw). Locally, the gateway serves WebSocket mode itself on
// /v1/responses.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/service/apigatewaymanagementapi"

	"github.com/lambent/lambent/pkg/app"
	"github.com/lambent/lambent/pkg/awsjson"
	"github.com/lambent/lambent/pkg/store/dynamodb"
	"github.com/lambent/lambent/pkg/wsapi/apigw"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "lambent websocket:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx := context.Background()
	a, cfg, log, err := app.BuildInLambda(ctx, "the WebSocket function runs inside AWS Lambda (AWS_LAMBDA_RUNTIME_API is not set); locally, the gateway serves WebSocket mode on /v1/responses")
	if err != nil {
		return err
	}
	defer a.Close()
	h, err := newHandler(a, cfg, log)
	if err != nil {
		return err
	}
	// Each invocation's log lines carry the Lambda fields, and hook events,
	// spans and metrics leave before Lambda freezes the process.
	lambda.Start(a.LambdaHandler(h.Invoke))
	return nil
}

// newHandler wires the WebSocket handler over the app's engine, with the
// WebSocket part of the configuration (app.WebSocketConfig) and the app's
// AWS configuration.
func newHandler(a *app.App, cfg app.Config, log *slog.Logger) (*apigw.Handler, error) {
	table, queueURL := cfg.WebSocket.Table, cfg.WebSocket.QueueURL
	if table == "" || queueURL == "" {
		return nil, errors.New("LAMBENT_WEBSOCKET_TABLE and LAMBENT_WEBSOCKET_QUEUE_URL are required")
	}
	awsCfg, err := a.AWS()
	if err != nil {
		return nil, err
	}
	conns, err := apigw.NewConnections(dynamodb.NewClient(awsCfg), table)
	if err != nil {
		return nil, err
	}
	conns.TenantTurns = cfg.Limits.TenantWebSocketTurns
	queue, err := awsjson.NewSQS(awsCfg)
	if err != nil {
		return nil, err
	}
	return apigw.New(apigw.Config{
		Service:     a.Engine,
		Connections: conns,
		Management:  apigatewaymanagementapi.NewFromConfig(awsCfg),
		Queue:       queue,
		QueueURL:    queueURL,
		Tenants:     cfg.Tenants(),
		// DynamoDB is read by every instance: stored responses are read
		// from it, the connection keeps only their id.
		SharedStore: cfg.Store.Kind == "dynamodb",
		Endpoint:    cfg.WebSocket.Endpoint,
		Logger:      log,
	})
}
