package api

// knownInputTokensParam lists the parameters POST
// /v1/responses/input_tokens accepts: the create request's that shape the
// model's input (OpenAI's InputTokenCountParams but personality,
// inputTokensParamDecoder).
func knownInputTokensParam(k string) bool {
	switch k {
	case "model", "input", "instructions", "tools", "tool_choice", "previous_response_id", "conversation",
		"text", "reasoning", "truncation", "parallel_tool_calls":
		return true
	}
	return false
}

// DecodeInputTokensRequest reads, decodes and validates the body of POST
// /v1/responses/input_tokens with the create request's decoders, limits
// and rules, as a create request without the fields a count does not take
// (stream, background, store, max_output_tokens, ...: unknown parameters).
// Every failure is an *Error with status 400 naming the parameter.
func DecodeInputTokensRequest(body []byte) (*CreateResponseRequest, error) {
	return decodeParams(body, inputTokensParamDecoder)
}

// inputTokensParamDecoder is the decoder of an input token count's
// parameter k: the create request's, for the parameters a count takes.
// OpenAI's personality (a style preset of its own models) is refused
// naming why: the models this gateway routes have none, and a create here
// takes none, so no count could include it.
func inputTokensParamDecoder(k string) paramFunc {
	if k == "personality" {
		return unsupportedParam(k, "The models this gateway routes have no style presets; omit it.")
	}
	if !knownInputTokensParam(k) {
		return nil
	}
	return paramDecoder(k)
}

// ObjectInputTokens is the object type of an InputTokens.
const ObjectInputTokens = "response.input_tokens"

// InputTokens is the reply of POST /v1/responses/input_tokens: the input
// tokens the request's model would read.
type InputTokens struct {
	Object      string `json:"object"`
	InputTokens int    `json:"input_tokens"`
}

// NewInputTokens returns the count n as OpenAI replies it.
func NewInputTokens(n int) *InputTokens {
	return &InputTokens{Object: ObjectInputTokens, InputTokens: n}
}
