package engine

import (
	"slices"

	"github.com/lambent/lambent/pkg/api"
)

// Reasoning items (docs/api.md, "Reasoning"): the model's readable
// reasoning is the item's reasoning_text content; its opaque provider
// state (a Bedrock signature or redacted reasoning) is shown as
// encrypted_content only when the request's include asks for
// reasoning.encrypted_content, and otherwise kept hidden with the item
// (api.ItemHidden.Encrypted), stored with it, so that the model gets it
// back on later calls either way (modelItem). reasoning.summary adds the
// reasoning text as the item's one summary part.

// keepReasoningState keeps the opaque state of the reasoning item it:
// shown when the request includes it, else hidden.
func (r *run) keepReasoningState(it *api.Item, state string) {
	if slices.Contains(r.req.Include, api.IncludeReasoningEncrypted) {
		it.EncryptedContent = state
		return
	}
	it.Hidden.Encrypted = state
}

// summarize gives the reasoning item it at output index idx its summary
// when the request asks for one (reasoning.summary "auto", "concise" or
// "detailed", all alike): one summary_text part holding the reasoning
// text — the readable reasoning the provider returned, which for Claude 4
// on Bedrock is already Anthropic's summary — with its summary events. A
// block without text (redacted reasoning) has none.
func (a *assembler) summarize(idx int, it *api.Item) {
	rs := a.r.req.Reasoning
	text := it.Text()
	if rs == nil || rs.Summary == nil || *rs.Summary == "" || text == "" {
		return
	}
	it.Summary = []api.ContentPart{{Type: api.PartSummaryText, Text: text}}
	if !a.r.em.stream {
		return
	}
	zero := 0
	ev := func(typ string) *api.StreamEvent {
		return &api.StreamEvent{Type: typ, ItemID: it.ID, OutputIndex: &idx, SummaryIndex: &zero}
	}
	added := ev(api.EventReasoningSummaryPartAdd)
	added.Part = &api.ContentPart{Type: api.PartSummaryText}
	a.r.em.emit(added)
	delta := ev(api.EventReasoningSummaryDelta)
	delta.Delta = &text
	a.r.em.emit(delta)
	done := ev(api.EventReasoningSummaryDone)
	done.Text = &text
	a.r.em.emit(done)
	partDone := ev(api.EventReasoningSummaryPartDone)
	partDone.Part = &it.Summary[0]
	a.r.em.emit(partDone)
}
