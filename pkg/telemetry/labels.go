package telemetry

import (
	"sort"
	"strings"

	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/engine"
	"github.com/lambent/lambent/pkg/limits"
	"github.com/lambent/lambent/pkg/provider"
)

// OtherLabel is the label value (Prometheus) and dimension value (EMF) of a
// model or tool name outside the operator's set (Names).
const OtherLabel = "other"

// Names are the model and tool names metrics may carry as labels (and EMF
// as dimensions): the operator's configuration, never names merely seen in
// requests, model replies or MCP listings, which clients choose (one 2 MB
// model name, or an MCP server listing 1,000 tools, would otherwise be a
// series each, in every scrape, and a billed CloudWatch metric each).
// Every other name counts under OtherLabel.
type Names struct {
	// Models are exact model names (the default model, exact model
	// routes) and prefix patterns ending in "*" (prefix routes): a model
	// a prefix matches counts under the pattern itself, "us.anthropic.*".
	Models []string
	// Tools are the hosted tools' names (the manifest's and the built-in
	// ones) and the manifest's MCP servers' names.
	Tools []string
}

// labels folds names into the operator's set.
type labels struct {
	models   map[string]bool
	prefixes []string // patterns, longest prefix first
	tools    map[string]bool
}

func newLabels(n Names) *labels {
	l := &labels{models: map[string]bool{}, tools: map[string]bool{}}
	for _, m := range n.Models {
		switch {
		case m == "":
		case strings.HasSuffix(m, "*"):
			l.prefixes = append(l.prefixes, m)
		default:
			l.models[m] = true
		}
	}
	sort.SliceStable(l.prefixes, func(i, j int) bool { return len(l.prefixes[i]) > len(l.prefixes[j]) })
	for _, t := range n.Tools {
		if t != "" {
			l.tools[t] = true
		}
	}
	return l
}

// model is the label of model name m: m when the operator named it, the
// longest prefix pattern that matches it, else OtherLabel.
func (l *labels) model(m string) string {
	if l.models[m] {
		return m
	}
	for _, p := range l.prefixes {
		if strings.HasPrefix(m, p[:len(p)-1]) {
			return p
		}
	}
	return OtherLabel
}

// operatorKind reports whether calls of kind (engine.ToolCall.Kind) are
// of the operator's tools, whose names may be labels. An MCP server's
// tools and a validated output's output tool are named by the request,
// which may give them the name of one of the operator's tools.
func operatorKind(kind string) bool {
	return kind == engine.ToolKindHosted || kind == engine.ToolKindValidator
}

// tool is the label of a call of kind to tool name t: t when the operator
// named it and the call is of one of the operator's tools, else
// OtherLabel.
func (l *labels) tool(kind, t string) string {
	if operatorKind(kind) && l.tools[t] {
		return t
	}
	return OtherLabel
}

// knownErrorType reports whether s, an error's code or type, is one an
// error.type may carry (APIErrorType): the gateway's own codes and types,
// and the error codes and types OpenAI documents. Any other, a provider's
// code among them, is no label.
func knownErrorType(s string) bool {
	switch s {
	// The gateway's error types, and OpenAI's.
	case api.ErrTypeInvalidRequest, api.ErrTypeNotFound, api.ErrTypeServer, api.ErrTypeUpstream,
		api.ErrTypeRateLimit, api.ErrTypeConflict, api.ErrTypeServiceUnavailable,
		"authentication_error", "permission_error", "requests", "tokens":
		return true
	// The gateway's error codes.
	// (upstream_error and server_error are types too.)
	case provider.CodeUpstreamAuthFailed, provider.CodeRateLimitExceeded,
		provider.CodeUpstreamUnreachable, provider.CodeUpstreamTimeout, provider.CodeUpstreamStreamCut,
		provider.CodeUpstreamBadResponse, provider.CodeRequestCancelled, provider.CodeModelNotFound,
		provider.CodeModelAccessDenied, provider.CodeModelUnavailable, provider.CodeServerOverloaded,
		provider.CodeContextLengthExceeded, provider.CodeInputTokensUnsupported,
		api.CodeValidationFailed, api.CodeMaxIterations, api.CodeSubmitBeforeOutput, api.CodeInvalidResponse,
		limits.CodeLimitExceeded, ErrorTypeToolError,
		"invalid_api_key", "request_too_large", "invalid_request", "empty_summary",
		"incomplete_summary", "compaction_unavailable", "conversations_unavailable",
		"secrets_unavailable", "store_failed", "enqueue_failed":
		return true
	// OpenAI's error codes.
	case "insufficient_quota", "invalid_prompt", "invalid_value", "invalid_type",
		"missing_required_parameter", "unknown_parameter", "unsupported_parameter", "unsupported_value",
		"string_above_max_length", "array_above_max_length", "integer_above_max_value", "empty_array",
		"invalid_image", "invalid_image_format", "invalid_image_url", "image_too_large",
		"image_content_policy_violation", "invalid_base64_image", "content_filter",
		"previous_response_not_found", "vector_store_timeout":
		return true
	}
	return false
}
