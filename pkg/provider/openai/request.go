package openai

import (
	"encoding/json"
	"strings"

	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/provider"
)

// chatRequest is the body of POST /chat/completions.
type chatRequest struct {
	Model               string          `json:"model"`
	Messages            []chatMessage   `json:"messages"`
	Tools               []chatTool      `json:"tools,omitempty"`
	ToolChoice          any             `json:"tool_choice,omitempty"`
	ParallelToolCalls   *bool           `json:"parallel_tool_calls,omitempty"`
	MaxTokens           *int            `json:"max_tokens,omitempty"`
	MaxCompletionTokens *int            `json:"max_completion_tokens,omitempty"`
	Temperature         *float64        `json:"temperature,omitempty"`
	TopP                *float64        `json:"top_p,omitempty"`
	PresencePenalty     *float64        `json:"presence_penalty,omitempty"`
	FrequencyPenalty    *float64        `json:"frequency_penalty,omitempty"`
	Logprobs            bool            `json:"logprobs,omitempty"`
	TopLogprobs         *int            `json:"top_logprobs,omitempty"`
	ResponseFormat      *responseFormat `json:"response_format,omitempty"`
	Verbosity           string          `json:"verbosity,omitempty"`
	ReasoningEffort     string          `json:"reasoning_effort,omitempty"`
	User                string          `json:"user,omitempty"`
	PromptCacheKey      string          `json:"prompt_cache_key,omitempty"`
	ServiceTier         string          `json:"service_tier,omitempty"`
	Stream              bool            `json:"stream,omitempty"`
	StreamOptions       *streamOptions  `json:"stream_options,omitempty"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// chatMessage is one message. Content is a string, a []chatPart, or nil
// (null: an assistant message that only carries tool calls).
type chatMessage struct {
	Role       string         `json:"role"`
	Content    any            `json:"content"`
	ToolCalls  []chatToolCall `json:"tool_calls,omitempty"`
	ToolCallID string         `json:"tool_call_id,omitempty"`
}

type chatPart struct {
	Type     string    `json:"type"`
	Text     string    `json:"text,omitempty"`
	ImageURL *imageURL `json:"image_url,omitempty"`
}

type imageURL struct {
	URL    string `json:"url"`
	Detail string `json:"detail,omitempty"`
}

type chatToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function chatFunction `json:"function"`
}

type chatFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type chatTool struct {
	Type     string      `json:"type"`
	Function chatToolDef `json:"function"`
}

type chatToolDef struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
	Strict      *bool           `json:"strict,omitempty"`
}

type forcedChoice struct {
	Type     string    `json:"type"`
	Function namedFunc `json:"function"`
}

type namedFunc struct {
	Name string `json:"name"`
}

type responseFormat struct {
	Type       string      `json:"type"`
	JSONSchema *jsonSchema `json:"json_schema,omitempty"`
}

type jsonSchema struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Schema      json.RawMessage `json:"schema,omitempty"`
	Strict      *bool           `json:"strict,omitempty"`
}

var emptyParams = json.RawMessage(`{"type":"object","properties":{}}`)

// buildRequest translates a provider.Request into the JSON body of a chat
// completion request.
func buildRequest(req *provider.Request, stream, maxCompletion bool) ([]byte, error) {
	msgs, err := buildMessages(req)
	if err != nil {
		return nil, err
	}
	cr := chatRequest{
		Model:            req.Model,
		Messages:         msgs,
		Temperature:      req.Temperature,
		TopP:             req.TopP,
		PresencePenalty:  req.PresencePenalty,
		FrequencyPenalty: req.FrequencyPenalty,
		ReasoningEffort:  req.ReasoningEffort,
		User:             req.User,
		PromptCacheKey:   req.PromptCacheKey,
		ServiceTier:      req.ServiceTier,
	}
	if req.MaxOutputTokens != nil {
		if maxCompletion {
			cr.MaxCompletionTokens = req.MaxOutputTokens
		} else {
			cr.MaxTokens = req.MaxOutputTokens
		}
	}
	if req.TopLogprobs != nil && *req.TopLogprobs > 0 {
		cr.Logprobs = true
		cr.TopLogprobs = req.TopLogprobs
	}
	if len(req.Tools) > 0 {
		cr.Tools = make([]chatTool, len(req.Tools))
		for i := range req.Tools {
			d := &req.Tools[i]
			params := d.Parameters
			if len(params) == 0 || string(params) == "null" {
				params = emptyParams
			}
			cr.Tools[i] = chatTool{Type: "function", Function: chatToolDef{
				Name: d.Name, Description: d.Description, Parameters: params, Strict: d.Strict,
			}}
		}
		switch {
		case req.ForcedTool != "":
			cr.ToolChoice = forcedChoice{Type: "function", Function: namedFunc{Name: req.ForcedTool}}
		case req.ToolChoice != "":
			cr.ToolChoice = req.ToolChoice
		}
		cr.ParallelToolCalls = req.ParallelToolCalls
	}
	if t := req.Text; t != nil {
		switch t.Format.Type {
		case api.FormatJSONObject:
			cr.ResponseFormat = &responseFormat{Type: api.FormatJSONObject}
		case api.FormatJSONSchema:
			js := &jsonSchema{Name: t.Format.Name, Schema: t.Format.Schema, Strict: t.Format.Strict}
			if t.Format.Description != nil {
				js.Description = *t.Format.Description
			}
			cr.ResponseFormat = &responseFormat{Type: api.FormatJSONSchema, JSONSchema: js}
		}
		cr.Verbosity = t.Verbosity
	}
	if stream {
		cr.Stream = true
		cr.StreamOptions = &streamOptions{IncludeUsage: true}
	}
	b, err := json.Marshal(&cr)
	if err != nil {
		// Only invalid raw JSON (a tool or schema) can get here.
		return nil, api.InvalidRequest("tools", "invalid JSON Schema in the request: %v", err)
	}
	return b, nil
}

// buildMessages translates the instructions and items into messages.
func buildMessages(req *provider.Request) ([]chatMessage, error) {
	msgs := make([]chatMessage, 0, len(req.Items)+1)
	if req.Instructions != "" {
		msgs = append(msgs, chatMessage{Role: api.RoleSystem, Content: req.Instructions})
	}
	// open is the index of the assistant message the next function_call
	// items join (-1: none): an assistant message of the current turn, or
	// the one the previous function_call created.
	open := -1
	for i := range req.Items {
		it := &req.Items[i]
		switch it.Type {
		case api.ItemMessage:
			open = -1
			switch it.Role {
			case api.RoleAssistant:
				msgs = append(msgs, chatMessage{Role: api.RoleAssistant, Content: assistantText(it)})
				open = len(msgs) - 1
			default:
				role := it.Role
				switch role {
				case api.RoleDeveloper:
					role = api.RoleSystem
				case "":
					role = api.RoleUser
				}
				content, err := userContent(it)
				if err != nil {
					return nil, err
				}
				msgs = append(msgs, chatMessage{Role: role, Content: content})
			}
		case api.ItemFunctionCall:
			if open < 0 {
				msgs = append(msgs, chatMessage{Role: api.RoleAssistant})
				open = len(msgs) - 1
			}
			args := it.Arguments
			if args == "" {
				args = "{}"
			}
			m := &msgs[open]
			m.ToolCalls = append(m.ToolCalls, chatToolCall{ID: it.CallID, Type: "function",
				Function: chatFunction{Name: it.Name, Arguments: args}})
		case api.ItemFunctionCallOutput:
			open = -1
			msgs = append(msgs, chatMessage{Role: "tool", ToolCallID: it.CallID, Content: it.OutputText()})
		default:
			// Reasoning items are not sent back; item references are
			// resolved before a model call.
		}
	}
	for i := range msgs {
		// content may only be null when tool_calls are present.
		if msgs[i].Content == nil && len(msgs[i].ToolCalls) == 0 {
			msgs[i].Content = ""
		}
	}
	return msgs, nil
}

// assistantText is the text of an assistant message (output_text and
// refusal parts), or nil when it has none.
func assistantText(it *api.Item) any {
	switch len(it.Content) {
	case 0:
		return nil
	case 1:
		p := &it.Content[0]
		if p.Type == api.PartRefusal {
			return p.Refusal
		}
		return p.Text
	}
	var b strings.Builder
	for i := range it.Content {
		p := &it.Content[i]
		if p.Type == api.PartRefusal {
			b.WriteString(p.Refusal)
		} else {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// userContent is the content of a user or system message: a string, or
// parts when it has images.
func userContent(it *api.Item) (any, error) {
	images := false
	for i := range it.Content {
		switch it.Content[i].Type {
		case api.PartInputImage:
			if it.Content[i].ImageURL == "" {
				return nil, api.InvalidRequestCode("input", "unsupported_content",
					"input_image by file_id is not supported by this model provider; use image_url")
			}
			images = true
		case api.PartInputFile:
			return nil, api.InvalidRequestCode("input", "unsupported_content",
				"input_file content is not supported by this model provider")
		}
	}
	if !images {
		if len(it.Content) == 1 {
			return it.Content[0].Text, nil
		}
		var b strings.Builder
		for i := range it.Content {
			if i > 0 {
				b.WriteByte('\n')
			}
			b.WriteString(it.Content[i].Text)
		}
		return b.String(), nil
	}
	parts := make([]chatPart, len(it.Content))
	for i := range it.Content {
		p := &it.Content[i]
		if p.Type == api.PartInputImage {
			parts[i] = chatPart{Type: "image_url", ImageURL: &imageURL{URL: p.ImageURL, Detail: p.Detail}}
		} else {
			parts[i] = chatPart{Type: "text", Text: p.Text}
		}
	}
	return parts, nil
}
