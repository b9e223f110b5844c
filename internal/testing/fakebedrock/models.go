package fakebedrock

import (
	"fmt"
	"strings"
)

// Model features, as Bedrock's "Supported models and model features" of
// the Converse API lists them and as Bedrock refuses what a model lacks
// (a ValidationException with these messages, before the model runs), and
// the most output tokens each Claude model takes.
// Models not listed here take everything.
const (
	msgNoTools         = "This model doesn't support tool use."
	msgNoStreamTools   = "This model doesn't support tool use in streaming mode."
	msgNoSystem        = "This model doesn't support system messages. Try again without a system message or use a model that supports system messages."
	msgNoToolChoiceAny = "This model doesn't support the toolConfig.toolChoice.any field. Remove toolConfig.toolChoice.any and try again."
	msgNoToolChoiceFn  = "This model doesn't support the toolConfig.toolChoice.tool field. Remove toolConfig.toolChoice.tool and try again."
)

var (
	// noToolModels take no toolConfig at all.
	noToolModels = []string{"amazon.titan-", "anthropic.claude-v2", "anthropic.claude-instant", "meta.llama2-",
		"meta.llama3-8b-instruct", "meta.llama3-70b-instruct", "meta.llama3-2-1b", "meta.llama3-2-3b",
		"mistral.mistral-7b-instruct", "mistral.mixtral-8x7b-instruct", "ai21.jamba-instruct", "deepseek.r1"}
	// noStreamToolModels take a toolConfig in Converse only.
	noStreamToolModels = []string{"meta.llama", "mistral.", "writer.palmyra", "ai21.jamba-1-5"}
	// noSystemModels take no system prompt.
	noSystemModels = []string{"amazon.titan-", "mistral.mistral-7b-instruct", "mistral.mixtral-8x7b-instruct"}
	// anyChoiceModels take toolChoice any; toolChoiceModels toolChoice
	// tool too (Anthropic Claude 3 onwards, Amazon Nova).
	anyChoiceModels  = []string{"anthropic.claude-3", "anthropic.claude-opus-", "anthropic.claude-sonnet-", "anthropic.claude-haiku-", "amazon.nova-", "mistral.mistral-large-"}
	toolChoiceModels = []string{"anthropic.claude-3", "anthropic.claude-opus-", "anthropic.claude-sonnet-", "anthropic.claude-haiku-", "amazon.nova-"}
)

// maxOutputTokens is the most maxTokens model takes (Anthropic's
// documented maximum output of each Claude model; 0: not checked).
func maxOutputTokens(id string) int {
	for _, m := range []struct {
		prefix string
		max    int
	}{
		{"anthropic.claude-opus-4-1", 32000}, {"anthropic.claude-opus-4-2", 32000}, // Opus 4.1, Opus 4 (-20250514)
		{"anthropic.claude-3-5-", 8192}, {"anthropic.claude-3-7-", 64000}, {"anthropic.claude-3-", 4096},
		{"anthropic.claude-", 64000},
	} {
		if strings.HasPrefix(id, m.prefix) {
			return m.max
		}
	}
	return 0
}

// baseModel is the foundation model id model names: the id after the last
// "/" of an ARN, without a cross-region inference profile's geography
// ("us.", "eu.", "apac.", "global.", ...: a first segment followed by a
// provider.model id).
func baseModel(model string) string {
	if strings.HasPrefix(model, "arn:") {
		model = model[strings.LastIndexByte(model, '/')+1:]
	}
	if _, rest, ok := strings.Cut(model, "."); ok && strings.Contains(rest, ".") {
		return rest
	}
	return model
}

func hasPrefix(id string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(id, p) {
			return true
		}
	}
	return false
}

// validateModel checks the features of the request against what model
// supports in operation op and returns the ValidationException message,
// or "".
func validateModel(model, op string, in *Input) string {
	id := baseModel(model)
	if tc := in.ToolConfig; tc != nil {
		switch {
		case hasPrefix(id, noToolModels):
			return msgNoTools
		case op == "ConverseStream" && hasPrefix(id, noStreamToolModels):
			return msgNoStreamTools
		case tc.ToolChoice != nil && tc.ToolChoice.Tool != nil && !hasPrefix(id, toolChoiceModels):
			return msgNoToolChoiceFn
		case tc.ToolChoice != nil && tc.ToolChoice.Any != nil && !hasPrefix(id, anyChoiceModels):
			return msgNoToolChoiceAny
		}
	}
	if len(in.System) > 0 && hasPrefix(id, noSystemModels) {
		return msgNoSystem
	}
	if limit := maxOutputTokens(id); limit > 0 && in.InferenceConfig != nil && in.InferenceConfig.MaxTokens != nil && *in.InferenceConfig.MaxTokens > limit {
		return fmt.Sprintf("The maximum tokens you requested exceeds the model limit of %d. Try again with a maximum tokens value that is lower than %d.", limit, limit)
	}
	return ""
}
