package bedrock

import (
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
)

// CachePoints says whether the provider places prompt cache points
// (Config.CachePoints, LAMBENT_BEDROCK_CACHE_POINTS).
type CachePoints string

// Cache point modes.
const (
	// CachePointsAuto places cache points on the models that support them
	// (the default; the empty value means it too).
	CachePointsAuto CachePoints = "auto"
	// CachePointsOff places none: every call pays full input price.
	CachePointsOff CachePoints = "off"
)

// ParseCachePoints reads a cache point mode: "auto" (or empty) or "off".
func ParseCachePoints(s string) (CachePoints, bool) {
	switch m := CachePoints(strings.TrimSpace(s)); m {
	case "", CachePointsAuto:
		return CachePointsAuto, true
	case CachePointsOff:
		return CachePointsOff, true
	}
	return "", false
}

// caching is what a model accepts of Converse's cachePoint blocks.
type caching struct {
	// max is the cache points one request may hold (0: the model does not
	// cache).
	max int
	// tools says the toolConfig tools list accepts a cache point.
	tools bool
}

// modelCaching is what model (a model id, an inference profile id or an
// ARN naming one) supports, per Bedrock's "Supported models, Regions, and
// limits" of prompt caching: Anthropic Claude 3.5 Haiku, 3.7 Sonnet and
// the Claude 4 families onwards (Sonnet, Opus, Haiku: 4 points, in system,
// messages and tools); Amazon Nova Micro, Lite, Pro and Premier (4 points,
// in system and messages only). Claude 3.5 Sonnet v2 is left out (a
// preview Bedrock no longer opens to new accounts). Other models, and ARNs
// that do not name the model (application inference profiles, provisioned
// throughput), get no cache points: Bedrock refuses a cachePoint a model
// does not support.
func modelCaching(model string) caching {
	id := baseModelID(model)
	for _, p := range []string{"anthropic.claude-opus-", "anthropic.claude-sonnet-", "anthropic.claude-haiku-",
		"anthropic.claude-3-7-sonnet-", "anthropic.claude-3-5-haiku-"} {
		if strings.HasPrefix(id, p) {
			return caching{max: 4, tools: true}
		}
	}
	for _, p := range []string{"amazon.nova-micro-", "amazon.nova-lite-", "amazon.nova-pro-", "amazon.nova-premier-"} {
		if strings.HasPrefix(id, p) {
			return caching{max: 4}
		}
	}
	return caching{}
}

// baseModelID is the foundation model id model names: the id after the
// last "/" of an ARN, without a cross-region inference profile's
// geography ("us.", "eu.", "apac.", "global.", ...).
func baseModelID(model string) string {
	if strings.HasPrefix(model, "arn:") {
		model = model[strings.LastIndexByte(model, '/')+1:]
	}
	if _, rest, ok := strings.Cut(model, "."); ok && (strings.HasPrefix(rest, "anthropic.") || strings.HasPrefix(rest, "amazon.")) {
		return rest
	}
	return model
}

func cachePoint() types.CachePointBlock {
	return types.CachePointBlock{Type: types.CachePointTypeDefault}
}

// placeCachePoints adds cache points to in where they pay in a
// conversation that grows by appending, within what c allows, most
// valuable first:
//
//  1. after the last user message: this call writes the whole prompt to
//     the cache, and the next call of the loop (or the next turn of the
//     conversation), whose prompt starts with it, reads it;
//  2. after the user message before it: the end of the previous call's
//     prompt, which that call wrote, so this call reads it (Claude also
//     finds it by looking back up to about 20 blocks from point 1, Nova
//     does not);
//  3. after the system prompt, and
//  4. after the tools (Claude only): prompts that share instructions and
//     tools but not the conversation (a new conversation, a history
//     changed by compaction) still read those;
//  5. with points left (Nova, or no system prompt or tools), after the
//     user messages before those of 1 and 2, newest first: where the
//     previous call's prompt ended when its answer is replayed as more
//     than one assistant message.
//
// Bedrock caches the prefix up to each point in its order (tools, system,
// messages), for 5 minutes after its last use, once it has the model's
// minimum of tokens (1,024 to 4,096): a shorter prefix is simply not
// cached. A call pays the cache write price only for the tokens between
// the prefix it read and its last point. Points go on user messages only,
// never after a reasoning block (which Bedrock refuses).
func placeCachePoints(in *bedrockruntime.ConverseInput, c caching) {
	left := c.max
	users := make([]int, 0, len(in.Messages)/2+1) // the user messages, newest first
	for i := len(in.Messages) - 1; i >= 0; i-- {
		if in.Messages[i].Role == types.ConversationRoleUser && len(in.Messages[i].Content) > 0 {
			users = append(users, i)
		}
	}
	mark := func(n int) {
		for ; n > 0 && left > 0 && len(users) > 0; n-- {
			m := &in.Messages[users[0]]
			m.Content = append(m.Content, &types.ContentBlockMemberCachePoint{Value: cachePoint()})
			users = users[1:]
			left--
		}
	}
	mark(2)
	if len(in.System) > 0 && left > 0 {
		in.System = append(in.System, &types.SystemContentBlockMemberCachePoint{Value: cachePoint()})
		left--
	}
	if c.tools && in.ToolConfig != nil && len(in.ToolConfig.Tools) > 0 && left > 0 {
		in.ToolConfig.Tools = append(in.ToolConfig.Tools, &types.ToolMemberCachePoint{Value: cachePoint()})
		left--
	}
	mark(left)
}
