package api

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"slices"
	"strconv"
	"unicode/utf8"
)

// Hand-written JSON encoders. Every AppendJSON appends exactly the bytes
// json.Marshal wrote for the value before these encoders existed: the same
// keys in the same order, the same null and omitempty rules, strings
// escaped as encoding/json escapes them (HTML characters, U+2028/U+2029,
// invalid UTF-8 as U+FFFD), floats in its format, and raw JSON fields
// compacted (so the output never contains a newline and fits an SSE data
// line).
//
// AppendJSON cannot fail. A value json.Marshal rejects — an item of an
// unknown type, a NaN or infinite float, invalid raw JSON — is written as
// null, keeping the output valid JSON; MarshalJSON returns the error
// instead. The decoder and the engine never produce such values.

// setErr records the first encoding error.
func setErr(e *error, err error) {
	if *e == nil {
		*e = err
	}
}

const hexDigits = "0123456789abcdef"

// jsonSafe marks the ASCII bytes encoding/json writes unescaped (with HTML
// escaping on, as json.Marshal and json.Encoder do by default).
var jsonSafe = func() (t [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = true
	}
	for _, c := range `"\<>&` {
		t[c] = false
	}
	return t
}()

// AppendString appends s as a JSON string, escaped exactly as
// encoding/json escapes it (HTML characters, U+2028/U+2029, invalid UTF-8).
func AppendString(b []byte, s string) []byte { return appendString(b, s) }

// appendString appends s as a JSON string, escaped like encoding/json.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if jsonSafe[c] {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				// Other control characters and <, >, &.
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i++
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// appendNullString appends *s, or null when s is nil.
func appendNullString(b []byte, s *string) []byte {
	if s == nil {
		return append(b, "null"...)
	}
	return appendString(b, *s)
}

func appendBool(b []byte, v bool) []byte {
	if v {
		return append(b, "true"...)
	}
	return append(b, "false"...)
}

// appendFloat appends f the way encoding/json formats a float64 (like
// ES6: 'f' format unless the magnitude is below 1e-6 or at least 1e21,
// exponents without padding).
func appendFloat(b []byte, f float64, e *error) []byte {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		setErr(e, &json.UnsupportedValueError{Value: reflect.ValueOf(f), Str: strconv.FormatFloat(f, 'g', -1, 64)})
		return append(b, "null"...)
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// e-09 → e-9
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

var rawMessageType = reflect.TypeFor[json.RawMessage]()

// appendRaw appends raw JSON compacted, as encoding/json writes a
// json.RawMessage: nil as null, insignificant whitespace dropped, and <,
// >, &, U+2028 and U+2029 escaped.
func appendRaw(b []byte, raw []byte, e *error) []byte {
	if raw == nil {
		return append(b, "null"...)
	}
	if !json.Valid(raw) {
		err := json.Compact(new(bytes.Buffer), raw)
		if err == nil { // unreachable: Valid and Compact agree
			err = &json.SyntaxError{}
		}
		setErr(e, &json.MarshalerError{Type: rawMessageType, Err: err})
		return append(b, "null"...)
	}
	inString := false
	start := 0
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if !inString {
			switch c {
			case '"':
				inString = true
			case ' ', '\t', '\n', '\r':
				b = append(b, raw[start:i]...)
				start = i + 1
			}
			continue
		}
		switch c {
		case '\\':
			i++ // the escaped character is ASCII and never special here
		case '"':
			inString = false
		case '<', '>', '&':
			b = append(b, raw[start:i]...)
			b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			start = i + 1
		case 0xE2:
			if i+2 < len(raw) && raw[i+1] == 0x80 && raw[i+2]&^1 == 0xA8 {
				b = append(b, raw[start:i]...)
				b = append(b, '\\', 'u', '2', '0', '2', hexDigits[raw[i+2]&0xF])
				i += 2
				start = i + 1
			}
		}
	}
	return append(b, raw[start:]...)
}

// appendAny appends v through json.Marshal (raw JSON directly).
func appendAny(b []byte, v any, e *error) []byte {
	if raw, ok := v.(json.RawMessage); ok {
		return appendRaw(b, raw, e)
	}
	out, err := json.Marshal(v)
	if err != nil {
		setErr(e, err)
		return append(b, "null"...)
	}
	return append(b, out...)
}

// appendStringMap appends m with its keys sorted, as encoding/json does;
// nil is written as {} (the only map field, metadata, is never null).
func appendStringMap(b []byte, m map[string]string) []byte {
	b = append(b, '{')
	switch len(m) {
	case 0:
	case 1:
		for k, v := range m {
			b = appendString(b, k)
			b = append(b, ':')
			b = appendString(b, v)
		}
	default:
		var arr [16]string
		keys := arr[:0]
		for k := range m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, k)
			b = append(b, ':')
			b = appendString(b, m[k])
		}
	}
	return append(b, '}')
}

// AppendJSON appends the response's JSON encoding to b (see MarshalJSON).
func (r *Response) AppendJSON(b []byte) []byte {
	var err error
	return r.appendJSON(b, &err)
}

func (r *Response) appendJSON(b []byte, e *error) []byte {
	if r == nil {
		return append(b, "null"...)
	}
	b = append(b, `{"id":`...)
	b = appendString(b, r.ID)
	b = append(b, `,"object":`...)
	b = appendString(b, r.Object)
	b = append(b, `,"created_at":`...)
	b = strconv.AppendInt(b, r.CreatedAt, 10)
	b = append(b, `,"completed_at":`...)
	if r.CompletedAt == nil {
		b = append(b, "null"...)
	} else {
		b = strconv.AppendInt(b, *r.CompletedAt, 10)
	}
	b = append(b, `,"status":`...)
	b = appendString(b, string(r.Status))
	b = append(b, `,"incomplete_details":`...)
	if r.IncompleteDetails == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, `{"reason":`...)
		b = appendString(b, r.IncompleteDetails.Reason)
		b = append(b, '}')
	}
	b = append(b, `,"model":`...)
	b = appendString(b, r.Model)
	b = append(b, `,"previous_response_id":`...)
	b = appendNullString(b, r.PreviousResponseID)
	b = append(b, `,"instructions":`...)
	b = appendNullString(b, r.Instructions)
	b = append(b, `,"output":`...)
	b = appendList(b, r.Output, (*Item).appendJSON, e)
	b = append(b, `,"error":`...)
	if r.Error == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, `{"code":`...)
		b = appendString(b, r.Error.Code)
		b = append(b, `,"message":`...)
		b = appendString(b, r.Error.Message)
		b = append(b, '}')
	}
	b = append(b, `,"tools":`...)
	b = appendList(b, r.Tools, (*Tool).appendJSON, e)
	b = append(b, `,"tool_choice":`...)
	b = r.ToolChoice.AppendJSON(b)
	b = append(b, `,"truncation":`...)
	b = appendString(b, r.Truncation)
	b = append(b, `,"parallel_tool_calls":`...)
	b = appendBool(b, r.ParallelToolCalls)
	b = append(b, `,"text":`...)
	b = r.Text.appendJSON(b, e)
	b = append(b, `,"top_p":`...)
	b = appendFloat(b, r.TopP, e)
	b = append(b, `,"presence_penalty":`...)
	b = appendFloat(b, r.PresencePenalty, e)
	b = append(b, `,"frequency_penalty":`...)
	b = appendFloat(b, r.FrequencyPenalty, e)
	b = append(b, `,"top_logprobs":`...)
	b = strconv.AppendInt(b, int64(r.TopLogprobs), 10)
	b = append(b, `,"temperature":`...)
	b = appendFloat(b, r.Temperature, e)
	b = append(b, `,"reasoning":`...)
	if r.Reasoning == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, `{"effort":`...)
		b = appendNullString(b, r.Reasoning.Effort)
		b = append(b, `,"summary":`...)
		b = appendNullString(b, r.Reasoning.Summary)
		b = append(b, '}')
	}
	b = append(b, `,"usage":`...)
	b = r.Usage.AppendJSON(b)
	b = append(b, `,"max_output_tokens":`...)
	b = appendNullInt(b, r.MaxOutputTokens)
	b = append(b, `,"max_tool_calls":`...)
	b = appendNullInt(b, r.MaxToolCalls)
	b = append(b, `,"store":`...)
	b = appendBool(b, r.Store)
	b = append(b, `,"background":`...)
	b = appendBool(b, r.Background)
	b = append(b, `,"service_tier":`...)
	b = appendString(b, r.ServiceTier)
	b = append(b, `,"metadata":`...)
	b = appendStringMap(b, r.Metadata)
	b = append(b, `,"safety_identifier":`...)
	b = appendNullString(b, r.SafetyIdentifier)
	b = append(b, `,"prompt_cache_key":`...)
	b = appendNullString(b, r.PromptCacheKey)
	return append(b, '}')
}

func appendNullInt(b []byte, n *int) []byte {
	if n == nil {
		return append(b, "null"...)
	}
	return strconv.AppendInt(b, int64(*n), 10)
}

// AppendJSON appends the usage's JSON encoding to b (null when u is nil).
func (u *Usage) AppendJSON(b []byte) []byte {
	if u == nil {
		return append(b, "null"...)
	}
	b = append(b, `{"input_tokens":`...)
	b = strconv.AppendInt(b, int64(u.InputTokens), 10)
	b = append(b, `,"output_tokens":`...)
	b = strconv.AppendInt(b, int64(u.OutputTokens), 10)
	b = append(b, `,"total_tokens":`...)
	b = strconv.AppendInt(b, int64(u.TotalTokens), 10)
	b = append(b, `,"input_tokens_details":{"cached_tokens":`...)
	b = strconv.AppendInt(b, int64(u.InputTokensDetails.CachedTokens), 10)
	b = append(b, `},"output_tokens_details":{"reasoning_tokens":`...)
	b = strconv.AppendInt(b, int64(u.OutputTokensDetails.ReasoningTokens), 10)
	return append(b, "}}"...)
}

// AppendJSON appends the text configuration's JSON encoding to b.
func (c *TextConfig) AppendJSON(b []byte) []byte {
	if c == nil {
		return append(b, "null"...)
	}
	var err error
	return c.appendJSON(b, &err)
}

func (c *TextConfig) appendJSON(b []byte, e *error) []byte {
	b = append(b, `{"format":`...)
	b = c.Format.appendJSON(b, e)
	if c.Verbosity != "" {
		b = append(b, `,"verbosity":`...)
		b = appendString(b, c.Verbosity)
	}
	return append(b, '}')
}

// AppendJSON appends the text format's JSON encoding to b.
func (f *TextFormat) AppendJSON(b []byte) []byte {
	if f == nil {
		return append(b, "null"...)
	}
	var err error
	return f.appendJSON(b, &err)
}

func (f *TextFormat) appendJSON(b []byte, e *error) []byte {
	b = append(b, `{"type":`...)
	b = appendString(b, f.Type)
	if f.Name != "" {
		b = append(b, `,"name":`...)
		b = appendString(b, f.Name)
	}
	if f.Description != nil {
		b = append(b, `,"description":`...)
		b = appendString(b, *f.Description)
	}
	if len(f.Schema) > 0 {
		b = append(b, `,"schema":`...)
		b = appendRaw(b, f.Schema, e)
	}
	if f.Strict != nil {
		b = append(b, `,"strict":`...)
		b = appendBool(b, *f.Strict)
	}
	return append(b, '}')
}

// AppendJSON appends the item's JSON encoding to b (see MarshalJSON).
func (it *Item) AppendJSON(b []byte) []byte {
	if it == nil {
		return append(b, "null"...)
	}
	var err error
	return it.appendJSON(b, &err)
}

func (it *Item) appendJSON(b []byte, e *error) []byte {
	switch it.Type {
	case ItemMessage:
		b = append(b, `{"type":`...)
		b = appendString(b, it.Type)
		b = append(b, `,"id":`...)
		b = appendString(b, it.ID)
		b = append(b, `,"status":`...)
		b = appendString(b, it.Status)
		b = append(b, `,"role":`...)
		b = appendString(b, it.Role)
		b = append(b, `,"content":`...)
		b = appendParts(b, it.Content, e)
		if it.Phase != "" {
			b = append(b, `,"phase":`...)
			b = appendString(b, it.Phase)
		}
	case ItemFunctionCall:
		b = append(b, `{"type":`...)
		b = appendString(b, it.Type)
		b = append(b, `,"id":`...)
		b = appendString(b, it.ID)
		b = append(b, `,"call_id":`...)
		b = appendString(b, it.CallID)
		b = append(b, `,"name":`...)
		b = appendString(b, it.Name)
		b = append(b, `,"arguments":`...)
		b = appendString(b, it.Arguments)
		b = append(b, `,"status":`...)
		b = appendString(b, it.Status)
	case ItemFunctionCallOutput:
		b = append(b, `{"type":`...)
		b = appendString(b, it.Type)
		b = append(b, `,"id":`...)
		b = appendString(b, it.ID)
		b = append(b, `,"call_id":`...)
		b = appendString(b, it.CallID)
		b = append(b, `,"output":`...)
		if it.OutputParts != nil {
			b = appendParts(b, it.OutputParts, e)
		} else {
			b = appendString(b, it.Output)
		}
		b = append(b, `,"status":`...)
		b = appendString(b, it.Status)
		if it.IsError {
			b = append(b, `,"is_error":true`...)
		}
	case ItemReasoning:
		b = append(b, `{"type":`...)
		b = appendString(b, it.Type)
		b = append(b, `,"id":`...)
		b = appendString(b, it.ID)
		b = append(b, `,"summary":`...)
		b = appendParts(b, it.Summary, e)
		if len(it.Content) > 0 {
			b = append(b, `,"content":`...)
			b = appendParts(b, it.Content, e)
		}
		if it.EncryptedContent != "" {
			b = append(b, `,"encrypted_content":`...)
			b = appendString(b, it.EncryptedContent)
		}
		if it.Status != "" {
			b = append(b, `,"status":`...)
			b = appendString(b, it.Status)
		}
	case ItemReference:
		b = append(b, `{"type":`...)
		b = appendString(b, it.Type)
		b = append(b, `,"id":`...)
		b = appendString(b, it.ID)
	default:
		setErr(e, errItemType(it.Type))
		return append(b, "null"...)
	}
	return append(b, '}')
}

// appendParts appends parts as an array; nil is written as [].
func appendParts(b []byte, parts []ContentPart, e *error) []byte {
	return appendList(b, parts, (*ContentPart).appendJSON, e)
}

// appendList appends xs as a JSON array (nil as []), each element by enc.
func appendList[T any](b []byte, xs []T, enc func(*T, []byte, *error) []byte, e *error) []byte {
	b = append(b, '[')
	for i := range xs {
		if i > 0 {
			b = append(b, ',')
		}
		b = enc(&xs[i], b, e)
	}
	return append(b, ']')
}

// AppendJSON appends the content part's JSON encoding to b (see MarshalJSON).
func (p *ContentPart) AppendJSON(b []byte) []byte {
	if p == nil {
		return append(b, "null"...)
	}
	var err error
	return p.appendJSON(b, &err)
}

func (p *ContentPart) appendJSON(b []byte, e *error) []byte {
	b = append(b, `{"type":`...)
	b = appendString(b, p.Type)
	switch p.Type {
	case PartOutputText:
		b = append(b, `,"text":`...)
		b = appendString(b, p.Text)
		b = append(b, `,"annotations":`...)
		b = appendRawList(b, p.Annotations, e)
		if len(p.Logprobs) > 0 {
			b = append(b, `,"logprobs":`...)
			b = appendRawList(b, p.Logprobs, e)
		}
	case PartRefusal:
		b = append(b, `,"refusal":`...)
		b = appendString(b, p.Refusal)
	case PartInputImage:
		if p.ImageURL != "" {
			b = append(b, `,"image_url":`...)
			b = appendString(b, p.ImageURL)
		}
		if p.FileID != "" {
			b = append(b, `,"file_id":`...)
			b = appendString(b, p.FileID)
		}
		b = append(b, `,"detail":`...)
		if p.Detail == "" {
			b = append(b, `"auto"`...)
		} else {
			b = appendString(b, p.Detail)
		}
	case PartInputFile:
		if p.FileID != "" {
			b = append(b, `,"file_id":`...)
			b = appendString(b, p.FileID)
		}
		if p.FileData != "" {
			b = append(b, `,"file_data":`...)
			b = appendString(b, p.FileData)
		}
		if p.FileURL != "" {
			b = append(b, `,"file_url":`...)
			b = appendString(b, p.FileURL)
		}
		if p.Filename != "" {
			b = append(b, `,"filename":`...)
			b = appendString(b, p.Filename)
		}
	default:
		b = append(b, `,"text":`...)
		b = appendString(b, p.Text)
	}
	return append(b, '}')
}

// appendRawList appends raw JSON values as an array; nil is written as [].
func appendRawList(b []byte, list []json.RawMessage, e *error) []byte {
	b = append(b, '[')
	for i, raw := range list {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendRaw(b, raw, e)
	}
	return append(b, ']')
}

// AppendJSON appends the tool's JSON encoding to b (see MarshalJSON).
func (t *Tool) AppendJSON(b []byte) []byte {
	if t == nil {
		return append(b, "null"...)
	}
	var err error
	return t.appendJSON(b, &err)
}

func (t *Tool) appendJSON(b []byte, e *error) []byte {
	b = append(b, `{"type":`...)
	b = appendString(b, t.Type)
	if t.Type == ToolFunction {
		b = append(b, `,"name":`...)
		b = appendString(b, t.Name)
		b = append(b, `,"description":`...)
		b = appendNullString(b, t.Description)
		b = append(b, `,"parameters":`...)
		if len(t.Parameters) == 0 {
			b = append(b, "null"...)
		} else {
			b = appendRaw(b, t.Parameters, e)
		}
		b = append(b, `,"strict":`...)
		if t.Strict == nil {
			b = append(b, "null"...)
		} else {
			b = appendBool(b, *t.Strict)
		}
		return append(b, '}')
	}
	// Headers and Authorization are secrets, never echoed.
	if t.Name != "" {
		b = append(b, `,"name":`...)
		b = appendString(b, t.Name)
	}
	if t.Description != nil {
		b = append(b, `,"description":`...)
		b = appendString(b, *t.Description)
	}
	if len(t.Parameters) > 0 {
		b = append(b, `,"parameters":`...)
		b = appendRaw(b, t.Parameters, e)
	}
	if t.Strict != nil {
		b = append(b, `,"strict":`...)
		b = appendBool(b, *t.Strict)
	}
	if t.ServerLabel != "" {
		b = append(b, `,"server_label":`...)
		b = appendString(b, t.ServerLabel)
	}
	if t.ServerURL != "" {
		b = append(b, `,"server_url":`...)
		b = appendString(b, t.ServerURL)
	}
	if t.ServerDescription != "" {
		b = append(b, `,"server_description":`...)
		b = appendString(b, t.ServerDescription)
	}
	if len(t.AllowedTools) > 0 {
		b = append(b, `,"allowed_tools":`...)
		b = appendRaw(b, t.AllowedTools, e)
	}
	if len(t.RequireApproval) > 0 {
		b = append(b, `,"require_approval":`...)
		b = appendRaw(b, t.RequireApproval, e)
	}
	return append(b, '}')
}

// AppendJSON appends the tool choice's JSON encoding to b: the form it
// was given in.
func (c *ToolChoice) AppendJSON(b []byte) []byte {
	if c == nil {
		return append(b, "null"...)
	}
	switch c.Type {
	case ToolFunction:
		b = append(b, `{"type":`...)
		b = appendString(b, c.Type)
		b = append(b, `,"name":`...)
		b = appendString(b, c.Name)
		return append(b, '}')
	case "allowed_tools":
		b = append(b, `{"type":`...)
		b = appendString(b, c.Type)
		b = append(b, `,"mode":`...)
		b = appendString(b, c.Mode)
		b = append(b, `,"tools":`...)
		if c.Tools == nil {
			b = append(b, "null"...)
		} else {
			b = append(b, '[')
			for i, ref := range c.Tools {
				if i > 0 {
					b = append(b, ',')
				}
				b = append(b, `{"type":`...)
				b = appendString(b, ref.Type)
				if ref.Name != "" {
					b = append(b, `,"name":`...)
					b = appendString(b, ref.Name)
				}
				b = append(b, '}')
			}
			b = append(b, ']')
		}
		return append(b, '}')
	}
	return appendString(b, c.EffectiveMode())
}

// AppendJSON appends the error object's JSON encoding to b (see
// MarshalJSON; null when e is nil).
func (e *Error) AppendJSON(b []byte) []byte {
	if e == nil {
		return append(b, "null"...)
	}
	b = append(b, `{"message":`...)
	b = appendString(b, e.Message)
	b = append(b, `,"type":`...)
	b = appendString(b, e.Type)
	b = append(b, `,"param":`...)
	b = appendStringOrNull(b, e.Param)
	b = append(b, `,"code":`...)
	b = appendStringOrNull(b, e.Code)
	return append(b, '}')
}

// appendStringOrNull appends s, or null when it is empty.
func appendStringOrNull(b []byte, s string) []byte {
	if s == "" {
		return append(b, "null"...)
	}
	return appendString(b, s)
}

// AppendJSON appends the error envelope's JSON encoding to b.
func (eb *ErrorBody) AppendJSON(b []byte) []byte {
	if eb == nil {
		return append(b, "null"...)
	}
	b = append(b, `{"error":`...)
	b = eb.Error.AppendJSON(b)
	return append(b, '}')
}

// AppendJSON appends the list's JSON encoding to b (a nil Data is null).
func (l *ItemList) AppendJSON(b []byte) []byte {
	if l == nil {
		return append(b, "null"...)
	}
	var err error
	return l.appendJSON(b, &err)
}

func (l *ItemList) appendJSON(b []byte, e *error) []byte {
	b = append(b, `{"object":`...)
	b = appendString(b, l.Object)
	b = append(b, `,"data":`...)
	if l.Data == nil {
		b = append(b, "null"...)
	} else {
		b = appendList(b, l.Data, (*Item).appendJSON, e)
	}
	b = append(b, `,"first_id":`...)
	b = appendNullString(b, l.FirstID)
	b = append(b, `,"last_id":`...)
	b = appendNullString(b, l.LastID)
	b = append(b, `,"has_more":`...)
	b = appendBool(b, l.HasMore)
	return append(b, '}')
}

// AppendJSON appends the delete result's JSON encoding to b.
func (d *DeleteResult) AppendJSON(b []byte) []byte {
	if d == nil {
		return append(b, "null"...)
	}
	b = append(b, `{"id":`...)
	b = appendString(b, d.ID)
	b = append(b, `,"object":`...)
	b = appendString(b, d.Object)
	b = append(b, `,"deleted":`...)
	b = appendBool(b, d.Deleted)
	return append(b, '}')
}

// AppendJSON appends the event's JSON encoding to b: what json.Marshal
// writes for it (StreamEvent has no MarshalJSON: for the many small events
// reflection, with no extra copy and validation pass, is as fast).
func (ev *StreamEvent) AppendJSON(b []byte) []byte {
	if ev == nil {
		return append(b, "null"...)
	}
	var err error
	return ev.appendJSON(b, &err)
}

func (ev *StreamEvent) appendJSON(b []byte, e *error) []byte {
	b = append(b, `{"type":`...)
	b = appendString(b, ev.Type)
	b = append(b, `,"sequence_number":`...)
	b = strconv.AppendInt(b, ev.SequenceNumber, 10)
	if ev.Response != nil {
		b = append(b, `,"response":`...)
		b = ev.Response.appendJSON(b, e)
	}
	if ev.OutputIndex != nil {
		b = append(b, `,"output_index":`...)
		b = strconv.AppendInt(b, int64(*ev.OutputIndex), 10)
	}
	if ev.ItemID != "" {
		b = append(b, `,"item_id":`...)
		b = appendString(b, ev.ItemID)
	}
	if ev.ContentIndex != nil {
		b = append(b, `,"content_index":`...)
		b = strconv.AppendInt(b, int64(*ev.ContentIndex), 10)
	}
	if ev.SummaryIndex != nil {
		b = append(b, `,"summary_index":`...)
		b = strconv.AppendInt(b, int64(*ev.SummaryIndex), 10)
	}
	if ev.AnnotationIndex != nil {
		b = append(b, `,"annotation_index":`...)
		b = strconv.AppendInt(b, int64(*ev.AnnotationIndex), 10)
	}
	if ev.Item != nil {
		b = append(b, `,"item":`...)
		b = ev.Item.appendJSON(b, e)
	}
	if ev.Part != nil {
		b = append(b, `,"part":`...)
		b = ev.Part.appendJSON(b, e)
	}
	if ev.Delta != nil {
		b = append(b, `,"delta":`...)
		b = appendString(b, *ev.Delta)
	}
	if ev.Text != nil {
		b = append(b, `,"text":`...)
		b = appendString(b, *ev.Text)
	}
	if ev.Arguments != nil {
		b = append(b, `,"arguments":`...)
		b = appendString(b, *ev.Arguments)
	}
	if ev.Refusal != nil {
		b = append(b, `,"refusal":`...)
		b = appendString(b, *ev.Refusal)
	}
	if ev.Annotation != nil {
		b = append(b, `,"annotation":`...)
		b = appendAny(b, ev.Annotation, e)
	}
	if len(ev.Logprobs) > 0 {
		b = append(b, `,"logprobs":[`...)
		for i, v := range ev.Logprobs {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendAny(b, v, e)
		}
		b = append(b, ']')
	}
	if p := ev.Error; p != nil {
		b = append(b, `,"error":{"type":`...)
		b = appendString(b, p.Type)
		b = append(b, `,"code":`...)
		b = appendNullString(b, p.Code)
		b = append(b, `,"message":`...)
		b = appendString(b, p.Message)
		b = append(b, `,"param":`...)
		b = appendNullString(b, p.Param)
		b = append(b, '}')
	}
	return append(b, '}')
}
