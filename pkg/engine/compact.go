package engine

import (
	"context"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/provider"
	"github.com/lambent/lambent/pkg/tenant"
)

// compactPrompt ends the conversation the model summarises in Compact.
const compactPrompt = "Compact the conversation above: write a summary that lets you continue it without the turns before this message. " +
	"Keep the goals, constraints and preferences stated, the decisions made, the facts and tool results gathered, " +
	"the work done and what is still open, with names, numbers and identifiers exact. " +
	"Fold in any earlier summary. The user's messages are kept verbatim next to the summary, so do not repeat them. " +
	"Reply with the summary only."

// summaryIntro starts the message that stands for a compaction item in a
// model call.
const summaryIntro = "Summary of the earlier conversation:\n\n"

// Compact summarises a conversation (req.Input after the conversation of
// req.PreviousResponseID, resolved as CreateResponse resolves it) with one
// model call and returns the compacted window: the conversation's user
// messages, then a compaction item whose encrypted_content is the summary
// sealed for the request's tenant. Nothing is stored. It counts as one of
// the tenant's responses in flight (Limits.TenantInFlight).
func (e *Engine) Compact(ctx context.Context, req *api.CompactRequest) (*api.CompactResource, error) {
	if e.cfg.Compaction == nil {
		return nil, compactionUnavailable()
	}
	t, err := e.inflight.enter(ctx)
	if err != nil {
		return nil, err
	}
	defer e.inflight.leave(t)
	r, err := e.prepare(ctx, &api.CreateResponseRequest{Model: req.Model, Instructions: req.Instructions, Input: req.Input,
		PreviousResponseID: req.PreviousResponseID, PromptCacheKey: req.PromptCacheKey, ServiceTier: req.ServiceTier}, "", nil)
	if err != nil {
		return nil, err
	}
	conv := slices.Concat(r.history, r.input)
	res, err := e.summarise(ctx, r, r.withSummaries(r.modelItems(conv)))
	if err != nil {
		return nil, err
	}
	blob, err := e.seal(ctx, compactSummary(res.Text))
	if err != nil {
		return nil, err
	}
	out := &api.CompactResource{ID: r.resp.ID, Object: api.ObjectCompaction, CreatedAt: e.cfg.Now().Unix(), Usage: *r.resp.Usage}
	for _, it := range conv {
		if it.Type == api.ItemMessage && it.Role == api.RoleUser {
			out.Output = append(out.Output, it)
		}
	}
	out.Output = append(out.Output, api.Item{Type: api.ItemCompaction, ID: r.newItemID(api.PrefixCompaction), EncryptedContent: blob})
	if e.log.Enabled(ctx, slog.LevelInfo) {
		e.log.LogAttrs(ctx, slog.LevelInfo, "conversation compacted", slog.String("id", out.ID), slog.String("model", r.resp.Model),
			slog.Int("items", len(conv)), slog.Int("summary_bytes", len(res.Text)), slog.String("key_id", e.cfg.Compaction.SealingKeyID()))
	}
	return out, nil
}

// summarise makes the summarising call over items, what the model sees of
// a conversation, under the instructions of r's request, and counts its
// usage in r's response; the run's observer, when it has one, sees it
// as a model call (ModelCall.Compaction). The error is an
// *api.Error: the provider's, or summaryError's.
func (e *Engine) summarise(ctx context.Context, r *run, items []api.Item) (*provider.Result, error) {
	res, _, err := e.summariseCall(ctx, r, items)
	return res, err
}

// summariseCall is summarise, returning the model call it made too (for
// truncation: cutAgain).
func (e *Engine) summariseCall(ctx context.Context, r *run, items []api.Item) (*provider.Result, *provider.Request, error) {
	items = append(items, api.Item{Type: api.ItemMessage, Role: api.RoleUser, Content: []api.ContentPart{{Type: api.PartInputText, Text: compactPrompt}}})
	tn := tenant.From(ctx)
	preq := &provider.Request{Model: r.resp.Model, Instructions: r.req.Instructions, Items: items, User: r.providerUser(tn),
		PromptCacheKey: tenantScoped(tn, r.req.PromptCacheKey), ServiceTier: r.req.ServiceTier}
	var res *provider.Result
	var err error
	if r.obs == nil {
		res, err = e.cfg.Provider.Complete(ctx, preq)
	} else {
		// Server-side compaction: the call before the loop's next model call.
		m := &ModelCall{ResponseID: r.resp.ID, Model: preq.Model, Iteration: r.turns + 1, Compaction: true}
		res, err = e.observedCall(ctx, r, m, func(ctx context.Context) (*provider.Result, error) { return e.cfg.Provider.Complete(ctx, preq) })
	}
	if err != nil {
		return nil, preq, api.AsError(err)
	}
	if se := summaryError(res); se != nil {
		return nil, preq, se
	}
	r.addUsage(res)
	return res, preq, nil
}

// compactSummary is the sealed content of a /compact item whose summary
// the model wrote as text: the text without NUL characters, so that no
// text the model was led to write opens as a standalone item's content
// (standaloneMark).
func compactSummary(text string) string {
	return strings.ReplaceAll(text, "\x00", "")
}

// seal seals plain, a compaction item's content, for the tenant of ctx.
func (e *Engine) seal(ctx context.Context, plain string) (string, error) {
	blob, err := e.cfg.Compaction.Seal(tenant.From(ctx), plain)
	if err != nil {
		return "", api.ServerError(err, "could not seal the summary")
	}
	return blob, nil
}

// summaryError is the 502 of a summarising call whose answer is not a
// whole summary: empty, or cut (at the model's output limit or by a
// content filter), which as the compacted window would lose what the cut
// left out; nil for a whole one.
func summaryError(res *provider.Result) *api.Error {
	reason := " (finish reason " + strconv.Quote(res.FinishReason) + ")."
	switch {
	case res.Text == "":
		return &api.Error{Status: http.StatusBadGateway, Type: api.ErrTypeUpstream, Code: "empty_summary",
			Message: "The model returned no summary of the conversation" + reason}
	case res.FinishReason == provider.FinishLength || res.FinishReason == provider.FinishContentFilter:
		return &api.Error{Status: http.StatusBadGateway, Type: api.ErrTypeUpstream, Code: "incomplete_summary",
			Message: "The model's summary of the conversation was cut off" + reason}
	}
	return nil
}

// openSummaries opens the compaction items of the conversation (the stored
// history and this request's input) for the model, keeping each summary by
// its blob for withSummaries. A blob that does not open for the request's
// tenant (altered, another tenant's, or sealed with a key this gateway no
// longer holds) is a 400 naming it.
func (e *Engine) openSummaries(ctx context.Context, r *run) error {
	for _, part := range []struct {
		items []api.Item
		input bool
	}{{r.history, false}, {r.input, true}, {r.resp.Output, false}} {
		for i := range part.items {
			it := &part.items[i]
			if it.Type != api.ItemCompaction {
				continue
			}
			if _, ok := r.summaries[it.EncryptedContent]; ok {
				continue
			}
			param := r.historyParam()
			if part.input {
				param = inputParam(i, "encrypted_content")
			}
			s, err := e.openSummary(ctx, param, it.EncryptedContent)
			if err != nil {
				return err
			}
			r.addSummary(it.EncryptedContent, s)
		}
	}
	return nil
}

// openSummary opens a compaction item's blob for the request's tenant: a
// 400 invalid_encrypted_content naming param when it does not open
// (altered, another tenant's, or sealed with a key this gateway no longer
// holds), compactionUnavailable on a gateway without keys.
func (e *Engine) openSummary(ctx context.Context, param, blob string) (summary, error) {
	if e.cfg.Compaction == nil {
		err := compactionUnavailable()
		err.Param = param
		return summary{}, err
	}
	plain, err := e.cfg.Compaction.Open(tenant.From(ctx), blob)
	var s summary
	if err == nil {
		s, err = openedSummary(plain)
	}
	if err != nil {
		return summary{}, api.InvalidRequestCode(param, "invalid_encrypted_content",
			"The encrypted_content of the compaction item could not be verified (%v): send compaction items back unchanged, to the gateway and organization that created them.", err)
	}
	return s, nil
}

// historyParam is the request's parameter that holds r's history: the
// conversation it continues, else previous_response_id.
func (r *run) historyParam() string {
	if r.req.Conversation != "" || r.conv != nil {
		return "conversation"
	}
	return "previous_response_id"
}

// withSummaries returns items, what the model sees of a conversation
// (the history r continues first, then what follows it), as the model
// sees them: from the compaction item that stands alone (standsAlone) on,
// the user messages it carries first (carriedBy), every compaction item
// replaced by a developer message carrying its summary (opened by
// openSummaries). Without such an item the items are replaced in place.
func (r *run) withSummaries(items []api.Item) []api.Item {
	if at := r.standsAlone(items, r.historyCompactions()); at >= 0 {
		items = slices.Concat(carriedMessages(items[at].ID, r.carriedBy(items, at)), items[at:])
	}
	for i := range items {
		if it := &items[i]; it.Type == api.ItemCompaction {
			*it = api.Item{Type: api.ItemMessage, ID: it.ID, Status: api.ItemCompleted, Role: api.RoleDeveloper,
				Content: []api.ContentPart{{Type: api.PartInputText, Text: summaryIntro + r.summaries[it.EncryptedContent].text}}}
		}
	}
	return items
}

// compactionUnavailable is the error of compaction on a gateway without
// compaction keys.
func compactionUnavailable() *api.Error {
	return &api.Error{Status: http.StatusNotImplemented, Type: api.ErrTypeInvalidRequest, Code: "compaction_unavailable",
		Message: "Compaction is not configured on this gateway: set LAMBENT_COMPACTION_KEYS or LAMBENT_COMPACTION_KEYS_SSM (template parameter CompactionKeysParameter)."}
}
