// Command websocket serves WebSocket mode on AWS: the Lambda function of
// the API Gateway WebSocket API ($connect, $default, $disconnect) and of
// the SQS FIFO queue its $default route fills (see package
// pkg/wsapi/apigw). Locally, the gateway serves WebSocket mode itself on
// /v1/responses.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/service/apigatewaymanagementapi"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/lambent/lambent/pkg/app"
	"github.com/lambent/lambent/pkg/awsconf"
	"github.com/lambent/lambent/pkg/store/dynamodb"
	"github.com/lambent/lambent/pkg/wsapi/apigw"
)

// Environment of the WebSocket function (besides app.FromEnv's).
const (
	// envTable is the connections table (pk, sk, TTL expires_at).
	envTable = "LAMBENT_WEBSOCKET_TABLE"
	// envQueueURL is the SQS FIFO queue of the turns.
	envQueueURL = "LAMBENT_WEBSOCKET_QUEUE_URL"
	// envEndpoint optionally overrides the Management API endpoint
	// (default https://{domainName}/{stage} of the route event).
	envEndpoint = "LAMBENT_WEBSOCKET_ENDPOINT"
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
	h, err := newHandler(ctx, a, cfg, log, os.Getenv)
	if err != nil {
		return err
	}
	lambda.Start(h.Invoke)
	return nil
}

// newHandler wires the WebSocket handler over the app's engine.
func newHandler(ctx context.Context, a *app.App, cfg app.Config, log *slog.Logger, getenv func(string) string) (*apigw.Handler, error) {
	table, queueURL := getenv(envTable), getenv(envQueueURL)
	if table == "" || queueURL == "" {
		return nil, fmt.Errorf("%s and %s are required", envTable, envQueueURL)
	}
	awsCfg, err := awsconf.Load(ctx)
	if err != nil {
		return nil, err
	}
	conns, err := apigw.NewConnections(dynamodb.NewClient(awsCfg), table)
	if err != nil {
		return nil, err
	}
	return apigw.New(apigw.Config{
		Service:     a.Engine,
		Connections: conns,
		Management:  apigatewaymanagementapi.NewFromConfig(awsCfg),
		Queue:       sqs.NewFromConfig(awsCfg),
		QueueURL:    queueURL,
		Tenants:     cfg.Tenants(),
		Endpoint:    getenv(envEndpoint),
		Logger:      log,
	})
}
