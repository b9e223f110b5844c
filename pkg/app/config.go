// Package app reads Lambent's configuration from the environment and wires
// the parts together (provider, store, tools, engine, HTTP handler), so
// that every main only calls it.
package app

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/lambent/lambent/pkg/compaction"
	"github.com/lambent/lambent/pkg/egress"
	"github.com/lambent/lambent/pkg/hooks"
	"github.com/lambent/lambent/pkg/limits"
	model "github.com/lambent/lambent/pkg/provider"
	"github.com/lambent/lambent/pkg/provider/bedrock"
	"github.com/lambent/lambent/pkg/store"
	"github.com/lambent/lambent/pkg/tenant"
)

// Config is Lambent's configuration, read once from the environment by
// FromEnv (and ResolveSecrets), grouped by concern. Every setting is in
// the configuration table of docs/configuration.md.
type Config struct {
	// InLambda is true when AWS_LAMBDA_RUNTIME_API is set.
	InLambda bool

	Server     ServerConfig
	Provider   ProviderConfig
	Store      StoreConfig
	Loop       LoopConfig
	Tools      ToolsConfig
	Security   SecurityConfig
	Background BackgroundConfig
	Telemetry  TelemetryConfig
	// Limits bound what one request may ask for (LAMBENT_LIMIT_*; see
	// package limits).
	Limits    limits.Limits
	WebSocket WebSocketConfig
}

// ServerConfig is the local server and the HTTP front door: address,
// hosts, body limit, logs.
type ServerConfig struct {
	// Addr is the local listen address (LAMBENT_ADDR, default 127.0.0.1:8080).
	Addr string
	// MaxBody is the request body limit in bytes (LAMBENT_MAX_BODY, default 8 MiB).
	MaxBody int64
	// LogLevel is debug, info, warn or error (LAMBENT_LOG_LEVEL, default info).
	LogLevel string
	// LogFormat is LogJSON, LogText or LogAuto (LAMBENT_LOG_FORMAT, default
	// auto: text on a terminal, JSON otherwise; in Lambda JSON unless
	// AWS_LAMBDA_LOG_FORMAT is Text).
	LogFormat string
	// LambdaLogFormat is AWS_LAMBDA_LOG_FORMAT, the function's log format
	// setting (JSON or Text).
	LambdaLogFormat string
	// AllowedHosts are the Host names the local server answers beside the
	// loopback ones (LAMBENT_ALLOWED_HOSTS, comma-separated; "*": any
	// host). See httpapi.Handler.
	AllowedHosts []string
	// MemoryLimit is the Go runtime's soft memory limit Build sets, in
	// bytes (0: none): in Lambda, unless GOMEMLIMIT is set, 80% of the
	// function's memory (AWS_LAMBDA_FUNCTION_MEMORY_SIZE), so that the
	// garbage collector works harder before the function runs out of
	// memory instead of letting the heap double.
	MemoryLimit int64
}

// ProviderConfig chooses and reaches the model providers.
type ProviderConfig struct {
	// URL is the OpenAI-compatible API base URL including /v1
	// (LAMBENT_PROVIDER_URL, default http://127.0.0.1:11434/v1).
	URL string
	// APIKey is its bearer token (LAMBENT_PROVIDER_API_KEY, or from
	// SSM through ResolveSecrets).
	APIKey string
	// Name is the model provider of models no route names, "openai" or
	// "bedrock" (LAMBENT_PROVIDER, default openai; empty means openai).
	Name string
	// Routes send models to providers by exact name or prefix
	// (LAMBENT_MODEL_ROUTES, e.g. "us.anthropic.*=bedrock,gpt-4o=openai";
	// see model.ParseRoutes).
	Routes []model.Route
	// BedrockGuardrailID and BedrockGuardrailVersion attach a Bedrock
	// guardrail to every Bedrock call (LAMBENT_BEDROCK_GUARDRAIL_ID,
	// LAMBENT_BEDROCK_GUARDRAIL_VERSION, default DRAFT).
	BedrockGuardrailID      string
	BedrockGuardrailVersion string
	// BedrockCachePoints turns the Bedrock provider's automatic prompt
	// cache points on or off (LAMBENT_BEDROCK_CACHE_POINTS, auto or off,
	// default auto).
	BedrockCachePoints bedrock.CachePoints
	// DefaultModel is used when a request names none (LAMBENT_DEFAULT_MODEL).
	DefaultModel string
	// ToolCallIDs is the call id rule of the OpenAI-compatible API
	// (LAMBENT_PROVIDER_TOOL_CALL_IDS): "openai" (at most 40 characters),
	// "mistral" (exactly 9 of [A-Za-z0-9]), or "auto" (the default:
	// mistral when the URL's host is mistral.ai or under it, else openai).
	ToolCallIDs string
	// MaxTools is the most tools the OpenAI-compatible API takes in one
	// call (LAMBENT_PROVIDER_MAX_TOOLS); 0, the default, is OpenAI's 128
	// on OpenAI's hosts and no limit elsewhere.
	MaxTools int
	// MaxTokensParam is the field max_output_tokens is sent to the
	// OpenAI-compatible API as (LAMBENT_PROVIDER_MAX_TOKENS_PARAM):
	// "max_tokens", "max_completion_tokens", or "auto" (the default:
	// max_completion_tokens to OpenAI's reasoning models, known by name,
	// on OpenAI's hosts, else max_tokens).
	MaxTokensParam string
}

// Fields of LAMBENT_PROVIDER_MAX_TOKENS_PARAM.
const (
	MaxTokensParamAuto       = "auto"
	MaxTokensParamMaxTokens  = "max_tokens"
	MaxTokensParamCompletion = "max_completion_tokens"
)

// Tool call id rules of LAMBENT_PROVIDER_TOOL_CALL_IDS.
const (
	CallIDsAuto    = "auto"
	CallIDsOpenAI  = "openai"
	CallIDsMistral = "mistral"
)

// StoreConfig chooses and sizes the response store.
type StoreConfig struct {
	// Kind is "memory" or "dynamodb" (LAMBENT_STORE; default memory
	// locally, dynamodb in Lambda).
	Kind string
	// Table is the DynamoDB table (LAMBENT_TABLE, default lambent-responses).
	Table string
	// CreateTable creates the table when missing (LAMBENT_CREATE_TABLE).
	CreateTable bool
	// Retention is how long responses are kept (LAMBENT_RETENTION, default 720h).
	Retention time.Duration
	// MemoryMaxBytes bounds the bytes the memory store holds, evicting
	// the oldest responses of the tenant holding the most first
	// (LAMBENT_MEMORY_MAX_BYTES, default 256 MiB).
	MemoryMaxBytes int64
}

// LoopConfig is the agentic loop's policy.
type LoopConfig struct {
	// MaxTurns bounds the agentic loop (LAMBENT_MAX_TURNS, default 10).
	MaxTurns int
	// MaxAttempts is the attempts of a validated output, and the most a
	// request may ask for (LAMBENT_MAX_ATTEMPTS, default 3).
	MaxAttempts int
	// MaxIterationsPerAttempt is the model calls per attempt, and the most
	// a request may ask for (LAMBENT_MAX_ITERATIONS_PER_ATTEMPT, default 15).
	MaxIterationsPerAttempt int
	// HostedToolItems is how server-executed calls appear in output:
	// "mcp_call" (default) or "function_call" (LAMBENT_HOSTED_TOOL_ITEMS).
	HostedToolItems string
	// OpenAICompat reports client-tool pauses as status completed
	// (LAMBENT_OPENAI_COMPAT).
	OpenAICompat bool
	// ValidateToolArguments checks hosted and MCP tool calls' arguments
	// against the tool's input schema before they run
	// (LAMBENT_VALIDATE_TOOL_ARGUMENTS, default true).
	ValidateToolArguments bool
	// DeadlineReserve is kept free before a Lambda invocation's deadline
	// (LAMBENT_DEADLINE_RESERVE, default 10s).
	DeadlineReserve time.Duration
	// KeepAlive is the SSE keep-alive comment interval (LAMBENT_SSE_KEEPALIVE,
	// default 15s).
	KeepAlive time.Duration
}

// ToolsConfig is the hosted tools and the egress they may reach.
type ToolsConfig struct {
	// Manifest is the hosted tool manifest, JSON or a path (LAMBENT_TOOLS;
	// default: the built-in tools run in-process).
	Manifest string
	// AllowHosts lets fetch_url and request-declared MCP servers reach
	// these hosts despite the SSRF guard, MCP servers over http too
	// (LAMBENT_FETCH_ALLOW_HOSTS, comma-separated; for tests).
	AllowHosts []string
	// LambdaEndpoint is AWS_ENDPOINT_URL_LAMBDA: with no LAMBENT_TOOLS, the
	// built-in tools are then invoked through it as Lambda functions (`make
	// lambdas`, `sam local start-lambda`).
	LambdaEndpoint string
	// Builtin maps OpenAI built-in tool types to the hosted tools or
	// manifest MCP servers that serve them (LAMBENT_BUILTIN_TOOLS,
	// "web_search=lambent:search,..."): type → name.
	Builtin map[string]string
	// RefuseUnserved makes a request declaring a built-in tool Lambent
	// does not serve a 400 (LAMBENT_UNSERVED_TOOLS=refuse; default omit).
	RefuseUnserved bool
}

// parseBuiltinTools reads LAMBENT_BUILTIN_TOOLS: "type=lambent:name"
// entries separated by commas or white space.
func parseBuiltinTools(s string) (map[string]string, error) {
	var m map[string]string
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' || r == '\t' || r == '\r' }) {
		typ, tool, ok := strings.Cut(f, "=")
		name, hosted := strings.CutPrefix(tool, "lambent:")
		if !ok || typ == "" || !hosted || name == "" {
			return nil, fmt.Errorf("LAMBENT_BUILTIN_TOOLS: entry %q: want type=lambent:<name>", f)
		}
		if m == nil {
			m = map[string]string{}
		}
		if _, dup := m[typ]; dup {
			return nil, fmt.Errorf("LAMBENT_BUILTIN_TOOLS: type %q is mapped twice", typ)
		}
		m[typ] = name
	}
	return m, nil
}

// SecurityConfig holds the tenant rule's keys and the secrets that seal
// stored data.
type SecurityConfig struct {
	// SecretKey (32 bytes) seals the MCP secrets of stored background
	// requests (LAMBENT_SECRET_KEY, base64; or from SSM through
	// ResolveSecrets). Empty: a random key per process, enough when the
	// worker is in-process (local runs).
	SecretKey []byte
	// APIKeys maps the accepted bearer keys to their tenants; empty means
	// no key is required. Filled by ResolveSecrets (LAMBENT_API_KEYS or
	// LAMBENT_API_KEYS_SSM).
	APIKeys map[string]string
	// IAMTenant names the tenant of IAM callers (LAMBENT_IAM_TENANT: arn,
	// the default, or role; see tenant.IAMMode).
	IAMTenant tenant.IAMMode
	// CompactionKeys seal and open compaction summaries; nil when none are
	// configured (Build then generates a per-process key locally and
	// disables compaction in Lambda). Filled by ResolveSecrets
	// (LAMBENT_COMPACTION_KEYS or LAMBENT_COMPACTION_KEYS_SSM).
	CompactionKeys *compaction.Keyring
}

// BackgroundConfig runs background responses.
type BackgroundConfig struct {
	// QueueURL is the SQS queue of background jobs (LAMBENT_QUEUE_URL); when
	// empty, background responses run on an in-process queue (local runs).
	QueueURL string
	// EventBus is the EventBridge bus terminal background responses are
	// announced on (LAMBENT_EVENT_BUS); empty disables publishing.
	EventBus string
	// LocalWorkers is the size of the in-process worker pool
	// (LAMBENT_LOCAL_WORKERS, default 4).
	LocalWorkers int
	// RequireTenant makes the worker refuse messages that name no
	// tenant (LAMBENT_WORKER_REQUIRE_TENANT); it is on whenever API keys
	// are configured too (JobTenantRequired).
	RequireTenant bool
}

// TelemetryConfig is hooks, metrics and traces.
type TelemetryConfig struct {
	// Hooks are the operator's tool call hooks (LAMBENT_HOOKS,
	// comma-separated: eventbridge:<bus name or ARN>, lambda:<function name
	// or ARN>, an http(s) webhook URL); empty: none.
	Hooks []hooks.Target
	// EMF writes CloudWatch Embedded Metric Format lines to stdout,
	// Prometheus serves /metrics on the local server (LAMBENT_METRICS,
	// comma-separated: emf, prometheus; empty or off: no metrics).
	EMF        bool
	Prometheus bool
	// Namespace is the CloudWatch namespace of the EMF metrics
	// (LAMBENT_METRICS_NAMESPACE, default Lambent).
	Namespace string
	// MetricsKey is the bearer key GET /metrics requires
	// (LAMBENT_METRICS_KEY); empty: any API key when the API needs keys of
	// one tenant, else none. With Prometheus and API keys of several
	// tenants it is required (metricsKeys): each tenant would read the
	// others' metrics.
	MetricsKey string
	// OTLPEndpoint is the OTLP/HTTP traces endpoint spans are exported to,
	// e.g. http://127.0.0.1:4318/v1/traces (LAMBENT_OTLP_ENDPOINT); empty
	// disables tracing.
	OTLPEndpoint string
}

// WebSocketConfig is the WebSocket function on AWS (functions/websocket):
// its connections table, turn queue and Management API endpoint.
type WebSocketConfig struct {
	// Table is the connections table (LAMBENT_WEBSOCKET_TABLE).
	Table string
	// QueueURL is the SQS FIFO queue of the turns
	// (LAMBENT_WEBSOCKET_QUEUE_URL).
	QueueURL string
	// Endpoint overrides the Management API endpoint
	// (LAMBENT_WEBSOCKET_ENDPOINT; default https://{domainName}/{stage} of
	// the route event).
	Endpoint string
}

// Values of Config.LogFormat.
const (
	LogAuto = "auto"
	LogJSON = "json"
	LogText = "text"
)

// FromEnv reads the configuration with getenv (os.Getenv in mains).
func FromEnv(getenv func(string) string) (Config, error) {
	c := Config{
		InLambda: getenv("AWS_LAMBDA_RUNTIME_API") != "",
		Server: ServerConfig{
			Addr:            or(getenv("LAMBENT_ADDR"), "127.0.0.1:8080"),
			LogLevel:        or(getenv("LAMBENT_LOG_LEVEL"), "info"),
			LogFormat:       or(getenv("LAMBENT_LOG_FORMAT"), LogAuto),
			LambdaLogFormat: getenv("AWS_LAMBDA_LOG_FORMAT"),
			MemoryLimit:     lambdaMemoryLimit(getenv),
		},
		Provider: ProviderConfig{
			URL:                     strings.TrimSuffix(or(getenv("LAMBENT_PROVIDER_URL"), "http://127.0.0.1:11434/v1"), "/"),
			APIKey:                  getenv("LAMBENT_PROVIDER_API_KEY"),
			DefaultModel:            getenv("LAMBENT_DEFAULT_MODEL"),
			Name:                    or(getenv("LAMBENT_PROVIDER"), ProviderOpenAI),
			BedrockGuardrailID:      getenv("LAMBENT_BEDROCK_GUARDRAIL_ID"),
			BedrockGuardrailVersion: getenv("LAMBENT_BEDROCK_GUARDRAIL_VERSION"),
			ToolCallIDs:             or(getenv("LAMBENT_PROVIDER_TOOL_CALL_IDS"), CallIDsAuto),
			MaxTokensParam:          or(getenv("LAMBENT_PROVIDER_MAX_TOKENS_PARAM"), MaxTokensParamAuto),
		},
		Store: StoreConfig{
			Table: or(getenv("LAMBENT_TABLE"), "lambent-responses"),
		},
		Tools: ToolsConfig{
			Manifest:       getenv("LAMBENT_TOOLS"),
			LambdaEndpoint: getenv("AWS_ENDPOINT_URL_LAMBDA"),
		},
		Background: BackgroundConfig{
			QueueURL: getenv("LAMBENT_QUEUE_URL"),
			EventBus: getenv("LAMBENT_EVENT_BUS"),
		},
		Telemetry: TelemetryConfig{
			OTLPEndpoint: getenv("LAMBENT_OTLP_ENDPOINT"),
			Namespace:    or(getenv("LAMBENT_METRICS_NAMESPACE"), "Lambent"),
			MetricsKey:   getenv("LAMBENT_METRICS_KEY"),
		},
		WebSocket: WebSocketConfig{
			Table:    getenv("LAMBENT_WEBSOCKET_TABLE"),
			QueueURL: getenv("LAMBENT_WEBSOCKET_QUEUE_URL"),
			Endpoint: getenv("LAMBENT_WEBSOCKET_ENDPOINT"),
		},
	}
	if err := c.readProviders(getenv("LAMBENT_MODEL_ROUTES")); err != nil {
		return c, err
	}
	switch c.Provider.ToolCallIDs {
	case CallIDsAuto, CallIDsOpenAI, CallIDsMistral:
	default:
		return c, fmt.Errorf("LAMBENT_PROVIDER_TOOL_CALL_IDS=%q: want auto, openai or mistral", c.Provider.ToolCallIDs)
	}
	switch c.Provider.MaxTokensParam {
	case MaxTokensParamAuto, MaxTokensParamMaxTokens, MaxTokensParamCompletion:
	default:
		return c, fmt.Errorf("LAMBENT_PROVIDER_MAX_TOKENS_PARAM=%q: want auto, max_tokens or max_completion_tokens", c.Provider.MaxTokensParam)
	}
	maxTools, err := parseInt(getenv, "LAMBENT_PROVIDER_MAX_TOOLS", 0)
	if err != nil {
		return c, err
	}
	c.Provider.MaxTools = maxTools
	c.Store.Kind = getenv("LAMBENT_STORE")
	if c.Store.Kind == "" {
		c.Store.Kind = "memory"
		if c.InLambda {
			c.Store.Kind = "dynamodb"
		}
	}
	if c.Store.Kind != "memory" && c.Store.Kind != "dynamodb" {
		return c, fmt.Errorf("LAMBENT_STORE: unknown store %q (want memory or dynamodb)", c.Store.Kind)
	}
	switch c.Server.LogFormat {
	case LogAuto, LogJSON, LogText:
	default:
		return c, fmt.Errorf("LAMBENT_LOG_FORMAT: unknown value %q (want auto, json or text)", c.Server.LogFormat)
	}
	switch strings.ToLower(c.Server.LogLevel) {
	case "debug", "info", "warn", "error":
	default:
		return c, fmt.Errorf("LAMBENT_LOG_LEVEL: unknown value %q (want debug, info, warn or error)", c.Server.LogLevel)
	}
	if c.Store.CreateTable, err = parseBool(getenv, "LAMBENT_CREATE_TABLE", false); err != nil {
		return c, err
	}
	if c.Loop.OpenAICompat, err = parseBool(getenv, "LAMBENT_OPENAI_COMPAT", false); err != nil {
		return c, err
	}
	var ok bool
	if c.Provider.BedrockCachePoints, ok = bedrock.ParseCachePoints(getenv("LAMBENT_BEDROCK_CACHE_POINTS")); !ok {
		return c, fmt.Errorf("LAMBENT_BEDROCK_CACHE_POINTS: unknown value %q (want auto or off)", getenv("LAMBENT_BEDROCK_CACHE_POINTS"))
	}
	if c.Loop.ValidateToolArguments, err = parseBool(getenv, "LAMBENT_VALIDATE_TOOL_ARGUMENTS", true); err != nil {
		return c, err
	}
	if c.Tools.Builtin, err = parseBuiltinTools(getenv("LAMBENT_BUILTIN_TOOLS")); err != nil {
		return c, err
	}
	switch v := getenv("LAMBENT_UNSERVED_TOOLS"); v {
	case "", "omit":
	case "refuse":
		c.Tools.RefuseUnserved = true
	default:
		return c, fmt.Errorf("LAMBENT_UNSERVED_TOOLS: unknown value %q (want omit or refuse)", v)
	}
	switch c.Loop.HostedToolItems = getenv("LAMBENT_HOSTED_TOOL_ITEMS"); c.Loop.HostedToolItems {
	case "", "mcp_call", "function_call":
	default:
		return c, fmt.Errorf("LAMBENT_HOSTED_TOOL_ITEMS: unknown value %q (want mcp_call or function_call)", c.Loop.HostedToolItems)
	}
	if c.Loop.MaxTurns, err = parseInt(getenv, "LAMBENT_MAX_TURNS", 10); err != nil {
		return c, err
	}
	if c.Loop.MaxAttempts, err = parseInt(getenv, "LAMBENT_MAX_ATTEMPTS", 3); err != nil {
		return c, err
	}
	if c.Loop.MaxIterationsPerAttempt, err = parseInt(getenv, "LAMBENT_MAX_ITERATIONS_PER_ATTEMPT", 15); err != nil {
		return c, err
	}
	if c.Background.LocalWorkers, err = parseInt(getenv, "LAMBENT_LOCAL_WORKERS", 4); err != nil {
		return c, err
	}
	maxBody, err := parseInt(getenv, "LAMBENT_MAX_BODY", 8<<20)
	if err != nil {
		return c, err
	}
	c.Server.MaxBody = int64(maxBody)
	memMax, err := parseInt(getenv, "LAMBENT_MEMORY_MAX_BYTES", store.DefaultMemoryMaxBytes)
	if err != nil {
		return c, err
	}
	c.Store.MemoryMaxBytes = int64(memMax)
	if c.Store.Retention, err = parseDuration(getenv, "LAMBENT_RETENTION", 30*24*time.Hour); err != nil {
		return c, err
	}
	if c.Loop.DeadlineReserve, err = parseDuration(getenv, "LAMBENT_DEADLINE_RESERVE", 10*time.Second); err != nil {
		return c, err
	}
	if c.Loop.KeepAlive, err = parseDuration(getenv, "LAMBENT_SSE_KEEPALIVE", 15*time.Second); err != nil {
		return c, err
	}
	if c.Security.SecretKey, err = parseSecretKey(EnvSecretKey, getenv(EnvSecretKey)); err != nil {
		return c, err
	}
	if c.Telemetry.Hooks, err = hooks.ParseTargets(getenv("LAMBENT_HOOKS")); err != nil {
		return c, fmt.Errorf("LAMBENT_HOOKS: %w", err)
	}
	if c.Telemetry.MetricsKey != "" && !validKey(c.Telemetry.MetricsKey) {
		return c, errors.New("LAMBENT_METRICS_KEY: shorter than 16 characters or has spaces")
	}
	if err := c.parseMetrics(getenv("LAMBENT_METRICS")); err != nil {
		return c, err
	}
	if c.Limits, err = readLimits(getenv); err != nil {
		return c, err
	}
	if c.Security.IAMTenant, err = tenant.ParseIAMMode(getenv("LAMBENT_IAM_TENANT")); err != nil {
		return c, fmt.Errorf("LAMBENT_IAM_TENANT: %w", err)
	}
	if c.Background.RequireTenant, err = parseBool(getenv, "LAMBENT_WORKER_REQUIRE_TENANT", false); err != nil {
		return c, err
	}
	c.Tools.AllowHosts = egress.AllowHostsFromEnv(getenv)
	c.Server.AllowedHosts = egress.HostList(getenv("LAMBENT_ALLOWED_HOSTS"))
	return c, nil
}

// Tenants is the tenant rule of the front doors: the API keys and how IAM
// callers are named.
func (c *Config) Tenants() tenant.Rule {
	return tenant.Rule{Keys: tenant.NewKeyring(c.Security.APIKeys), IAM: c.Security.IAMTenant}
}

// JobTenantRequired reports whether the worker refuses messages without a
// tenant: when LAMBENT_WORKER_REQUIRE_TENANT is set, or API keys are
// configured (every tenant is then a key's, and a message without one
// would run as the default tenant).
func (c *Config) JobTenantRequired() bool {
	return c.Background.RequireTenant || len(c.Security.APIKeys) > 0
}

// readLimits reads the LAMBENT_LIMIT_* settings; unset ones keep their
// defaults.
func readLimits(getenv func(string) string) (limits.Limits, error) {
	l := limits.Default()
	for _, s := range limits.Settings() {
		f := s.Field(&l)
		least := 1
		if s.ZeroIsNoBound {
			least = 0
		}
		n, err := parseIntAtLeast(getenv, s.Env, *f, least)
		if err != nil {
			return l, err
		}
		*f = n
	}
	n, err := parseInt(getenv, limits.EnvMCPReplyBytes, int(l.MCPReplyBytes))
	if err != nil {
		return l, err
	}
	l.MCPReplyBytes = int64(n)
	return l, nil
}

// parseMetrics reads LAMBENT_METRICS.
func (c *Config) parseMetrics(v string) error {
	for m := range strings.SplitSeq(v, ",") {
		switch m = strings.TrimSpace(m); m {
		case "", "off":
		case "emf":
			c.Telemetry.EMF = true
		case "prometheus":
			if c.InLambda {
				return errors.New("LAMBENT_METRICS: prometheus serves /metrics on the local server; in Lambda use emf")
			}
			c.Telemetry.Prometheus = true
		default:
			return fmt.Errorf("LAMBENT_METRICS: unknown value %q (want emf, prometheus or off)", m)
		}
	}
	return nil
}

func or(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

func parseBool(getenv func(string) string, name string, def bool) (bool, error) {
	v := getenv(name)
	if v == "" {
		return def, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return def, fmt.Errorf("%s: %q is not a boolean", name, v)
	}
	return b, nil
}

func parseInt(getenv func(string) string, name string, def int) (int, error) {
	return parseIntAtLeast(getenv, name, def, 1)
}

// parseIntAtLeast reads the integer setting name, def when unset; a value
// below least (1: a positive integer, 0: 0 or more) is an error.
func parseIntAtLeast(getenv func(string) string, name string, def, least int) (int, error) {
	v := getenv(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < least {
		want := "a positive integer"
		if least == 0 {
			want = "an integer of 0 or more"
		}
		return def, fmt.Errorf("%s: %q is not %s", name, v, want)
	}
	return n, nil
}

func parseDuration(getenv func(string) string, name string, def time.Duration) (time.Duration, error) {
	v := getenv(name)
	if v == "" {
		return def, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return def, fmt.Errorf("%s: %q is not a positive duration (e.g. 720h)", name, v)
	}
	return d, nil
}

// parseSecretKey decodes a base64 key of 32 bytes; empty is none.
func parseSecretKey(name, v string) ([]byte, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return nil, nil
	}
	key, err := base64.StdEncoding.DecodeString(v)
	if err != nil || len(key) != 32 {
		return nil, fmt.Errorf("%s: want 32 random bytes in base64 (openssl rand -base64 32)", name)
	}
	return key, nil
}

// lambdaMemoryLimit is ServerConfig.MemoryLimit: inside Lambda without
// GOMEMLIMIT, 80% of AWS_LAMBDA_FUNCTION_MEMORY_SIZE (MiB); the rest is
// left to what the limit does not count (the binary's mapped code, the
// runtime's own overhead).
func lambdaMemoryLimit(getenv func(string) string) int64 {
	if getenv("AWS_LAMBDA_RUNTIME_API") == "" || getenv("GOMEMLIMIT") != "" {
		return 0
	}
	mb, err := strconv.ParseInt(getenv("AWS_LAMBDA_FUNCTION_MEMORY_SIZE"), 10, 64)
	if err != nil || mb <= 0 {
		return 0
	}
	return mb << 20 * 8 / 10
}
