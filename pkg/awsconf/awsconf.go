// Package awsconf loads the AWS SDK configuration of Lambent's functions.
//
// Lambda builds (tag lambda.norpc, as `make build` and SAM use) read the
// configuration Lambda puts in the environment — the role's credentials
// (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN) and
// AWS_REGION — without the SDK's config loader, whose SSO, STS and shared
// file support Lambda never uses and which adds about 2 MB to every
// bootstrap. Other builds (local runs, tests) use the SDK's full default
// chain. Both honour the endpoint overrides AWS_ENDPOINT_URL and
// AWS_ENDPOINT_URL_<SERVICE>.
package awsconf

import (
	"os"
	"strings"
)

// Endpoint returns the endpoint override for a service ("DYNAMODB",
// "LAMBDA", "SQS", "EVENTBRIDGE", "SSM"): AWS_ENDPOINT_URL_<SERVICE>, else
// AWS_ENDPOINT_URL; nil when neither is set.
func Endpoint(service string) *string {
	for _, k := range []string{"AWS_ENDPOINT_URL_" + strings.ToUpper(service), "AWS_ENDPOINT_URL"} {
		if v := os.Getenv(k); v != "" {
			return &v
		}
	}
	return nil
}
