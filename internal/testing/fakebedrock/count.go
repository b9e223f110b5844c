package fakebedrock

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// CountTokens, as Bedrock serves it: POST /model/{modelId}/count-tokens
// with {"input":{"converse":{messages, system, toolConfig,
// additionalModelRequestFields}}} (or {"input":{"invokeModel":{"body"}}},
// which the fake does not take) answers {"inputTokens": n}. Bedrock counts
// for some Anthropic Claude models only, named by their foundation model
// id: a cross-region inference profile id ("us.anthropic..."), an ARN and
// every other model are refused with a ValidationException (msgNoCount).
// The converse input is checked as a Converse request's is, and counted
// as the fake meters a Converse call of it (every input token, the cache
// neither read nor written): the count equals the input_tokens +
// cacheReadInputTokens + cacheWriteInputTokens of that call. A count takes
// no scripted Turn; the counts answered are recorded apart ([Server.Counts]).

// opCountTokens is the operation of a count-tokens request.
const opCountTokens = "CountTokens"

// msgNoCount is Bedrock's refusal of a model it does not count tokens for.
const msgNoCount = "The provided model doesn't support counting tokens."

// countModels are the foundation models whose tokens Bedrock counts.
var countModels = []string{"anthropic.claude-3-5-haiku-", "anthropic.claude-3-5-sonnet-", "anthropic.claude-3-7-sonnet-",
	"anthropic.claude-sonnet-4", "anthropic.claude-opus-4", "anthropic.claude-haiku-4"}

// countBody is the JSON body of a CountTokens request.
type countBody struct {
	Input *struct {
		Converse    *converseTokens `json:"converse"`
		InvokeModel *struct {
			Body []byte `json:"body"`
		} `json:"invokeModel"`
	} `json:"input"`
}

// converseTokens is a ConverseTokensRequest: what a Converse request's
// input has but its inference, guardrail, output and tier settings.
type converseTokens struct {
	Messages                     []Message       `json:"messages"`
	System                       []SystemBlock   `json:"system,omitempty"`
	ToolConfig                   *ToolConfig     `json:"toolConfig,omitempty"`
	AdditionalModelRequestFields json.RawMessage `json:"additionalModelRequestFields,omitempty"`
}

// countTokens answers the CountTokens request req (its model, body and
// authorization set).
func (s *Server) countTokens(w http.ResponseWriter, req *Request) {
	in, msg := decodeCount(req.Body)
	if msg == "" && (strings.HasPrefix(req.ModelID, "arn:") || !hasPrefix(req.ModelID, countModels)) {
		msg = msgNoCount
	}
	if msg == "" {
		req.Input = *in
		msg = s.validate(in, opCountTokens)
	}
	if msg == "" {
		msg = validateModel(req.ModelID, opCountTokens, in)
	}
	if msg != "" {
		writeException(w, "ValidationException", msg)
		return
	}
	if typ, msg := validateCache(req.ModelID, in); msg != "" {
		writeException(w, typ, msg)
		return
	}
	n := tokens(measure(req.ModelID, in).bytes)
	s.mu.Lock()
	s.counted = append(s.counted, *req)
	s.mu.Unlock()
	b, _ := json.Marshal(map[string]int{"inputTokens": n})
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	_, _ = w.Write(b)
}

// decodeCount decodes a CountTokens body into the Converse input it
// counts, or returns the ValidationException message.
func decodeCount(body []byte) (*Input, string) {
	var cb countBody
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cb); err != nil {
		return nil, "fakebedrock: malformed request body: " + err.Error()
	}
	switch {
	case cb.Input == nil:
		return nil, "1 validation error detected: Value null at 'input' failed to satisfy constraint: Member must not be null"
	case cb.Input.InvokeModel != nil && cb.Input.Converse != nil:
		return nil, "input must have exactly one member: converse or invokeModel"
	case cb.Input.InvokeModel != nil:
		return nil, "fakebedrock: CountTokens of an invokeModel body is not implemented"
	case cb.Input.Converse == nil:
		return nil, "input must have exactly one member: converse or invokeModel"
	}
	c := cb.Input.Converse
	return &Input{Messages: c.Messages, System: c.System, ToolConfig: c.ToolConfig, AdditionalModelRequestFields: c.AdditionalModelRequestFields}, ""
}

// Counts returns the CountTokens requests the fake answered, in arrival
// order (Operation "CountTokens", Input the converse input counted).
func (s *Server) Counts() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.counted)
}
