package bedrock

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"

	"github.com/lambent/lambent/pkg/awsjson"
	"github.com/lambent/lambent/pkg/provider"
)

var _ provider.Counter = (*Provider)(nil)

// CountTokens counts the input tokens of req with Bedrock's CountTokens,
// without calling the model: the Converse input the call would send (the
// package comment's translation, cache points and thinking included, and
// what the provider learned the model lacks) but for its inference,
// output, guardrail and tier settings, which CountTokens does not take.
// The model reads a text.format json_schema's outputConfig, which
// CountTokens does not take either: its schema is counted as a system
// text block (schemaBlock). CountTokens
// takes foundation model ids only: a cross-region inference profile (id
// or ARN) or a foundation model's ARN is counted for its foundation model
// (countModelID). Bedrock counts for some Anthropic Claude models only;
// its refusal of any other model is a 501 input_tokens_unsupported
// (countError).
func (p *Provider) CountTokens(ctx context.Context, req *provider.Request) (int, error) {
	b, err := p.build(ctx, req)
	if err != nil {
		return 0, err
	}
	if blk, ok := schemaBlock(b.input.OutputConfig); ok {
		b.input.System = append(b.input.System, blk)
	}
	in, err := adapt(b.input, p.known(req.Model), req.Model)
	if err != nil {
		return 0, err
	}
	out, err := p.client.CountTokens(ctx, &bedrockruntime.CountTokensInput{ModelId: aws.String(countModelID(req.Model)),
		Input: &types.CountTokensInputMemberConverse{Value: types.ConverseTokensRequest{Messages: in.Messages, System: in.System,
			ToolConfig: in.ToolConfig, AdditionalModelRequestFields: in.AdditionalModelRequestFields}}})
	if err != nil {
		return 0, p.countError(ctx, req.Model, err)
	}
	return int(aws.ToInt32(out.InputTokens)), nil
}

// schemaBlock is the system text block a count reads for the JSON schema
// of oc (the outputConfig build made of a text.format json_schema): its
// name, description and schema, one a line; false when oc has none.
func schemaBlock(oc *types.OutputConfig) (types.SystemContentBlock, bool) {
	if oc == nil || oc.TextFormat == nil {
		return nil, false
	}
	s, ok := oc.TextFormat.Structure.(*types.OutputFormatStructureMemberJsonSchema)
	if !ok {
		return nil, false
	}
	var lines []string
	for _, l := range []*string{s.Value.Name, s.Value.Description, s.Value.Schema} {
		if aws.ToString(l) != "" {
			lines = append(lines, *l)
		}
	}
	return &types.SystemContentBlockMemberText{Value: strings.Join(lines, "\n")}, true
}

// countModelID is the model id CountTokens takes for model: the foundation
// model of a cross-region inference profile's id or ARN, or of a
// foundation model's ARN (baseModelID); other ARNs (application inference
// profiles, provisioned models) name no model the gateway can tell, and
// are sent as they are (Bedrock refuses them).
func countModelID(model string) string {
	if strings.HasPrefix(model, "arn:") && !strings.Contains(model, ":foundation-model/") && !strings.Contains(model, ":inference-profile/") {
		return model
	}
	return baseModelID(model)
}

// countError maps an error of a CountTokens call as apiError maps a model
// call's, but for Bedrock's refusal of a model it does not count for
// ("The provided model doesn't support counting tokens.": a 501
// input_tokens_unsupported naming the model) and a refused permission,
// which for a count is bedrock:CountTokens.
func (p *Provider) countError(ctx context.Context, model string, err error) error {
	var invalid *types.ValidationException
	if ctx.Err() == nil && errors.As(err, &invalid) && strings.Contains(invalid.ErrorMessage(), "support counting tokens") {
		e := provider.CountUnsupported(model, fmt.Sprintf("Bedrock counts tokens for some Anthropic Claude models only (ValidationException: %s)", awsjson.HideIDs(invalid.ErrorMessage())))
		e.Err = err
		return e
	}
	e := p.apiError(ctx, model, err)
	if e.Code == provider.CodeModelAccessDenied {
		e.Message = fmt.Sprintf("the gateway may not count tokens with the Bedrock model %q (AccessDeniedException; the operator grants the gateway's role "+
			"bedrock:CountTokens on the model's foundation-model ARN)", model)
	}
	return e
}
