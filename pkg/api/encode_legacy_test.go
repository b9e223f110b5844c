package api

import (
	"encoding/json"
	"errors"
)

// The reflection-based shapes the encoders replaced (json.Marshal of
// these is the reference output). Nested values are converted too, so no
// new encoder is involved.

type legacyFail struct{ err error }

func (f legacyFail) MarshalJSON() ([]byte, error) { return nil, f.err }

func legacyParts(ps []ContentPart) []any {
	if ps == nil {
		return nil
	}
	out := make([]any, len(ps))
	for i, p := range ps {
		out[i] = legacyPart(p)
	}
	return out
}

func legacyOrEmpty(ps []ContentPart) []any {
	if ps == nil {
		return []any{}
	}
	return legacyParts(ps)
}

func legacyPart(p ContentPart) any {
	switch p.Type {
	case PartOutputText:
		ann := p.Annotations
		if ann == nil {
			ann = []json.RawMessage{}
		}
		return struct {
			Type        string            `json:"type"`
			Text        string            `json:"text"`
			Annotations []json.RawMessage `json:"annotations"`
			Logprobs    []json.RawMessage `json:"logprobs,omitempty"`
		}{p.Type, p.Text, ann, p.Logprobs}
	case PartRefusal:
		return struct {
			Type    string `json:"type"`
			Refusal string `json:"refusal"`
		}{p.Type, p.Refusal}
	case PartInputImage:
		detail := p.Detail
		if detail == "" {
			detail = "auto"
		}
		return struct {
			Type     string `json:"type"`
			ImageURL string `json:"image_url,omitempty"`
			FileID   string `json:"file_id,omitempty"`
			Detail   string `json:"detail"`
		}{p.Type, p.ImageURL, p.FileID, detail}
	case PartInputFile:
		return struct {
			Type     string `json:"type"`
			FileID   string `json:"file_id,omitempty"`
			FileData string `json:"file_data,omitempty"`
			FileURL  string `json:"file_url,omitempty"`
			Filename string `json:"filename,omitempty"`
		}{p.Type, p.FileID, p.FileData, p.FileURL, p.Filename}
	default:
		return struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}{p.Type, p.Text}
	}
}

func legacyItem(it Item) any {
	switch it.Type {
	case ItemMessage:
		return struct {
			Type    string `json:"type"`
			ID      string `json:"id"`
			Status  string `json:"status"`
			Role    string `json:"role"`
			Content []any  `json:"content"`
			Phase   string `json:"phase,omitempty"`
		}{it.Type, it.ID, it.Status, it.Role, legacyOrEmpty(it.Content), it.Phase}
	case ItemFunctionCall:
		return struct {
			Type      string `json:"type"`
			ID        string `json:"id"`
			CallID    string `json:"call_id"`
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
			Status    string `json:"status"`
		}{it.Type, it.ID, it.CallID, it.Name, it.Arguments, it.Status}
	case ItemFunctionCallOutput:
		var out any = it.Output
		if it.OutputParts != nil {
			out = legacyParts(it.OutputParts)
		}
		return struct {
			Type    string `json:"type"`
			ID      string `json:"id"`
			CallID  string `json:"call_id"`
			Output  any    `json:"output"`
			Status  string `json:"status"`
			IsError bool   `json:"is_error,omitempty"`
		}{it.Type, it.ID, it.CallID, out, it.Status, it.IsError}
	case ItemReasoning:
		return struct {
			Type             string `json:"type"`
			ID               string `json:"id"`
			Summary          []any  `json:"summary"`
			Content          []any  `json:"content,omitempty"`
			EncryptedContent string `json:"encrypted_content,omitempty"`
			Status           string `json:"status,omitempty"`
		}{it.Type, it.ID, legacyOrEmpty(it.Summary), legacyParts(it.Content), it.EncryptedContent, it.Status}
	case ItemReference:
		return struct {
			Type string `json:"type"`
			ID   string `json:"id"`
		}{it.Type, it.ID}
	}
	return legacyFail{errors.New("unknown item type")}
}

func legacyItems(items []Item) []any {
	if items == nil {
		return nil
	}
	out := make([]any, len(items))
	for i, it := range items {
		out[i] = legacyItem(it)
	}
	return out
}

type legacyWireTool struct {
	Type              string            `json:"type"`
	Name              string            `json:"name,omitempty"`
	Description       *string           `json:"description,omitempty"`
	Parameters        json.RawMessage   `json:"parameters,omitempty"`
	Strict            *bool             `json:"strict,omitempty"`
	ServerLabel       string            `json:"server_label,omitempty"`
	ServerURL         string            `json:"server_url,omitempty"`
	ServerDescription string            `json:"server_description,omitempty"`
	Headers           map[string]string `json:"headers,omitempty"`
	AllowedTools      json.RawMessage   `json:"allowed_tools,omitempty"`
	RequireApproval   json.RawMessage   `json:"require_approval,omitempty"`
	Authorization     string            `json:"authorization,omitempty"`
}

func legacyTool(t Tool) any {
	if t.Type == ToolFunction {
		params := t.Parameters
		if len(params) == 0 {
			params = json.RawMessage("null")
		}
		return struct {
			Type        string          `json:"type"`
			Name        string          `json:"name"`
			Description *string         `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
			Strict      *bool           `json:"strict"`
		}{t.Type, t.Name, t.Description, params, t.Strict}
	}
	w := legacyWireTool(t)
	w.Authorization = ""
	w.Headers = nil
	return w
}

func legacyToolChoice(c ToolChoice) any {
	switch c.Type {
	case ToolFunction:
		return struct {
			Type string `json:"type"`
			Name string `json:"name"`
		}{c.Type, c.Name}
	case "allowed_tools":
		return struct {
			Type  string    `json:"type"`
			Mode  string    `json:"mode"`
			Tools []ToolRef `json:"tools"`
		}{c.Type, c.Mode, c.Tools}
	}
	return c.EffectiveMode()
}

func legacyError(e *Error) any {
	if e == nil {
		return nil
	}
	return struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	}{e.Message, e.Type, nilIfEmpty(e.Param), nilIfEmpty(e.Code)}
}

type legacyResponseShape struct {
	ID                 string             `json:"id"`
	Object             string             `json:"object"`
	CreatedAt          int64              `json:"created_at"`
	CompletedAt        *int64             `json:"completed_at"`
	Status             Status             `json:"status"`
	IncompleteDetails  *IncompleteDetails `json:"incomplete_details"`
	Model              string             `json:"model"`
	PreviousResponseID *string            `json:"previous_response_id"`
	Instructions       *string            `json:"instructions"`
	Output             []any              `json:"output"`
	Error              *ResponseError     `json:"error"`
	Tools              []any              `json:"tools"`
	ToolChoice         any                `json:"tool_choice"`
	Truncation         string             `json:"truncation"`
	ParallelToolCalls  bool               `json:"parallel_tool_calls"`
	Text               TextConfig         `json:"text"`
	TopP               float64            `json:"top_p"`
	PresencePenalty    float64            `json:"presence_penalty"`
	FrequencyPenalty   float64            `json:"frequency_penalty"`
	TopLogprobs        int                `json:"top_logprobs"`
	Temperature        float64            `json:"temperature"`
	Reasoning          *Reasoning         `json:"reasoning"`
	Usage              *Usage             `json:"usage"`
	MaxOutputTokens    *int               `json:"max_output_tokens"`
	MaxToolCalls       *int               `json:"max_tool_calls"`
	Store              bool               `json:"store"`
	Background         bool               `json:"background"`
	ServiceTier        string             `json:"service_tier"`
	Metadata           map[string]string  `json:"metadata"`
	SafetyIdentifier   *string            `json:"safety_identifier"`
	PromptCacheKey     *string            `json:"prompt_cache_key"`
}

func legacyResponse(r *Response) any {
	if r == nil {
		return nil
	}
	c := *r
	if c.Output == nil {
		c.Output = []Item{}
	}
	if c.Tools == nil {
		c.Tools = []Tool{}
	}
	if c.Metadata == nil {
		c.Metadata = map[string]string{}
	}
	tools := make([]any, len(c.Tools))
	for i, t := range c.Tools {
		tools[i] = legacyTool(t)
	}
	return &legacyResponseShape{c.ID, c.Object, c.CreatedAt, c.CompletedAt, c.Status, c.IncompleteDetails, c.Model, c.PreviousResponseID,
		c.Instructions, legacyItems(c.Output), c.Error, tools, legacyToolChoice(c.ToolChoice), c.Truncation, c.ParallelToolCalls, c.Text,
		c.TopP, c.PresencePenalty, c.FrequencyPenalty, c.TopLogprobs, c.Temperature, c.Reasoning, c.Usage, c.MaxOutputTokens,
		c.MaxToolCalls, c.Store, c.Background, c.ServiceTier, c.Metadata, c.SafetyIdentifier, c.PromptCacheKey}
}

func legacyEvent(ev *StreamEvent) any {
	var resp, item, part any
	if ev.Response != nil {
		resp = legacyResponse(ev.Response)
	}
	if ev.Item != nil {
		item = legacyItem(*ev.Item)
	}
	if ev.Part != nil {
		part = legacyPart(*ev.Part)
	}
	return struct {
		Type            string        `json:"type"`
		SequenceNumber  int64         `json:"sequence_number"`
		Response        any           `json:"response,omitempty"`
		OutputIndex     *int          `json:"output_index,omitempty"`
		ItemID          string        `json:"item_id,omitempty"`
		ContentIndex    *int          `json:"content_index,omitempty"`
		SummaryIndex    *int          `json:"summary_index,omitempty"`
		AnnotationIndex *int          `json:"annotation_index,omitempty"`
		Item            any           `json:"item,omitempty"`
		Part            any           `json:"part,omitempty"`
		Delta           *string       `json:"delta,omitempty"`
		Text            *string       `json:"text,omitempty"`
		Arguments       *string       `json:"arguments,omitempty"`
		Refusal         *string       `json:"refusal,omitempty"`
		Annotation      any           `json:"annotation,omitempty"`
		Logprobs        []any         `json:"logprobs,omitempty"`
		Error           *ErrorPayload `json:"error,omitempty"`
	}{ev.Type, ev.SequenceNumber, resp, ev.OutputIndex, ev.ItemID, ev.ContentIndex, ev.SummaryIndex, ev.AnnotationIndex,
		item, part, ev.Delta, ev.Text, ev.Arguments, ev.Refusal, ev.Annotation, ev.Logprobs, ev.Error}
}

// legacy returns the old shape of a corpus value.
func legacy(v any) any {
	switch v := v.(type) {
	case ContentPart:
		return legacyPart(v)
	case Item:
		return legacyItem(v)
	case *Item:
		return legacyItem(*v)
	case Tool:
		return legacyTool(v)
	case ToolChoice:
		return legacyToolChoice(v)
	case *Response:
		return legacyResponse(v)
	case *StreamEvent:
		return legacyEvent(v)
	case *Error:
		return legacyError(v)
	case ErrorBody:
		return struct {
			Error any `json:"error"`
		}{legacyError(v.Error)}
	case *ErrorBody:
		return legacy(*v)
	case *ItemList:
		return struct {
			Object  string  `json:"object"`
			Data    []any   `json:"data"`
			FirstID *string `json:"first_id"`
			LastID  *string `json:"last_id"`
			HasMore bool    `json:"has_more"`
		}{v.Object, legacyItems(v.Data), v.FirstID, v.LastID, v.HasMore}
	}
	// DeleteResult, Usage, TextConfig: plain structs.
	return v
}

// appendJSON calls the value's AppendJSON.
func appendJSONOf(b []byte, v any) []byte {
	switch v := v.(type) {
	case ContentPart:
		return v.AppendJSON(b)
	case Item:
		return v.AppendJSON(b)
	case *Item:
		return v.AppendJSON(b)
	case Tool:
		return v.AppendJSON(b)
	case ToolChoice:
		return v.AppendJSON(b)
	case *Response:
		return v.AppendJSON(b)
	case *StreamEvent:
		return v.AppendJSON(b)
	case *Error:
		return v.AppendJSON(b)
	case ErrorBody:
		return v.AppendJSON(b)
	case *ErrorBody:
		return v.AppendJSON(b)
	case *ItemList:
		return v.AppendJSON(b)
	case *DeleteResult:
		return v.AppendJSON(b)
	case *Usage:
		return v.AppendJSON(b)
	case *TextConfig:
		return v.AppendJSON(b)
	}
	panic("no AppendJSON for the corpus value")
}
