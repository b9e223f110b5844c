package bedrock

import (
	"context"
	"math"
	"slices"
	"strings"
	"unicode"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/document"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"

	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/provider"
)

// Placeholders for content Bedrock refuses blank.
const (
	emptyOutput   = "(no output)"
	missingOutput = "Error: no output was provided for this tool call."
)

// openSchema is the input schema of a tool declared without one.
const openSchema = `{"type":"object","properties":{}}`

// built is a translated request.
type built struct {
	input *bedrockruntime.ConverseInput
	// noTools drops the model's tool calls from its answer (tool_choice
	// none, which Converse cannot say).
	noTools bool
	// names maps the tool names of the answer back (provider.Rules.Map).
	names provider.Mapping
}

// build translates a provider.Request into a Converse input (see the
// package comment).
func (p *Provider) build(ctx context.Context, req *provider.Request) (*built, error) {
	if ctx.Err() != nil {
		return nil, provider.ContextError(ctx)
	}
	req, names, err := provider.BedrockRules().Fit(req)
	if err != nil {
		return nil, err
	}
	in := &bedrockruntime.ConverseInput{ModelId: aws.String(req.Model)}
	if strings.TrimSpace(req.Instructions) != "" {
		in.System = append(in.System, &types.SystemContentBlockMemberText{Value: req.Instructions})
	}
	var mb messages
	for i := range req.Items {
		if err := p.addItem(ctx, &mb, &in.System, &req.Items[i], req.Model); err != nil {
			return nil, err
		}
	}
	in.Messages = trimPrefill(pairToolResults(startWithUser(mb.msgs), req.Model))
	b := &built{input: in, noTools: req.ToolChoice == api.ToolChoiceNone, names: names}
	tc, err := toolConfig(req, historyTools(in.Messages))
	if err != nil {
		return nil, err
	}
	in.ToolConfig = tc
	if !p.noCache {
		placeCachePoints(in, modelCaching(req.Model))
	}
	in.InferenceConfig, in.AdditionalModelRequestFields = inference(req, thinkingAllowed(req, in.Messages))
	if t := req.Text; t != nil && t.Format.Type == api.FormatJSONSchema && len(t.Format.Schema) > 0 {
		def := types.JsonSchemaDefinition{Schema: aws.String(string(t.Format.Schema)), Description: t.Format.Description}
		if t.Format.Name != "" {
			def.Name = aws.String(t.Format.Name)
		}
		in.OutputConfig = &types.OutputConfig{TextFormat: &types.OutputFormat{Type: types.OutputFormatTypeJsonSchema,
			Structure: &types.OutputFormatStructureMemberJsonSchema{Value: def}}}
	}
	switch tier := types.ServiceTierType(req.ServiceTier); tier {
	case types.ServiceTierTypePriority, types.ServiceTierTypeDefault, types.ServiceTierTypeFlex:
		in.ServiceTier = &types.ServiceTier{Type: tier}
	}
	return b, nil
}

// messages builds the conversation, merging consecutive blocks of one
// role into one message.
type messages struct{ msgs []types.Message }

func (m *messages) add(role types.ConversationRole, blocks ...types.ContentBlock) {
	if n := len(m.msgs); n > 0 && m.msgs[n-1].Role == role {
		m.msgs[n-1].Content = append(m.msgs[n-1].Content, blocks...)
		return
	}
	m.msgs = append(m.msgs, types.Message{Role: role, Content: blocks})
}

func textBlock(s string) types.ContentBlock { return &types.ContentBlockMemberText{Value: s} }

// addItem adds one item to the conversation or the system prompt.
func (p *Provider) addItem(ctx context.Context, mb *messages, system *[]types.SystemContentBlock, it *api.Item, model string) error {
	switch it.Type {
	case api.ItemMessage:
		switch it.Role {
		case api.RoleSystem, api.RoleDeveloper:
			t, err := systemText(it)
			if err != nil {
				return err
			}
			if strings.TrimSpace(t) != "" {
				*system = append(*system, &types.SystemContentBlockMemberText{Value: t})
			}
		case api.RoleAssistant:
			for i := range it.Content {
				t := it.Content[i].Text
				if it.Content[i].Type == api.PartRefusal {
					t = it.Content[i].Refusal
				}
				if strings.TrimSpace(t) != "" {
					mb.add(types.ConversationRoleAssistant, textBlock(t))
				}
			}
		default:
			// Refused before any image is fetched, as CheckContent does.
			if err := provider.CheckParts(it.Role, it.Content); err != nil {
				return err
			}
			for i := range it.Content {
				part := &it.Content[i]
				switch part.Type {
				case api.PartInputImage:
					img, err := p.image(ctx, part.ImageURL)
					if err != nil {
						return err
					}
					mb.add(types.ConversationRoleUser, img)
				default:
					if strings.TrimSpace(part.Text) != "" {
						mb.add(types.ConversationRoleUser, textBlock(part.Text))
					}
				}
			}
		}
	case api.ItemFunctionCall:
		mb.add(types.ConversationRoleAssistant, &types.ContentBlockMemberToolUse{Value: types.ToolUseBlock{
			ToolUseId: aws.String(it.CallID), Name: aws.String(it.Name), Input: p.arguments(ctx, it)}})
	case api.ItemFunctionCallOutput:
		text := it.OutputText()
		if strings.TrimSpace(text) == "" {
			text = emptyOutput
		}
		res := toolResult(model, it.CallID, text, it.IsError)
		if err := p.resultImages(ctx, it, res); err != nil {
			return err
		}
		mb.add(types.ConversationRoleUser, res)
	case api.ItemReasoning:
		if b := reasoningBlock(it); b != nil {
			mb.add(types.ConversationRoleAssistant, b)
		}
	}
	return nil
}

// systemText is the text of a system or developer message. Converse's
// system prompt takes text only: an image or a file in one is a 400, not
// dropped unseen.
// It refuses them as CheckContent does (provider.CheckParts).
func systemText(it *api.Item) (string, error) {
	if err := provider.CheckParts(it.Role, it.Content); err != nil {
		return "", err
	}
	return it.Text(), nil
}

// arguments is a function call's arguments as a toolUse input; arguments
// that are not a JSON object (a model's malformed call) are sent as {}.
func (p *Provider) arguments(ctx context.Context, it *api.Item) document.Interface {
	args := strings.TrimSpace(it.Arguments)
	if strings.HasPrefix(args, "{") {
		if d, err := jsonDocument([]byte(args)); err == nil {
			return d
		}
	}
	if args != "" && args != "{}" {
		p.log.DebugContext(ctx, "bedrock: function call arguments are not a JSON object; sent as {}", "call_id", it.CallID, "name", it.Name)
	}
	return document.NewLazyDocument(map[string]any{})
}

// conversationStart is the text of the user message put before a history
// that does not start with one (Converse requires it): a client's replayed
// greeting first, or instructions alone.
const conversationStart = "(conversation start)"

// startWithUser returns msgs starting with a user message.
func startWithUser(msgs []types.Message) []types.Message {
	if len(msgs) > 0 && msgs[0].Role == types.ConversationRoleUser {
		return msgs
	}
	first := types.Message{Role: types.ConversationRoleUser, Content: []types.ContentBlock{&types.ContentBlockMemberText{Value: conversationStart}}}
	return append([]types.Message{first}, msgs...)
}

// trimPrefill trims the trailing white space of the last text of a
// conversation that ends with an assistant message (a prefill the model
// continues): Anthropic's models refuse "final assistant content" that
// ends with white space. The text is not blank (addItem skips blank
// text), so it stays non-empty.
func trimPrefill(msgs []types.Message) []types.Message {
	last := &msgs[len(msgs)-1]
	if last.Role != types.ConversationRoleAssistant {
		return msgs
	}
	n := len(last.Content) - 1
	if t, ok := last.Content[n].(*types.ContentBlockMemberText); ok {
		last.Content[n] = textBlock(strings.TrimRightFunc(t.Value, unicode.IsSpace))
	}
	return msgs
}

// pairToolResults makes the message after each assistant message with
// toolUse blocks a user message that starts with exactly one toolResult
// per toolUse, in toolUse order: a missing result becomes an error result;
// a result answering no toolUse of the message before it (or answering
// one twice) becomes text.
func pairToolResults(msgs []types.Message, model string) []types.Message {
	out := make([]types.Message, 0, len(msgs)+1)
	for i := 0; i < len(msgs); i++ {
		m := msgs[i]
		if m.Role != types.ConversationRoleAssistant {
			m.Content = answer(nil, m.Content, model)
			out = append(out, m)
			continue
		}
		out = append(out, m)
		uses := toolUseIDs(m.Content)
		if len(uses) == 0 {
			continue
		}
		next := types.Message{Role: types.ConversationRoleUser}
		if i+1 < len(msgs) {
			i++
			next = msgs[i]
		}
		next.Content = answer(uses, next.Content, model)
		out = append(out, next)
	}
	return out
}

func toolUseIDs(blocks []types.ContentBlock) []string {
	var ids []string
	for _, b := range blocks {
		if u, ok := b.(*types.ContentBlockMemberToolUse); ok && !slices.Contains(ids, aws.ToString(u.Value.ToolUseId)) {
			ids = append(ids, aws.ToString(u.Value.ToolUseId))
		}
	}
	return ids
}

// answer orders a user message's content: one toolResult per id of uses,
// then the rest.
func answer(uses []string, content []types.ContentBlock, model string) []types.ContentBlock {
	results := make(map[string]types.ContentBlock, len(uses))
	rest := make([]types.ContentBlock, 0, len(content))
	for _, b := range content {
		r, ok := b.(*types.ContentBlockMemberToolResult)
		if !ok {
			rest = append(rest, b)
			continue
		}
		id := aws.ToString(r.Value.ToolUseId)
		if slices.Contains(uses, id) && results[id] == nil {
			results[id] = b
			continue
		}
		rest = append(rest, textBlock("Output of tool call "+id+": "+resultText(&r.Value)))
	}
	out := make([]types.ContentBlock, 0, len(uses)+len(rest))
	for _, id := range uses {
		r := results[id]
		if r == nil {
			r = toolResult(model, id, missingOutput, true)
		}
		out = append(out, r)
	}
	return append(out, rest...)
}

func resultText(r *types.ToolResultBlock) string {
	var b strings.Builder
	for _, c := range r.Content {
		if t, ok := c.(*types.ToolResultContentBlockMemberText); ok {
			b.WriteString(t.Value)
		}
	}
	return b.String()
}

// historyTools returns the names of the tools the conversation's toolUse
// blocks call, in order of first use.
func historyTools(msgs []types.Message) []string {
	var names []string
	for _, m := range msgs {
		for _, b := range m.Content {
			if u, ok := b.(*types.ContentBlockMemberToolUse); ok && !slices.Contains(names, aws.ToString(u.Value.Name)) {
				names = append(names, aws.ToString(u.Value.Name))
			}
		}
	}
	return names
}

// toolSchema returns a tool's parameters as Converse takes them: a JSON
// Schema object of type "object". None, null, and an object without a
// "type" (`{}`, which OpenAI's APIs take for "no parameters") become one.
func toolSchema(params []byte) (document.Interface, error) {
	if len(params) == 0 || string(params) == "null" {
		params = []byte(openSchema)
	}
	v, err := decodeValue(params)
	if err != nil {
		return nil, err
	}
	if m, ok := v.(map[string]any); ok && m["type"] == nil {
		m["type"] = "object"
		if m["properties"] == nil {
			m["properties"] = map[string]any{}
		}
	}
	return document.NewLazyDocument(exactNumbers(v)), nil
}

// toolConfig declares the request's tools and tool choice, and is never
// nil while the history holds tool blocks (Bedrock requires it then).
func toolConfig(req *provider.Request, history []string) (*types.ToolConfiguration, error) {
	offer := req.ToolChoice != api.ToolChoiceNone
	var tools []types.Tool
	if len(req.Tools) > 0 && (offer || len(history) > 0) {
		tools = make([]types.Tool, 0, len(req.Tools))
		for i := range req.Tools {
			d := &req.Tools[i]
			schema, err := toolSchema(d.Parameters)
			if err != nil {
				return nil, api.InvalidRequest("tools", "the parameters of tool %q are not valid JSON: %v", d.Name, err)
			}
			spec := types.ToolSpecification{Name: aws.String(d.Name), InputSchema: &types.ToolInputSchemaMemberJson{Value: schema}}
			if d.Description != "" {
				spec.Description = aws.String(d.Description)
			}
			tools = append(tools, &types.ToolMemberToolSpec{Value: spec})
		}
	}
	if len(tools) == 0 {
		for _, name := range history {
			schema, _ := jsonDocument([]byte(openSchema))
			tools = append(tools, &types.ToolMemberToolSpec{Value: types.ToolSpecification{Name: aws.String(name),
				Description: aws.String("A tool used earlier in this conversation; it is not available now."),
				InputSchema: &types.ToolInputSchemaMemberJson{Value: schema}}})
		}
	}
	if len(tools) == 0 {
		return nil, nil
	}
	tc := &types.ToolConfiguration{Tools: tools}
	if offer && len(req.Tools) > 0 {
		switch {
		case req.ForcedTool != "":
			tc.ToolChoice = &types.ToolChoiceMemberTool{Value: types.SpecificToolChoice{Name: aws.String(req.ForcedTool)}}
		case req.ToolChoice == api.ToolChoiceRequired:
			tc.ToolChoice = &types.ToolChoiceMemberAny{}
		case req.ToolChoice == api.ToolChoiceAuto:
			tc.ToolChoice = &types.ToolChoiceMemberAuto{}
		}
	}
	return tc, nil
}

// thinkingAllowed reports whether extended thinking may be turned on for
// this call, as Anthropic requires: only with tool choice auto or none, and
// not in the middle of a tool loop whose assistant turn did not think (the
// assistant message the trailing tool results answer must then start with
// its thinking).
func thinkingAllowed(req *provider.Request, msgs []types.Message) bool {
	if req.ForcedTool != "" || req.ToolChoice == api.ToolChoiceRequired {
		return false
	}
	n := len(msgs)
	if n < 2 || len(msgs[n-1].Content) == 0 || len(msgs[n-2].Content) == 0 {
		return true
	}
	if _, ok := msgs[n-1].Content[0].(*types.ContentBlockMemberToolResult); !ok {
		return true
	}
	_, ok := msgs[n-2].Content[0].(*types.ContentBlockMemberReasoningContent)
	return ok
}

// inference is the request's inferenceConfig and, for extended thinking
// (when thinking is allowed), its additionalModelRequestFields. Without
// max_output_tokens, maxTokens is the model's default (defaultMaxTokens),
// or with thinking the budget and thinkingAnswerTokens if more.
func inference(req *provider.Request, thinking bool) (*types.InferenceConfiguration, document.Interface) {
	var ic types.InferenceConfiguration
	set := false
	if req.MaxOutputTokens != nil {
		ic.MaxTokens = aws.Int32(int32(min(*req.MaxOutputTokens, math.MaxInt32)))
		set = true
	}
	if req.Temperature != nil {
		ic.Temperature = aws.Float32(float32(*req.Temperature))
		set = true
	}
	if req.TopP != nil {
		ic.TopP = aws.Float32(float32(*req.TopP))
		set = true
	}
	var extra document.Interface
	if budget := thinkingBudget(req.ReasoningEffort); thinking && budget > 0 && thinks(req.Model) {
		if ic.MaxTokens == nil {
			ic.MaxTokens = aws.Int32(int32(max(defaultMaxTokens(req.Model), budget+thinkingAnswerTokens)))
		} else if int(*ic.MaxTokens) <= budget {
			budget = int(*ic.MaxTokens) - 1
		}
		if budget >= minThinkingBudget {
			extra = document.NewLazyDocument(map[string]any{"thinking": map[string]any{"type": "enabled", "budget_tokens": budget}})
			set = true
			// Claude thinks at temperature 1 and top_p 0.95 or above
			// only: the request's reasoning effort wins over its sampling.
			ic.Temperature = nil
			if ic.TopP != nil && *ic.TopP < minThinkingTopP {
				ic.TopP = aws.Float32(minThinkingTopP)
			}
		}
	}
	if d := defaultMaxTokens(req.Model); ic.MaxTokens == nil && d > 0 {
		ic.MaxTokens = aws.Int32(int32(d))
	}
	if !set && ic.MaxTokens == nil {
		return nil, extra
	}
	return &ic, extra
}

// defaultMaxTokens is the maxTokens sent to model when the request sets
// no max_output_tokens (0: none, Bedrock's default). Anthropic requires
// max_tokens and Converse then caps a Claude model's answer at 4,096
// tokens, which cuts an agent's long turns short; OpenAI's models answer
// up to their limit. Claude 3.7 Sonnet and the Claude 4 families get
// 16,384 (their limits are 32,000 to 64,000: Bedrock reserves a call's
// maxTokens of the account's tokens-per-minute quota when it starts, so a
// default at the limit would throttle concurrent calls sooner), Claude
// 3.5 its limit of 8,192, Claude 3 its 4,096. Other families keep
// Bedrock's defaults, which this provider does not know to be within
// their limits.
func defaultMaxTokens(model string) int {
	id := baseModelID(model)
	switch {
	case strings.HasPrefix(id, "anthropic.claude-3-5-"):
		return 8192
	case strings.HasPrefix(id, "anthropic.claude-3-7-"):
		return 16384
	case strings.HasPrefix(id, "anthropic.claude-3-"):
		return 4096
	case strings.HasPrefix(id, "anthropic.claude-opus-"), strings.HasPrefix(id, "anthropic.claude-sonnet-"), strings.HasPrefix(id, "anthropic.claude-haiku-"):
		return 16384
	}
	return 0
}

// toolResult is the toolResult block answering call id with text. Models
// with a toolResult status are told of a failure by it, others in the text
// (provider.ErrorText).
func toolResult(model, id, text string, isError bool) *types.ContentBlockMemberToolResult {
	var status types.ToolResultStatus
	switch {
	case toolStatus(model):
		status = types.ToolResultStatusSuccess
		if isError {
			status = types.ToolResultStatusError
		}
	case isError:
		text = provider.ErrorText(text)
	}
	return &types.ContentBlockMemberToolResult{Value: types.ToolResultBlock{ToolUseId: aws.String(id), Status: status,
		Content: []types.ToolResultContentBlock{&types.ToolResultContentBlockMemberText{Value: text}}}}
}

// toolStatus reports whether model takes a toolResult status: Bedrock
// documents it for Anthropic Claude 3 and 4 and Amazon Nova models, and
// refuses it for others. model is a model id, an inference profile id
// ("us.anthropic…") or an ARN ending in one.
func toolStatus(model string) bool {
	claude := strings.Contains(model, "anthropic.claude") && !strings.Contains(model, "claude-v2") && !strings.Contains(model, "claude-instant")
	return claude || strings.Contains(model, "amazon.nova")
}
