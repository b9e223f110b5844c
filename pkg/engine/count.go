package engine

import (
	"cmp"
	"context"

	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/provider"
	"github.com/lambent/lambent/pkg/tenant"
)

// CountInputTokens counts the input tokens of req (a create request as
// api.DecodeInputTokensRequest decodes it) as the response's first model
// call would read them, with its model's provider's count
// (provider.Counter). The run is prepared as CreateResponse prepares it
// (prepare: the request's checks and limits, previous_response_id and
// conversation read in the tenant's store, item references, hosted and
// MCP tools), but the conversation is read without its lock; the MCP
// servers whose tools the conversation has not listed yet are listed as
// the response's first turn lists them (startMCP: a failed listing offers
// no tools), since their tools are part of what the model reads; and the
// model call is the loop's first (providerRequest). Calls a continuation
// would run before that call (pending hosted or MCP calls) are not run:
// the count holds what the call would show without their results. Nothing
// is stored or appended. A model whose provider counts no tokens is a 501
// input_tokens_unsupported before anything is read. The count takes one
// of the tenant's responses in flight (Limits.TenantInFlight) while it
// runs.
func (e *Engine) CountInputTokens(ctx context.Context, req *api.CreateResponseRequest) (*api.InputTokens, error) {
	model := cmp.Or(req.Model, e.cfg.DefaultModel)
	c, ok := provider.CounterFor(e.cfg.Provider, model)
	if !ok && model != "" {
		return nil, provider.CountUnsupported(model, "its model provider has no token count API")
	}
	t, err := e.inflight.enter(ctx)
	if err != nil {
		return nil, err
	}
	defer e.inflight.leave(t)
	r, err := e.prepareRun(ctx, req, "", nil, false)
	if err != nil {
		return nil, err
	}
	r.em, r.budget = &emitter{}, newBudget(ctx, e.cfg.Now, e.cfg.Loop.DeadlineReserve)
	defer r.tools.closeMCP()
	e.startMCP(ctx, r)
	preq, err := r.providerRequest(tenant.From(ctx), 0)
	if err != nil {
		return nil, err
	}
	n, err := c.CountTokens(ctx, preq)
	if err != nil {
		return nil, api.AsError(err)
	}
	return api.NewInputTokens(n), nil
}
