// Package awsconf loads the AWS SDK configuration of Lambent's functions,
// so that regions and partitions (aws-cn, aws-us-gov), FIPS and dual-stack
// endpoints (AWS_USE_FIPS_ENDPOINT, AWS_USE_DUALSTACK_ENDPOINT), retries
// (AWS_RETRY_MODE, AWS_MAX_ATTEMPTS) and credentials work as AWS users
// expect: the SDK's default chain (config.LoadDefaultConfig: shared config
// files, profiles, SSO...) in local builds, and in Lambda builds (tag
// lambent_lambda) the same settings read from the environment Lambda sets
// (FromEnvironment), without the config package and the clients of every
// credential source it links. The SDK's clients made from its
// configuration honour the endpoint overrides AWS_ENDPOINT_URL and
// AWS_ENDPOINT_URL_<SERVICE> themselves; pkg/awsjson (SSM and Secrets
// Manager) reads them through Endpoint.
package awsconf

import (
	"os"
	"strings"
)

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
