//go:build lambent_lambda

package awsconf

import (
	"context"
	"os"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// Load returns the configuration of FromEnvironment: in Lambda builds (tag
// lambent_lambda), the environment Lambda sets is the whole configuration,
// and the SDK's config package (the full chain of builds without the tag)
// is left out.
func Load(context.Context) (aws.Config, error) {
	return FromEnvironment(os.Getenv)
}
