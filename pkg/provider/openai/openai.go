// Package openai is a provider.Provider for any OpenAI-compatible Chat
// Completions API: OpenAI itself, Ollama, vLLM and the like. It is written
// on net/http and internal/wirejson.
//
// Translation choices made for broad compatibility (documented here because
// they are visible to the model backend):
//
//   - Request.Instructions becomes a leading "system" message.
//   - "developer" messages are sent with role "system": most open-weight chat
//     templates (Ollama, vLLM) do not know the developer role, and OpenAI
//     treats a system message as a developer message for reasoning models.
//   - Message content is sent as a plain string (text parts joined with "\n")
//     unless it contains an image, in which case it is an array of parts.
//     input_file parts are rejected with a 400: Chat Completions backends
//     do not take them portably. So are images in system and developer
//     messages: Chat Completions takes images in user messages only. The
//     engine asks first (CheckContent, provider.ContentChecker), before
//     any MCP server is listed.
//   - A call offering more tools than Config.Rules.MaxTools (128, OpenAI's
//     limit, by default; the gateway sets it for OpenAI's hosts only, or
//     as LAMBENT_PROVIDER_MAX_TOOLS says) is refused with a 400
//     limit_exceeded naming tools, without calling the backend.
//   - MaxOutputTokens is sent as "max_tokens", which OpenAI (non-reasoning
//     models), Ollama and vLLM all honour; Ollama and LM Studio ignore
//     "max_completion_tokens". It is sent as "max_completion_tokens" to
//     OpenAI's reasoning models (o1, o3, o4, gpt-5 and their variants,
//     known by name), which refuse "max_tokens". Config.TokenLimit sends
//     one of the two to every model instead, as the gateway's
//     LAMBENT_PROVIDER_MAX_TOKENS_PARAM says. Exactly one is sent.
//   - Reasoning items of the current tool loop (after the last user
//     message) are sent back as "reasoning_content" on the assistant
//     message that follows them, as DeepSeek's thinking mode with tools
//     requires (vLLM and Ollama ignore the field); reasoning of earlier
//     turns is not sent (DeepSeek refuses it there).
//   - top_logprobs is sent (with logprobs:true) only when it is above zero;
//     log probabilities are not decoded.
//   - A request body up to 256 KiB is sent with its Content-Length; a
//     longer one (a long agentic loop's history) is sent chunked as its
//     messages are encoded, so that the gateway never holds it whole.
//     (Messages of little text, 16 KiB at most, are encoded at once: a
//     body longer for its tools alone is sent chunked too.)
//
// finish_reason length and content_filter end the response incomplete;
// one saying the backend broke the answer off (insufficient_system_resource,
// error, abort) fails the call (interrupted).
//
// Errors are *api.Error values wrapping their cause (see the provider.Code
// constants). A cancelled context gives a 499 request_cancelled error and a
// passed deadline a 504 upstream_timeout, both wrapping ctx.Err(), so
// errors.Is(err, context.Canceled) tells a cancellation. The provider never
// retries. An answer is bounded: a non-streaming body at 64 MiB, a streamed
// answer's text, refusal, reasoning and tool calls at 64 MiB together
// (longer: a 502 upstream_bad_response).
//
// Requests are encoded and responses and stream chunks decoded with
// internal/wirejson (encoding/json's bytes and values, faster), in the wire
// types of internal/chatwire.
package openai

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/lambent/lambent/internal/bounded"
	"github.com/lambent/lambent/internal/chatwire"
	"github.com/lambent/lambent/internal/wirejson"
	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/egress"
	"github.com/lambent/lambent/pkg/provider"
)

// Config configures a Provider.
type Config struct {
	// BaseURL is the API base URL including /v1, e.g.
	// http://127.0.0.1:11434/v1. Requests go to BaseURL + "/chat/completions".
	BaseURL string
	// APIKey is sent as a bearer token; no Authorization header when empty.
	APIKey string
	// HTTPClient overrides the default client (optional). It should have no
	// Client.Timeout: the caller's context bounds each call, and a client
	// timeout would cut long streams.
	HTTPClient *http.Client
	// Logger receives debug logs (optional; default discards).
	Logger *slog.Logger
	// TokenLimit is the field MaxOutputTokens is sent as (default
	// TokenLimitByModel).
	TokenLimit TokenLimit
	// Rules are what the backend accepts of tool call ids and names
	// (default provider.OpenAIRules; provider.MistralRules for Mistral):
	// requests are mapped to fit them (provider.Rules.Map).
	Rules provider.Rules
}

// TokenLimit names the Chat Completions field a request's MaxOutputTokens
// is sent as (Config.TokenLimit).
type TokenLimit int

// Token limit fields of Config.TokenLimit.
const (
	// TokenLimitByModel sends "max_completion_tokens" to OpenAI's
	// reasoning models (o1, o3, o4, gpt-5 and their variants, known by
	// name), which refuse "max_tokens", and "max_tokens" to other models.
	TokenLimitByModel TokenLimit = iota
	// TokenLimitMaxTokens sends "max_tokens" to every model: for servers
	// that ignore "max_completion_tokens" (Ollama, LM Studio), whatever
	// their models are named.
	TokenLimitMaxTokens
	// TokenLimitMaxCompletionTokens sends "max_completion_tokens" to
	// every model: for reasoning models under names of their own (an Azure
	// OpenAI deployment).
	TokenLimitMaxCompletionTokens
)

// completion reports whether model is sent "max_completion_tokens".
func (l TokenLimit) completion(model string) bool {
	switch l {
	case TokenLimitMaxTokens:
		return false
	case TokenLimitMaxCompletionTokens:
		return true
	}
	return reasoningModel(model)
}

// Provider calls an OpenAI-compatible Chat Completions API. It is safe for
// concurrent use. It never retries.
type Provider struct {
	// u is the URL requests go to, parsed once (urlErr: it is not
	// valid).
	u      url.URL
	urlErr error
	auth   string
	// headers are every request's headers, non-streaming and streaming.
	headers   [2]http.Header
	client    *http.Client
	ownClient bool
	log       *slog.Logger
	limit     TokenLimit
	rules     provider.Rules
}

var _ provider.Provider = (*Provider)(nil)

// New returns a Provider for cfg. Without cfg.HTTPClient it builds one
// shared client with a transport tuned for many concurrent calls to one
// backend and no overall timeout.
func New(cfg Config) *Provider {
	p := &Provider{
		client: cfg.HTTPClient,
		log:    cfg.Logger,
		limit:  cfg.TokenLimit,
		rules:  cfg.Rules,
	}
	if p.rules == (provider.Rules{}) {
		p.rules = provider.OpenAIRules()
	}
	if u, err := url.Parse(strings.TrimRight(cfg.BaseURL, "/") + "/chat/completions"); err != nil {
		p.urlErr = err
	} else {
		// An empty port dropped, as http.NewRequest does.
		if strings.LastIndex(u.Host, ":") > strings.LastIndex(u.Host, "]") {
			u.Host = strings.TrimSuffix(u.Host, ":")
		}
		p.u = *u
	}
	if cfg.APIKey != "" {
		p.auth = "Bearer " + cfg.APIKey
	}
	if p.client == nil {
		p.client = newHTTPClient()
		p.ownClient = true
	}
	if p.log == nil {
		p.log = slog.New(slog.DiscardHandler)
	}
	for i, accept := range []string{"application/json", "text/event-stream"} {
		h := http.Header{"Content-Type": {"application/json"}, "Accept": {accept}, "User-Agent": {"lambent"}}
		if p.auth != "" {
			h["Authorization"] = []string{p.auth}
		}
		p.headers[i] = h
	}
	return p
}

// newHTTPClient is the provider's own client, pooling connections to the
// model backend. Its requests share the provider's header maps
// (newRequest): neither this client (no cookie jar) nor its transport
// writes to a request's Header. A RoundTripper added here that sets
// headers (trace context, say) must clone the request first, as
// telemetry.Transport does.
func newHTTPClient() *http.Client {
	dialer := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	return &http.Client{Transport: &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           dialer.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          256,
		MaxIdleConnsPerHost:   64,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
		// No ResponseHeaderTimeout: a non-streaming completion sends its
		// headers only when generation is done, which can take minutes.
		// The caller's context bounds every call.
	}}
}

// CloseIdleConnections closes the idle connections of the provider's own
// HTTP client (a client passed in Config is left alone).
func (p *Provider) CloseIdleConnections() {
	if p.ownClient {
		p.client.CloseIdleConnections()
	}
}

// maxResponseBody bounds a non-streaming response body.
const maxResponseBody = 64 << 20

// maxErrorBody bounds how much of an error response is read.
const maxErrorBody = 64 << 10

// Complete runs one model call with a non-streaming request.
func (p *Provider) Complete(ctx context.Context, req *provider.Request) (*provider.Result, error) {
	req, m, err := p.rules.Fit(req)
	if err != nil {
		return nil, err
	}
	res, err := p.complete(ctx, req)
	m.Result(res)
	return res, err
}

// Stream runs one model call with a streaming request, passing deltas to fn.
func (p *Provider) Stream(ctx context.Context, req *provider.Request, fn func(provider.Delta) error) (*provider.Result, error) {
	req, m, err := p.rules.Fit(req)
	if err != nil {
		return nil, err
	}
	res, err := p.stream(ctx, req, m.Stream(fn))
	m.Result(res)
	return res, err
}

func (p *Provider) complete(ctx context.Context, req *provider.Request) (*provider.Result, error) {
	resp, err := p.post(ctx, req, false)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := readBody(resp)
	if err != nil {
		return nil, bodyReadError(ctx, err)
	}
	return decodeCompletion(body, req.Model)
}

func (p *Provider) stream(ctx context.Context, req *provider.Request, fn func(provider.Delta) error) (*provider.Result, error) {
	resp, err := p.post(ctx, req, true)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if err := fn(provider.Delta{Kind: provider.DeltaAccepted}); err != nil {
		return nil, err
	}
	if isJSON(resp.Header.Get("Content-Type")) {
		// The backend ignored stream:true and answered in one piece.
		body, err := readBody(resp)
		if err != nil {
			return nil, bodyReadError(ctx, err)
		}
		res, err := decodeCompletion(body, req.Model)
		if err != nil {
			return nil, err
		}
		if err := replay(res, fn); err != nil {
			return nil, err
		}
		return res, nil
	}
	res, err := decodeStream(resp.Body, req.Model, fn)
	if err != nil {
		if re, ok := err.(*readError); ok {
			if ctx.Err() != nil {
				return nil, provider.ContextError(ctx)
			}
			return nil, provider.StreamCut(re.err, "the model provider's stream was cut")
		}
		return nil, err
	}
	if res.warn != "" {
		p.log.DebugContext(ctx, "openai: accepted a stream without [DONE]", "reason", res.warn)
	} else {
		// After [DONE] a stream has nothing more to say, but its HTTP
		// response may not have ended yet in what was read: the last chunk
		// of a chunked body (or the rest of the TLS record) often comes in
		// a packet of its own. Closed before its end, the connection would
		// close, and the next model call dial again, with a TLS handshake;
		// a server that keeps the response open after [DONE] costs
		// egress.MaxDrainWait and its connection.
		_ = egress.DrainClose(resp.Body)
	}
	return &res.Result, nil
}

// post sends the request and returns a 2xx response; every failure is
// mapped to an *api.Error.
func (p *Provider) post(ctx context.Context, req *provider.Request, stream bool) (*http.Response, error) {
	if err := ctx.Err(); err != nil {
		return nil, provider.ContextError(ctx)
	}
	hreq, err := p.newRequest(ctx, req, stream)
	if err != nil {
		return nil, err
	}
	resp, err := p.client.Do(hreq)
	if err != nil {
		return nil, transportError(ctx, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		defer func() { _ = egress.DrainClose(resp.Body) }()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		e := statusError(resp.StatusCode, resp.Header, b)
		p.log.DebugContext(ctx, "openai: model provider error", "status", resp.StatusCode, "error", e.Err)
		return nil, e
	}
	return resp, nil
}

// maxBufferedBody is the longest request body sent with a Content-Length:
// a longer one (a long agentic loop's history) is sent chunked as its
// messages are encoded, so that the gateway never holds it whole.
const maxBufferedBody = 256 << 10

// maxPooledBody is the largest body buffer kept for another request.
const maxPooledBody = 64 << 10

// requestBuffers hold the buffers request bodies are encoded in.
var requestBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 8<<10); return &b }}

// newRequest builds the HTTP request of req: its body encoded whole up to
// maxBufferedBody bytes, else streamed (see maxBufferedBody), and its
// headers.
func (p *Provider) newRequest(ctx context.Context, req *provider.Request, stream bool) (*http.Request, error) {
	if p.urlErr != nil {
		return nil, &api.Error{Status: http.StatusBadGateway, Type: api.ErrTypeUpstream, Code: "upstream_unreachable",
			Message: "the model provider's URL is not valid", Err: p.urlErr}
	}
	cr, err := buildRequest(req, stream, p.limit)
	if err != nil {
		return nil, err
	}
	bp := requestBuffers.Get().(*[]byte)
	b, done, rest, err := encodeRequest(cr, (*bp)[:0])
	out := &outgoing{url: p.u}
	var body []byte
	if done {
		body = bytes.Clone(b)
		out.body.Reset(body)
	} else if err == nil {
		// The first maxBufferedBody bytes (or all of a long shell's
		// body), then the rest as it is read; b stays in use.
		out.body.Reset(b)
	}
	if done || err != nil {
		if cap(b) <= maxPooledBody {
			*bp = b[:0]
			requestBuffers.Put(bp)
		}
	}
	if err != nil {
		return nil, err
	}
	h := p.headers[0]
	if stream {
		h = p.headers[1]
	}
	if !p.ownClient {
		// A client passed in might change a request's headers
		// (RoundTrippers should not, some do); the provider's own
		// never does, and shares them.
		h = h.Clone()
	}
	// As http.NewRequestWithContext builds it, from the URL parsed once
	// (New). Host stays empty: the URL's host is sent.
	hreq := &http.Request{
		Method:     http.MethodPost,
		URL:        &out.url,
		Proto:      "HTTP/1.1",
		ProtoMajor: 1,
		ProtoMinor: 1,
		Header:     h,
	}
	if done {
		// An io.NopCloser of a *bytes.Reader, which net/http knows is in
		// memory: it writes the headers and the body at once, where it
		// flushes the headers first (one more packet) for another type.
		hreq.Body = io.NopCloser(&out.body)
		hreq.ContentLength = int64(len(body))
		hreq.GetBody = func() (io.ReadCloser, error) {
			return io.NopCloser(bytes.NewReader(body)), nil
		}
	} else {
		// Chunked; sent again (a redirect, a retried HTTP/2 stream)
		// from a fresh stream.
		hreq.ContentLength = -1
		hreq.Body = io.NopCloser(&out.body)
		if rest != nil {
			hreq.Body = io.NopCloser(io.MultiReader(&out.body, rest))
		}
		hreq.GetBody = func() (io.ReadCloser, error) {
			s, err := streamOf(cr)
			return io.NopCloser(s), err
		}
	}
	return hreq.WithContext(ctx), nil
}

// outgoing holds what a request points to, in one allocation.
type outgoing struct {
	url  url.URL
	body bytes.Reader
}

func isJSON(ct string) bool {
	if ct == "" {
		return false
	}
	if strings.HasPrefix(ct, "application/json") {
		return true
	}
	if strings.HasPrefix(ct, "text/event-stream") {
		return false
	}
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && mt == "application/json"
}

var bodyPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// readBody reads a whole response body: at most maxResponseBody bytes, a
// longer one is answerTooLong's 502. The returned slice is owned by the
// caller.
func readBody(resp *http.Response) ([]byte, error) {
	n := resp.ContentLength
	if n > maxResponseBody {
		return nil, answerTooLong("answer")
	}
	if n > 0 {
		// net/http's body holds exactly ContentLength bytes (fewer is
		// an error): read into a buffer of that size, with no bound to
		// check beyond the length's.
		b := make([]byte, n)
		_, err := io.ReadFull(resp.Body, b)
		return b, err
	}
	buf := bodyPool.Get().(*bytes.Buffer)
	buf.Reset()
	defer bodyPool.Put(buf)
	over, err := bounded.ReadInto(buf, resp.Body, maxResponseBody)
	if err != nil {
		return nil, err
	}
	if over {
		return nil, answerTooLong("answer")
	}
	return bytes.Clone(buf.Bytes()), nil
}

// answerTooLong is the 502 of a model's answer (what: "answer", "streamed
// answer") longer than maxResponseBody.
func answerTooLong(what string) *api.Error {
	return provider.BadResponse(errors.New("answer too long"), "the model provider's %s is longer than %d bytes", what, maxResponseBody)
}

// bodyReadError turns an error of readBody into the model call's: the context's
// end, answerTooLong as it is, else a broken answer.
func bodyReadError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return provider.ContextError(ctx)
	}
	var ae *api.Error
	if errors.As(err, &ae) {
		return ae
	}
	return provider.StreamCut(err, "reading the model provider's response failed")
}

// replay passes a whole result to fn as deltas.
func replay(res *provider.Result, fn func(provider.Delta) error) error {
	if res.Reasoning != "" {
		if err := fn(provider.Delta{Kind: provider.DeltaReasoning, Text: res.Reasoning}); err != nil {
			return err
		}
	}
	if res.Text != "" {
		if err := fn(provider.Delta{Kind: provider.DeltaText, Text: res.Text}); err != nil {
			return err
		}
	}
	if res.Refusal != "" {
		if err := fn(provider.Delta{Kind: provider.DeltaRefusal, Text: res.Refusal}); err != nil {
			return err
		}
	}
	for i, c := range res.ToolCalls {
		if err := fn(provider.Delta{Kind: provider.DeltaToolCall, ToolIndex: i, ToolCallID: c.CallID, ToolName: c.Name, Text: c.Arguments}); err != nil {
			return err
		}
	}
	return nil
}

// decodeCompletion decodes a non-streaming chat completion, as a
// chatwire.Chunk: the fields it uses, as values.
func decodeCompletion(body []byte, model string) (*provider.Result, error) {
	// The choice is allocated with the chunk: the decoder would make
	// room for ten.
	var one struct {
		cr     chatwire.Chunk
		choice [1]chatwire.ChunkChoice
	}
	cr := &one.cr
	cr.Choices = one.choice[:0]
	if err := wirejson.Unmarshal(body, cr); err != nil {
		return nil, provider.BadResponse(err, "the model provider sent a malformed response")
	}
	if hasError(cr.Error) {
		return nil, embeddedError(cr.Error)
	}
	var ch *chatwire.ChunkChoice
	for i := range cr.Choices {
		if cr.Choices[i].Index == 0 {
			ch = &cr.Choices[i]
			break
		}
	}
	if ch == nil {
		return nil, provider.BadResponse(errors.New("no choices"), "the model provider's response has no choices")
	}
	m := &ch.Message
	res := &provider.Result{
		Model:     cr.Model,
		Text:      m.Content.Text,
		Refusal:   m.Refusal,
		Reasoning: reasoning(m.ReasoningContent, m.Reasoning) + m.Content.Thinking,
	}
	if len(m.ToolCalls) > 0 {
		res.ToolCalls = make([]api.Item, 0, len(m.ToolCalls))
		for _, tc := range m.ToolCalls {
			id := tc.ID
			if id == "" {
				id = api.NewCallID()
			}
			args := string(tc.Function.Arguments)
			if args == "" {
				args = "{}"
			}
			res.ToolCalls = append(res.ToolCalls, api.Item{Type: api.ItemFunctionCall, CallID: id, Name: tc.Function.Name, Arguments: args})
		}
	}
	if res.Model == "" {
		res.Model = model
	}
	if u := cr.ChunkUsage(); u != nil {
		res.Usage = usageToAPI(u)
	}
	if err := interrupted(ch.FinishReason); err != nil {
		return nil, err
	}
	res.FinishReason = mapFinish(ch.FinishReason, len(res.ToolCalls) > 0)
	return res, nil
}

// interrupted is the error of a finish_reason saying the backend broke
// the answer off, nil for any other: DeepSeek's
// insufficient_system_resource (503 model_unavailable: retrying later may
// succeed), OpenRouter's and vLLM's error and vLLM's abort (502). What the
// model had sent is a cut answer, never a completed one.
func interrupted(r string) *api.Error {
	switch r {
	case "insufficient_system_resource":
		return provider.UpstreamError(http.StatusServiceUnavailable, provider.CodeModelUnavailable, errors.New("finish_reason "+r),
			"the model provider interrupted its answer (finish_reason %q)", r)
	case "error", "abort":
		return provider.UpstreamError(http.StatusBadGateway, provider.CodeUpstreamError, errors.New("finish_reason "+r),
			"the model provider interrupted its answer (finish_reason %q)", r)
	}
	return nil
}

// mapFinish maps a Chat Completions finish_reason to a provider.Finish
// constant. OpenAI answers "stop" to a forced tool call, and some backends
// never say "tool_calls": tool calls present mean FinishToolCalls.
func mapFinish(r string, hasCalls bool) string {
	switch r {
	case "length":
		return provider.FinishLength
	case "content_filter":
		return provider.FinishContentFilter
	case "tool_calls", "function_call":
		return provider.FinishToolCalls
	}
	if hasCalls {
		return provider.FinishToolCalls
	}
	return provider.FinishStop
}
