package bedrock

import (
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"

	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/provider"
)

// blockKind is the kind of a content block of the answer.
type blockKind int

const (
	kindText blockKind = iota + 1
	kindReasoning
	kindToolUse
)

func (k blockKind) String() string {
	switch k {
	case kindText:
		return "text"
	case kindReasoning:
		return "reasoningContent"
	}
	return "toolUse"
}

// blockState is one content block being received, by contentBlockIndex.
type blockState struct {
	kind blockKind
	// call is the block's position in calls (toolUse; -1: dropped).
	call      int
	reasoning strings.Builder
	signature string
	redacted  []byte
	done      bool
}

type toolCall struct {
	id, name string
	args     strings.Builder
}

// accumulator assembles an answer from its content blocks, passing deltas
// to fn (nil: none). ConverseStream events feed it as they come; a
// Converse reply feeds it block by block, so both read answers alike.
type accumulator struct {
	fn      func(provider.Delta) error
	noTools bool

	blocks    map[int32]*blockState
	text      strings.Builder
	reasoning strings.Builder
	rblocks   []provider.ReasoningBlock
	encrypted bool // some reasoning block carries opaque data
	calls     []*toolCall
	stop      types.StopReason
	usage     *types.TokenUsage
	stopped   bool // messageStop seen
}

func newAccumulator(fn func(provider.Delta) error, noTools bool) *accumulator {
	return &accumulator{fn: fn, noTools: noTools, blocks: map[int32]*blockState{}}
}

func (a *accumulator) emit(d provider.Delta) error {
	if a.fn == nil {
		return nil
	}
	return a.fn(d)
}

// block returns the block at idx, creating it as kind when new; a block
// that changes kind is a malformed answer.
func (a *accumulator) block(idx *int32, kind blockKind) (*blockState, error) {
	if idx == nil {
		return nil, provider.BadResponse(errors.New("no contentBlockIndex"), "Bedrock sent a %s content block without contentBlockIndex", kind)
	}
	b, ok := a.blocks[*idx]
	if !ok {
		b = &blockState{kind: kind, call: -1}
		a.blocks[*idx] = b
	}
	if b.kind != kind || b.done {
		return nil, provider.BadResponse(fmt.Errorf("content block %d: %s after %s", *idx, kind, b.kind),
			"Bedrock sent %s content for content block %d, which is a finished or %s block", kind, *idx, b.kind)
	}
	return b, nil
}

func (a *accumulator) addText(idx *int32, s string) error {
	if _, err := a.block(idx, kindText); err != nil {
		return err
	}
	a.text.WriteString(s)
	return a.emit(provider.Delta{Kind: provider.DeltaText, Text: s})
}

func (a *accumulator) addReasoning(idx *int32, d types.ReasoningContentBlockDelta) error {
	b, err := a.block(idx, kindReasoning)
	if err != nil {
		return err
	}
	switch v := d.(type) {
	case *types.ReasoningContentBlockDeltaMemberText:
		b.reasoning.WriteString(v.Value)
		a.reasoning.WriteString(v.Value)
		return a.emit(provider.Delta{Kind: provider.DeltaReasoning, Text: v.Value})
	case *types.ReasoningContentBlockDeltaMemberSignature:
		b.signature += v.Value
	case *types.ReasoningContentBlockDeltaMemberRedactedContent:
		b.redacted = append(b.redacted, v.Value...)
	}
	return nil
}

func (a *accumulator) startToolUse(idx *int32, id, name string) error {
	b, err := a.block(idx, kindToolUse)
	if err != nil {
		return err
	}
	if b.call >= 0 {
		return provider.BadResponse(fmt.Errorf("content block %d started twice", *idx), "Bedrock started toolUse content block %d twice", *idx)
	}
	if a.noTools {
		return nil
	}
	if id == "" {
		id = api.NewCallID()
	}
	b.call = len(a.calls)
	a.calls = append(a.calls, &toolCall{id: id, name: name})
	return a.emit(provider.Delta{Kind: provider.DeltaToolCall, ToolIndex: b.call, ToolCallID: id, ToolName: name})
}

func (a *accumulator) addToolInput(idx *int32, s string) error {
	b, err := a.block(idx, kindToolUse)
	if err != nil {
		return err
	}
	if b.call < 0 {
		if a.noTools {
			return nil
		}
		return provider.BadResponse(fmt.Errorf("content block %d: toolUse input before its start", *idx), "Bedrock sent toolUse input for content block %d before its contentBlockStart", *idx)
	}
	a.calls[b.call].args.WriteString(s)
	if s == "" {
		return nil
	}
	return a.emit(provider.Delta{Kind: provider.DeltaToolCall, ToolIndex: b.call, Text: s})
}

// stopBlock ends the block at idx; a reasoning block is then complete and
// its opaque data is passed on.
func (a *accumulator) stopBlock(idx *int32) error {
	if idx == nil {
		return provider.BadResponse(errors.New("no contentBlockIndex"), "Bedrock sent contentBlockStop without contentBlockIndex")
	}
	b, ok := a.blocks[*idx]
	if !ok || b.done {
		return nil
	}
	b.done = true
	if b.kind != kindReasoning {
		return nil
	}
	enc := encodeReasoning(b.signature, b.redacted)
	a.rblocks = append(a.rblocks, provider.ReasoningBlock{Text: b.reasoning.String(), Encrypted: enc})
	if enc == "" {
		return nil
	}
	a.encrypted = true
	return a.emit(provider.Delta{Kind: provider.DeltaReasoning, Encrypted: enc})
}

// event feeds one ConverseStream event.
func (a *accumulator) event(ev types.ConverseStreamOutput) error {
	switch v := ev.(type) {
	case *types.ConverseStreamOutputMemberContentBlockStart:
		if tu, ok := v.Value.Start.(*types.ContentBlockStartMemberToolUse); ok {
			return a.startToolUse(v.Value.ContentBlockIndex, aws.ToString(tu.Value.ToolUseId), aws.ToString(tu.Value.Name))
		}
	case *types.ConverseStreamOutputMemberContentBlockDelta:
		idx := v.Value.ContentBlockIndex
		switch d := v.Value.Delta.(type) {
		case *types.ContentBlockDeltaMemberText:
			return a.addText(idx, d.Value)
		case *types.ContentBlockDeltaMemberReasoningContent:
			return a.addReasoning(idx, d.Value)
		case *types.ContentBlockDeltaMemberToolUse:
			return a.addToolInput(idx, aws.ToString(d.Value.Input))
		}
	case *types.ConverseStreamOutputMemberContentBlockStop:
		return a.stopBlock(v.Value.ContentBlockIndex)
	case *types.ConverseStreamOutputMemberMessageStop:
		a.stop, a.stopped = v.Value.StopReason, true
	case *types.ConverseStreamOutputMemberMetadata:
		a.usage = v.Value.Usage
	}
	// messageStart, and content Lambent does not use (citations, images).
	return nil
}

// decodeOutput reads a Converse reply, passing its content to fn (nil:
// none) as a stream's deltas.
func decodeOutput(out *bedrockruntime.ConverseOutput, model string, noTools bool, fn func(provider.Delta) error) (*provider.Result, error) {
	if out.Output == nil {
		return nil, provider.BadResponse(errors.New("no output"), "Bedrock answered the Converse call without output (stop reason %q)", out.StopReason)
	}
	msg, ok := out.Output.(*types.ConverseOutputMemberMessage)
	if !ok {
		return nil, provider.BadResponse(fmt.Errorf("output %T", out.Output), "Bedrock answered the Converse call with an output that is not a message")
	}
	a := newAccumulator(fn, noTools)
	for i, cb := range msg.Value.Content {
		idx := aws.Int32(int32(i))
		var err error
		switch v := cb.(type) {
		case *types.ContentBlockMemberText:
			err = a.addText(idx, v.Value)
		case *types.ContentBlockMemberReasoningContent:
			switch r := v.Value.(type) {
			case *types.ReasoningContentBlockMemberReasoningText:
				err = a.addReasoning(idx, &types.ReasoningContentBlockDeltaMemberText{Value: aws.ToString(r.Value.Text)})
				if err == nil {
					err = a.addReasoning(idx, &types.ReasoningContentBlockDeltaMemberSignature{Value: aws.ToString(r.Value.Signature)})
				}
			case *types.ReasoningContentBlockMemberRedactedContent:
				err = a.addReasoning(idx, &types.ReasoningContentBlockDeltaMemberRedactedContent{Value: r.Value})
			}
		case *types.ContentBlockMemberToolUse:
			err = a.startToolUse(idx, aws.ToString(v.Value.ToolUseId), aws.ToString(v.Value.Name))
			if err == nil {
				var args string
				if args, err = documentJSON(v.Value.Input); err != nil {
					err = provider.BadResponse(err, "Bedrock sent a toolUse input that is not JSON")
				} else {
					err = a.addToolInput(idx, args)
				}
			}
		}
		if err == nil {
			err = a.stopBlock(idx)
		}
		if err != nil {
			return nil, err
		}
	}
	a.stop, a.stopped, a.usage = out.StopReason, true, out.Usage
	return a.result(model)
}

// result is the accumulated answer.
func (a *accumulator) result(model string) (*provider.Result, error) {
	res := &provider.Result{Model: model, Text: a.text.String(), Reasoning: a.reasoning.String()}
	if a.encrypted || len(a.rblocks) > 1 {
		res.ReasoningBlocks = a.rblocks
	}
	if len(a.calls) > 0 {
		res.ToolCalls = make([]api.Item, len(a.calls))
		for i, c := range a.calls {
			args := c.args.String()
			if strings.TrimSpace(args) == "" {
				args = "{}"
			}
			res.ToolCalls[i] = api.Item{Type: api.ItemFunctionCall, CallID: c.id, Name: c.name, Arguments: args}
		}
	}
	if u := a.usage; u != nil {
		cacheRead, cacheWrite := int(aws.ToInt32(u.CacheReadInputTokens)), int(aws.ToInt32(u.CacheWriteInputTokens))
		res.Usage.InputTokens = int(aws.ToInt32(u.InputTokens)) + cacheRead + cacheWrite
		res.Usage.OutputTokens = int(aws.ToInt32(u.OutputTokens))
		res.Usage.TotalTokens = res.Usage.InputTokens + res.Usage.OutputTokens
		res.Usage.InputTokensDetails.CachedTokens = cacheRead
		res.CacheWriteTokens = cacheWrite
	}
	switch a.stop {
	case types.StopReasonMaxTokens, types.StopReasonModelContextWindowExceeded:
		res.FinishReason = provider.FinishLength
	case types.StopReasonGuardrailIntervened, types.StopReasonContentFiltered:
		res.FinishReason = provider.FinishContentFilter
	case types.StopReasonMalformedModelOutput, types.StopReasonMalformedToolUse:
		return nil, provider.BadResponse(fmt.Errorf("stop reason %s", a.stop), "the Bedrock model %q ended with %s", model, a.stop)
	default:
		// end_turn, stop_sequence, tool_use, and reasons newer than this
		// client: tool calls present decide.
		res.FinishReason = provider.FinishStop
		if len(res.ToolCalls) > 0 {
			res.FinishReason = provider.FinishToolCalls
		}
	}
	return res, nil
}
