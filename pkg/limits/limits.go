// Package limits holds the bounds Lambent puts on what one request may ask
// for: every size, count and depth a client controls and that costs CPU,
// memory, store reads or outbound requests. Each limit has a documented
// default and a setting (LAMBENT_LIMIT_*, read by package app); the
// configuration table (docs/configuration.md) lists them.
//
// Limits known from the request alone are checked before any model call or
// outbound request, and a request over one is refused with a 400 in the
// OpenAI error shape naming the parameter and the limit ([Exceeded]).
// Limits only knowable after an outbound call (tools an MCP server lists,
// the size of an MCP reply or of a fetched image) end the use of that
// server or image with an error, never unbounded work. A tenant's counts
// on one instance (TenantInFlight, TenantWebSockets) refuse with a 429
// rate_limit_exceeded instead, and a WebSocket connection's store:false
// cache (WebSocketCacheBytes), and a tenant's connections' caches together
// (TenantWebSocketCacheBytes), evict their least recently kept responses.
package limits

import (
	"github.com/lambent/lambent/pkg/api"
)

// Limits are the per-request bounds. The zero value of a field means its
// default (see [Default]); [Limits.WithDefaults] fills them.
type Limits struct {
	// SchemaDepth bounds the nesting depth of every JSON schema a request
	// carries (text.format json_schema, every tool's parameters: function
	// tools, lambent:output): objects and arrays inside each other
	// (LAMBENT_LIMIT_SCHEMA_DEPTH, default 32).
	SchemaDepth int
	// SchemaBytes bounds the size of each such schema as JSON
	// (LAMBENT_LIMIT_SCHEMA_BYTES, default 128 KiB).
	SchemaBytes int
	// SchemaPatterns bounds the regular expressions (pattern,
	// patternProperties) of each schema the gateway validates with
	// (text.format json_schema, lambent:output parameters): their summed
	// size with repetitions expanded, "[a-z]{1,1000}" counting 1,000, each
	// distinct expression once (LAMBENT_LIMIT_SCHEMA_PATTERNS, default
	// 50,000).
	SchemaPatterns int
	// SchemaEnumValues bounds the enum values of each such schema, all
	// enum keywords together (LAMBENT_LIMIT_SCHEMA_ENUM_VALUES, default
	// 1,000, OpenAI's structured outputs limit): validating an output costs
	// about enum values × the output's values.
	SchemaEnumValues int
	// Tools bounds the tools one request declares, of every type, the
	// tools of its namespace tools included (LAMBENT_LIMIT_TOOLS, default
	// 128, OpenAI's own limit).
	Tools int
	// MCPServers bounds the MCP servers one request enables ({"type":"mcp"}
	// tools and manifest servers; LAMBENT_LIMIT_MCP_SERVERS, default 8).
	MCPServers int
	// MCPToolsPerServer bounds the tools an MCP server's listing may offer;
	// a longer listing fails that server's listing
	// (LAMBENT_LIMIT_MCP_TOOLS_PER_SERVER, default 256).
	MCPToolsPerServer int
	// MCPReplyBytes bounds one reply of an MCP server (a listing or a tool
	// call's result; LAMBENT_LIMIT_MCP_REPLY_BYTES, default 1 MiB).
	MCPReplyBytes int64
	// Images bounds the input images one model call carries: the
	// request's input (references resolved) and the conversation it
	// continues, with every provider; the Bedrock provider fetches or
	// decodes each on every call (LAMBENT_LIMIT_IMAGES, default 20,
	// Bedrock's limit per Converse request).
	Images int
	// ReferencedResponses bounds the stored responses one request reads:
	// previous_response_id plus the distinct other responses its
	// item_reference items point into, counted before any is read
	// (references into the conversation it continues need no read and do
	// not count; LAMBENT_LIMIT_REFERENCED_RESPONSES, default 16).
	ReferencedResponses int
	// ModelName bounds the length of a request's model name
	// (LAMBENT_LIMIT_MODEL_NAME, default 256 bytes).
	ModelName int
	// TenantInFlight bounds the responses one tenant may have running at
	// once on one gateway instance (one engine: creates, streamed or not,
	// compactions, background creates while they are queued and the
	// background runs of the engine's worker); over it a create is refused
	// with 429 rate_limit_exceeded and Retry-After
	// (LAMBENT_LIMIT_TENANT_IN_FLIGHT, default 64).
	TenantInFlight int
	// TenantWebSockets bounds the WebSocket connections one tenant may
	// hold open at once on one local gateway instance (package wsapi's
	// server): each holds memory (its store:false responses, its lanes)
	// for up to an hour. Past it an upgrade is refused with 429
	// rate_limit_exceeded and Retry-After
	// (LAMBENT_LIMIT_TENANT_WEBSOCKETS, default 16).
	TenantWebSockets int
	// TenantWebSocketTurns bounds the WebSocket turns one tenant may have
	// running at once deployment-wide on the AWS WebSocket API (package
	// wsapi/apigw, one DynamoDB item per tenant): past it a turn is
	// refused with the 429 rate_limit_exceeded envelope
	// (LAMBENT_LIMIT_TENANT_WEBSOCKET_TURNS, default 0: no bound).
	TenantWebSocketTurns int
	// WebSocketCacheBytes bounds the store:false responses one WebSocket
	// connection of the local gateway keeps in memory for
	// previous_response_id (the latest of each lane, as the gateway's
	// memory store measures records): a response that would pass it
	// evicts the least recently kept ones, and one larger by itself is
	// not kept (LAMBENT_LIMIT_WEBSOCKET_CACHE_BYTES, default 64 MiB).
	WebSocketCacheBytes int
	// TenantWebSocketCacheBytes bounds the store:false responses all the
	// WebSocket connections of one tenant keep in memory together on one
	// local gateway instance, as WebSocketCacheBytes measures them: a
	// response that would pass it evicts the tenant's least recently kept
	// ones, on any of its connections, never another tenant's
	// (LAMBENT_LIMIT_TENANT_WEBSOCKET_CACHE_BYTES, default 256 MiB).
	TenantWebSocketCacheBytes int
	// ConversationItemsPerCall bounds the items one call adds to a
	// conversation: POST /v1/conversations (its first items) and POST
	// /v1/conversations/{id}/items (LAMBENT_LIMIT_CONVERSATION_ITEMS_PER_CALL,
	// default 20, OpenAI's own limit).
	ConversationItemsPerCall int
	// ConversationItems bounds the items of a conversation that a response
	// created in it loads as its context, checked before the model call
	// (LAMBENT_LIMIT_CONVERSATION_ITEMS, default 2,000): past it the create
	// is a 400, and the conversation must be made smaller (delete items,
	// or start a new one from a compaction of it).
	ConversationItems int
}

// Defaults of the limits.
const (
	DefaultSchemaDepth         = 32
	DefaultSchemaBytes         = 128 << 10
	DefaultSchemaPatterns      = 50_000
	DefaultSchemaEnumValues    = 1000
	DefaultTools               = 128
	DefaultMCPServers          = 8
	DefaultMCPToolsPerServer   = 256
	DefaultMCPReplyBytes       = 1 << 20
	DefaultImages              = 20
	DefaultReferencedResponses = 16
	DefaultModelName           = 256
	DefaultTenantInFlight      = 64
	DefaultTenantWebSockets    = 16
	DefaultWebSocketCacheBytes = 64 << 20
	// DefaultTenantWebSocketCacheBytes is a quarter of what
	// DefaultTenantWebSockets connections could keep otherwise (1 GiB).
	DefaultTenantWebSocketCacheBytes = 256 << 20
	// DefaultConversationItemsPerCall is OpenAI's limit of items per call.
	DefaultConversationItemsPerCall = 20
	DefaultConversationItems        = 2000
)

// Default returns the default limits.
func Default() Limits { return Limits{}.WithDefaults() }

// WithDefaults returns l with every zero (or negative) field set to its
// default (TenantWebSocketTurns's is 0, no bound: a negative one is 0).
func (l Limits) WithDefaults() Limits {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&l.SchemaDepth, DefaultSchemaDepth)
	def(&l.SchemaBytes, DefaultSchemaBytes)
	def(&l.SchemaPatterns, DefaultSchemaPatterns)
	def(&l.SchemaEnumValues, DefaultSchemaEnumValues)
	def(&l.Tools, DefaultTools)
	def(&l.MCPServers, DefaultMCPServers)
	def(&l.MCPToolsPerServer, DefaultMCPToolsPerServer)
	def(&l.Images, DefaultImages)
	def(&l.ReferencedResponses, DefaultReferencedResponses)
	def(&l.ModelName, DefaultModelName)
	def(&l.TenantInFlight, DefaultTenantInFlight)
	def(&l.TenantWebSockets, DefaultTenantWebSockets)
	def(&l.WebSocketCacheBytes, DefaultWebSocketCacheBytes)
	def(&l.TenantWebSocketCacheBytes, DefaultTenantWebSocketCacheBytes)
	def(&l.ConversationItemsPerCall, DefaultConversationItemsPerCall)
	def(&l.ConversationItems, DefaultConversationItems)
	l.TenantWebSocketTurns = max(l.TenantWebSocketTurns, 0)
	if l.MCPReplyBytes <= 0 {
		l.MCPReplyBytes = DefaultMCPReplyBytes
	}
	return l
}

// Setting describes one limit's environment setting, for the
// configuration loader and the documentation test.
type Setting struct {
	// Env is the environment variable.
	Env string
	// Field points at the limit in a Limits value.
	Field func(*Limits) *int
	// ZeroIsNoBound marks a limit whose 0 means no bound (its default):
	// the setting takes 0, where the others want a positive number.
	ZeroIsNoBound bool
}

// Settings lists every integer limit with its environment variable
// (MCPReplyBytes, an int64, is read apart: EnvMCPReplyBytes).
func Settings() []Setting {
	return []Setting{
		{Env: "LAMBENT_LIMIT_SCHEMA_DEPTH", Field: func(l *Limits) *int { return &l.SchemaDepth }},
		{Env: "LAMBENT_LIMIT_SCHEMA_BYTES", Field: func(l *Limits) *int { return &l.SchemaBytes }},
		{Env: "LAMBENT_LIMIT_SCHEMA_PATTERNS", Field: func(l *Limits) *int { return &l.SchemaPatterns }},
		{Env: "LAMBENT_LIMIT_SCHEMA_ENUM_VALUES", Field: func(l *Limits) *int { return &l.SchemaEnumValues }},
		{Env: "LAMBENT_LIMIT_TOOLS", Field: func(l *Limits) *int { return &l.Tools }},
		{Env: "LAMBENT_LIMIT_MCP_SERVERS", Field: func(l *Limits) *int { return &l.MCPServers }},
		{Env: "LAMBENT_LIMIT_MCP_TOOLS_PER_SERVER", Field: func(l *Limits) *int { return &l.MCPToolsPerServer }},
		{Env: "LAMBENT_LIMIT_IMAGES", Field: func(l *Limits) *int { return &l.Images }},
		{Env: "LAMBENT_LIMIT_REFERENCED_RESPONSES", Field: func(l *Limits) *int { return &l.ReferencedResponses }},
		{Env: "LAMBENT_LIMIT_MODEL_NAME", Field: func(l *Limits) *int { return &l.ModelName }},
		{Env: "LAMBENT_LIMIT_TENANT_IN_FLIGHT", Field: func(l *Limits) *int { return &l.TenantInFlight }},
		{Env: "LAMBENT_LIMIT_TENANT_WEBSOCKETS", Field: func(l *Limits) *int { return &l.TenantWebSockets }},
		{Env: "LAMBENT_LIMIT_TENANT_WEBSOCKET_TURNS", Field: func(l *Limits) *int { return &l.TenantWebSocketTurns }, ZeroIsNoBound: true},
		{Env: "LAMBENT_LIMIT_WEBSOCKET_CACHE_BYTES", Field: func(l *Limits) *int { return &l.WebSocketCacheBytes }},
		{Env: "LAMBENT_LIMIT_TENANT_WEBSOCKET_CACHE_BYTES", Field: func(l *Limits) *int { return &l.TenantWebSocketCacheBytes }},
		{Env: "LAMBENT_LIMIT_CONVERSATION_ITEMS_PER_CALL", Field: func(l *Limits) *int { return &l.ConversationItemsPerCall }},
		{Env: "LAMBENT_LIMIT_CONVERSATION_ITEMS", Field: func(l *Limits) *int { return &l.ConversationItems }},
	}
}

// EnvMCPReplyBytes is the setting of Limits.MCPReplyBytes.
const EnvMCPReplyBytes = "LAMBENT_LIMIT_MCP_REPLY_BYTES"

// CodeLimitExceeded is the error code of a request over a limit.
const CodeLimitExceeded = "limit_exceeded"

// Exceeded is the 400 of a request over a limit: it names the parameter,
// what was asked and the limit.
func Exceeded(param, what string, got, limit int) *api.Error {
	return api.InvalidRequestCode(param, CodeLimitExceeded,
		"%s: %d is over this gateway's limit of %d.", what, got, limit)
}
