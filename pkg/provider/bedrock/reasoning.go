package bedrock

import (
	"encoding/base64"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"

	"github.com/lambent/lambent/pkg/api"
)

// A reasoning item's encrypted_content, when it comes from Bedrock, is one
// of these prefixes followed by the block's signature, or by its redacted
// content in standard base64. Anything else is another provider's and is
// not sent to Bedrock.
const (
	signaturePrefix = "bedrock.v1:sig:"
	redactedPrefix  = "bedrock.v1:redacted:"
)

// encodeReasoning is the encrypted_content of a reasoning block with a
// signature or redacted content ("" when it has neither).
func encodeReasoning(signature string, redacted []byte) string {
	switch {
	case len(redacted) > 0:
		return redactedPrefix + base64.StdEncoding.EncodeToString(redacted)
	case signature != "":
		return signaturePrefix + signature
	}
	return ""
}

// reasoningBlock is the reasoningContent block a reasoning item stands
// for, or nil when the item carries no Bedrock reasoning.
func reasoningBlock(it *api.Item) types.ContentBlock {
	if sig, ok := strings.CutPrefix(it.EncryptedContent, signaturePrefix); ok && sig != "" {
		text := it.Text()
		return &types.ContentBlockMemberReasoningContent{Value: &types.ReasoningContentBlockMemberReasoningText{
			Value: types.ReasoningTextBlock{Text: &text, Signature: &sig}}}
	}
	if enc, ok := strings.CutPrefix(it.EncryptedContent, redactedPrefix); ok {
		if b, err := base64.StdEncoding.DecodeString(enc); err == nil && len(b) > 0 {
			return &types.ContentBlockMemberReasoningContent{Value: &types.ReasoningContentBlockMemberRedactedContent{Value: b}}
		}
	}
	return nil
}

// Extended thinking budgets (tokens) per reasoning effort, for Anthropic
// Claude models; 1024 is Anthropic's minimum.
const (
	minThinkingBudget = 1024
	// thinkingAnswerTokens is added to the budget for max_tokens when the
	// request sets no max_output_tokens (Anthropic requires max_tokens
	// above the budget).
	thinkingAnswerTokens = 4096
)

func thinkingBudget(effort string) int {
	switch effort {
	case "minimal", "low":
		return minThinkingBudget
	case "medium":
		return 4096
	case "high":
		return 16384
	}
	return 0
}

// minThinkingTopP is the least top_p Claude takes with extended thinking.
const minThinkingTopP = 0.95

// thinks reports whether model names a Claude model with extended thinking
// (Claude 3.7 Sonnet and the Claude 4 families): a model id, a
// cross-region inference profile id or an ARN naming either. Earlier
// Claude models (3.5 Haiku, say) refuse the thinking field.
func thinks(model string) bool {
	id := baseModelID(model)
	for _, p := range []string{"anthropic.claude-3-7-sonnet-", "anthropic.claude-opus-4", "anthropic.claude-sonnet-4", "anthropic.claude-haiku-4"} {
		if strings.HasPrefix(id, p) {
			return true
		}
	}
	return false
}
