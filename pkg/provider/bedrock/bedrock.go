// Package bedrock is a provider.Provider for Amazon Bedrock's Converse and
// ConverseStream API, through the AWS SDK's bedrockruntime client: the
// credentials, region, endpoint (AWS_ENDPOINT_URL_BEDROCK_RUNTIME) and
// retries of the aws.Config it is given (awsconf.Load in Lambent: in Lambda
// the function role's credentials and AWS_REGION). Request.Model is a
// Bedrock model id, an inference profile id or an ARN.
//
// Translation (documented here because it is visible to the model):
//
//   - Request.Instructions, then system and developer messages, in order,
//     become the system prompt: Converse messages are user or assistant only.
//     The system prompt takes text only: an input_image or input_file part
//     in a system or developer message is refused with a 400.
//   - Consecutive items of one role become one message (Bedrock requires
//     alternating roles): every function_call of a turn is a toolUse block
//     of one assistant message, every function_call_output a toolResult
//     block of the next user message (status "error" when the output is an
//     error), one per toolUse and in its order. A toolUse left without an
//     output gets an error result; an output answering no toolUse of the
//     message before it is sent as text. Empty outputs and texts become a
//     placeholder text, since Bedrock refuses blank text. A history that
//     ends with an assistant message (a prefill) has the trailing white
//     space of its last text trimmed: Anthropic's models refuse it.
//   - toolConfig is sent whenever the history holds toolUse or toolResult
//     blocks, even when the request has no tools (the history's tool names
//     are then declared with an open schema). tool_choice auto → auto,
//     required → any, a forced function → tool; none sends no tools unless
//     the history needs them, and tool calls the model makes anyway are
//     dropped from its answer. parallel_tool_calls has no Converse form.
//   - Images: base64 data URLs, and http(s) URLs fetched through
//     the SSRF guard (package egress), up to Config.MaxImageBytes; png, jpeg, gif,
//     webp. input_file and file_id images are refused with a 400 (the
//     engine asks first: CheckContent, before any MCP server is listed). Every
//     call fetches or decodes the conversation's images again, one after
//     another, and holds them until it is sent: the engine bounds their
//     number (LAMBENT_LIMIT_IMAGES), so one call holds at most that many
//     times MaxImageBytes of images (20 × 3.75 MB by default; the SDK's
//     base64 request body costs several times that while it is built).
//   - max_output_tokens, temperature, top_p → inferenceConfig;
//     text.format json_schema → outputConfig; service_tier priority,
//     default, flex → serviceTier. presence/frequency penalties and
//     logprobs have no Converse form and are ignored.
//   - reasoning.effort on an Anthropic Claude model turns on extended
//     thinking (low 1024, medium 4096, high 16384 budget tokens, kept below
//     max_output_tokens), where Anthropic allows it: not with a required or
//     forced tool choice, and not to continue a tool loop whose assistant
//     turn did not think. Reasoning comes back as reasoning items whose
//     encrypted_content carries the block's signature or redacted content;
//     such items are sent back as reasoningContent blocks, unchanged, which
//     continuations with thinking need. Reasoning items from other
//     providers are not sent.
//   - Config.GuardrailID/Version attach a guardrail to every call.
//   - Model features: what a model lacks of Converse (tool use in
//     ConverseStream, ...) is learned from Bedrock's refusal and the call
//     made again without it (quirks.go): a streamed call with tools to a
//     model with tool use in Converse only runs as a Converse call whose
//     answer is passed on as deltas; without system prompts, the system
//     prompt's text starts the first user message; without toolChoice
//     tool, a forced function is the only tool, with toolChoice any;
//     without toolChoice any, or without tool use, the call is a 400.
//   - Prompt caching: on the models that support it, cachePoint blocks
//     after the last two user messages, the system prompt, the tools and,
//     while points are left, earlier user messages (placeCachePoints),
//     unless Config.CachePoints is off.
//   - Token counts (CountTokens, count.go): Bedrock's CountTokens counts
//     the Converse input of a call but its inference, output, guardrail
//     and tier settings (the outputConfig's JSON schema, which the model
//     reads, is counted as a system text block), for the call's
//     foundation model (a cross-region inference profile's); it counts
//     for some Anthropic Claude models only, any other is a 501
//     input_tokens_unsupported.
//
// Stop reasons: end_turn and stop_sequence → stop; tool_use → tool calls;
// max_tokens and model_context_window_exceeded → length;
// guardrail_intervened and content_filtered → content_filter;
// malformed_model_output and malformed_tool_use → a 502 error. Usage: input
// tokens are every input token, as OpenAI counts them (Bedrock's
// inputTokens + cacheReadInputTokens + cacheWriteInputTokens);
// cached_tokens are the cache reads; Result.CacheWriteTokens the cache
// writes.
//
// Errors are *api.Error values wrapping the SDK's (see errors.go). The
// SDK's retryer retries throttling, a model not ready yet
// (ModelNotReadyException) and transient errors within the call's
// context, which the engine bounds by its deadline budget.
package bedrock

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"

	"github.com/lambent/lambent/pkg/awsconf"
	"github.com/lambent/lambent/pkg/egress"
	"github.com/lambent/lambent/pkg/provider"
)

// DefaultMaxImageBytes is the default cap of one image: Bedrock's limit
// for an image block.
const DefaultMaxImageBytes = 3_750_000

// Config configures a Provider.
type Config struct {
	// AWS is the SDK configuration (awsconf.Load).
	AWS aws.Config
	// GuardrailID and GuardrailVersion attach a Bedrock guardrail to every
	// call when GuardrailID is set (GuardrailVersion default "DRAFT").
	GuardrailID      string
	GuardrailVersion string
	// ImageFetch configures how image URLs are fetched.
	ImageFetch ImageFetch
	// MaxImageBytes caps one image (default DefaultMaxImageBytes).
	MaxImageBytes int64
	// Logger receives debug logs (optional; default discards).
	Logger *slog.Logger
	// CachePoints turns the automatic prompt cache points on (auto, the
	// default) or off.
	CachePoints CachePoints
}

// ImageFetch configures how input image URLs are fetched: through the SSRF
// guard (package egress), within a timeout.
type ImageFetch struct {
	// AllowHosts is the guard's allow-list (egress.New): private hosts
	// image URLs may name (local runs and tests).
	AllowHosts []string
	// Client is the base HTTP client (copied; nil: a fresh one).
	Client *http.Client
	// Timeout bounds one image's fetch (default DefaultImageTimeout).
	Timeout time.Duration
}

// DefaultImageTimeout bounds one image fetch: connect, redirects and body.
const DefaultImageTimeout = 10 * time.Second

// UserAgent is the User-Agent of image fetches.
const UserAgent = "Lambent-image-fetch/1"

// Provider calls Bedrock's Converse API. It is safe for concurrent use.
type Provider struct {
	client       *bedrockruntime.Client
	guardID      string
	guardVersion string
	images       *http.Client
	imageTimeout time.Duration
	maxImage     int64
	log          *slog.Logger
	noCache      bool
	// quirks holds, per model name, the features Bedrock refused it
	// (quirks.go).
	quirks sync.Map
}

var _ provider.Provider = (*Provider)(nil)

// New returns a Provider for cfg.
func New(cfg Config) *Provider {
	awsCfg := cfg.AWS
	hc := awsCfg.HTTPClient
	if hc == nil {
		hc = awshttp.NewBuildableClient()
	}
	awsCfg.HTTPClient = awsconf.ReadOnlyBodies(hc)
	p := &Provider{
		client:       bedrockruntime.NewFromConfig(awsCfg, retryModelNotReady),
		guardID:      cfg.GuardrailID,
		guardVersion: cfg.GuardrailVersion,
		images:       egress.New(cfg.ImageFetch.AllowHosts).Client(cfg.ImageFetch.Client, false),
		imageTimeout: cfg.ImageFetch.Timeout,
		maxImage:     cfg.MaxImageBytes,
		log:          cfg.Logger,
		noCache:      cfg.CachePoints == CachePointsOff,
	}
	if p.imageTimeout <= 0 {
		p.imageTimeout = DefaultImageTimeout
	}
	if p.guardID != "" && p.guardVersion == "" {
		p.guardVersion = "DRAFT"
	}
	if p.maxImage <= 0 {
		p.maxImage = DefaultMaxImageBytes
	}
	if p.log == nil {
		p.log = slog.New(slog.DiscardHandler)
	}
	return p
}

// retryModelNotReady makes the client's retryer retry a
// ModelNotReadyException (a 429 the standard retryer does not retry by
// itself), which Bedrock documents as retried by the SDKs, as it retries
// throttling.
func retryModelNotReady(o *bedrockruntime.Options) {
	o.Retryer = retry.AddWithErrorCodes(o.Retryer, "ModelNotReadyException")
}

// Complete runs one Converse call.
func (p *Provider) Complete(ctx context.Context, req *provider.Request) (*provider.Result, error) {
	return p.call(ctx, req, nil)
}

// Stream runs one ConverseStream call, passing deltas to fn; a call the
// model takes in Converse only (see quirks.go) runs as one Converse call
// whose answer is passed to fn block by block.
func (p *Provider) Stream(ctx context.Context, req *provider.Request, fn func(provider.Delta) error) (*provider.Result, error) {
	if fn == nil {
		fn = func(provider.Delta) error { return nil }
	}
	return p.call(ctx, req, fn)
}

// call runs one model call, streamed when fn is not nil. When Bedrock
// refuses a feature the model lacks (quirks.go), in its reply to the call
// (before the model runs, so before any delta), the provider remembers it
// for the model and makes the call again without it.
func (p *Provider) call(ctx context.Context, req *provider.Request, fn func(provider.Delta) error) (*provider.Result, error) {
	b, err := p.build(ctx, req)
	if err != nil {
		return nil, err
	}
	for {
		known := p.known(req.Model)
		in, err := adapt(b.input, known, req.Model)
		if err != nil {
			return nil, err
		}
		var res *provider.Result
		switch {
		case fn == nil:
			res, err = p.converse(ctx, req.Model, in, b, nil)
		case known&noStreamTools != 0 && in.ToolConfig != nil:
			res, err = p.converse(ctx, req.Model, in, b, fn)
		default:
			res, err = p.stream(ctx, req.Model, in, b, fn)
		}
		q := refused(err)
		if q == 0 || known&q != 0 {
			return res, err
		}
		p.learn(ctx, req.Model, q)
	}
}

// converse makes the Converse call in, passing the answer to fn (nil:
// none).
func (p *Provider) converse(ctx context.Context, model string, in *bedrockruntime.ConverseInput, b *built, fn func(provider.Delta) error) (*provider.Result, error) {
	if p.guardID != "" {
		in.GuardrailConfig = &types.GuardrailConfiguration{GuardrailIdentifier: &p.guardID, GuardrailVersion: &p.guardVersion}
	}
	if fn != nil {
		fn = b.names.Stream(fn)
	}
	out, err := p.client.Converse(ctx, in)
	if err != nil {
		return nil, p.apiError(ctx, model, err)
	}
	if err := accepted(fn); err != nil {
		return nil, err
	}
	res, err := decodeOutput(out, model, b.noTools, fn)
	b.names.Result(res)
	return res, err
}

// accepted tells fn (nil: a call that is not streamed) that Bedrock
// accepted the call (provider.DeltaAccepted).
func accepted(fn func(provider.Delta) error) error {
	if fn == nil {
		return nil
	}
	return fn(provider.Delta{Kind: provider.DeltaAccepted})
}

// stream makes the ConverseStream call of in, passing deltas to fn.
func (p *Provider) stream(ctx context.Context, model string, c *bedrockruntime.ConverseInput, b *built, fn func(provider.Delta) error) (*provider.Result, error) {
	sin := &bedrockruntime.ConverseStreamInput{
		ModelId:                      c.ModelId,
		Messages:                     c.Messages,
		System:                       c.System,
		InferenceConfig:              c.InferenceConfig,
		ToolConfig:                   c.ToolConfig,
		AdditionalModelRequestFields: c.AdditionalModelRequestFields,
		OutputConfig:                 c.OutputConfig,
		ServiceTier:                  c.ServiceTier,
	}
	if p.guardID != "" {
		sin.GuardrailConfig = &types.GuardrailStreamConfiguration{GuardrailIdentifier: &p.guardID, GuardrailVersion: &p.guardVersion,
			StreamProcessingMode: types.GuardrailStreamProcessingModeSync}
	}
	out, err := p.client.ConverseStream(ctx, sin)
	if err != nil {
		return nil, p.apiError(ctx, model, err)
	}
	stream := out.GetStream()
	defer stream.Close()
	if err := accepted(fn); err != nil {
		return nil, err
	}
	acc := newAccumulator(b.names.Stream(fn), b.noTools)
	for ev := range stream.Events() {
		if err := acc.event(ev); err != nil {
			return nil, err
		}
	}
	if err := stream.Err(); err != nil {
		return nil, p.apiError(ctx, model, err)
	}
	if ctx.Err() != nil {
		return nil, provider.ContextError(ctx)
	}
	if !acc.stopped {
		return nil, provider.StreamCut(nil, "Bedrock's stream ended before the answer was complete (no messageStop)")
	}
	res, err := acc.result(model)
	b.names.Result(res)
	return res, err
}
