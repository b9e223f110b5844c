// Package engine creates responses: it validates a request against the
// conversation stored before it, runs the agentic loop (model call, tool
// calls executed concurrently, results fed back, repeat), streams events
// through a ResponseWriter and stores every terminal response.
//
// The engine depends only on interfaces: provider.Provider,
// store.ResponseStore, tools.Catalog and tools.ToolExecutor. It knows
// nothing of AWS.
package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/compaction"
	"github.com/lambent/lambent/pkg/limits"
	"github.com/lambent/lambent/pkg/provider"
	"github.com/lambent/lambent/pkg/store"
	"github.com/lambent/lambent/pkg/tools"
)

// ResponseWriter receives what the engine produces. Implementations must
// not retain events or responses after the call returns (the engine reuses
// and mutates them). When the events of a stream reach the client is the
// writer's business: a transport that buffers them paces them (package
// pacing), the engine only emits them.
type ResponseWriter interface {
	// WriteEvent sends one streaming event (stream requests only). ev,
	// and what it points to, is valid only during the call (the engine
	// reuses a delta's event): a writer encodes it at once.
	WriteEvent(ev *api.StreamEvent) error
	// WriteResponse sends the final response (non-stream requests only).
	WriteResponse(r *api.Response) error
}

// Flusher is implemented by ResponseWriters whose events are buffered:
// Flush sends what was buffered, in one write that holds only whole
// events. A follower of a background response (see follow) flushes once
// when it starts and after each batch of stored events; events buffered
// when a call of the engine returns are the caller's to send when it ends
// the stream (the HTTP transport sends them with data: [DONE]).
type Flusher interface {
	Flush() error
}

// heldWriter is implemented by ResponseWriters that can hold a delta
// event for the events right behind it (pacing.Writer): WriteHeldEvent
// writes ev like WriteEvent, but need not send it before the next event.
type heldWriter interface {
	WriteHeldEvent(ev *api.StreamEvent) error
}

// openingHolder is implemented by ResponseWriters that can hold the
// opening of a stream (response.created, response.in_progress) until it
// truly begins (pacing.Writer): HoldOpening holds the events written
// next, Open sends them, Retract drops them and reports whether nothing at
// all reached the client (the request may then get an HTTP error).
type openingHolder interface {
	HoldOpening()
	Open()
	Retract() bool
}

// CommentWriter is implemented by ResponseWriters that can send SSE
// comments: a follower that reaches its deadline ends with ResumeComment.
type CommentWriter interface {
	WriteComment(text string) error
}

// rawEventWriter is implemented by ResponseWriters that can forward a
// stored event's JSON as is (every follower's writer).
type rawEventWriter interface {
	WriteRawEvent(typ string, data []byte) error
}

// Config configures an Engine. Provider is required; the rest have working
// zero values. The settings of each concern are grouped: Loop (how a
// response's loop runs), MCP (MCP servers and the key of their secrets)
// and Background (leasing and following background responses); each group
// documents its defaults. The pacing of streamed events is the transports'
// (package pacing).
type Config struct {
	Provider provider.Provider
	// Store keeps responses; nil disables storing (and continuations).
	Store store.ResponseStore
	// Hosted resolves hosted tools ("lambent:<name>" in a request) to the
	// definition the model sees and the executor that runs their calls;
	// {"type":"function"} tools are executed by the client. Nil means no
	// hosted tools and single-shot behaviour: the model's tool calls are
	// returned to the client and the response is completed.
	Hosted tools.Catalog
	// Compaction seals the summaries of POST /v1/responses/compact and
	// opens the compaction items requests send back; nil disables
	// compaction (both answer 501).
	Compaction *compaction.Keyring
	// DefaultModel is used when a request names none.
	DefaultModel string
	// Limits bound what one request may ask for (default limits.Default()).
	Limits limits.Limits
	// Loop is the loop policy.
	Loop LoopConfig
	// MCP enables MCP tools.
	MCP MCPConfig
	// Builtin says what becomes of OpenAI's built-in tools that Lambent
	// does not run itself (docs/tools.md, "Tool types").
	Builtin BuiltinConfig
	// Background runs background responses.
	Background BackgroundConfig
	// Observer watches every response's loop: the operator's tool call
	// hooks, metrics and traces (package telemetry). Nil observes nothing,
	// at no cost.
	Observer Observer
	// Logger receives structured logs (default slog.Default()).
	Logger *slog.Logger
	// Now is the clock (default time.Now). The deadline budget measures
	// model calls and tool batches with it.
	Now func() time.Time
}

// LoopConfig is the loop policy: how many model calls a response may make,
// the time kept free before a deadline, and how server-executed calls and
// client pauses appear to the client.
type LoopConfig struct {
	// MaxTurns bounds model calls per response (default 10). With
	// validated output the attempts bound them instead.
	MaxTurns int
	// MaxAttempts is the number of attempts of a validated output
	// (LAMBENT_MAX_ATTEMPTS, default 3) and the most a request's "lambent"
	// object may ask for (checkRequest).
	MaxAttempts int
	// MaxIterationsPerAttempt is the number of model calls an attempt may
	// make (LAMBENT_MAX_ITERATIONS_PER_ATTEMPT, default 15) and the most a
	// request's "lambent" object may ask for: a validated output makes at
	// most MaxAttempts × MaxIterationsPerAttempt model calls.
	MaxIterationsPerAttempt int
	// DeadlineReserve is kept free before the context deadline (a Lambda
	// invocation's) for storing and closing the stream (default 10s). The
	// loop stops with incomplete/"deadline" when the next model call or tool
	// batch would not fit in the time left; a follower of a background
	// response ends with ResumeComment that long before it.
	DeadlineReserve time.Duration
	// HostedToolItems says how calls the server executes appear in output:
	// HostedItemsMCPCall (the default: OpenAI's mcp_call item, which every
	// OpenAI client treats as already executed) or HostedItemsFunctionCall
	// (function_call + function_call_output, for strict OpenResponses
	// clients).
	HostedToolItems string
	// OpenAICompat reports client-tool pauses as the OpenAI API does:
	// status completed instead of requires_action.
	OpenAICompat bool
	// SkipArgumentCheck runs hosted and MCP tool calls without checking
	// their arguments against the tool's input schema first
	// (LAMBENT_VALIDATE_TOOL_ARGUMENTS=false; argcheck.go).
	SkipArgumentCheck bool
}

// withDefaults returns c with its zero values replaced by the defaults, or
// an error for a HostedToolItems it does not know.
func (c LoopConfig) withDefaults() (LoopConfig, error) {
	switch c.HostedToolItems {
	case "":
		c.HostedToolItems = HostedItemsMCPCall
	case HostedItemsMCPCall, HostedItemsFunctionCall:
	default:
		return c, fmt.Errorf("engine: hosted tool items %q: want %q or %q", c.HostedToolItems, HostedItemsMCPCall, HostedItemsFunctionCall)
	}
	if c.MaxTurns <= 0 {
		c.MaxTurns = 10
	}
	if c.MaxAttempts <= 0 {
		c.MaxAttempts = 3
	}
	if c.MaxIterationsPerAttempt <= 0 {
		c.MaxIterationsPerAttempt = 15
	}
	if c.DeadlineReserve == 0 {
		c.DeadlineReserve = 10 * time.Second
	}
	return c, nil
}

// BuiltinConfig says what becomes of the OpenAI built-in tools of a
// request that Lambent does not run itself (api.BuiltinHosted and
// api.BuiltinUnsupported types).
type BuiltinConfig struct {
	// Tools maps such a type to a hosted tool or a manifest MCP server of
	// the gateway (its name, as in "lambent:<name>"), which serves it:
	// {"type":"web_search"} is then {"type":"lambent:<name>"}
	// (LAMBENT_BUILTIN_TOOLS).
	Tools map[string]string
	// Refuse makes a request declaring one that Tools does not map a 400
	// unsupported_tool; by default it is left out of what the model sees
	// and reported (LAMBENT_UNSERVED_TOOLS).
	Refuse bool
}

// check checks that every mapped type is a built-in type Lambent does not
// run and names a hosted tool of hosted or a server of servers.
func (b BuiltinConfig) check(hosted tools.Catalog, servers map[string]*tools.MCPServer) error {
	for typ, name := range b.Tools {
		if k := api.BuiltinKind(typ); k != api.BuiltinHosted && k != api.BuiltinUnsupported {
			return fmt.Errorf("built-in tool %q: not a type of OpenAI's built-in tools that Lambent does not run", typ)
		}
		found := servers[name] != nil
		if !found && hosted != nil {
			_, exec, ok := hosted.Lookup(name)
			found = ok && exec != nil
		}
		if !found {
			return fmt.Errorf("built-in tool %s=%s%s: the gateway has no hosted tool or MCP server named %q", typ, api.HostedPrefix, name, name)
		}
	}
	return nil
}

// MCPConfig enables MCP tools: the connector, the manifest's servers and
// the key that seals their secrets in stored background requests.
type MCPConfig struct {
	// Connector connects to MCP servers ({"type":"mcp"} tools and the
	// manifest's); nil makes MCP tools a 400.
	Connector tools.MCPConnector
	// Servers are the manifest's MCP servers by name, which a request
	// enables with {"type":"lambent:<name>"}.
	Servers map[string]*tools.MCPServer
	// SecretKey (32 bytes) seals the MCP secrets (headers, authorization)
	// of stored background requests with AES-256-GCM, bound to the
	// response's tenant and id (secrets.go). Default: a random key
	// of this process, which only this process can open (enough for the
	// in-process queue of local runs; gateways and workers that share a
	// queue share a key).
	SecretKey []byte
}

// BackgroundConfig runs background responses: the queue that hands their
// jobs to workers, the leases workers hold, and the pace of following and
// cancelling them.
type BackgroundConfig struct {
	// Queue runs background responses; nil disables background=true.
	Queue Queue
	// Publisher announces terminal background responses; optional.
	Publisher Publisher
	// WorkerID names this process in background leases (default random).
	WorkerID string
	// Lease is how long a worker owns a background response after each
	// checkpoint (default 15m, the Lambda maximum).
	Lease time.Duration
	// PollInterval paces following a background stream and checking for
	// cancel requests (default 250ms).
	PollInterval time.Duration
	// CancelWait bounds how long POST /cancel waits for the worker to stop
	// (default 5s).
	CancelWait time.Duration
}

// withDefaults returns c with its zero values replaced by the defaults.
func (c BackgroundConfig) withDefaults() BackgroundConfig {
	if c.WorkerID == "" {
		c.WorkerID = api.NewID("worker_")
	}
	if c.Lease <= 0 {
		c.Lease = 15 * time.Minute
	}
	if c.PollInterval <= 0 {
		c.PollInterval = 250 * time.Millisecond
	}
	if c.CancelWait <= 0 {
		c.CancelWait = 5 * time.Second
	}
	return c
}

// Values of LoopConfig.HostedToolItems.
const (
	HostedItemsMCPCall      = "mcp_call"
	HostedItemsFunctionCall = "function_call"
)

// Engine creates responses. It is safe for concurrent use.
type Engine struct {
	cfg Config
	log *slog.Logger
	// secrets seals the MCP secrets of stored background requests.
	secrets *compaction.Keyring
	// inflight counts each tenant's responses running here.
	inflight *inflight
	// argChecks holds the compiled input schemas of hosted tools, by
	// definition (hostedArgCheck).
	argChecks sync.Map
}

// New returns an engine for cfg.
func New(cfg Config) (*Engine, error) {
	if cfg.Provider == nil {
		return nil, errors.New("engine: a provider is required")
	}
	loop, err := cfg.Loop.withDefaults()
	if err != nil {
		return nil, err
	}
	cfg.Loop = loop
	cfg.Background = cfg.Background.withDefaults()
	cfg.Limits = cfg.Limits.WithDefaults()
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	secrets, err := secretsKeyring(cfg.MCP.SecretKey)
	if err != nil {
		return nil, err
	}
	if err := cfg.Builtin.check(cfg.Hosted, cfg.MCP.Servers); err != nil {
		return nil, err
	}
	return &Engine{cfg: cfg, log: cfg.Logger, secrets: secrets, inflight: newInflight(cfg.Limits.TenantInFlight)}, nil
}

// GetResponse returns a stored response.
func (e *Engine) GetResponse(ctx context.Context, id string) (*api.Response, error) {
	rec, err := e.get(ctx, id, "id")
	if err != nil {
		return nil, err
	}
	return rec.Response, nil
}

// DeleteResponse deletes a stored response. It reads the response first:
// a background response deleted before its end gives up the lock of its
// conversation (releaseDeleted). A record that cannot be decoded
// (store.ErrCorrupt) is deleted all the same.
func (e *Engine) DeleteResponse(ctx context.Context, id string) (*api.DeleteResult, error) {
	if e.cfg.Store == nil || !api.ValidResponseID(id) {
		return nil, notFound(id, "id")
	}
	rec, err := e.cfg.Store.Get(ctx, id)
	if err != nil && !errors.Is(err, store.ErrCorrupt) {
		return nil, e.storeErr(err, id, "id")
	}
	if err := e.cfg.Store.Delete(ctx, id); err != nil && !e.deletedAnyway(ctx, id, err) {
		return nil, e.storeErr(err, id, "id")
	}
	if rec != nil {
		e.releaseDeleted(ctx, rec)
	}
	return &api.DeleteResult{ID: id, Object: "response", Deleted: true}, nil
}

// deletedAnyway reports whether a delete of id that failed deleted it all
// the same (store.ErrPartlyDeleted: only parts that expire with it
// remain), which it logs: the client's delete succeeded.
func (e *Engine) deletedAnyway(ctx context.Context, id string, err error) bool {
	if !errors.Is(err, store.ErrPartlyDeleted) {
		return false
	}
	e.log.WarnContext(ctx, "deleted; some parts remain until they expire", "id", id, "err", err)
	return true
}

// ListInputItems pages through a stored response's input items.
func (e *Engine) ListInputItems(ctx context.Context, id string, opts api.ListOptions) (*api.ItemList, error) {
	if e.cfg.Store == nil || !api.ValidResponseID(id) {
		return nil, notFound(id, "id")
	}
	page, err := e.cfg.Store.ListInputItems(ctx, id, opts)
	if err != nil {
		return nil, e.storeErr(err, id, "id")
	}
	list := &api.ItemList{Object: "list", Data: page.Items, HasMore: page.HasMore}
	if list.Data == nil {
		list.Data = []api.Item{}
	}
	if n := len(page.Items); n > 0 {
		list.FirstID, list.LastID = &page.Items[0].ID, &page.Items[n-1].ID
	}
	return list, nil
}

// CancelResponse cancels a background response. Only background responses
// can be cancelled.
func (e *Engine) CancelResponse(ctx context.Context, id string) (*api.Response, error) {
	rec, err := e.get(ctx, id, "id")
	if err != nil {
		return nil, err
	}
	if !rec.Response.Background || rec.Job == nil {
		return nil, api.InvalidRequest("", "Only responses created with background=true can be cancelled.")
	}
	if rec.Response.Status.Terminal() {
		if rec.Response.Status == api.StatusCancelled {
			return rec.Response, nil
		}
		return nil, api.InvalidRequest("", "Cannot cancel a response with status %s.", rec.Response.Status)
	}
	return e.cancelBackground(ctx, rec)
}

// get reads a stored response. An id that is not well-formed
// (api.ValidResponseID) names none: it never reaches the store.
func (e *Engine) get(ctx context.Context, id, param string) (*store.Record, error) {
	if e.cfg.Store == nil || !api.ValidResponseID(id) {
		return nil, notFound(id, param)
	}
	rec, err := e.cfg.Store.Get(ctx, id)
	if err != nil {
		return nil, e.storeErr(err, id, param)
	}
	return rec, nil
}

// notFound is the 404 of an unknown response id. The message quotes at
// most MaxResponseIDLen bytes of the id.
func notFound(id, param string) *api.Error {
	if len(id) > api.MaxResponseIDLen {
		id = strings.ToValidUTF8(id[:api.MaxResponseIDLen], "") + "…"
	}
	if param == "previous_response_id" {
		return api.NotFound(param, "previous_response_not_found", "Previous response with id '%s' not found.", id)
	}
	return api.NotFound(param, "response_not_found", "Response with id '%s' not found.", id)
}

// storeErr maps a store error to what the client sees. A context error
// (the caller went away, or its deadline passed) stays one: the transport
// tells it from a failure.
func (e *Engine) storeErr(err error, id, param string) error {
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	case errors.Is(err, store.ErrNotFound):
		return notFound(id, param)
	case errors.Is(err, store.ErrConflict):
		return api.Conflict("response_conflict", "Response '%s' was changed concurrently.", id)
	}
	var ae *api.Error
	if errors.As(err, &ae) {
		return ae
	}
	return api.ServerError(err, "The response store failed.")
}

// checkSize refuses, before the model is called, a response whose record
// would already be larger than the store keeps (a long conversation, a
// large input): a 400 the client can act on, where storing it after the
// model call would lose it.
func (e *Engine) checkSize(r *run) error {
	sc, ok := e.cfg.Store.(store.SizeChecker)
	if !ok || !r.req.Stores() {
		return nil
	}
	return tooLarge(r.req, sc.CheckSize(r.record()))
}

// tooLarge maps a store's *store.TooLargeError to the client's 400
// context_too_large (param previous_response_id when the conversation
// continues one, else input); other errors pass unchanged.
func tooLarge(req *api.CreateResponseRequest, err error) error {
	if err == nil {
		return nil
	}
	var tl *store.TooLargeError
	if !errors.As(err, &tl) {
		return err
	}
	param := "input"
	if req.PreviousResponseID != "" {
		param = "previous_response_id"
	}
	return api.InvalidRequestCode(param, "context_too_large",
		"The conversation with this input is %d bytes, more than the %d bytes one stored response may hold. Start a new conversation (without previous_response_id) or send less input.",
		tl.Size, tl.Limit)
}
