// Package awsconf loads the AWS SDK configuration of Lambent's functions:
// the SDK's default chain (config.LoadDefaultConfig) in every build, so
// that regions and partitions (aws-cn, aws-us-gov), FIPS and dual-stack
// endpoints (AWS_USE_FIPS_ENDPOINT, AWS_USE_DUALSTACK_ENDPOINT), retries
// (AWS_RETRY_MODE, AWS_MAX_ATTEMPTS), shared config files and credentials
// (in Lambda: the function's role from the environment) work as AWS users
// expect. The SDK's clients made from its configuration honour the
// endpoint overrides AWS_ENDPOINT_URL and AWS_ENDPOINT_URL_<SERVICE>
// themselves; pkg/awsjson (SSM and Secrets Manager) reads them through
// Endpoint.
package awsconf

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
)

// Load returns the SDK's default configuration (environment, shared config
// and credentials files, SSO, instance and container roles).
func Load(ctx context.Context) (aws.Config, error) {
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return cfg, fmt.Errorf("awsconf: %w", err)
	}
	return cfg, nil
}

// Endpoint returns the endpoint override for a service ("DYNAMODB",
// "LAMBDA", "SQS", "EVENTBRIDGE", "SSM", "SECRETS_MANAGER"):
// AWS_ENDPOINT_URL_<SERVICE>, else AWS_ENDPOINT_URL; nil when neither is
// set. The SDK's clients made from Load's configuration apply it already;
// it serves configurations built by hand and pkg/awsjson.
func Endpoint(service string) *string {
	for _, k := range []string{"AWS_ENDPOINT_URL_" + strings.ToUpper(service), "AWS_ENDPOINT_URL"} {
		if v := os.Getenv(k); v != "" {
			return &v
		}
	}
	return nil
}
