//go:build lambda.norpc

package awsconf

import (
	"context"
	"errors"
	"os"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"
)

// Load returns the configuration Lambda provides in the environment.
func Load(context.Context) (aws.Config, error) {
	id, secret := os.Getenv("AWS_ACCESS_KEY_ID"), os.Getenv("AWS_SECRET_ACCESS_KEY")
	if id == "" || secret == "" {
		return aws.Config{}, errors.New("awsconf: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are not set (Lambda sets them for the function's role)")
	}
	region := os.Getenv("AWS_REGION")
	if region == "" {
		region = os.Getenv("AWS_DEFAULT_REGION")
	}
	if region == "" {
		return aws.Config{}, errors.New("awsconf: AWS_REGION is not set")
	}
	cfg := aws.Config{
		Region:      region,
		Credentials: aws.NewCredentialsCache(credentials.NewStaticCredentialsProvider(id, secret, os.Getenv("AWS_SESSION_TOKEN"))),
		Retryer:     func() aws.Retryer { return retry.NewStandard() },
	}
	if v := os.Getenv("AWS_ENDPOINT_URL"); v != "" {
		cfg.BaseEndpoint = &v
	}
	return cfg, nil
}
