package api

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/lambent/lambent/internal/bounded"
	"github.com/lambent/lambent/internal/wirejson"
)

// The values of truncation: with TruncationAuto the gateway drops the
// oldest items of what the model sees when a model call's input exceeds
// the model's context window (docs/api.md, "Truncation"); with
// TruncationDisabled, the default, such a call fails the response.
const (
	TruncationAuto     = "auto"
	TruncationDisabled = "disabled"
)

// CreateResponseRequest is the body of POST /v1/responses.
//
// DecodeCreateRequest accepts every parameter the OpenAI API documents for
// it (openai-go's ResponseNewParams, npm openai's ResponseCreateParams, the
// OpenResponses CreateResponseBody), with null meaning absent throughout.
// Parameters that only steer OpenAI's own infrastructure are checked and
// then ignored: prompt_cache_options (except prewarm), access_programs,
// image, reasoning.context and reasoning.mode, and client_metadata (what
// OpenAI's own clients say about themselves). Features this server does not
// have are a 400 naming the parameter: prompt, moderation and
// prompt_cache_options.prewarm.
type CreateResponseRequest struct {
	Model        string `json:"model,omitempty"`
	Instructions string `json:"instructions,omitempty"`
	// Input is the request's input items; a string input becomes one user message.
	Input []Item `json:"input,omitempty"`
	// InputString records that input was given as a plain string.
	InputString       bool        `json:"-"`
	Tools             []Tool      `json:"tools,omitempty"`
	ToolChoice        *ToolChoice `json:"tool_choice,omitempty"`
	AllowedTools      []string    `json:"allowed_tools,omitempty"`
	ParallelToolCalls *bool       `json:"parallel_tool_calls,omitempty"`
	MaxToolCalls      *int        `json:"max_tool_calls,omitempty"`
	MaxOutputTokens   *int        `json:"max_output_tokens,omitempty"`
	Temperature       *float64    `json:"temperature,omitempty"`
	TopP              *float64    `json:"top_p,omitempty"`
	PresencePenalty   *float64    `json:"presence_penalty,omitempty"`
	FrequencyPenalty  *float64    `json:"frequency_penalty,omitempty"`
	TopLogprobs       *int        `json:"top_logprobs,omitempty"`
	// Text is the text configuration; when given, its format type is always
	// set (text when the request left it out).
	Text               *TextConfig `json:"text,omitempty"`
	Reasoning          *Reasoning  `json:"reasoning,omitempty"`
	PreviousResponseID string      `json:"previous_response_id,omitempty"`
	// Conversation is the id of the conversation the response belongs to
	// (given as a string or as {"id": ...}): the model sees its items, and
	// the response's input and output are appended to it.
	Conversation     string            `json:"conversation,omitempty"`
	Store            *bool             `json:"store,omitempty"`
	Background       bool              `json:"background,omitempty"`
	Stream           bool              `json:"stream,omitempty"`
	StreamOptions    *StreamOptions    `json:"stream_options,omitempty"`
	Metadata         map[string]string `json:"metadata,omitempty"`
	Include          []string          `json:"include,omitempty"`
	Truncation       string            `json:"truncation,omitempty"`
	SafetyIdentifier string            `json:"safety_identifier,omitempty"`
	PromptCacheKey   string            `json:"prompt_cache_key,omitempty"`
	// PromptCacheRetention is "in_memory" or "24h" (a caching hint).
	PromptCacheRetention string `json:"prompt_cache_retention,omitempty"`
	// ServiceTier is the requested tier; "fast" arrives as "priority", as
	// OpenAI reports it.
	ServiceTier string `json:"service_tier,omitempty"`
	// AccessPrograms is the request's access_programs (nil when it names
	// none), echoed as AccessPrograms.Shown; the programs themselves steer
	// OpenAI's infrastructure.
	AccessPrograms *AccessPrograms `json:"access_programs,omitempty"`
	// CompletionWindow is background_options.completion_window ("soonest",
	// "2h" or "8h"; "" when absent): checked, then without effect, as
	// every background response runs at once (decodeBackgroundOptions).
	CompletionWindow string `json:"-"`
	User             string `json:"user,omitempty"`
	// ContextManagement is the request's context_management: server-side
	// compaction (docs/api.md, "Server-side compaction").
	ContextManagement []ContextManagement `json:"context_management,omitempty"`
	// Lambent is the loop policy of validated output (extension).
	Lambent *LoopPolicy `json:"lambent,omitempty"`
	// NoGenerate is a WebSocket response.create's "generate": false
	// (OpenAI's prewarm, which Codex sends when a session starts): the
	// response holds the request's state and no output, without a model
	// call, and a later turn continues from it. Never read from an HTTP
	// body (wsapi.DecodeCreate sets it).
	NoGenerate bool `json:"-"`
	// CompactNow is a compaction_trigger item ending the input (taken out
	// of Input): the response compacts what the model would see into one
	// compaction item, without a model turn (docs/api.md, "Codex CLI").
	CompactNow bool `json:"-"`
}

// StreamOptions are the request's stream_options.
type StreamOptions struct {
	IncludeObfuscation *bool `json:"include_obfuscation,omitempty"`
}

// Stores reports whether the response is to be stored (default true).
func (r *CreateResponseRequest) Stores() bool { return r.Store == nil || *r.Store }

// paramFunc decodes one parameter of a request into it.
type paramFunc = func(r *CreateResponseRequest, v json.RawMessage) error

// paramDecoder returns the decoder of the top-level parameter k, nil when
// k is not a parameter of POST /v1/responses. A decoder is only called
// with a non-null value.
func paramDecoder(k string) paramFunc {
	// Decoders are built only for the parameter asked for: paramDecoder
	// runs twice for every parameter of every request.
	switch k {
	case "input":
		return (*CreateResponseRequest).decodeInput
	case "tools":
		return (*CreateResponseRequest).decodeTools
	case "tool_choice":
		return func(r *CreateResponseRequest, v json.RawMessage) error {
			r.ToolChoice = &ToolChoice{}
			return into(k, v, r.ToolChoice)
		}
	case "text":
		return (*CreateResponseRequest).decodeText
	case "lambent":
		return func(r *CreateResponseRequest, v json.RawMessage) error {
			dec := json.NewDecoder(bytes.NewReader(v))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&r.Lambent); err != nil {
				return prefixParam(typeError(k, err), k)
			}
			return nil
		}
	case "reasoning":
		return (*CreateResponseRequest).decodeReasoning
	case "stream_options":
		return func(r *CreateResponseRequest, v json.RawMessage) error {
			return object(k, v, &r.StreamOptions, "include_obfuscation")
		}
	case "service_tier":
		return func(r *CreateResponseRequest, v json.RawMessage) error {
			if err := into(k, v, &r.ServiceTier); err != nil {
				return err
			}
			if r.ServiceTier == "fast" {
				r.ServiceTier = "priority"
			}
			return nil
		}
	case "model":
		return fieldDecoder(k, func(r *CreateResponseRequest) any { return &r.Model })
	case "instructions":
		return fieldDecoder(k, func(r *CreateResponseRequest) any { return &r.Instructions })
	case "allowed_tools":
		return arrayDecoder(k, func(r *CreateResponseRequest) any { return &r.AllowedTools })
	case "parallel_tool_calls":
		return fieldDecoder(k, func(r *CreateResponseRequest) any { return &r.ParallelToolCalls })
	case "max_tool_calls":
		return fieldDecoder(k, func(r *CreateResponseRequest) any { return &r.MaxToolCalls })
	case "max_output_tokens":
		return fieldDecoder(k, func(r *CreateResponseRequest) any { return &r.MaxOutputTokens })
	case "temperature":
		return fieldDecoder(k, func(r *CreateResponseRequest) any { return &r.Temperature })
	case "top_p":
		return fieldDecoder(k, func(r *CreateResponseRequest) any { return &r.TopP })
	case "presence_penalty":
		return fieldDecoder(k, func(r *CreateResponseRequest) any { return &r.PresencePenalty })
	case "frequency_penalty":
		return fieldDecoder(k, func(r *CreateResponseRequest) any { return &r.FrequencyPenalty })
	case "top_logprobs":
		return fieldDecoder(k, func(r *CreateResponseRequest) any { return &r.TopLogprobs })
	case "previous_response_id":
		return fieldDecoder(k, func(r *CreateResponseRequest) any { return &r.PreviousResponseID })
	case "store":
		return fieldDecoder(k, func(r *CreateResponseRequest) any { return &r.Store })
	case "background":
		return fieldDecoder(k, func(r *CreateResponseRequest) any { return &r.Background })
	case "stream":
		return fieldDecoder(k, func(r *CreateResponseRequest) any { return &r.Stream })
	case "metadata":
		return func(r *CreateResponseRequest, v json.RawMessage) (err error) {
			r.Metadata, err = decodeMetadata(k, v)
			return err
		}
	case "include":
		return arrayDecoder(k, func(r *CreateResponseRequest) any { return &r.Include })
	case "truncation":
		return fieldDecoder(k, func(r *CreateResponseRequest) any { return &r.Truncation })
	case "safety_identifier":
		return fieldDecoder(k, func(r *CreateResponseRequest) any { return &r.SafetyIdentifier })
	case "prompt_cache_key":
		return fieldDecoder(k, func(r *CreateResponseRequest) any { return &r.PromptCacheKey })
	case "prompt_cache_retention":
		return fieldDecoder(k, func(r *CreateResponseRequest) any { return &r.PromptCacheRetention })
	case "user":
		return fieldDecoder(k, func(r *CreateResponseRequest) any { return &r.User })
	case "client_metadata":
		// What OpenAI's own clients (Codex) send about themselves: checked
		// to be an object of strings, then ignored.
		return func(_ *CreateResponseRequest, v json.RawMessage) error {
			if err := checkMembers(k, v); err != nil {
				return err
			}
			var m map[string]string
			return into(k, v, &m)
		}
	case "prompt_cache_options":
		return func(_ *CreateResponseRequest, v json.RawMessage) error { return checkPromptCacheOptions(v) }
	case "access_programs":
		return func(r *CreateResponseRequest, v json.RawMessage) error {
			var w struct {
				Cyber *string `json:"cyber"`
			}
			if err := object(k, v, &w, "cyber"); err != nil {
				return err
			}
			if err := oneOf("access_programs.cyber", w.Cyber, "standard", "daybreak_blue", "daybreak_red"); err != nil {
				return err
			}
			if w.Cyber != nil {
				r.AccessPrograms = &AccessPrograms{Cyber: *w.Cyber}
			}
			return nil
		}
	case "background_options":
		return (*CreateResponseRequest).decodeBackgroundOptions
	case "image":
		return func(_ *CreateResponseRequest, v json.RawMessage) error {
			var w struct {
				ContextCompression *string `json:"context_compression"`
			}
			if err := object(k, v, &w, "context_compression"); err != nil {
				return err
			}
			return oneOf("image.context_compression", w.ContextCompression, "auto", "enabled", "disabled")
		}
	case "context_management":
		return (*CreateResponseRequest).decodeContextManagement
	case "conversation":
		return (*CreateResponseRequest).decodeConversation
	case "prompt":
		return unsupportedParam(k, "This server has no stored prompts; send instructions and input instead.")
	case "moderation":
		return unsupportedParam(k, "This server does not run moderation.")
	}
	return nil
}

// MaxContinuationID bounds background_options.continuation_id, in
// characters (OpenAI documents no bound).
const MaxContinuationID = 512

// decodeBackgroundOptions checks OpenAI's background_options: a
// completion window ("soonest", the default, or the discounted "2h" and
// "8h", which OpenAI takes only on a background response that does not
// stream, in standard processing: checked by Validate) and a
// continuation_id (OpenAI's hint to schedule related background requests
// together). Neither changes what runs: a background response here starts
// at once, well inside any window, and nothing is scheduled.
func (r *CreateResponseRequest) decodeBackgroundOptions(v json.RawMessage) error {
	const k = "background_options"
	var w struct {
		CompletionWindow *string `json:"completion_window"`
		ContinuationID   *string `json:"continuation_id"`
	}
	if err := object(k, v, &w, "completion_window", "continuation_id"); err != nil {
		return err
	}
	if err := cmp.Or(
		oneOf(k+".completion_window", w.CompletionWindow, "soonest", "2h", "8h"),
		maxLength(k+".continuation_id", valueOf(w.ContinuationID), MaxContinuationID),
	); err != nil {
		return err
	}
	r.CompletionWindow = valueOf(w.CompletionWindow)
	return nil
}

// validateCompletionWindow applies OpenAI's rule to a discounted
// completion window: it needs background: true, no stream, and standard
// processing (service_tier absent, "auto" or "default").
func (r *CreateResponseRequest) validateCompletionWindow() error {
	const p = "background_options.completion_window"
	if r.CompletionWindow == "" || r.CompletionWindow == "soonest" {
		return nil
	}
	switch {
	case !r.Background:
		return InvalidRequest(p, "The '%s' completion window requires background: true.", r.CompletionWindow)
	case r.Stream:
		return InvalidRequest(p, "The '%s' completion window requires stream: false or omitted.", r.CompletionWindow)
	case r.ServiceTier != "" && r.ServiceTier != "auto" && r.ServiceTier != "default":
		return InvalidRequest(p, "The '%s' completion window requires standard processing; service_tier %q is not.", r.CompletionWindow, r.ServiceTier)
	}
	return nil
}

// fieldDecoder decodes the parameter k into the field target returns.
func fieldDecoder(k string, target func(r *CreateResponseRequest) any) paramFunc {
	return func(r *CreateResponseRequest, v json.RawMessage) error { return into(k, v, target(r)) }
}

// arrayDecoder is fieldDecoder for an array parameter, whose elements are
// counted before any is decoded (checkArrayLen).
func arrayDecoder(k string, target func(r *CreateResponseRequest) any) paramFunc {
	return func(r *CreateResponseRequest, v json.RawMessage) error {
		if err := checkArrayLen(k, v); err != nil {
			return err
		}
		return into(k, v, target(r))
	}
}

// unsupportedParam refuses the parameter k, saying why.
func unsupportedParam(k, why string) paramFunc {
	return func(*CreateResponseRequest, json.RawMessage) error {
		return InvalidRequestCode(k, "unsupported_parameter", "Unsupported parameter: '%s'. %s", k, why)
	}
}

// DecodeCreateRequest reads, decodes and validates a create-response body.
// Every failure is an *Error with status 400 naming the parameter; when a
// body has several faults, the one reported is the same for every call.
func DecodeCreateRequest(body []byte) (*CreateResponseRequest, error) {
	return decodeParams(body, paramDecoder)
}

// only is paramDecoder for the parameters known names, nil for others.
func only(known func(string) bool) func(string) paramFunc {
	return func(k string) paramFunc {
		if !known(k) {
			return nil
		}
		return paramDecoder(k)
	}
}

// decodeParams decodes body's parameters with their decoders (decoder's:
// nil for a parameter the endpoint does not take, an unknown_parameter),
// and validates the request. Parameters are
// checked and decoded in sorted order, so the error reported for a body
// with several faults is always the same.
func decodeParams(body []byte, decoder func(string) paramFunc) (*CreateResponseRequest, error) {
	fields, err := decodeObject(body)
	if err != nil {
		return nil, err
	}
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if decoder(k) == nil {
			return nil, unknownParam(k)
		}
	}
	r := &CreateResponseRequest{}
	for _, k := range keys {
		if v := fields[k]; !isNull(v) {
			if err := decoder(k)(r, v); err != nil {
				return nil, err
			}
		}
	}
	if err := r.Validate(); err != nil {
		return nil, err
	}
	return r, nil
}

// decodeObject decodes a request body that must be a JSON object into its
// fields.
func decodeObject(body []byte) (map[string]json.RawMessage, error) {
	if err := checkMembers("", body); err != nil {
		return nil, err
	}
	fields, err := unmarshalFields(body)
	if err != nil {
		var ute *json.UnmarshalTypeError
		if errors.As(err, &ute) {
			return nil, InvalidRequest("", "the request body must be a JSON object")
		}
		return nil, InvalidRequestCode("", "invalid_json", "could not parse the JSON body of your request: %s", jsonErrText(err))
	}
	if fields == nil {
		return nil, InvalidRequest("", "the request body must be a JSON object")
	}
	return fields, nil
}

func isNull(v json.RawMessage) bool { return bytes.Equal(bytes.TrimSpace(v), []byte("null")) }

func unknownParam(p string) *Error {
	return InvalidRequestCode(p, "unknown_parameter", "Unknown parameter: '%s'.", p)
}

// into decodes v into target; a failure is a 400 naming param.
func into(param string, v json.RawMessage, target any) error {
	if err := unmarshal(v, target); err != nil {
		return prefixParam(typeError(param, err), param)
	}
	return nil
}

// object decodes the JSON object v into target after checking that each
// of its keys is one of keys; any other key is a 400 naming param.key.
func object(param string, v json.RawMessage, target any, keys ...string) error {
	if err := checkMembers(param, v); err != nil {
		return err
	}
	fields, err := unmarshalFields(v)
	if err != nil || fields == nil {
		return InvalidRequestCode(param, "invalid_type", "Invalid type for '%s': expected an object.", param)
	}
	for _, k := range slices.Sorted(maps.Keys(fields)) {
		if !slices.Contains(keys, k) {
			return unknownParam(param + "." + k)
		}
	}
	return into(param, v, target)
}

// oneOf checks that v, when set, is one of allowed.
func oneOf(param string, v *string, allowed ...string) error {
	if v == nil || slices.Contains(allowed, *v) {
		return nil
	}
	return InvalidRequestCode(param, "invalid_value", "Invalid value for '%s': %q. Supported values are: %s.", param, *v, quoteList(allowed))
}

func quoteList(vs []string) string {
	q := make([]string, len(vs))
	for i, v := range vs {
		q[i] = "'" + v + "'"
	}
	return strings.Join(q, ", ")
}

// MaxTools bounds the tools a request declares, the tools of namespace
// tools included, counted before any is decoded: a declaration takes ~300
// bytes however short its JSON ({}), so an 8 MB body of them took over 3 GB
// to decode. LAMBENT_LIMIT_TOOLS bounds them further, once decoded.
const MaxTools = 10000

// countTools returns the number of tool declarations of the JSON array v
// (the request's tools, valid JSON as a decoder hands it over), the tools
// they hold (a namespace's) included, each array counted before anything
// in it is decoded; counting stops once the count is over MaxTools. A tool
// held by another holds none itself: one that does is a 400, as decoding
// each level of such nesting read every level under it again (40,000
// levels, a 1.6 MB body, took two minutes).
func countTools(v []byte) (int, error) {
	n := arrayLen(v)
	var tools []json.RawMessage
	if n > MaxTools || !decodes(v, &tools) {
		return n, nil // decodeElems names a malformed tool
	}
	for i, raw := range tools {
		inner, headers, validators := toolArrays(raw)
		if n += arrayLen(inner); n > MaxTools {
			return n, nil
		}
		p := "tools[" + strconv.Itoa(i) + "]"
		if err := cmp.Or(checkMembers(p+".headers", headers), checkArrayLen(p+".validators", validators)); err != nil {
			return n, err
		}
		var held []json.RawMessage
		if !decodes(inner, &held) {
			continue
		}
		for j, t := range held {
			if arrayLen(heldTools(t)) > 0 {
				return n, unknownParam(fmt.Sprintf("tools[%d].tools[%d].tools", i, j))
			}
		}
	}
	return n, nil
}

// heldTools returns the array of the tool declaration raw's "tools", nil
// when it has none.
func heldTools(raw json.RawMessage) json.RawMessage {
	tools, _, _ := toolArrays(raw)
	return tools
}

// toolArrays returns the arrays and objects of the tool declaration raw
// that a decoder would build in full: its "tools" (nil when it has no
// array of them), "headers" and "validators", to count first.
func toolArrays(raw json.RawMessage) (tools, headers, validators json.RawMessage) {
	var t struct {
		Tools      json.RawMessage `json:"tools"`
		Headers    json.RawMessage `json:"headers"`
		Validators json.RawMessage `json:"validators"`
	}
	if !decodes(raw, &t) {
		return nil, nil, nil
	}
	if len(t.Tools) == 0 || t.Tools[0] != '[' {
		t.Tools = nil
	}
	return t.Tools, t.Headers, t.Validators
}

func (r *CreateResponseRequest) decodeTools(v json.RawMessage) error {
	if v[0] != '[' {
		return InvalidRequest("tools", "invalid type for 'tools': expected an array of tools")
	}
	if n, err := countTools(v); err != nil {
		return err
	} else if n > MaxTools {
		return InvalidRequestCode("tools", "limit_exceeded", "the number of tools (the tools of namespace tools included) is over this gateway's limit of %d.", MaxTools)
	}
	tools, err := decodeElems("tools", v, func(i int, raw json.RawMessage, t *Tool) error {
		if err := unmarshal(raw, t); err != nil {
			return prefixParam(err, "tools["+strconv.Itoa(i)+"]")
		}
		return nil
	})
	r.Tools = tools
	return err
}

// decodeText decodes text; a missing or null format is {"type":"text"}.
func (r *CreateResponseRequest) decodeText(v json.RawMessage) error {
	var w struct {
		Format    json.RawMessage `json:"format"`
		Verbosity *string         `json:"verbosity"`
	}
	if err := object("text", v, &w, "format", "verbosity"); err != nil {
		return err
	}
	t := &TextConfig{Format: TextFormat{Type: FormatText}}
	if w.Verbosity != nil {
		t.Verbosity = *w.Verbosity
	}
	if len(w.Format) > 0 && !isNull(w.Format) {
		if err := decodeFormat(w.Format, &t.Format); err != nil {
			return err
		}
	}
	r.Text = t
	return nil
}

// decodeFormat decodes text.format: text and json_object take no options,
// json_schema takes name, description, schema and strict (false when left
// out, as OpenAI defaults it).
func decodeFormat(raw json.RawMessage, f *TextFormat) error {
	keys := []string{"type", "name", "description", "schema", "strict"}
	var head struct {
		Type string `json:"type"`
	}
	if decodes(raw, &head) && (head.Type == FormatText || head.Type == FormatJSONObject) {
		keys = keys[:1]
	}
	*f = TextFormat{}
	if err := object("text.format", raw, f, keys...); err != nil {
		return err
	}
	if f.Type == FormatJSONSchema && f.Strict == nil {
		f.Strict = new(false)
	}
	return nil
}

// MarshalJSON writes the format as the response echoes it: a json_schema
// format has every field (description null when absent, strict false when
// unset), the others only their type.
func (f TextFormat) MarshalJSON() ([]byte, error) { return wirejson.Marshal(f.wire()) }

// wire is the format in the shape MarshalJSON writes.
func (f TextFormat) wire() any {
	if f.Type != FormatJSONSchema {
		return struct {
			Type string `json:"type"`
		}{f.Type}
	}
	return struct {
		Type        string          `json:"type"`
		Name        string          `json:"name"`
		Description *string         `json:"description"`
		Schema      json.RawMessage `json:"schema"`
		Strict      bool            `json:"strict"`
	}{f.Type, f.Name, f.Description, f.Schema, f.Strict != nil && *f.Strict}
}

// decodeReasoning decodes reasoning; the deprecated generate_summary stands
// in for summary.
func (r *CreateResponseRequest) decodeReasoning(v json.RawMessage) error {
	var w struct {
		Effort          *string `json:"effort"`
		Summary         *string `json:"summary"`
		GenerateSummary *string `json:"generate_summary"`
		Context         *string `json:"context"`
		Mode            *string `json:"mode"`
	}
	if err := object("reasoning", v, &w, "effort", "summary", "generate_summary", "context", "mode"); err != nil {
		return err
	}
	if err := cmp.Or(
		oneOf("reasoning.generate_summary", w.GenerateSummary, reasoningSummaries()...),
		oneOf("reasoning.context", w.Context, "auto", "current_turn", "all_turns"),
		oneOf("reasoning.mode", w.Mode, "standard", "pro"),
	); err != nil {
		return err
	}
	r.Reasoning = &Reasoning{Effort: w.Effort, Summary: cmp.Or(w.Summary, w.GenerateSummary)}
	return nil
}

func reasoningSummaries() []string { return []string{"auto", "concise", "detailed"} }

// checkPromptCacheOptions checks prompt_cache_options, a caching hint;
// prewarm (cache without generating) is not supported.
func checkPromptCacheOptions(v json.RawMessage) error {
	var w struct {
		ComparisonResponseID *string `json:"comparison_response_id"`
		Mode                 *string `json:"mode"`
		Prewarm              *bool   `json:"prewarm"`
		TTL                  *string `json:"ttl"`
	}
	if err := object("prompt_cache_options", v, &w, "comparison_response_id", "mode", "prewarm", "ttl"); err != nil {
		return err
	}
	if w.Prewarm != nil && *w.Prewarm {
		return InvalidRequestCode("prompt_cache_options.prewarm", "unsupported_parameter", "Unsupported parameter: 'prompt_cache_options.prewarm'. This server always generates output.")
	}
	return cmp.Or(
		oneOf("prompt_cache_options.mode", w.Mode, "implicit", "explicit"),
		oneOf("prompt_cache_options.ttl", w.TTL, "30m", "12h"),
	)
}

// checkMembers refuses the JSON object v (a body, an object of fixed keys,
// a map; param names it) of more than MaxInputItems members, counted before
// any is decoded (any other value passes, for its decoder to refuse): each
// but a few of a body's is an unknown parameter, and 8 MB of them took 124
// to 186 MB to refuse for the first.
func checkMembers(param string, v []byte) error {
	v = bytes.TrimLeft(v, " \t\r\n")
	if len(v) == 0 || v[0] != '{' {
		return nil
	}
	if n := arrayLen(v); n > MaxInputItems {
		what := "the request body"
		if param != "" {
			what = "'" + param + "'"
		}
		return InvalidRequestCode(param, "limit_exceeded", "the number of members of %s: %d is over this gateway's limit of %d.", what, n, MaxInputItems)
	}
	return nil
}

// CheckMembers is checkMembers for a transport's message, a JSON object
// decoded before DecodeCreateRequest sees it (a WebSocket response.create).
func CheckMembers(param string, v []byte) error { return checkMembers(param, v) }

// MaxInputItems bounds the items of a request's input (a client that keeps
// its own history, Codex say, sends all of it; a conversation holds at
// most 2,000 items beside it).
const MaxInputItems = 10000

// arrayLen returns the number of elements of the JSON array v (or of
// members of the JSON object v; valid JSON, as a decoder hands it over),
// in one pass that builds nothing.
func arrayLen(v []byte) int {
	var str jsonStrings
	n, depth, empty := 0, 0, true
	for _, c := range v {
		if str.inside(c) {
			continue
		}
		switch c {
		case '[', '{':
			depth++
		case ']', '}':
			depth--
		case ',':
			if depth == 1 {
				n++
			}
		}
		if depth >= 1 && c != ' ' && c != '\t' && c != '\n' && c != '\r' && !(depth == 1 && (c == '[' || c == '{')) {
			empty = false
		}
	}
	if empty {
		return 0
	}
	return n + 1
}

// checkArrayLen refuses the JSON array v (param names it; any other value
// passes, for its decoder to refuse) when it holds more than MaxInputItems
// elements, counted before anything is built: an
// item takes ~100 times the bytes of its JSON ({"role":"user","content":
// "a"}; ~500 bytes for a {}), so an 8 MB body of them would take ~900 MB;
// the arrays an item holds (content parts, an mcp_list_tools item's tools)
// were made whole, and the item decoded up to three times, before their
// first element was found wrong.
func checkArrayLen(param string, v []byte) error {
	if len(v) == 0 || v[0] != '[' {
		return nil
	}
	if n := arrayLen(v); n > MaxInputItems {
		return InvalidRequestCode(param, "limit_exceeded", "the number of elements of '%s': %d is over this gateway's limit of %d.", param, n, MaxInputItems)
	}
	return nil
}

func (r *CreateResponseRequest) decodeInput(v json.RawMessage) error {
	switch v[0] {
	case '"':
		var s string
		if err := unmarshal(v, &s); err != nil {
			return InvalidRequest("input", "invalid input: %s", jsonErrText(err))
		}
		r.Input = []Item{{Type: ItemMessage, Role: RoleUser, Content: []ContentPart{{Type: PartInputText, Text: s}}}}
		r.InputString = true
		return nil
	case '[':
		if err := checkArrayLen("input", v); err != nil {
			return err
		}
		input, err := decodeElems("input", v, func(i int, raw json.RawMessage, it *Item) error {
			if err := unmarshal(raw, it); err != nil {
				id, ok := implicitReference(raw)
				if !ok {
					return prefixParam(typeError("", err), "input["+strconv.Itoa(i)+"]")
				}
				*it = Item{Type: ItemReference, ID: id}
			}
			return nil
		})
		r.Input, r.CompactNow = cutTrigger(input)
		return err
	}
	return InvalidRequest("input", "invalid type for 'input': expected a string or an array of input items")
}

// cutTrigger takes a compaction_trigger item ending input out of it and
// reports whether there was one. Validate refuses any other.
func cutTrigger(input []Item) ([]Item, bool) {
	if n := len(input); n > 0 && input[n-1].Type == ItemCompactionTrigger {
		return input[:n-1], true
	}
	return input, false
}

// implicitReference reports whether raw is an item reference without its
// type ({"id":"msg_1"}, type absent or null), which OpenAI accepts.
func implicitReference(raw json.RawMessage) (string, bool) {
	// At most id and type; counted before they are decoded.
	if arrayLen(raw) > 2 {
		return "", false
	}
	var fields map[string]json.RawMessage
	if !decodes(raw, &fields) {
		return "", false
	}
	var id string
	for k, v := range fields {
		switch {
		case k == "id":
			if !decodes(v, &id) {
				return "", false
			}
		case k != "type" || !isNull(v):
			return "", false
		}
	}
	return id, id != ""
}

// typeError turns encoding/json errors into *Error; *Error passes through.
func typeError(param string, err error) error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	var ute *json.UnmarshalTypeError
	if errors.As(err, &ute) {
		p := ute.Field
		if p == "" {
			p = param
		} else if param != "" {
			p = param + "." + p
		}
		return InvalidRequest(p, "invalid type for '%s': expected %s, got %s", strings.TrimPrefix(p, "."), goTypeName(ute.Type.Kind().String()), ute.Value)
	}
	return InvalidRequest(param, "invalid '%s': %s", param, jsonErrText(err))
}

func goTypeName(k string) string {
	switch k {
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "int", "int64":
		return "an integer"
	case "float64":
		return "a number"
	case "slice":
		return "an array"
	case "map", "struct", "ptr":
		return "an object"
	}
	return k
}

// prefixParam prefixes an *Error's param with the path of its container.
func prefixParam(err error, prefix string) error {
	var e *Error
	if !errors.As(err, &e) {
		return InvalidRequest(prefix, "invalid %s: %s", prefix, jsonErrText(err))
	}
	c := *e
	switch {
	case c.Param == "" || c.Param == prefix:
		c.Param = prefix
	case strings.HasPrefix(c.Param, prefix+".") || strings.HasPrefix(c.Param, prefix+"["):
	case c.Param[0] == '[':
		c.Param = prefix + c.Param
	default:
		c.Param = prefix + "." + c.Param
	}
	return &c
}

// jsonErrText makes encoding/json's messages a little friendlier.
func jsonErrText(err error) string {
	return strings.TrimPrefix(err.Error(), "json: ")
}

// Validate checks the request's values and cross-field rules.
func (r *CreateResponseRequest) Validate() error {
	if r.Conversation != "" && r.PreviousResponseID != "" {
		return InvalidRequestCode("conversation", "mutually_exclusive_parameters", "Mutually exclusive parameters: Ensure you are only providing one of: 'previous_response_id' or 'conversation'.")
	}
	continues := r.PreviousResponseID != "" || r.Conversation != ""
	if len(r.Input) == 0 && !continues {
		return InvalidRequest("input", "input must not be empty")
	}
	if r.InputString && r.Input[0].Content[0].Text == "" && !continues {
		return InvalidRequest("input", "input must not be empty")
	}
	for i := range r.Input {
		if err := cmp.Or(validateInputItem(&r.Input[i]), replayedCallID(&r.Input[i])); err != nil {
			return prefixParam(err, "input["+strconv.Itoa(i)+"]")
		}
	}
	names := make(map[string]bool, len(r.Tools))
	namespaced := map[string]bool{}
	for i := range r.Tools {
		t := &r.Tools[i]
		p := "tools[" + strconv.Itoa(i) + "]"
		if t.Type == ToolNamespace {
			if err := validateNamespace(t, p, namespaced); err != nil {
				return err
			}
			continue
		}
		name, err := validateTool(t, p)
		if err != nil {
			return err
		}
		if name != "" {
			if names[name] {
				return InvalidRequest(p+".name", "duplicate tool name %q", name)
			}
			names[name] = true
		}
	}
	if err := r.validateValidatedOutput(names); err != nil {
		return err
	}
	if c := r.ToolChoice; c != nil {
		switch c.Type {
		case ToolFunction, ToolCustom:
			if c.Namespace != "" && !namespaced[c.Namespace+"."+c.Name] || c.Namespace == "" && !names[c.Name] {
				return InvalidRequest("tool_choice.name", "tool_choice names %s tool %q, which is not in tools", c.Type, qualified(c.Namespace, c.Name))
			}
		case ToolMCP:
			// The engine checks the server (it knows the operator's).
		case "allowed_tools":
			for i, t := range c.Tools {
				if t.Type != ToolFunction && t.Type != ToolCustom && !strings.Contains(t.Type, ":") && t.Type != ToolMCP {
					return InvalidRequest(fmt.Sprintf("tool_choice.tools[%d].type", i), "unsupported tool type %q", t.Type)
				}
				n := t.Name
				if strings.HasPrefix(t.Type, HostedPrefix) && n == "" {
					n = strings.TrimPrefix(t.Type, HostedPrefix)
				}
				if t.Type != ToolMCP && !names[n] {
					return InvalidRequest(fmt.Sprintf("tool_choice.tools[%d]", i), "allowed tool %q is not in tools", n)
				}
			}
		default:
			if forcedBuiltin(c.Type) && !slices.ContainsFunc(r.Tools, func(t Tool) bool { return CallItemType(t.Type) == CallItemType(c.Type) }) {
				return InvalidRequest("tool_choice.type", "tool_choice forces the %s tool, which is not in tools", c.Type)
			}
			if c.Mode != ToolChoiceAuto && len(r.Tools) == 0 && c.Mode != ToolChoiceNone {
				return InvalidRequest("tool_choice", "tool_choice %q requires tools", c.Mode)
			}
		}
	}
	for i, n := range r.AllowedTools {
		if !names[n] {
			return InvalidRequest(fmt.Sprintf("allowed_tools[%d]", i), "allowed tool %q is not in tools", n)
		}
	}
	if err := r.validateValues(); err != nil {
		return err
	}
	if !r.Stores() && r.Background {
		return InvalidRequest("background", "background responses must be stored (store=false is not allowed)")
	}
	return r.validateCompletionWindow()
}

// validateValues checks each parameter's value on its own: numeric ranges,
// string lengths and enumerations, as the OpenAI API checks them.
func (r *CreateResponseRequest) validateValues() error {
	if err := cmp.Or(
		intRange("max_output_tokens", r.MaxOutputTokens, 16, math.MaxInt),
		intRange("max_tool_calls", r.MaxToolCalls, 1, math.MaxInt),
		intRange("top_logprobs", r.TopLogprobs, 0, 20),
		decimalRange("temperature", r.Temperature, 0, 2),
		decimalRange("top_p", r.TopP, 0, 1),
		decimalRange("presence_penalty", r.PresencePenalty, -2, 2),
		decimalRange("frequency_penalty", r.FrequencyPenalty, -2, 2),
		maxLength("prompt_cache_key", r.PromptCacheKey, 64),
		maxLength("safety_identifier", r.SafetyIdentifier, 128),
		maxLength("user", r.User, 128),
		oneOf("truncation", optional(r.Truncation), TruncationAuto, TruncationDisabled),
		oneOf("service_tier", optional(r.ServiceTier), "auto", "default", "flex", "scale", "priority", "ultrafast"),
		oneOf("prompt_cache_retention", optional(r.PromptCacheRetention), "in_memory", "24h"),
	); err != nil {
		return err
	}
	if r.Text != nil {
		if err := cmp.Or(validateFormat(&r.Text.Format),
			oneOf("text.verbosity", optional(r.Text.Verbosity), "low", "medium", "high")); err != nil {
			return err
		}
	}
	if rs := r.Reasoning; rs != nil {
		if err := cmp.Or(
			oneOf("reasoning.effort", rs.Effort, "none", "minimal", "low", "medium", "high", "xhigh", "max"),
			oneOf("reasoning.summary", rs.Summary, reasoningSummaries()...),
		); err != nil {
			return err
		}
	}
	if err := ValidateMetadata(r.Metadata); err != nil {
		return err
	}
	return ValidateInclude("include", r.Include)
}

// decodeMetadata decodes a metadata object (param names it) whose values
// are strings, as the OpenAI API requires: a null value is refused, where
// decoding into a map of strings would read it as "".
func decodeMetadata(param string, v json.RawMessage) (map[string]string, error) {
	// Counted before anything is built (an 8 MB object took 190 MB to
	// refuse), far above ValidateMetadata's 16 for keys given twice.
	if len(v) > 0 && v[0] == '{' {
		if n := arrayLen(v); n > MaxInputItems {
			return nil, tooManyPairs(n)
		}
	}
	var raw map[string]*string
	if err := into(param, v, &raw); err != nil || raw == nil {
		return nil, err
	}
	md := make(map[string]string, len(raw))
	for _, k := range slices.Sorted(maps.Keys(raw)) {
		if raw[k] == nil {
			return nil, InvalidRequest(param+"."+k, "invalid type for '%s.%s': expected a string, got null", param, k)
		}
		md[k] = *raw[k]
	}
	return md, nil
}

// ValidateMetadata checks a metadata object as the OpenAI API does: at
// most 16 pairs, keys of at most 64 characters, values of at most 512.
func ValidateMetadata(md map[string]string) error {
	if len(md) > 16 {
		return tooManyPairs(len(md))
	}
	if len(md) == 0 {
		return nil
	}
	for _, k := range slices.Sorted(maps.Keys(md)) {
		if l := utf8.RuneCountInString(k); l > 64 {
			return InvalidRequestCode("metadata", "string_above_max_length", "Invalid 'metadata': key too long. Expected keys of at most 64 characters, but got a key of length %d instead.", l)
		}
		if err := maxLength("metadata."+k, md[k], 512); err != nil {
			return err
		}
	}
	return nil
}

// tooManyPairs is the error of a metadata object of n pairs, over 16.
func tooManyPairs(n int) *Error {
	return InvalidRequestCode("metadata", "object_above_max_properties", "Invalid 'metadata': too many properties. Expected an object with at most 16 properties, but got an object with %d properties instead.", n)
}

// ValidateInclude checks the values of an include list (param names it).
func ValidateInclude(param string, include []string) error {
	for i, inc := range include {
		if err := oneOf(fmt.Sprintf("%s[%d]", param, i), &inc, "reasoning.encrypted_content", "message.output_text.logprobs",
			"message.input_image.image_url", "file_search_call.results", "web_search_call.results", "web_search_call.action.sources",
			"computer_call_output.output.image_url", "code_interpreter_call.outputs"); err != nil {
			return err
		}
	}
	return nil
}

// valueOf is *p, or "" when p is nil.
func valueOf(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// optional is s as an optional enumeration value: nil when empty.
func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// intRange checks that v, when set, is within [lo, hi].
func intRange(param string, v *int, lo, hi int) error {
	if v == nil {
		return nil
	}
	return checkRange(param, "integer", float64(*v), float64(lo), float64(hi))
}

// decimalRange checks that v, when set, is within [lo, hi].
func decimalRange(param string, v *float64, lo, hi float64) error {
	if v == nil {
		return nil
	}
	return checkRange(param, "decimal", *v, lo, hi)
}

// checkRange is the 400 OpenAI answers for a number out of its range, e.g.
// "Invalid 'temperature': decimal above maximum value." with code
// decimal_above_max_value.
func checkRange(param, kind string, v, lo, hi float64) error {
	var side, bound string
	switch {
	case v < lo:
		side, bound = "below_min", "below minimum"
	case v > hi:
		side, bound = "above_max", "above maximum"
	default:
		return nil
	}
	want := "of at least " + num(lo)
	if hi < math.MaxInt {
		want = "between " + num(lo) + " and " + num(hi)
	}
	return InvalidRequestCode(param, kind+"_"+side+"_value", "Invalid '%s': %s %s value. Expected a value %s, but got %s instead.", param, kind, bound, want, num(v))
}

func num(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// maxLength checks that s has at most n characters.
func maxLength(param, s string, n int) error {
	if l := utf8.RuneCountInString(s); l > n {
		return InvalidRequestCode(param, "string_above_max_length", "Invalid '%s': string too long. Expected a string with maximum length %d, but got a string with length %d instead.", param, n, l)
	}
	return nil
}

// qualified is a tool's name with its namespace's, for messages.
func qualified(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "." + name
}

// validateNamespace checks a namespace tool: a valid name, not given
// before, and one or more function and custom tools of distinct names,
// which it adds to seen as "namespace.name".
func validateNamespace(t *Tool, p string, seen map[string]bool) error {
	if t.Name == "" {
		return InvalidRequestCode(p+".name", "missing_required_parameter", "Missing required parameter: '%s.name'.", p)
	}
	if !validName(t.Name) {
		return InvalidRequest(p+".name", "invalid namespace name %q: use a-z, A-Z, 0-9, underscores and dashes, at most 64 characters", t.Name)
	}
	if seen[t.Name] {
		return InvalidRequest(p+".name", "duplicate namespace name %q", t.Name)
	}
	seen[t.Name] = true
	if len(t.Tools) == 0 {
		return InvalidRequestCode(p+".tools", "missing_required_parameter", "Missing required parameter: '%s.tools'.", p)
	}
	for j := range t.Tools {
		tp := p + ".tools[" + strconv.Itoa(j) + "]"
		in := &t.Tools[j]
		if in.Type != ToolFunction && in.Type != ToolCustom {
			return InvalidRequestCode(tp+".type", "invalid_value", "Invalid value for '%s.type': %q. A namespace holds 'function' and 'custom' tools.", tp, in.Type)
		}
		name, err := validateTool(in, tp)
		if err != nil {
			return err
		}
		k := t.Name + "." + name
		if seen[k] {
			return InvalidRequest(tp+".name", "duplicate tool name %q in namespace %q", name, t.Name)
		}
		seen[k] = true
	}
	return nil
}

// validateCustomFormat checks a custom tool's format: absent, text, or a
// grammar (lark or regex) with its definition.
func validateCustomFormat(raw json.RawMessage, p string) error {
	if raw == nil {
		return nil
	}
	var f struct {
		Type       string  `json:"type"`
		Syntax     *string `json:"syntax"`
		Definition *string `json:"definition"`
	}
	if err := object(p, raw, &f, "type", "syntax", "definition"); err != nil {
		return err
	}
	switch f.Type {
	case "text":
		return nil
	case "grammar":
		if f.Definition == nil {
			return InvalidRequestCode(p+".definition", "missing_required_parameter", "Missing required parameter: '%s.definition'.", p)
		}
		if f.Syntax == nil {
			return InvalidRequestCode(p+".syntax", "missing_required_parameter", "Missing required parameter: '%s.syntax'.", p)
		}
		return oneOf(p+".syntax", f.Syntax, "lark", "regex")
	}
	return InvalidRequestCode(p+".type", "invalid_value", "Invalid value for '%s.type': %q. Supported values are: 'text', 'grammar'.", p, f.Type)
}

func validateTool(t *Tool, p string) (string, error) {
	switch {
	case t.Type == ToolCustom:
		if t.Name == "" {
			return "", InvalidRequest(p+".name", "missing required parameter: '%s.name'", p)
		}
		if !validName(t.Name) {
			return "", InvalidRequest(p+".name", "invalid custom tool name %q: use a-z, A-Z, 0-9, underscores and dashes, at most 64 characters", t.Name)
		}
		return t.Name, validateCustomFormat(t.Format, p+".format")
	case BuiltinKind(t.Type) != "":
		// Echoed as it was given.
		return "", checkDepth(p, t.Raw)
	case t.IsOutput():
		if err := validateOutputTool(t, p); err != nil {
			return "", err
		}
		return t.Name, nil
	case t.Type == ToolFunction:
		if t.Name == "" {
			return "", InvalidRequest(p+".name", "missing required parameter: '%s.name'", p)
		}
		if !validName(t.Name) {
			return "", InvalidRequest(p+".name", "invalid function name %q: use a-z, A-Z, 0-9, underscores and dashes, at most 64 characters", t.Name)
		}
		if len(t.Parameters) > 0 && t.Parameters[0] != '{' {
			return "", InvalidRequest(p+".parameters", "parameters must be a JSON Schema object")
		}
		return t.Name, nil
	case t.IsHosted():
		if !validName(t.HostedName()) {
			return "", InvalidRequest(p+".type", "invalid hosted tool type %q", t.Type)
		}
		return t.HostedName(), nil
	case t.Type == ToolMCP:
		if t.ServerLabel == "" {
			return "", InvalidRequest(p+".server_label", "missing required parameter: '%s.server_label'", p)
		}
		if t.ServerURL == "" {
			return "", InvalidRequest(p+".server_url", "missing required parameter: '%s.server_url'", p)
		}
		return "", nil
	case t.Type == "":
		return "", InvalidRequest(p+".type", "missing required parameter: '%s.type'", p)
	}
	return "", InvalidRequest(p+".type", "unsupported tool type %q; supported: function, custom, namespace, mcp, hosted tools (%s<name>) and OpenAI's built-in types", t.Type, HostedPrefix)
}

func validName(n string) bool {
	if n == "" || len(n) > 64 {
		return false
	}
	for _, c := range n {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

func validateFormat(f *TextFormat) error {
	switch f.Type {
	case FormatText, FormatJSONObject:
	case FormatJSONSchema:
		if f.Name == "" {
			return InvalidRequestCode("text.format.name", "missing_required_parameter", "Missing required parameter: 'text.format.name'.")
		}
		if !validName(f.Name) {
			return InvalidRequest("text.format.name", "Invalid 'text.format.name': %q; use a-z, A-Z, 0-9, underscores and dashes, at most 64 characters.", f.Name)
		}
		if len(f.Schema) == 0 || f.Schema[0] != '{' {
			return InvalidRequest("text.format.schema", "text.format.schema must be a JSON Schema object")
		}
	case "":
		return InvalidRequestCode("text.format.type", "missing_required_parameter", "Missing required parameter: 'text.format.type'.")
	default:
		return InvalidRequestCode("text.format.type", "invalid_value", "Invalid value for 'text.format.type': %q. Supported values are: 'text', 'json_object', 'json_schema'.", f.Type)
	}
	return nil
}

// replayedCallID checks that an mcp_call of a request's input has its id:
// the id names the call to the model (a call id derived from it, the same
// on every request), so without one the same history would reach the model
// differently each time; OpenAI requires it too. A conversation's items
// need none: the conversation gives the item an id once, when it stores it
// (docs/api.md, Conversations).
func replayedCallID(it *Item) error {
	if it.Type == ItemMCPCall && it.ID == "" {
		return InvalidRequestCode("id", "missing_required_parameter", "Missing required parameter: 'id' (an mcp_call item replayed in input keeps the id the response gave it).")
	}
	return nil
}

func validateInputItem(it *Item) error {
	statuses := []string{ItemInProgress, ItemCompleted, ItemIncomplete}
	switch it.Type {
	case ItemMCPCall:
		statuses = append(statuses, "calling", ItemFailed)
	case ItemApplyPatchCallOutput:
		statuses = []string{ItemCompleted, ItemFailed}
	case ItemWebSearchCall:
		statuses = append(statuses, "searching", ItemFailed)
	}
	if err := oneOf("status", optional(it.Status), statuses...); err != nil {
		return err
	}
	if err := oneOf("execution", optional(it.Execution), "server", "client"); err != nil {
		return err
	}
	if err := cmp.Or(checkActionDepths(it), checkCarriedDepths(it)); err != nil {
		return err
	}
	switch it.Type {
	case ItemCompactionTrigger:
		return InvalidRequest("type", "a compaction_trigger item is only valid as the last item of a response's input")
	case ItemMessage:
		switch it.Role {
		case RoleUser, RoleSystem, RoleDeveloper:
			for j, p := range it.Content {
				if p.Type == PartOutputText || p.Type == PartRefusal {
					return InvalidRequest(fmt.Sprintf("content[%d].type", j), "%s content is only valid in assistant messages", p.Type)
				}
			}
		case RoleAssistant:
			for j, p := range it.Content {
				if p.Type == PartInputImage || p.Type == PartInputFile {
					return InvalidRequest(fmt.Sprintf("content[%d].type", j), "%s content is not valid in assistant messages", p.Type)
				}
			}
		case "":
			return InvalidRequest("role", "missing required parameter: role")
		default:
			return InvalidRequest("role", "invalid role %q; expected user, assistant, system or developer", it.Role)
		}
		return validateDetails("content", it.Content)
	case ItemFunctionCall, ItemCustomToolCall:
		if it.CallID == "" {
			return InvalidRequest("call_id", "missing required parameter: call_id")
		}
		if it.Name == "" {
			return InvalidRequest("name", "missing required parameter: name")
		}
	case ItemShellCall, ItemApplyPatchCall, ItemShellCallOutput, ItemLocalShellCall, ItemLocalShellCallOutput,
		ItemComputerCall, ItemComputerCallOutput:
		if it.CallID == "" {
			return InvalidRequest("call_id", "missing required parameter: call_id")
		}
	case ItemApplyPatchCallOutput:
		if it.CallID == "" {
			return InvalidRequest("call_id", "missing required parameter: call_id")
		}
		if it.Status == "" {
			return InvalidRequestCode("status", "missing_required_parameter", "Missing required parameter: 'status' ('completed' or 'failed').")
		}
	case ItemFunctionCallOutput, ItemCustomToolCallOutput:
		if it.CallID == "" {
			return InvalidRequest("call_id", "missing required parameter: call_id")
		}
		return validateDetails("output", it.OutputParts)
	case ItemReasoning:
		for j, p := range it.Summary {
			if p.Type != PartSummaryText {
				return InvalidRequestCode(fmt.Sprintf("summary[%d].type", j), "invalid_value", "Invalid value for 'summary[%d].type': %q. Supported values are: 'summary_text'.", j, p.Type)
			}
		}
	case ItemReference:
		if it.ID == "" {
			return InvalidRequest("id", "missing required parameter: id")
		}
	}
	return nil
}

// validateDetails checks the detail of image and file parts.
func validateDetails(param string, parts []ContentPart) error {
	for j, p := range parts {
		var allowed []string
		switch p.Type {
		case PartInputImage:
			allowed = []string{"auto", "low", "high", "original"}
		case PartInputFile:
			allowed = []string{"auto", "low", "high"}
		default:
			continue
		}
		if err := oneOf(fmt.Sprintf("%s[%d].detail", param, j), optional(p.Detail), allowed...); err != nil {
			return err
		}
	}
	return nil
}

// ReadLimited reads at most limit bytes from r; more is an *Error with
// status 413.
func ReadLimited(r io.Reader, limit int64) ([]byte, error) {
	b, over, err := bounded.Read(r, 0, limit)
	if err != nil {
		return nil, InvalidRequest("", "could not read the request body: %v", err)
	}
	if over {
		return nil, &Error{Status: 413, Type: ErrTypeInvalidRequest, Code: "request_too_large", Message: fmt.Sprintf("request body exceeds the limit of %d bytes", limit)}
	}
	return b, nil
}
