package openai

import (
	"encoding/json"

	"github.com/lambent/lambent/internal/chatwire"
	"github.com/lambent/lambent/pkg/api"
)

// reasoning is the reasoning text of a message or delta: reasoning_content
// or else reasoning (backends send one of them).
func reasoning(reasoningContent, reasoning string) string {
	if reasoningContent != "" {
		return reasoningContent
	}
	return reasoning
}

// usageToAPI converts a usage object; a missing total is the sum.
func usageToAPI(u *chatwire.Usage) api.Usage {
	out := api.Usage{InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens, TotalTokens: u.TotalTokens}
	if out.TotalTokens == 0 {
		out.TotalTokens = out.InputTokens + out.OutputTokens
	}
	if d := u.PromptTokensDetails; d != nil {
		out.InputTokensDetails.CachedTokens = d.CachedTokens
	}
	if d := u.CompletionTokensDetails; d != nil {
		out.OutputTokensDetails.ReasoningTokens = d.ReasoningTokens
	}
	return out
}

func hasError(raw json.RawMessage) bool { return len(raw) > 0 && string(raw) != "null" }
