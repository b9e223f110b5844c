//go:build !lambent_lambda

package awsconf

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
)

// Load returns the SDK's default configuration (environment, shared config
// and credentials files, SSO, web identity, instance and container roles);
// in Lambda builds (tag lambent_lambda), FromEnvironment's. Its HTTP
// client keeps MaxIdleConnsPerHost idle connections a host.
func Load(ctx context.Context) (aws.Config, error) {
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return cfg, fmt.Errorf("awsconf: %w", err)
	}
	cfg.HTTPClient = ReadOnlyBodies(withPool(cfg.HTTPClient))
	return cfg, nil
}
