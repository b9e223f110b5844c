package fakebedrock

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"unicode"
)

var toolName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// documentName is the characters Bedrock takes in a document block's name:
// alphanumerics, whitespace, hyphens, parentheses and square brackets.
var documentName = regexp.MustCompile(`^[a-zA-Z0-9\s\-()\[\]]+$`)

// Bedrock's Converse bounds on the attachments of one request.
const (
	// maxImages is the most image blocks a request may carry (Converse's
	// ImageBlock documentation: up to 20 images).
	maxImages = 20
	// maxDocuments is the most document blocks (up to 5 documents).
	maxDocuments = 5
)

// documentFormats are DocumentBlock's formats.
var documentFormats = []string{"pdf", "csv", "doc", "docx", "xls", "xlsx", "html", "txt", "md"}

// validate checks a request of operation op the way Bedrock (and the
// Anthropic models behind it) does and returns the ValidationException
// message, or "".
func (s *Server) validate(in *Input, op string) string {
	if len(in.Messages) == 0 || in.Messages[0].Role != "user" {
		return "A conversation must start with a user message. Try again with a conversation that starts with a user message."
	}
	if msg := validateToolConfig(in.ToolConfig); msg != "" {
		return msg
	}
	if c := in.InferenceConfig; c != nil && c.MaxTokens != nil && *c.MaxTokens < 1 {
		return "The maximum tokens you requested exceeds the model limit or is below 1. Try again with a maximum tokens value between 1 and the model's limit."
	}
	for i, b := range in.System {
		if b.Text != nil && strings.TrimSpace(*b.Text) == "" {
			return fmt.Sprintf("The text field in the SystemContentBlock object at system.%d is blank. Add text to the text field, and try again.", i)
		}
	}
	usesTools := false
	for i, m := range in.Messages {
		if m.Role != "user" && m.Role != "assistant" {
			return fmt.Sprintf("messages.%d.role: %q is not one of user, assistant", i, m.Role)
		}
		if i > 0 && in.Messages[i-1].Role == m.Role {
			return "A conversation must alternate between user and assistant roles. Make sure the conversation alternates between user and assistant roles and try again."
		}
		if len(m.Content) == 0 {
			return fmt.Sprintf("The content field in the Message object at messages.%d is empty. Add a ContentBlock object to the content field and try again.", i)
		}
		for j := range m.Content {
			b := &m.Content[j]
			if msg := s.validateBlock(m.Role, i, j, b); msg != "" {
				return msg
			}
			if b.ToolUse != nil || b.ToolResult != nil {
				usesTools = true
			}
		}
	}
	if usesTools && in.ToolConfig == nil {
		return "The toolConfig field must be defined when using toolUse and toolResult content blocks."
	}
	for _, check := range []func([]Message) string{validatePairs, validateUniqueToolUses, validateAttachments, validatePrefill} {
		if msg := check(in.Messages); msg != "" {
			return msg
		}
	}
	return validateThinking(in, op)
}

// validateThinking checks Anthropic's rules for extended thinking
// (additionalModelRequestFields.thinking): a budget of at least 1024
// tokens below maxTokens, tool choice auto only, and a tool loop being
// continued must have started with thinking. A CountTokens input has no
// maxTokens to check (ConverseTokensRequest has no inferenceConfig).
func validateThinking(in *Input, op string) string {
	var extra struct {
		Thinking *struct {
			Type   string `json:"type"`
			Budget int    `json:"budget_tokens"`
		} `json:"thinking"`
	}
	if len(in.AdditionalModelRequestFields) == 0 || json.Unmarshal(in.AdditionalModelRequestFields, &extra) != nil || extra.Thinking == nil || extra.Thinking.Type != "enabled" {
		return ""
	}
	if extra.Thinking.Budget < 1024 {
		return "thinking.budget_tokens: Input should be greater than or equal to 1024"
	}
	if c := in.InferenceConfig; c != nil && c.Temperature != nil && *c.Temperature != 1 {
		return "`temperature` may only be set to 1 when thinking is enabled. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking#important-considerations-when-using-extended-thinking"
	}
	if c := in.InferenceConfig; c != nil && c.TopP != nil && *c.TopP < 0.95 {
		return "`top_p` must be greater than or equal to 0.95 or unset when thinking is enabled. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking#important-considerations-when-using-extended-thinking"
	}
	if c := in.InferenceConfig; op != opCountTokens && (c == nil || c.MaxTokens == nil || *c.MaxTokens <= extra.Thinking.Budget) {
		return "`max_tokens` must be greater than `thinking.budget_tokens`."
	}
	if tc := in.ToolConfig; tc != nil && tc.ToolChoice != nil && (tc.ToolChoice.Any != nil || tc.ToolChoice.Tool != nil) {
		return "Thinking may not be enabled when tool_choice forces tool use."
	}
	n := len(in.Messages)
	if n >= 2 && in.Messages[n-1].Content[0].ToolResult != nil && in.Messages[n-2].Content[0].ReasoningContent == nil {
		return fmt.Sprintf("messages.%d.content.0.type: Expected `thinking` or `redacted_thinking`, but found a different block. When `thinking` is enabled, "+
			"a final `assistant` message must start with a thinking block.", n-2)
	}
	return ""
}

func validateToolConfig(tc *ToolConfig) string {
	if tc == nil {
		return ""
	}
	if len(tc.Tools) == 0 {
		return "1 validation error detected: Value '[]' at 'toolConfig.tools' failed to satisfy constraint: Member must have length greater than or equal to 1"
	}
	names := map[string]bool{}
	for i, t := range tc.Tools {
		if (t.ToolSpec == nil) == (t.CachePoint == nil) {
			return fmt.Sprintf("toolConfig.tools.%d: exactly one of toolSpec, cachePoint must be set", i)
		}
		if t.ToolSpec == nil {
			continue
		}
		if !toolName.MatchString(t.ToolSpec.Name) {
			return fmt.Sprintf("toolConfig.tools.%d.toolSpec.name: %q must match [a-zA-Z0-9_-]{1,64}", i, t.ToolSpec.Name)
		}
		if names[t.ToolSpec.Name] {
			return fmt.Sprintf("The toolConfig field contains duplicate tool names: %s", t.ToolSpec.Name)
		}
		names[t.ToolSpec.Name] = true
		// ToolSpecification.description has a minimum length of 1.
		if d := t.ToolSpec.Description; d != nil && *d == "" {
			return fmt.Sprintf("1 validation error detected: Value '' at 'toolConfig.tools.%d.member.toolSpec.member.description' failed to satisfy constraint: Member must have length greater than or equal to 1", i+1)
		}
		var schema map[string]any
		if json.Unmarshal(t.ToolSpec.InputSchema.JSON, &schema) != nil || schema["type"] != "object" {
			return fmt.Sprintf("toolConfig.tools.%d.toolSpec.inputSchema.json: the input schema must be a JSON Schema object of type \"object\"", i)
		}
	}
	if c := tc.ToolChoice; c != nil {
		set := 0
		for _, ok := range []bool{c.Auto != nil, c.Any != nil, c.Tool != nil} {
			if ok {
				set++
			}
		}
		if set != 1 {
			return "toolConfig.toolChoice: exactly one of auto, any, tool must be set"
		}
		if c.Tool != nil && !names[c.Tool.Name] {
			return fmt.Sprintf("toolConfig.toolChoice.tool.name: the tool %q is not defined in toolConfig.tools", c.Tool.Name)
		}
	}
	return ""
}

func (s *Server) validateBlock(role string, i, j int, b *ContentBlock) string {
	at := fmt.Sprintf("messages.%d.content.%d", i, j)
	set := 0
	for _, ok := range []bool{b.Text != nil, b.Image != nil, b.Document != nil, b.ToolUse != nil, b.ToolResult != nil, b.ReasoningContent != nil, b.CachePoint != nil} {
		if ok {
			set++
		}
	}
	if set != 1 {
		return fmt.Sprintf("The ContentBlock object at %s must set exactly one member.", at)
	}
	switch {
	case b.Text != nil:
		if strings.TrimSpace(*b.Text) == "" {
			return fmt.Sprintf("The text field in the ContentBlock object at %s is blank. Add text to the text field, and try again.", at)
		}
	case b.Image != nil:
		if !slices.Contains([]string{"png", "jpeg", "gif", "webp"}, b.Image.Format) || len(b.Image.Source.Bytes) == 0 {
			return fmt.Sprintf("The image at %s needs a format (png, jpeg, gif, webp) and bytes.", at)
		}
		// The model checks the bytes against the declared format.
		if sniffed, ok := strings.CutPrefix(http.DetectContentType(b.Image.Source.Bytes), "image/"); ok &&
			slices.Contains([]string{"png", "jpeg", "gif", "webp"}, sniffed) && sniffed != b.Image.Format {
			return fmt.Sprintf("%s.image.source.base64.data: Image does not match the provided media type image/%s", at, b.Image.Format)
		}
	case b.Document != nil:
		if msg := validateDocument(at, b.Document); msg != "" {
			return msg
		}
	case b.ToolUse != nil:
		if role != "assistant" {
			return fmt.Sprintf("%s: toolUse blocks are only allowed in assistant messages", at)
		}
		var obj map[string]any
		if b.ToolUse.ToolUseID == "" || b.ToolUse.Name == "" || json.Unmarshal(b.ToolUse.Input, &obj) != nil || obj == nil {
			return fmt.Sprintf("%s.toolUse: toolUseId, name and an object input are required", at)
		}
		if !validToolUseID(b.ToolUse.ToolUseID) {
			return fmt.Sprintf("%s.toolUse.toolUseId: Value '%s' failed to satisfy constraint: Member must have length less than or equal to 64 and match pattern [a-zA-Z0-9_-]+", at, b.ToolUse.ToolUseID)
		}
	case b.ToolResult != nil:
		r := b.ToolResult
		if role != "user" {
			return fmt.Sprintf("%s: toolResult blocks are only allowed in user messages", at)
		}
		if r.Status != "" && r.Status != "success" && r.Status != "error" {
			return fmt.Sprintf("%s.toolResult.status: %q is not one of success, error", at, r.Status)
		}
		if !validToolUseID(r.ToolUseID) {
			return fmt.Sprintf("%s.toolResult.toolUseId: Value '%s' failed to satisfy constraint: Member must have length less than or equal to 64 and match pattern [a-zA-Z0-9_-]+", at, r.ToolUseID)
		}
		if len(r.Content) == 0 {
			return fmt.Sprintf("The content field in the ToolResultBlock object at %s is empty. Add a ToolResultContentBlock object and try again.", at)
		}
		for k, c := range r.Content {
			if c.Text != nil && strings.TrimSpace(*c.Text) == "" {
				return fmt.Sprintf("The text field in the ToolResultContentBlock object at %s.toolResult.content.%d is blank. Add text to the text field, and try again.", at, k)
			}
		}
	case b.ReasoningContent != nil:
		if role != "assistant" {
			return fmt.Sprintf("%s: reasoningContent blocks are only allowed in assistant messages", at)
		}
		rc := b.ReasoningContent
		s.mu.Lock()
		defer s.mu.Unlock()
		switch {
		case rc.ReasoningText != nil:
			if text, ok := s.signed[rc.ReasoningText.Signature]; !ok || text != rc.ReasoningText.Text {
				return fmt.Sprintf("%s: Invalid signature in thinking block: reasoning must be passed back exactly as the model produced it, with its signature", at)
			}
		case len(rc.RedactedContent) > 0:
			if !s.redacted[string(rc.RedactedContent)] {
				return fmt.Sprintf("%s: Invalid redacted thinking block", at)
			}
		default:
			return fmt.Sprintf("%s.reasoningContent: reasoningText or redactedContent is required", at)
		}
	}
	return ""
}

// validatePairs checks that every toolUse of an assistant message is
// answered by exactly one toolResult in the next message, and that every
// toolResult answers a toolUse of the message before it.
func validatePairs(msgs []Message) string {
	for _, b := range msgs[0].Content {
		if b.ToolResult != nil {
			return fmt.Sprintf("messages.0.content: unexpected toolUseId found in toolResult blocks: %s. Each toolResult block must have a corresponding toolUse block in the previous message.", b.ToolResult.ToolUseID)
		}
	}
	for i, m := range msgs {
		var uses []string
		if m.Role == "assistant" {
			for _, b := range m.Content {
				if b.ToolUse != nil {
					uses = append(uses, b.ToolUse.ToolUseID)
				}
			}
		}
		var results []string
		if i+1 < len(msgs) {
			for _, b := range msgs[i+1].Content {
				if b.ToolResult != nil {
					results = append(results, b.ToolResult.ToolUseID)
				}
			}
		}
		if len(uses) > 0 && i+1 < len(msgs) {
			var missing []string
			for _, id := range uses {
				if !slices.Contains(results, id) {
					missing = append(missing, id)
				}
			}
			if len(missing) > 0 {
				return fmt.Sprintf("messages.%d: toolUse ids were found without toolResult blocks immediately after: %s. Each toolUse block must have a corresponding toolResult block in the next message.", i, strings.Join(missing, ", "))
			}
		}
		for k, id := range results {
			if !slices.Contains(uses, id) {
				return fmt.Sprintf("messages.%d.content: unexpected toolUseId found in toolResult blocks: %s. Each toolResult block must have a corresponding toolUse block in the previous message.", i+1, id)
			}
			if slices.Contains(results[:k], id) {
				return fmt.Sprintf("messages.%d.content: the toolUseId %s is answered by more than one toolResult block.", i+1, id)
			}
		}
	}
	return ""
}

// validToolUseID is Bedrock's constraint on toolUseId: 1 to 64 of
// [a-zA-Z0-9_-].
func validToolUseID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// validateDocument checks a document block: a known format, bytes, and a
// name of the characters Bedrock takes, without two whitespace characters
// in a row (DocumentBlock's documented name rule).
func validateDocument(at string, d *Document) string {
	if !slices.Contains(documentFormats, d.Format) || len(d.Source.Bytes) == 0 {
		return fmt.Sprintf("The document at %s needs a format (%s) and bytes.", at, strings.Join(documentFormats, ", "))
	}
	if !documentName.MatchString(d.Name) {
		return fmt.Sprintf("%s.document.name: The document file name can only contain alphanumeric characters, whitespace characters, hyphens, parentheses, and square brackets.", at)
	}
	for i := 1; i < len(d.Name); i++ {
		if isSpace(d.Name[i-1]) && isSpace(d.Name[i]) {
			return fmt.Sprintf("%s.document.name: The document file name can't contain more than one consecutive whitespace character.", at)
		}
	}
	return ""
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}

// validateUniqueToolUses checks that no two toolUse blocks of the
// conversation share an id: Anthropic's models refuse it ("`tool_use` ids
// must be unique"), across messages too.
func validateUniqueToolUses(msgs []Message) string {
	seen := map[string]bool{}
	for i, m := range msgs {
		for j, b := range m.Content {
			if b.ToolUse == nil {
				continue
			}
			if seen[b.ToolUse.ToolUseID] {
				return fmt.Sprintf("messages.%d.content.%d: `tool_use` ids must be unique", i, j)
			}
			seen[b.ToolUse.ToolUseID] = true
		}
	}
	return ""
}

// validateAttachments checks Converse's bounds on a request's images (of
// messages and of tool results) and documents.
func validateAttachments(msgs []Message) string {
	images, documents := 0, 0
	for _, m := range msgs {
		for _, b := range m.Content {
			switch {
			case b.Image != nil:
				images++
			case b.Document != nil:
				documents++
			case b.ToolResult != nil:
				for _, c := range b.ToolResult.Content {
					if c.Image != nil {
						images++
					}
				}
			}
		}
	}
	switch {
	case images > maxImages:
		return fmt.Sprintf("The request has %d images; a request can include at most %d images.", images, maxImages)
	case documents > maxDocuments:
		return fmt.Sprintf("The request has %d documents; a request can include at most %d documents.", documents, maxDocuments)
	}
	return ""
}

// validatePrefill checks a conversation that ends with an assistant
// message (a prefill the model continues): Anthropic's models refuse its
// last block, when text, ending in whitespace.
func validatePrefill(msgs []Message) string {
	last := msgs[len(msgs)-1]
	if last.Role != "assistant" {
		return ""
	}
	blocks := last.Content
	for len(blocks) > 1 && blocks[len(blocks)-1].CachePoint != nil {
		blocks = blocks[:len(blocks)-1] // a cache point marks the block before it
	}
	if t := blocks[len(blocks)-1].Text; t != nil && strings.TrimRightFunc(*t, unicode.IsSpace) != *t {
		return "messages: final assistant content cannot end with trailing whitespace"
	}
	return ""
}
