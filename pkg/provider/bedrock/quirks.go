package bedrock

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/lambent/lambent/pkg/api"
)

// quirk is a Converse feature a model lacks. Bedrock's "Supported models
// and model features" of the Converse API lists them per model family,
// and Bedrock refuses a request using one with a ValidationException
// before the model runs. Rather than keep a table that goes stale with
// every new model, the provider learns them from those refusals: the
// first call of a model that refuses one is made again without it, and
// the model's later calls are adapted from the start (Provider.quirks,
// for the life of the provider).
type quirk uint8

const (
	// noStreamTools: tool use in Converse only ("This model doesn't
	// support tool use in streaming mode.": Meta Llama, Mistral, Writer
	// Palmyra, AI21 Jamba, ...). A streamed call with a toolConfig is made
	// with Converse, and its answer passed on as deltas.
	noStreamTools quirk = 1 << iota
	// noSystem: no system prompt ("This model doesn't support system
	// messages.": Titan, Mistral 7B and Mixtral). The system prompt's text
	// starts the first user message instead.
	noSystem
	// noToolChoiceFn: no toolChoice tool (Bedrock documents it for Claude
	// and Nova only). A forced function is sent as the only tool, with
	// toolChoice any, which comes to the same.
	noToolChoiceFn
	// noToolChoiceAny: no toolChoice any either (Llama, ...): tool_choice
	// required and forced functions are a 400.
	noToolChoiceAny
	// noTools: no tool use at all (Titan, Llama 2 and 3, Mistral 7B,
	// DeepSeek-R1, ...): a call with a toolConfig is a 400.
	noTools
)

// refused is the quirk err, a Bedrock error, reports, or 0. It must be
// Bedrock's reply to the call, before the model runs: an exception event
// of a stream that opened comes after the model ran (and was billed), so
// the call is not made again. The message must be Bedrock's refusal
// itself, from its start: Bedrock's constraint errors quote the values
// they refuse ("1 validation error detected: Value '...' at ..."), and a
// tenant's input quoted there must not teach the provider, for every
// tenant, that a model lacks a feature.
func refused(err error) quirk {
	var (
		invalid *types.ValidationException
		reply   *smithyhttp.ResponseError
	)
	if !errors.As(err, &invalid) || !errors.As(err, &reply) {
		return 0
	}
	msg := invalid.ErrorMessage()
	switch {
	case strings.HasPrefix(msg, "This model doesn't support tool use in streaming mode."):
		return noStreamTools
	case strings.HasPrefix(msg, "This model doesn't support tool use."):
		return noTools
	case strings.HasPrefix(msg, "This model doesn't support system messages."):
		return noSystem
	case strings.HasPrefix(msg, "This model doesn't support the toolConfig.toolChoice.tool field."):
		return noToolChoiceFn
	case strings.HasPrefix(msg, "This model doesn't support the toolConfig.toolChoice.any field."):
		return noToolChoiceAny
	}
	return 0
}

// known returns the quirks learned of model.
func (p *Provider) known(model string) quirk {
	if q, ok := p.quirks.Load(model); ok {
		return q.(quirk)
	}
	return 0
}

// learn adds q to the quirks of model.
func (p *Provider) learn(ctx context.Context, model string, q quirk) {
	for {
		old, loaded := p.quirks.LoadOrStore(model, q)
		if !loaded || p.quirks.CompareAndSwap(model, old, old.(quirk)|q) {
			break
		}
	}
	p.log.DebugContext(ctx, "bedrock: the model lacks a Converse feature; calling it again without", "model", model, "quirk", q)
}

// adapt returns a copy of in changed for the quirks q of model (in itself
// is left as it is), or the 400 of a request the model cannot take.
func adapt(in *bedrockruntime.ConverseInput, q quirk, model string) (*bedrockruntime.ConverseInput, error) {
	c := *in
	if q&noSystem != 0 && len(c.System) > 0 {
		c.Messages, c.System = withSystem(c.Messages, c.System), nil
	}
	tc := c.ToolConfig
	if tc == nil {
		return &c, nil
	}
	if q&noTools != 0 {
		return nil, api.InvalidRequestCode("tools", "unsupported_value",
			"the Bedrock model %q does not support tool use (Bedrock: \"This model doesn't support tool use.\"): call it without tools, and without tool calls in the conversation, or choose a model with tool use", model)
	}
	if fn, ok := tc.ToolChoice.(*types.ToolChoiceMemberTool); ok && q&noToolChoiceFn != 0 {
		tc = onlyTool(tc, aws.ToString(fn.Value.Name))
		c.ToolConfig = tc
	}
	if _, ok := tc.ToolChoice.(*types.ToolChoiceMemberAny); ok && q&noToolChoiceAny != 0 {
		return nil, api.InvalidRequestCode("tool_choice", "unsupported_value",
			"the Bedrock model %q cannot be made to call a tool (it takes Converse's toolChoice auto only): tool_choice \"required\" and a named function are not supported with it; use tool_choice \"auto\" or choose another model", model)
	}
	return &c, nil
}

// withSystem returns msgs with the text of system at the start of the
// first message (a user message: build starts every conversation with
// one).
func withSystem(msgs []types.Message, system []types.SystemContentBlock) []types.Message {
	var texts []string
	for _, b := range system {
		if t, ok := b.(*types.SystemContentBlockMemberText); ok {
			texts = append(texts, t.Value)
		}
	}
	if len(texts) == 0 {
		return msgs
	}
	out := slices.Clone(msgs)
	out[0].Content = append([]types.ContentBlock{textBlock(strings.Join(texts, "\n\n"))}, out[0].Content...)
	return out
}

// onlyTool returns tc offering the tool name only, which the model must
// call (toolChoice any).
func onlyTool(tc *types.ToolConfiguration, name string) *types.ToolConfiguration {
	for _, t := range tc.Tools {
		if s, ok := t.(*types.ToolMemberToolSpec); ok && aws.ToString(s.Value.Name) == name {
			return &types.ToolConfiguration{Tools: []types.Tool{t}, ToolChoice: &types.ToolChoiceMemberAny{}}
		}
	}
	return tc
}
