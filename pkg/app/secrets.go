package app

import (
	"context"
	"fmt"
	"strings"

	"github.com/lambent/lambent/pkg/compaction"
)

// Environment names of the provider's API key.
const (
	// EnvProviderAPIKey holds the provider's bearer token itself (local runs).
	EnvProviderAPIKey = "LAMBENT_PROVIDER_API_KEY"
	// EnvProviderAPIKeySSM names the SSM Parameter Store parameter (usually a
	// SecureString) that holds the token; template.yaml sets it so the key is
	// never a plain environment value or template parameter.
	EnvProviderAPIKeySSM = "LAMBENT_PROVIDER_API_KEY_SSM"
	// EnvSecretKey holds the key that seals the MCP secrets of stored
	// background requests (base64 of 32 bytes); gateways and workers that
	// share a queue need the same.
	EnvSecretKey = "LAMBENT_SECRET_KEY"
	// EnvSecretKeySSM names the SSM SecureString parameter holding it.
	EnvSecretKeySSM = "LAMBENT_SECRET_KEY_SSM"
)

// Environment names of the compaction keys.
const (
	// EnvCompactionKeys lists the keys that seal compaction summaries:
	// comma- or newline-separated "id=base64key" entries (32-byte AES-256
	// keys); the first seals, every one opens (see compaction.ParseKeys).
	EnvCompactionKeys = "LAMBENT_COMPACTION_KEYS"
	// EnvCompactionKeysSSM names an SSM SecureString parameter holding that
	// list.
	EnvCompactionKeysSSM = "LAMBENT_COMPACTION_KEYS_SSM"
)

// ResolveSecrets fills in the secrets FromEnv leaves to start-up; mains call
// it after FromEnv:
//
//   - cfg.ProviderAPIKey: LAMBENT_PROVIDER_API_KEY, else the SSM parameter
//     LAMBENT_PROVIDER_API_KEY_SSM names;
//   - cfg.APIKeys: LAMBENT_API_KEYS, else the SSM parameter
//     LAMBENT_API_KEYS_SSM names (see ParseAPIKeys); with neither, the API
//     needs no key;
//   - cfg.CompactionKeys: LAMBENT_COMPACTION_KEYS, else the SSM parameter
//     LAMBENT_COMPACTION_KEYS_SSM names (see compaction.ParseKeys); with
//     neither it stays nil.
//   - cfg.SecretKey: LAMBENT_SECRET_KEY, else the SSM parameter
//     LAMBENT_SECRET_KEY_SSM names (base64 of 32 bytes).
//
// The parameters are read in parallel, with decryption, through one SSM
// client (awsjson.NewSSM, not the SDK's service/ssm, for cold starts) from
// the SDK's default configuration (awsconf.Load: region, partition,
// credentials, FIPS and dual-stack endpoints, retries, and
// AWS_ENDPOINT_URL_SSM). No AWS configuration is loaded when there is no
// parameter to read. On error cfg is left unchanged.
func ResolveSecrets(ctx context.Context, cfg *Config, getenv func(string) string) error {
	return resolveSecrets(ctx, cfg, getenv, newSSMClient)
}

// ResolveSecretsWith is ResolveSecrets with the SSM client given (tests, or
// a caller that already has one).
func ResolveSecretsWith(ctx context.Context, cfg *Config, getenv func(string) string, client SSMClient) error {
	return resolveSecrets(ctx, cfg, getenv, func(context.Context) (SSMClient, error) { return client, nil })
}

func resolveSecrets(ctx context.Context, cfg *Config, getenv func(string) string, newClient func(context.Context) (SSMClient, error)) error {
	var params []parameter
	key := cfg.Provider.APIKey
	if name := strings.TrimSpace(getenv(EnvProviderAPIKeySSM)); key == "" && getenv(EnvProviderAPIKey) == "" && name != "" {
		params = append(params, parameter{env: EnvProviderAPIKeySSM, name: name, dst: &key})
	}
	// A blank variable is unset: its SSM parameter, if named, is read.
	list, listSource := strings.TrimSpace(getenv(EnvAPIKeys)), EnvAPIKeys
	if name := strings.TrimSpace(getenv(EnvAPIKeysSSM)); list == "" && name != "" {
		params = append(params, parameter{env: EnvAPIKeysSSM, name: name, dst: &list})
		listSource = EnvAPIKeysSSM + "=" + name
	}
	compactionKeys, compactionSource := strings.TrimSpace(getenv(EnvCompactionKeys)), EnvCompactionKeys
	if name := strings.TrimSpace(getenv(EnvCompactionKeysSSM)); compactionKeys == "" && name != "" {
		params = append(params, parameter{env: EnvCompactionKeysSSM, name: name, dst: &compactionKeys})
		compactionSource = EnvCompactionKeysSSM + "=" + name
	}
	var sealKey string
	if name := strings.TrimSpace(getenv(EnvSecretKeySSM)); len(cfg.Security.SecretKey) == 0 && getenv(EnvSecretKey) == "" && name != "" {
		params = append(params, parameter{env: EnvSecretKeySSM, name: name, dst: &sealKey})
	}
	if err := readParameters(ctx, params, newClient); err != nil {
		return err
	}
	secretKey, err := parseSecretKey(EnvSecretKeySSM, sealKey)
	if err != nil {
		return err
	}
	keys, err := ParseAPIKeys(list)
	if err != nil {
		return err
	}
	// A list given that holds no key (",", a value of separators) would
	// leave the API open, or compaction off: refused at start-up.
	if strings.TrimSpace(list) != "" && len(keys) == 0 {
		return fmt.Errorf("%s: the list holds no key (for an API that needs no key, leave it unset)", listSource)
	}
	ring, err := compaction.ParseKeys(compactionKeys)
	if err != nil {
		return fmt.Errorf("%s: %w", compactionSource, err)
	}
	if strings.TrimSpace(compactionKeys) != "" && ring == nil {
		return fmt.Errorf("%s: the list holds no key", compactionSource)
	}
	// A value stored from a file often ends in a newline; a bearer token
	// never contains whitespace.
	cfg.Provider.APIKey = strings.TrimSpace(key)
	cfg.Security.APIKeys = keys
	cfg.Security.CompactionKeys = ring
	if secretKey != nil {
		cfg.Security.SecretKey = secretKey
	}
	return nil
}
