package bedrock

import (
	"context"
	"errors"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
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
)

// refused is the quirk err, a Bedrock error, reports, or 0.
func refused(err error) quirk {
	var invalid *types.ValidationException
	if !errors.As(err, &invalid) {
		return 0
	}
	msg := invalid.ErrorMessage()
	switch {
	case strings.Contains(msg, "support tool use in streaming mode"):
		return noStreamTools
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

// adapt returns a copy of in changed for the quirks of its model (in
// itself is left as it is).
func adapt(in *bedrockruntime.ConverseInput, _ quirk) (*bedrockruntime.ConverseInput, error) {
	c := *in
	return &c, nil
}
