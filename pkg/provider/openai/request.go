package openai

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/lambent/lambent/internal/chatwire"
	"github.com/lambent/lambent/internal/wirejson"
	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/provider"
)

var emptyParams = json.RawMessage(`{"type":"object","properties":{}}`)

// chatRequest is a chat completion request as the provider encodes it:
// chatwire.Request's JSON.
type chatRequest = chatwire.RequestOf[chatwire.OutMessage]

// buildRequest translates a provider.Request into the chat completion
// request it sends (see encodeRequest for its JSON).
func buildRequest(req *provider.Request, stream bool, limit TokenLimit) (*chatRequest, error) {
	msgs, err := buildMessages(req)
	if err != nil {
		return nil, err
	}
	out := make([]chatwire.OutMessage, len(msgs))
	for i := range msgs {
		out[i] = msgs[i].Out()
	}
	cr := &chatRequest{
		Model:            req.Model,
		Messages:         out,
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
		if limit.completion(req.Model) {
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
		cr.Tools = make([]chatwire.Tool, len(req.Tools))
		for i := range req.Tools {
			d := &req.Tools[i]
			params := d.Parameters
			if len(params) == 0 || string(params) == "null" {
				params = emptyParams
			}
			cr.Tools[i] = chatwire.Tool{Type: "function", Function: chatwire.FunctionDef{
				Name: d.Name, Description: d.Description, Parameters: params, Strict: d.Strict,
			}}
		}
		var choice any
		switch {
		case req.ForcedTool != "":
			choice = chatwire.NamedToolChoice{Type: "function", Function: chatwire.FunctionName{Name: req.ForcedTool}}
		case req.ToolChoice != "":
			choice = req.ToolChoice
		}
		if choice != nil {
			if cr.ToolChoice, err = json.Marshal(choice); err != nil {
				return nil, fmt.Errorf("encoding tool_choice: %w", err)
			}
		}
		cr.ParallelToolCalls = req.ParallelToolCalls
	}
	if t := req.Text; t != nil {
		switch t.Format.Type {
		case api.FormatJSONObject:
			cr.ResponseFormat = &chatwire.ResponseFormat{Type: api.FormatJSONObject}
		case api.FormatJSONSchema:
			js := &chatwire.JSONSchema{Name: t.Format.Name, Schema: t.Format.Schema, Strict: t.Format.Strict}
			if t.Format.Description != nil {
				js.Description = *t.Format.Description
			}
			cr.ResponseFormat = &chatwire.ResponseFormat{Type: api.FormatJSONSchema, JSONSchema: js}
		}
		cr.Verbosity = t.Verbosity
	}
	if stream {
		cr.Stream = true
		cr.StreamOptions = &includeUsage
	}
	return cr, nil
}

// reasoningModel reports whether model is one of OpenAI's reasoning
// models (the o-series and GPT-5, with their dated and sized variants),
// which refuse max_tokens and take max_completion_tokens only.
func reasoningModel(model string) bool {
	for _, family := range []string{"o1", "o3", "o4", "gpt-5"} {
		if rest, ok := strings.CutPrefix(model, family); ok && (rest == "" || rest[0] == '-' || rest[0] == '.') {
			return true
		}
	}
	return false
}

// includeUsage is every streamed request's stream_options (never
// modified).
var includeUsage = chatwire.StreamOptions{IncludeUsage: true}

// wholeText is the most text (the bytes of its strings, see messagesText)
// a request's messages may hold for its body to be encoded at once: they
// then encode to well under maxBufferedBody. Longer messages are encoded
// as the body is read (streamOf).
const wholeText = 16 << 10

// messagesText bounds the size of msgs' JSON: no more than 6 bytes a
// byte it returns (a string's byte encodes to 6 at most, as \u00XX, and
// each message, part and call counts 64 bytes for its keys). It stops
// counting above wholeText.
func messagesText(msgs []chatwire.OutMessage) int {
	const keys = 64
	n := 0
	for i := range msgs {
		m := &msgs[i]
		n += keys + len(m.Role) + len(m.Name) + len(m.ToolCallID) + len(m.Refusal) + len(m.ReasoningContent)
		switch c := m.Content.(type) {
		case *string:
			n += len(*c)
		case *[]chatwire.ContentPart:
			for j := range *c {
				p := &(*c)[j]
				n += keys + len(p.Type) + len(p.Text) + len(p.Refusal) + len(p.InputAudio) + len(p.File)
				if u := p.ImageURL; u != nil {
					n += len(u.URL) + len(u.Detail)
				}
			}
		}
		for j := range m.ToolCalls {
			c := &m.ToolCalls[j]
			n += keys + len(c.ID) + len(c.Type) + len(c.Function.Name) + len(c.Function.Arguments)
		}
		if n > wholeText {
			break
		}
	}
	return n
}

// encodeRequest appends cr's JSON to b: all of it (done) when it is no
// longer than maxBufferedBody, else its first maxBufferedBody bytes or
// more, the rest to be read from rest. A request whose messages hold
// little text (messagesText) is encoded at once, a longer one as a
// wirejson.Stream, its messages encoded one at a time as the body is read
// (see post). Only an invalid tool or schema fails.
func encodeRequest(cr *chatRequest, b []byte) (_ []byte, done bool, rest io.Reader, err error) {
	if messagesText(cr.Messages) <= wholeText {
		start := len(b)
		if out, err := wirejson.Append(b, cr); err == nil {
			// A long shell (the tools) can still make a long body:
			// it is sent chunked as a longer one always is.
			return out, len(out)-start <= maxBufferedBody, nil, nil
		}
		// The stream says what is wrong.
		b = b[:start]
	}
	s, err := streamOf(cr)
	if err != nil {
		return b, false, nil, err
	}
	b, done, err = s.AppendTo(b, maxBufferedBody)
	if err != nil {
		return b, false, nil, api.ServerError(err, "encoding the model request failed")
	}
	return b, done, s, nil
}

// streamOf returns cr's JSON as a wirejson.Stream, its messages encoded
// one at a time as it is read.
func streamOf(cr *chatRequest) (*wirejson.Stream, error) {
	shell := *cr
	shell.Messages = []chatwire.OutMessage{}
	s, err := wirejson.NewStream(cr, &shell, wirejson.Elements("messages", cr.Messages))
	if err != nil {
		// Only invalid raw JSON (a tool or schema) can get here.
		return nil, api.InvalidRequest("tools", "invalid JSON Schema in the request: %v", err)
	}
	return s, nil
}

// buildMessages translates the instructions and items into messages.
func buildMessages(req *provider.Request) ([]chatwire.Message, error) {
	msgs := make([]chatwire.Message, 0, len(req.Items)+1)
	if req.Instructions != "" {
		msgs = append(msgs, chatwire.Message{Role: api.RoleSystem, Content: &chatwire.Content{Text: req.Instructions}})
	}
	// open is the index of the assistant message the next function_call
	// items join (-1: none): an assistant message of the current turn, or
	// the one the previous function_call created.
	open := -1
	// loop is where the current tool loop starts (after the last user
	// message); thinking is the reasoning of the loop's next assistant
	// message.
	loop := lastUserMessage(req.Items) + 1
	var thinking strings.Builder
	assistant := func(m chatwire.Message) {
		m.ReasoningContent = thinking.String()
		thinking.Reset()
		msgs = append(msgs, m)
		open = len(msgs) - 1
	}
	for i := range req.Items {
		it := &req.Items[i]
		switch it.Type {
		case api.ItemMessage:
			open = -1
			switch it.Role {
			case api.RoleAssistant:
				assistant(chatwire.Message{Role: api.RoleAssistant, Content: assistantText(it)})
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
				msgs = append(msgs, chatwire.Message{Role: role, Content: content})
			}
		case api.ItemFunctionCall:
			if open < 0 {
				assistant(chatwire.Message{Role: api.RoleAssistant})
			}
			args := it.Arguments
			if args == "" {
				args = "{}"
			}
			m := &msgs[open]
			m.ToolCalls = append(m.ToolCalls, chatwire.ToolCall{ID: it.CallID, Type: "function",
				Function: chatwire.FunctionCall{Name: it.Name, Arguments: chatwire.Arguments(args)}})
		case api.ItemFunctionCallOutput:
			open = -1
			text := it.OutputText()
			if it.IsError {
				// Chat Completions has no error flag for tool results.
				text = provider.ErrorText(text)
			}
			msgs = append(msgs, chatwire.Message{Role: "tool", ToolCallID: it.CallID, Content: &chatwire.Content{Text: text}})
		case api.ItemReasoning:
			// The reasoning of the current tool loop goes back with its
			// assistant message as reasoning_content (DeepSeek's thinking
			// mode requires it there and refuses it elsewhere; vLLM and
			// Ollama ignore it); earlier turns' reasoning is not sent.
			if i >= loop {
				open = -1
				thinking.WriteString(reasoningText(it))
			}
		default:
			// Item references are resolved before a model call.
		}
	}
	kept := msgs[:0]
	for i := range msgs {
		m := &msgs[i]
		if m.Role == api.RoleAssistant && len(m.ToolCalls) == 0 && m.Content.String() == "" {
			// An assistant turn that said nothing (a reasoning-only or
			// cut answer): providers refuse an empty assistant message.
			continue
		}
		// content may only be null when tool_calls are present.
		if m.Content == nil && len(m.ToolCalls) == 0 {
			m.Content = &chatwire.Content{}
		}
		kept = append(kept, *m)
	}
	return pairToolMessages(kept), nil
}

// pairToolMessages moves each tool message that answers a call of an
// earlier assistant message but does not follow it (the error result of a
// call that a continuation left unanswered comes after the continuation's
// input) to the tool messages right after that assistant message, as Chat
// Completions requires. Tool messages in place keep their order.
func pairToolMessages(msgs []chatwire.Message) []chatwire.Message {
	answer := map[string]int{} // the index of the first tool message answering each call id
	for i := range msgs {
		if m := &msgs[i]; m.Role == "tool" {
			if _, ok := answer[m.ToolCallID]; !ok {
				answer[m.ToolCallID] = i
			}
		}
	}
	out := make([]chatwire.Message, 0, len(msgs))
	moved := make([]bool, len(msgs))
	for i := range msgs {
		if moved[i] {
			continue
		}
		out = append(out, msgs[i])
		if len(msgs[i].ToolCalls) == 0 {
			continue
		}
		j := i + 1
		for ; j < len(msgs) && msgs[j].Role == "tool"; j++ {
			out, moved[j] = append(out, msgs[j]), true
		}
		for _, c := range msgs[i].ToolCalls {
			if k, ok := answer[c.ID]; ok && k >= j && !moved[k] {
				out, moved[k] = append(out, msgs[k]), true
			}
		}
	}
	return out
}

// lastUserMessage is the index of the last user message of items (-1:
// none).
func lastUserMessage(items []api.Item) int {
	for i := len(items) - 1; i >= 0; i-- {
		if it := &items[i]; it.Type == api.ItemMessage && (it.Role == api.RoleUser || it.Role == "") {
			return i
		}
	}
	return -1
}

// reasoningText is the readable reasoning of a reasoning item: its
// reasoning_text content, or its summary when a client replayed it
// without the content.
func reasoningText(it *api.Item) string {
	if t := it.Text(); t != "" {
		return t
	}
	var b strings.Builder
	for _, p := range it.Summary {
		b.WriteString(p.Text)
	}
	return b.String()
}

// assistantText is the text of an assistant message (output_text and
// refusal parts), or nil when it has none.
func assistantText(it *api.Item) *chatwire.Content {
	switch len(it.Content) {
	case 0:
		return nil
	case 1:
		p := &it.Content[0]
		if p.Type == api.PartRefusal {
			return &chatwire.Content{Text: p.Refusal}
		}
		return &chatwire.Content{Text: p.Text}
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
	return &chatwire.Content{Text: b.String()}
}

// CheckContent returns the 400 of the first content part of items this
// provider does not send (provider.CheckMessages), which userContent
// refuses too.
func (p *Provider) CheckContent(items []api.Item) error { return provider.CheckMessages(items) }

// userContent is the content of a user, system or developer message: a
// string, or parts when it has images, which only a user message may have
// (provider.CheckParts).
func userContent(it *api.Item) (*chatwire.Content, error) {
	if err := provider.CheckParts(it.Role, it.Content); err != nil {
		return nil, err
	}
	images := false
	for i := range it.Content {
		images = images || it.Content[i].Type == api.PartInputImage
	}
	if !images {
		if len(it.Content) == 1 {
			return &chatwire.Content{Text: it.Content[0].Text}, nil
		}
		var b strings.Builder
		for i := range it.Content {
			if i > 0 {
				b.WriteByte('\n')
			}
			b.WriteString(it.Content[i].Text)
		}
		return &chatwire.Content{Text: b.String()}, nil
	}
	parts := make([]chatwire.ContentPart, len(it.Content))
	for i := range it.Content {
		p := &it.Content[i]
		if p.Type == api.PartInputImage {
			parts[i] = chatwire.ContentPart{Type: "image_url", ImageURL: &chatwire.ImageURL{URL: p.ImageURL, Detail: p.Detail}}
		} else {
			parts[i] = chatwire.ContentPart{Type: "text", Text: p.Text}
		}
	}
	return &chatwire.Content{Parts: parts}, nil
}
