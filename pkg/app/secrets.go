package app

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/lambent/lambent/pkg/awsconf"
)

// Environment names of the provider's API key.
const (
	// EnvProviderAPIKey holds the provider's bearer token itself (local runs).
	EnvProviderAPIKey = "LAMBENT_PROVIDER_API_KEY"
	// EnvProviderAPIKeySSM names the SSM Parameter Store parameter (usually a
	// SecureString) that holds the token; template.yaml sets it so the key is
	// never a plain environment value or template parameter.
	EnvProviderAPIKeySSM = "LAMBENT_PROVIDER_API_KEY_SSM"
)

// ParameterGetter reads the decrypted value of an SSM parameter.
type ParameterGetter interface {
	GetParameter(ctx context.Context, name string) (string, error)
}

// ResolveProviderKey fills cfg.ProviderAPIKey from SSM Parameter Store when
// LAMBENT_PROVIDER_API_KEY is empty and LAMBENT_PROVIDER_API_KEY_SSM names a
// parameter: GetParameter with decryption, through an SSM client from the
// SDK's default configuration (region, credentials, and AWS_ENDPOINT_URL_SSM
// from the environment). It does nothing, and loads no AWS configuration,
// when a key is already set or no parameter is named. Mains call it after
// FromEnv.
func ResolveProviderKey(ctx context.Context, cfg *Config, getenv func(string) string) error {
	name, ok := providerKeyParameter(cfg, getenv)
	if !ok {
		return nil
	}
	awsCfg, err := awsconf.Load(ctx)
	if err != nil {
		return fmt.Errorf("%s=%s: load AWS configuration: %w", EnvProviderAPIKeySSM, name, err)
	}
	return resolveProviderKey(ctx, cfg, name, newSignedSSM(awsCfg))
}

// ResolveProviderKeyWith is ResolveProviderKey with the SSM client given
// (tests, or a caller that already has one).
func ResolveProviderKeyWith(ctx context.Context, cfg *Config, getenv func(string) string, client ParameterGetter) error {
	name, ok := providerKeyParameter(cfg, getenv)
	if !ok {
		return nil
	}
	return resolveProviderKey(ctx, cfg, name, client)
}

// providerKeyParameter returns the parameter to read, if the key must come
// from SSM at all.
func providerKeyParameter(cfg *Config, getenv func(string) string) (string, bool) {
	if cfg.ProviderAPIKey != "" || getenv(EnvProviderAPIKey) != "" {
		return "", false
	}
	name := strings.TrimSpace(getenv(EnvProviderAPIKeySSM))
	return name, name != ""
}

func resolveProviderKey(ctx context.Context, cfg *Config, name string, client ParameterGetter) error {
	value, err := client.GetParameter(ctx, name)
	if err != nil {
		return fmt.Errorf("%s=%s: get parameter: %w", EnvProviderAPIKeySSM, name, err)
	}
	// A value stored from a file often ends in a newline; a bearer token
	// never contains whitespace.
	key := strings.TrimSpace(value)
	if key == "" {
		return fmt.Errorf("%s=%s: %w", EnvProviderAPIKeySSM, name, errEmptyParameter)
	}
	cfg.ProviderAPIKey = key
	return nil
}

var (
	errNoParameter    = errors.New("SSM returned no parameter")
	errEmptyParameter = errors.New("the parameter's value is empty")
)
