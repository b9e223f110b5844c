package api

// CompactRequest is the body of POST /v1/responses/compact: the
// conversation to compact (input and/or previous_response_id) and the
// model that summarises it.
type CompactRequest struct {
	Model              string
	Instructions       string
	Input              []Item
	PreviousResponseID string
	PromptCacheKey     string
	ServiceTier        string
}

// knownCompactParam lists the parameters POST /v1/responses/compact
// accepts: those of the OpenAI SDKs' compact params (openai-go
// ResponseCompactParams); prompt_cache_retention, prompt_cache_options and
// image are checked as a create checks them, then ignored.
func knownCompactParam(k string) bool {
	switch k {
	case "model", "input", "previous_response_id", "instructions", "prompt_cache_key", "service_tier",
		"prompt_cache_retention", "prompt_cache_options", "image":
		return true
	}
	return false
}

// DecodeCompactRequest reads, decodes and validates a compact body with
// the create request's decoders and rules (input items, their params in
// errors, input or previous_response_id required). Every failure is an
// *Error with status 400 naming the parameter.
func DecodeCompactRequest(body []byte) (*CompactRequest, error) {
	r, err := decodeParams(body, only(knownCompactParam))
	if err != nil {
		return nil, err
	}
	return &CompactRequest{Model: r.Model, Instructions: r.Instructions, Input: r.Input, PreviousResponseID: r.PreviousResponseID,
		PromptCacheKey: r.PromptCacheKey, ServiceTier: r.ServiceTier}, nil
}

// ObjectCompaction is the object type of a CompactResource.
const ObjectCompaction = "response.compaction"

// CompactResource is the reply of POST /v1/responses/compact: the
// compacted window to send as the next request's input (the user messages
// of the conversation, then one compaction item) and the summarising
// call's usage.
type CompactResource struct {
	ID        string `json:"id"`
	Object    string `json:"object"`
	CreatedAt int64  `json:"created_at"`
	Output    []Item `json:"output"`
	Usage     Usage  `json:"usage"`
}
