package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/provider"
)

// Server-side compaction (context_management, docs/api.md "Server-side
// compaction"): before a model call whose view is over the request's
// compact_threshold, the view is summarised as POST /v1/responses/compact
// summarises a conversation, and one standalone compaction item takes its
// place in the response's output. A standalone item carries, sealed, the
// user messages of the view (their text, images and files: carriedParts)
// besides the summary, which a /compact window keeps next to its item:
// the model sees nothing before the latest standalone item of a
// conversation, wherever it sends it. In the history a request continues
// every compaction item stands alone so (standsAlone), a /compact or
// compaction_trigger item carrying the user messages the history holds
// before it (carriedBy).

// standaloneMark starts the sealed content of a standalone compaction
// item, followed by the JSON of standaloneContent; the sealed content of
// a /compact item is its summary as the model wrote it, without NUL
// characters (compactSummary), so it never starts with the mark.
const standaloneMark = "\x00lambent standalone compaction v1\x00"

// standaloneContent is what a standalone compaction item seals: the
// content parts of the user messages it carries (Messages), or in an item
// sealed before images and files were carried their texts (Users).
type standaloneContent struct {
	Messages [][]api.ContentPart `json:"messages,omitempty"`
	Users    []string            `json:"users,omitempty"`
	Summary  string              `json:"summary"`
}

// summary is the opened content of a compaction item.
type summary struct {
	text string
	// users are the content parts of the user messages a standalone item
	// carries.
	users [][]api.ContentPart
	// standalone marks a server-side compaction item: the model sees
	// nothing of the conversation before the latest one.
	standalone bool
}

// openedSummary reads the opened content of a compaction item: a
// standalone item's, or a /compact item's summary.
func openedSummary(plain string) (summary, error) {
	rest, ok := strings.CutPrefix(plain, standaloneMark)
	if !ok {
		return summary{text: plain}, nil
	}
	var c standaloneContent
	if err := json.Unmarshal([]byte(rest), &c); err != nil {
		return summary{}, fmt.Errorf("a standalone compaction's content: %w", err)
	}
	for _, t := range c.Users {
		c.Messages = append(c.Messages, []api.ContentPart{{Type: api.PartInputText, Text: t}})
	}
	return summary{text: c.Summary, users: c.Messages, standalone: true}, nil
}

// sealed is the content of an item, to seal: a standalone item's mark
// and JSON, or a /compact item's summary (compactSummary).
func (s summary) sealed() (string, error) {
	if !s.standalone {
		return compactSummary(s.text), nil
	}
	b, err := json.Marshal(standaloneContent{Messages: s.users, Summary: s.text})
	if err != nil {
		return "", fmt.Errorf("a standalone compaction's content: %w", err)
	}
	return standaloneMark + string(b), nil
}

// addSummary keeps s, the opened content of blob, for withSummaries.
func (r *run) addSummary(blob string, s summary) {
	if r.summaries == nil {
		r.summaries = map[string]summary{}
	}
	r.summaries[blob] = s
}

// standsAlone is the index of the compaction item of items the model
// sees nothing before: the latest that stands alone, a standalone
// (server-side) item or any of the first fromHistory compaction items
// (those of the history a request continues, whatever made them: a
// server-side compaction, a compaction_trigger's response, a /compact
// window sent as an earlier input); -1 when none does.
func (r *run) standsAlone(items []api.Item, fromHistory int) int {
	at, n := -1, 0
	for i := range items {
		if it := &items[i]; it.Type == api.ItemCompaction {
			if n < fromHistory || r.standalone(it) {
				at = i
			}
			n++
		}
	}
	return at
}

// historyCompactions is the number of compaction items in the history r
// continues.
func (r *run) historyCompactions() int {
	n := 0
	for i := range r.history {
		if r.history[i].Type == api.ItemCompaction {
			n++
		}
	}
	return n
}

// carriedBy is what the compaction item items[at], which stands alone
// (standsAlone), carries of the user messages before it: a standalone
// item's sealed ones; for any other, which the history holds, the user
// messages the model sees before it, the newest first up to
// maxCarriedBytes (carriedParts), as a standalone item carries them:
// those after the latest standalone item before it, then the ones that
// item carries. The compaction items between stand alone too, but what
// each carries is of these messages, within the same bound: they are
// read once, so that a history of many compaction items costs work in
// proportion to its length, not to its length times its items.
func (r *run) carriedBy(items []api.Item, at int) [][]api.ContentPart {
	if s := r.summaries[items[at].EncryptedContent]; s.standalone {
		return s.users
	}
	from := at
	for from > 0 && !r.standalone(&items[from-1]) {
		from--
	}
	before := items[from:at]
	if from > 0 {
		prev := &items[from-1]
		before = slices.Concat(carriedMessages(prev.ID, r.summaries[prev.EncryptedContent].users), before)
	}
	return carriedParts(before, maxCarriedBytes)
}

// standalone reports whether it is a standalone (server-side) compaction
// item.
func (r *run) standalone(it *api.Item) bool {
	return it.Type == api.ItemCompaction && r.summaries[it.EncryptedContent].standalone
}

// carriedMessages are the user messages of msgs (their content parts),
// which the standalone compaction item id carries, as the model sees
// them.
func carriedMessages(id string, msgs [][]api.ContentPart) []api.Item {
	out := make([]api.Item, len(msgs))
	for i, parts := range msgs {
		out[i] = api.Item{Type: api.ItemMessage, ID: fmt.Sprintf("%s_%d", id, i), Status: api.ItemCompleted, Role: api.RoleUser,
			Content: slices.Clone(parts)}
	}
	return out
}

// maxCarriedBytes bounds what a standalone compaction item carries of
// the user's messages: 20,000 tokens, as Codex keeps of the user's
// messages when it compacts.
const maxCarriedBytes = 20_000 * bytesPerToken

// carriedBytes bounds what a standalone compaction item carries under
// threshold: maxCarriedBytes, and half the threshold, so that the view
// right after the compaction is under it and is not compacted again for
// what the item carries.
func carriedBytes(threshold int) int {
	return min(maxCarriedBytes, threshold/2*bytesPerToken)
}

// carriedParts are the content parts of the user messages of items that
// a standalone compaction item carries, message by message in order:
// the newest first up to limit bytes (partBytes), the older ones left
// out, so that neither the item nor the views after it grow with every
// compaction. A text crossing the bound is cut to what is left, and an
// image or file over what is left is replaced by a note saying so
// (omittedPart), when that fits.
func carriedParts(items []api.Item, limit int) [][]api.ContentPart {
	var out [][]api.ContentPart
	left := limit
	for i := len(items) - 1; i >= 0 && left > 0; i-- {
		it := &items[i]
		if it.Type != api.ItemMessage || it.Role != api.RoleUser {
			continue
		}
		var parts []api.ContentPart
		for _, p := range it.Content {
			p, ok := carriedPart(p, left)
			if ok {
				parts = append(parts, p)
				left -= partBytes(&p)
			}
		}
		if len(parts) > 0 {
			out = append(out, parts)
		}
	}
	slices.Reverse(out)
	return out
}

// carriedPart is p as a compaction item carries it with left bytes to
// spare: whole when it fits, a text cut to left, an image or file that
// does not fit replaced by omittedPart; false when nothing of it fits
// (or it is not a part a user message shows the model).
func carriedPart(p api.ContentPart, left int) (api.ContentPart, bool) {
	switch p.Type {
	case api.PartInputText:
		p.Text = cutText(p.Text, left)
		return p, p.Text != ""
	case api.PartInputImage, api.PartInputFile:
		if partBytes(&p) <= left {
			return p, true
		}
		p = omittedPart(p.Type)
		return p, partBytes(&p) <= left
	}
	return api.ContentPart{}, false
}

// omittedPart is the note that stands for an image or file (a part of
// type typ) a compaction item could not carry, so that the model knows
// the user sent one.
func omittedPart(typ string) api.ContentPart {
	what := "image"
	if typ == api.PartInputFile {
		what = "file"
	}
	return api.ContentPart{Type: api.PartInputText, Text: "[" + what + " omitted by compaction]"}
}

// partBytes is the size of p as a compaction item's bound counts it: the
// bytes of its text, image URL (a data URL's inline base64 included),
// file id, data, URL and name, as JSON writes them (jsonPrefix).
func partBytes(p *api.ContentPart) int {
	n := 0
	for _, s := range []string{p.Text, p.ImageURL, p.FileID, p.FileData, p.FileURL, p.Filename} {
		_, size := jsonPrefix(s, len(s)*6)
		n += size
	}
	return n
}

// cutText is t cut to at most n bytes as JSON writes it (jsonPrefix), at
// a character's start.
func cutText(t string, n int) string {
	end, _ := jsonPrefix(t, n)
	return t[:end]
}

// jsonPrefix measures the longest prefix of s, whole characters, that
// encoding/json writes (in a string, escaped) in at most n bytes: its end
// in s and its size written. The sealed content of a compaction item and
// the estimate of a view (estimateTokens) are such JSON, in which <, >, &,
// U+2028, U+2029, an invalid byte and most control characters take six
// bytes, a quote, a backslash, \b, \f, \n, \r and \t two.
func jsonPrefix(s string, n int) (end, size int) {
	for end < len(s) {
		r, w := utf8.DecodeRuneInString(s[end:])
		c := w
		switch {
		case r == '"' || r == '\\' || r == '\b' || r == '\f' || r == '\n' || r == '\r' || r == '\t':
			c = 2
		case r < 0x20 || r == '<' || r == '>' || r == '&' || r == '\u2028' || r == '\u2029' || r == utf8.RuneError && w == 1:
			c = 6
		}
		if size+c > n {
			break
		}
		end, size = end+w, size+c
	}
	return end, size
}

// compactIfOver compacts the view of r's next model call when the request
// asks for server-side compaction and the view's rendered size
// (renderedSize) is over its threshold: the summarising call, then the
// standalone compaction item appended to the output and streamed. It
// runs once per model call; a view still over the threshold after it
// goes to the model as it is. A request ending with a compaction_trigger
// (CompactNow) compacts whatever the size, into a /compact item.
func (e *Engine) compactIfOver(ctx context.Context, r *run) error {
	threshold, ok := r.req.CompactThreshold()
	if !ok && !r.req.CompactNow {
		return nil
	}
	view := r.truncated(r.seen())
	size := r.renderedSize(view)
	if size <= threshold && !r.req.CompactNow {
		return nil
	}
	bctx, cancel := r.budget.bound(ctx)
	defer cancel()
	start := e.cfg.Now()
	res, err := e.summariseCut(bctx, r, &view)
	r.modelTook(e.cfg.Now().Sub(start))
	if err != nil {
		return err
	}
	// A trigger's item works as a /compact window's: the client keeps
	// what it wants of the conversation (Codex: its user messages and
	// instructions) and the model sees the summary in the item's place.
	s := summary{text: res.Text}
	if !r.req.CompactNow {
		s.users, s.standalone = carriedParts(view, carriedBytes(threshold)), true
	}
	plain, err := s.sealed()
	if err != nil {
		return api.ServerError(err, "could not seal the summary")
	}
	blob, err := e.seal(ctx, plain)
	if err != nil {
		return err
	}
	r.addSummary(blob, s)
	idx := len(r.resp.Output)
	r.resp.Output = append(r.resp.Output, api.Item{Type: api.ItemCompaction, ID: r.newItemID(api.PrefixCompaction), EncryptedContent: blob})
	r.em.itemEvent(api.EventOutputItemAdded, idx, &r.resp.Output[idx])
	r.em.itemEvent(api.EventOutputItemDone, idx, &r.resp.Output[idx])
	// The view is new: no model call counted it.
	r.counted = 0
	if e.log.Enabled(ctx, slog.LevelInfo) {
		e.log.LogAttrs(ctx, slog.LevelInfo, "context compacted", slog.String("response_id", r.resp.ID), slog.Int("rendered_tokens", size),
			slog.Int("threshold", threshold), slog.Int("items", len(view)), slog.Int("summary_bytes", len(res.Text)))
	}
	return nil
}

// summariseCut makes the summarising call of compactIfOver over *view
// and, with truncation "auto", makes it again without the oldest items
// when the provider refuses it for its size (cutAgain), as a model call
// is; *view is then what was summarised.
func (e *Engine) summariseCut(ctx context.Context, r *run, view *[]api.Item) (*provider.Result, error) {
	for refusals := 1; ; refusals++ {
		res, q, err := e.summariseCall(ctx, r, *view)
		if err == nil || !r.cutAgain(q, err, refusals, len(r.resp.Output)) {
			return res, err
		}
		*view = r.truncated(r.seen())
	}
}

// compactBeforeCall compacts before the loop's next model call
// (compactIfOver) and reports the outcome that ends the loop instead of
// the call: a summarising call's failure (modelFailure: its deadline
// too), a compaction_trigger's compaction done (the response is its
// compaction item), or a budget that no longer fits the model call after
// it.
func (e *Engine) compactBeforeCall(ctx context.Context, r *run) (outcome, bool) {
	err := e.compactIfOver(ctx, r)
	switch {
	case err != nil:
		return r.modelFailure(ctx, err), true
	case r.req.CompactNow:
		return outcome{status: api.StatusCompleted}, true
	case !r.budget.fits(r.budget.maxModel):
		return outcome{status: api.StatusIncomplete, reason: api.ReasonDeadline}, true
	}
	return outcome{}, false
}

// noteCount notes the provider's count of the model call that just ended,
// whose view and output the output so far holds: its input and output
// tokens (none counted when it reports none).
func (r *run) noteCount(res *provider.Result) {
	r.counted, r.countedOutput = res.Usage.InputTokens+res.Usage.OutputTokens, len(r.resp.Output)
}

// resumeCount resumes the count of a background run from its checkpoint
// (store.Record.Rendered, saveProgress): the size of the view it had
// then, which is the view it resumes with.
func (r *run) resumeCount(rendered int) {
	if rendered > 0 {
		r.counted, r.countedOutput = rendered, len(r.resp.Output)
	}
}

// startCount starts the count of a continuation from its previous
// response's (store.Record.Rendered): this request's input comes after it.
func (r *run) startCount(rendered int) {
	r.counted, r.countedOutput = rendered, -1
}

// renderedSize is the size in tokens of view, the items of the next model
// call, as server-side compaction measures it: the provider's count of
// the latest model call whose view is its prefix (counted) plus an
// estimate of the items added since (estimateTokens); the estimate of the
// whole view and the instructions when no call was counted.
func (r *run) renderedSize(view []api.Item) int {
	if r.counted == 0 {
		return estimateTokens(view) + len(r.req.Instructions)/bytesPerToken
	}
	return r.storedRendered()
}

// storedRendered is the size of what the response's model saw at its end
// (store.Record.Rendered): 0 when no call was counted.
func (r *run) storedRendered() int {
	if r.counted == 0 {
		return 0
	}
	return r.counted + r.sinceCounted()
}

// sinceCounted estimates the items added since the counted call: the
// output after it, and this request's input when the count is the
// previous response's.
func (r *run) sinceCounted() int {
	if r.countedOutput < 0 {
		return estimateTokens(r.input) + estimateTokens(r.resp.Output)
	}
	return estimateTokens(r.resp.Output[min(r.countedOutput, len(r.resp.Output)):])
}

// bytesPerToken is the estimate's rate: a token is about 4 bytes of JSON.
const bytesPerToken = 4

// estimateTokens estimates the tokens of items: their JSON's bytes over
// bytesPerToken.
func estimateTokens(items []api.Item) int {
	if len(items) == 0 {
		return 0
	}
	b, err := json.Marshal(items)
	if err != nil {
		return 0
	}
	return len(b) / bytesPerToken
}
