package awsconf

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/credentials/endpointcreds"
	"github.com/aws/smithy-go/logging"
)

// FromEnvironment returns the AWS configuration of a Lambda function, read
// from the variables Lambda sets (and the SDK's own that a function may
// add), as config.LoadDefaultConfig resolves them there, without the
// SDK's config package: that package links the clients of every
// credential source (STS, SSO, SSO OIDC, sign-in, IMDS, processes) and
// the shared-file parsers, about 0.6 MB of a zipped bootstrap, none of
// which runs in Lambda. The Lambda builds (tag lambent_lambda) load with
// it; TestFromEnvironmentMatchesTheSDK holds it to the SDK's results.
//
// It reads:
//
//   - the region: AWS_REGION, else AWS_DEFAULT_REGION;
//   - the credentials: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or
//     AWS_ACCESS_KEY and AWS_SECRET_KEY), AWS_SESSION_TOKEN and
//     AWS_ACCOUNT_ID (what Lambda gives a function's role), else the
//     container credentials endpoint AWS_CONTAINER_CREDENTIALS_FULL_URI
//     (https, or http to a loopback or the ECS/EKS addresses) or
//     AWS_CONTAINER_CREDENTIALS_RELATIVE_URI, with
//     AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE or
//     AWS_CONTAINER_AUTHORIZATION_TOKEN (Lambda SnapStart);
//   - endpoints: AWS_ENDPOINT_URL, AWS_ENDPOINT_URL_<SERVICE> (read by each
//     client through the configuration's source) and
//     AWS_IGNORE_CONFIGURED_ENDPOINT_URLS; AWS_USE_FIPS_ENDPOINT and
//     AWS_USE_DUALSTACK_ENDPOINT;
//   - retries: AWS_RETRY_MODE and AWS_MAX_ATTEMPTS;
//   - AWS_ACCOUNT_ID_ENDPOINT_MODE (default preferred) and AWS_CA_BUNDLE.
//
// Profiles, shared config and credentials files, web identity, SSO and
// credential processes are the full chain's (builds without the tag):
// without credentials in the environment, a variable naming one of them
// (AWS_PROFILE, AWS_WEB_IDENTITY_TOKEN_FILE, AWS_ROLE_ARN...) is an error
// saying so, as is an environment without any credentials. Its HTTP client
// is the SDK's, keeping MaxIdleConnsPerHost idle connections a host.
func FromEnvironment(getenv func(string) string) (aws.Config, error) {
	src, err := readEnvSource(getenv)
	if err != nil {
		return aws.Config{}, fmt.Errorf("awsconf: %w", err)
	}
	cfg := aws.Config{
		Region:                firstSet(getenv, "AWS_REGION", "AWS_DEFAULT_REGION"),
		Logger:                logging.NewStandardLogger(os.Stderr),
		ConfigSources:         []any{src},
		RetryMaxAttempts:      src.maxAttempts,
		RetryMode:             src.retryMode,
		AccountIDEndpointMode: src.accountIDEndpointMode,
	}
	if v := getenv("AWS_ENDPOINT_URL"); v != "" && !src.ignoreEndpoints {
		cfg.BaseEndpoint = aws.String(v)
	}
	if path := getenv("AWS_CA_BUNDLE"); path != "" {
		if cfg.HTTPClient, err = withCABundle(path); err != nil {
			return aws.Config{}, fmt.Errorf("awsconf: AWS_CA_BUNDLE: %w", err)
		}
	}
	if cfg.Credentials, err = environmentCredentials(getenv, cfg.HTTPClient); err != nil {
		return aws.Config{}, fmt.Errorf("awsconf: %w", err)
	}
	cfg.HTTPClient = ReadOnlyBodies(withPool(cfg.HTTPClient))
	return cfg, nil
}

// envSource is the configuration source of FromEnvironment's
// configuration: the SDK's clients read from it, through the methods of
// the SDK's config.EnvConfig they look for, the settings they resolve
// themselves.
type envSource struct {
	getenv                func(string) string
	fips                  aws.FIPSEndpointState
	dualStack             aws.DualStackEndpointState
	ignoreEndpoints       bool
	maxAttempts           int
	retryMode             aws.RetryMode
	accountIDEndpointMode aws.AccountIDEndpointMode
}

func readEnvSource(getenv func(string) string) (*envSource, error) {
	s := &envSource{getenv: getenv}
	var errs []error
	state := func(name string) (enabled, set bool) {
		v := getenv(name)
		switch {
		case v == "":
			return false, false
		case strings.EqualFold(v, "true"):
			return true, true
		case strings.EqualFold(v, "false"):
			return false, true
		}
		errs = append(errs, fmt.Errorf("%s=%s: want true or false", name, v))
		return false, false
	}
	if on, set := state("AWS_USE_FIPS_ENDPOINT"); set {
		s.fips = aws.FIPSEndpointStateDisabled
		if on {
			s.fips = aws.FIPSEndpointStateEnabled
		}
	}
	if on, set := state("AWS_USE_DUALSTACK_ENDPOINT"); set {
		s.dualStack = aws.DualStackEndpointStateDisabled
		if on {
			s.dualStack = aws.DualStackEndpointStateEnabled
		}
	}
	s.ignoreEndpoints, _ = state("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS")
	if v := getenv("AWS_MAX_ATTEMPTS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("AWS_MAX_ATTEMPTS=%s: %w", v, err))
		}
		s.maxAttempts = n
	}
	if v := getenv("AWS_RETRY_MODE"); v != "" {
		m, err := aws.ParseRetryMode(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("AWS_RETRY_MODE: %w", err))
		}
		s.retryMode = m
	}
	switch v := aws.AccountIDEndpointMode(getenv("AWS_ACCOUNT_ID_ENDPOINT_MODE")); v {
	case "":
		s.accountIDEndpointMode = aws.AccountIDEndpointModePreferred
	case aws.AccountIDEndpointModePreferred, aws.AccountIDEndpointModeRequired, aws.AccountIDEndpointModeDisabled:
		s.accountIDEndpointMode = v
	default:
		errs = append(errs, fmt.Errorf("AWS_ACCOUNT_ID_ENDPOINT_MODE=%s: want preferred, required or disabled", v))
	}
	return s, errors.Join(errs...)
}

// GetUseFIPSEndpoint is AWS_USE_FIPS_ENDPOINT (the clients' FIPS setting).
func (s *envSource) GetUseFIPSEndpoint(context.Context) (aws.FIPSEndpointState, bool, error) {
	return s.fips, s.fips != aws.FIPSEndpointStateUnset, nil
}

// GetUseDualStackEndpoint is AWS_USE_DUALSTACK_ENDPOINT.
func (s *envSource) GetUseDualStackEndpoint(context.Context) (aws.DualStackEndpointState, bool, error) {
	return s.dualStack, s.dualStack != aws.DualStackEndpointStateUnset, nil
}

// GetServiceBaseEndpoint is AWS_ENDPOINT_URL_<sdkID> (upper case, spaces as
// underscores: "Bedrock Runtime" reads AWS_ENDPOINT_URL_BEDROCK_RUNTIME).
func (s *envSource) GetServiceBaseEndpoint(_ context.Context, sdkID string) (string, bool, error) {
	if s.ignoreEndpoints {
		return "", false, nil
	}
	v := s.getenv("AWS_ENDPOINT_URL_" + strings.ReplaceAll(strings.ToUpper(sdkID), " ", "_"))
	return v, v != "", nil
}

// GetIgnoreConfiguredEndpoints is AWS_IGNORE_CONFIGURED_ENDPOINT_URLS.
func (s *envSource) GetIgnoreConfiguredEndpoints(context.Context) (bool, bool, error) {
	return s.ignoreEndpoints, s.ignoreEndpoints, nil
}

// GetRetryMaxAttempts is AWS_MAX_ATTEMPTS.
func (s *envSource) GetRetryMaxAttempts(context.Context) (int, bool, error) {
	return s.maxAttempts, s.maxAttempts != 0, nil
}

// GetRetryMode is AWS_RETRY_MODE.
func (s *envSource) GetRetryMode(context.Context) (aws.RetryMode, bool, error) {
	return s.retryMode, s.retryMode != "", nil
}

// containerEndpointBase is the endpoint of a relative container credentials
// URI (ECS).
const containerEndpointBase = "http://169.254.170.2"

// environmentCredentials returns the credentials the environment holds,
// cached as the SDK's default chain caches them.
func environmentCredentials(getenv func(string) string, hc aws.HTTPClient) (aws.CredentialsProvider, error) {
	id := firstSet(getenv, "AWS_ACCESS_KEY_ID", "AWS_ACCESS_KEY")
	secret := firstSet(getenv, "AWS_SECRET_ACCESS_KEY", "AWS_SECRET_KEY")
	if id != "" && secret != "" {
		return aws.NewCredentialsCache(credentials.StaticCredentialsProvider{Value: aws.Credentials{
			AccessKeyID: id, SecretAccessKey: secret, SessionToken: getenv("AWS_SESSION_TOKEN"),
			AccountID: getenv("AWS_ACCOUNT_ID"), Source: "EnvConfigCredentials",
		}}), nil
	}
	endpoint := getenv("AWS_CONTAINER_CREDENTIALS_FULL_URI")
	if rel := getenv("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"); rel != "" {
		endpoint = containerEndpointBase + rel
	} else if endpoint != "" {
		if err := checkContainerEndpoint(endpoint); err != nil {
			return nil, fmt.Errorf("AWS_CONTAINER_CREDENTIALS_FULL_URI: %w", err)
		}
	}
	if endpoint != "" {
		p := endpointcreds.New(endpoint, func(o *endpointcreds.Options) {
			o.AuthorizationToken = getenv("AWS_CONTAINER_AUTHORIZATION_TOKEN")
			if path := getenv("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE"); path != "" {
				o.AuthorizationTokenProvider = endpointcreds.TokenProviderFunc(func() (string, error) {
					b, err := os.ReadFile(path)
					if err != nil {
						return "", fmt.Errorf("awsconf: AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE: %w", err)
					}
					return string(b), nil
				})
			}
			if hc != nil {
				o.HTTPClient = hc
			}
		})
		return aws.NewCredentialsCache(p, func(o *aws.CredentialsCacheOptions) { o.ExpiryWindow = 5 * time.Minute }), nil
	}
	// What only the SDK's full credential chain reads.
	for _, name := range []string{"AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN", "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE"} {
		if getenv(name) != "" {
			return nil, fmt.Errorf("%s is set but the environment holds no credentials: a Lambda build reads only the credentials in its environment (build without the lambent_lambda tag for profiles, files and web identity)", name)
		}
	}
	return nil, errors.New("no credentials in the environment (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_CONTAINER_CREDENTIALS_FULL_URI)")
}

// checkContainerEndpoint allows https, and http to a loopback address or
// the container hosts (ECS, EKS Pod Identity), as the SDK does.
func checkContainerEndpoint(endpoint string) error {
	u, err := url.Parse(endpoint)
	if err != nil {
		return err
	}
	host := u.Hostname()
	switch {
	case host == "":
		return errors.New("no host")
	case u.Scheme == "https":
		return nil
	case u.Scheme != "http":
		return fmt.Errorf("scheme %q: want https or http", u.Scheme)
	case LoopbackHost(host):
		return nil
	}
	ip := net.ParseIP(host)
	for _, h := range []string{"169.254.170.2", "169.254.170.23", "fd00:ec2::23"} {
		if ip != nil && ip.Equal(net.ParseIP(h)) {
			return nil
		}
	}
	return fmt.Errorf("http to %s: only loopback and the ECS/EKS container hosts are allowed", host)
}

// withCABundle returns the SDK's HTTP client trusting the PEM certificates
// of the file at path (instead of the system's, as the SDK does).
func withCABundle(path string) (aws.HTTPClient, error) {
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s holds no PEM certificate", path)
	}
	return awshttp.NewBuildableClient().WithTransportOptions(func(tr *http.Transport) {
		if tr.TLSClientConfig == nil {
			tr.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12}
		}
		tr.TLSClientConfig.RootCAs = pool
	}), nil
}

// firstSet returns the value of the first of names set.
func firstSet(getenv func(string) string, names ...string) string {
	for _, n := range names {
		if v := getenv(n); v != "" {
			return v
		}
	}
	return ""
}
