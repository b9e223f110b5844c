package engine

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/limits"
	"github.com/lambent/lambent/pkg/store"
)

// Conversations (OpenAI's Conversations API): a durable list of items that
// responses created with `conversation` read as their context and append
// their input and output to. The store keeps them (store.ConversationStore);
// the engine checks the limits, maps the errors, and runs one response at
// a time in a conversation:
//
//   - A create with `conversation` takes the conversation's lock (owner:
//     the response id) before it reads the items, so the context it loads
//     cannot change under it, and a second create meanwhile is refused with
//     OpenAI's 400 conversation_locked (so is an items-create). The lock is
//     released when the response's items are appended: once the response
//     has ended (completed, requires_action, incomplete or failed: its
//     input items, then its output items), before the client gets the end
//     of the response, so the client's next create finds it free. A
//     response that never ran (refused, cancelled) appends nothing.
//   - A background response holds the lock from its create through its
//     queueing and every worker invocation (each renews it) to its end,
//     or to its deletion (releaseDeleted). A run without a deadline
//     renews it at its turns as well (renewConversation).
//   - A lock whose holder died lapses: a foreground response's at its
//     request's deadline (plus the store write's time), or after
//     Background.Lease when the request has none; a background response's
//     after four leases from its last invocation. A lapsed lock is still
//     its holder's until another writer takes it: a response that ran
//     past it appends its items all the same (when another writer took
//     it, they are not appended, which is logged as an error).
//   - A token count (CountInputTokens) reads the items without the lock:
//     it appends nothing, and counts while a response runs there.
//   - Deleting a conversation while a response runs in it deletes it at
//     once; the response runs to its end and is stored, but its items are
//     appended nowhere (the append finds no conversation, which is logged).
//     A background response still queued then fails when its worker starts
//     (conversation_not_found).

// conversations returns the store's conversations; nil when it keeps none.
func (e *Engine) conversations() store.ConversationStore {
	cs, _ := e.cfg.Store.(store.ConversationStore)
	return cs
}

// conversationsOf returns the store's conversations, or the 404 of id when
// there are none or id is not well-formed (it never reaches the store).
func (e *Engine) conversationsOf(id string) (store.ConversationStore, error) {
	cs := e.conversations()
	if cs == nil || !api.ValidConversationID(id) {
		return nil, conversationNotFound(id, "")
	}
	return cs, nil
}

// conversationNotFound is the 404 of an unknown conversation (param names
// the request's parameter, "" for a path).
func conversationNotFound(id, param string) *api.Error {
	if len(id) > api.MaxConversationIDLen {
		id = strings.ToValidUTF8(id[:api.MaxConversationIDLen], "") + "…"
	}
	return api.NotFound(param, "conversation_not_found", "Conversation with id '%s' not found.", id)
}

// conversationLocked is OpenAI's error for a conversation another response
// is operating on.
func conversationLocked() *api.Error {
	return api.InvalidRequestCode("conversation", "conversation_locked", "Another process is currently operating on this conversation. Please retry in a few seconds.")
}

// conversationErr maps a conversation store's error for conversation id
// (param: the request's parameter naming it, "" for a path).
func (e *Engine) conversationErr(err error, id, param string) error {
	var inf *store.ItemNotFoundError
	var dup *store.DuplicateItemError
	switch {
	case errors.As(err, &dup):
		return api.InvalidRequestCode("items", "duplicate_item_id", "Conversation '%s' holds an item with id '%s' already.", id, dup.ItemID)
	case errors.As(err, &inf):
		return api.NotFound("", "item_not_found", "Item with id '%s' not found in conversation '%s'.", inf.ItemID, id)
	case errors.Is(err, store.ErrNotFound):
		return conversationNotFound(id, param)
	case errors.Is(err, store.ErrLocked):
		return conversationLocked()
	case errors.Is(err, store.ErrTooManyItems):
		return api.InvalidRequestCode("conversation", limits.CodeLimitExceeded,
			"The conversation holds more than %d items, this gateway's limit for the context of a response (LAMBENT_LIMIT_CONVERSATION_ITEMS). Delete items from it, or start a new conversation from a compaction of this one.",
			e.cfg.Limits.ConversationItems)
	case errors.Is(err, store.ErrTooLarge):
		return api.InvalidRequestCode("items", "too_large", "The items are larger than this gateway's store keeps.")
	}
	return e.storeErr(err, id, "conversation")
}

func apiConversation(c *store.Conversation) *api.Conversation {
	return &api.Conversation{ID: c.ID, Object: "conversation", CreatedAt: c.CreatedAt, Metadata: c.Metadata}
}

// checkConversationItems checks the items of one call (param names them):
// their number, the form of the ids they bring, and that each compaction
// item's blob opens for the tenant (openSummary), as a response's input
// is checked: a conversation never holds a blob that fails only when a
// response uses it.
func (e *Engine) checkConversationItems(ctx context.Context, param string, items []api.Item) error {
	if n, l := len(items), e.cfg.Limits.ConversationItemsPerCall; n > l {
		return limits.Exceeded(param, "the number of items added to a conversation in one call", n, l)
	}
	if err := checkItemIDs(param, items, true); err != nil {
		return err
	}
	for i := range items {
		if it := &items[i]; it.Type == api.ItemCompaction {
			if _, err := e.openSummary(ctx, param+"["+strconv.Itoa(i)+"].encrypted_content", it.EncryptedContent); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkItemIDs refuses item ids that cannot be a conversation item's id
// (api.ValidItemID). unique also refuses an id given twice (the items one
// call adds: ids are unique in a conversation).
func checkItemIDs(param string, items []api.Item, unique bool) error {
	seen := map[string]bool{}
	for i := range items {
		id := items[i].ID
		if id == "" {
			continue
		}
		p := param + "[" + strconv.Itoa(i) + "].id"
		if !api.ValidItemID(id) {
			return api.InvalidRequest(p, "an item id must be at most %d printable ASCII characters", api.MaxItemIDLen)
		}
		if unique && seen[id] {
			return api.InvalidRequestCode(p, "duplicate_item_id", "The item id '%s' is given twice.", id)
		}
		seen[id] = true
	}
	return nil
}

// CreateConversation creates a conversation with its first items.
func (e *Engine) CreateConversation(ctx context.Context, req *api.ConversationCreateRequest) (*api.Conversation, error) {
	cs := e.conversations()
	if cs == nil {
		return nil, &api.Error{Status: http.StatusNotImplemented, Type: api.ErrTypeInvalidRequest, Code: "conversations_unavailable",
			Message: "This gateway's store keeps no conversations."}
	}
	if err := e.checkConversationItems(ctx, "items", req.Items); err != nil {
		return nil, err
	}
	store.AssignItemIDs(req.Items)
	c := &store.Conversation{ID: api.NewID(api.PrefixConversation), CreatedAt: e.cfg.Now().Unix(), Metadata: req.Metadata}
	if err := cs.CreateConversation(ctx, c, req.Items); err != nil {
		return nil, e.conversationErr(err, c.ID, "")
	}
	return apiConversation(c), nil
}

// GetConversation returns a conversation.
func (e *Engine) GetConversation(ctx context.Context, id string) (*api.Conversation, error) {
	cs, err := e.conversationsOf(id)
	if err != nil {
		return nil, err
	}
	c, err := cs.GetConversation(ctx, id)
	if err != nil {
		return nil, e.conversationErr(err, id, "")
	}
	return apiConversation(c), nil
}

// UpdateConversation replaces a conversation's metadata.
func (e *Engine) UpdateConversation(ctx context.Context, id string, md map[string]string) (*api.Conversation, error) {
	cs, err := e.conversationsOf(id)
	if err != nil {
		return nil, err
	}
	c, err := cs.SetConversationMetadata(ctx, id, md)
	if err != nil {
		return nil, e.conversationErr(err, id, "")
	}
	return apiConversation(c), nil
}

// DeleteConversation deletes a conversation and its items (see the top of
// this file for a response running in it).
func (e *Engine) DeleteConversation(ctx context.Context, id string) (*api.ConversationDeleted, error) {
	cs, err := e.conversationsOf(id)
	if err != nil {
		return nil, err
	}
	if err := cs.DeleteConversation(ctx, id); err != nil && !e.deletedAnyway(ctx, id, err) {
		return nil, e.conversationErr(err, id, "")
	}
	return &api.ConversationDeleted{ID: id, Object: "conversation.deleted", Deleted: true}, nil
}

// itemsLock is how long an items-create holds a conversation's lock if it
// dies before releasing it.
const itemsLock = time.Minute

// AddConversationItems appends items to a conversation, under its lock
// (conversation_locked while a response runs in it), and returns them as
// stored.
func (e *Engine) AddConversationItems(ctx context.Context, id string, items []api.Item) (*api.ItemList, error) {
	cs, err := e.conversationsOf(id)
	if err != nil {
		return nil, err
	}
	if err := e.checkConversationItems(ctx, "items", items); err != nil {
		return nil, err
	}
	store.AssignItemIDs(items)
	owner := api.NewID("items_")
	c, err := cs.LockConversation(ctx, id, owner, time.Now().Add(itemsLock))
	if err != nil {
		return nil, e.conversationErr(err, id, "")
	}
	// The items leave the cut of the conversation's last response as it
	// was: its item is still there.
	if err := cs.AppendConversationItems(ctx, id, owner, items, c.Cut); err != nil {
		e.unlockConversation(ctx, cs, id, owner)
		return nil, e.conversationErr(err, id, "")
	}
	return itemList(items, false), nil
}

// unlockConversation releases owner's lock, best effort (it lapses anyway).
func (e *Engine) unlockConversation(ctx context.Context, cs store.ConversationStore, id, owner string) {
	sctx, cancel := writeContext(ctx, cs)
	defer cancel()
	if err := cs.AppendConversationItems(sctx, id, owner, nil, ""); err != nil && !errors.Is(err, store.ErrNotFound) {
		e.log.WarnContext(ctx, "conversation lock not released", "conversation_id", id, "owner", owner, "err", err)
	}
}

// releaseDeleted releases the conversation lock of rec's response, just
// deleted, when it is a background response that had not ended: a queued
// one's worker finds no response, and so no conversation to release, and
// the lock would hold the conversation until it lapsed. A running one's
// worker stops at its next poll and appends nothing (cancelled). Only the
// response's own lock is released (unlockConversation).
func (e *Engine) releaseDeleted(ctx context.Context, rec *store.Record) {
	c, cs := rec.Response.Conversation, e.conversations()
	if c == nil || cs == nil || rec.Job == nil || rec.Response.Status.Terminal() {
		return
	}
	e.unlockConversation(ctx, cs, c.ID, rec.Response.ID)
}

// itemList is a list object of items.
func itemList(items []api.Item, more bool) *api.ItemList {
	list := &api.ItemList{Object: "list", Data: items, HasMore: more}
	if list.Data == nil {
		list.Data = []api.Item{}
	}
	if n := len(items); n > 0 {
		list.FirstID, list.LastID = &items[0].ID, &items[n-1].ID
	}
	return list
}

// ListConversationItems pages through a conversation's items.
func (e *Engine) ListConversationItems(ctx context.Context, id string, opts api.ListOptions) (*api.ItemList, error) {
	cs, err := e.conversationsOf(id)
	if err != nil {
		return nil, err
	}
	page, err := cs.ListConversationItems(ctx, id, opts)
	if err != nil {
		return nil, e.conversationErr(err, id, "")
	}
	return itemList(page.Items, page.HasMore), nil
}

// GetConversationItem returns one item of a conversation.
func (e *Engine) GetConversationItem(ctx context.Context, id, itemID string) (*api.Item, error) {
	cs, err := e.conversationsOf(id)
	if err != nil {
		return nil, err
	}
	if !api.ValidItemID(itemID) {
		return nil, e.conversationErr(&store.ItemNotFoundError{ConversationID: id, ItemID: itemID}, id, "")
	}
	it, err := cs.GetConversationItem(ctx, id, itemID)
	if err != nil {
		return nil, e.conversationErr(err, id, "")
	}
	return it, nil
}

// DeleteConversationItem deletes one item of a conversation and returns
// the conversation.
func (e *Engine) DeleteConversationItem(ctx context.Context, id, itemID string) (*api.Conversation, error) {
	cs, err := e.conversationsOf(id)
	if err != nil {
		return nil, err
	}
	if !api.ValidItemID(itemID) {
		return nil, e.conversationErr(&store.ItemNotFoundError{ConversationID: id, ItemID: itemID}, id, "")
	}
	c, err := cs.DeleteConversationItem(ctx, id, itemID)
	if err != nil && (c == nil || !e.deletedAnyway(ctx, itemID, err)) {
		return nil, e.conversationErr(err, id, "")
	}
	return apiConversation(c), nil
}

// runConversation is the conversation a response runs in (run.conv).
type runConversation struct {
	cs store.ConversationStore
	id string
	// locked is when the run took or last renewed the lock (Config.Now).
	locked time.Time
	// ended is set once the response's items were appended or the lock
	// released.
	ended bool
	// refused is set when the response's failure is its request's HTTP
	// error (run.refusal): it appends nothing, as a request refused before
	// it ran, since the client, told of an error, may send it again (the
	// SDKs retry a 429 or a 5xx on their own).
	refused bool
}

// lockUntil is when the lock of a response lapses if never released: its
// request's deadline plus the final store write's time, or (none, and
// background responses) the lease-based bound of the top of this file.
// Locks are wall-clock times, as the stores compare them with time.Now
// (like expiry), whatever Config.Now says.
func (e *Engine) lockUntil(ctx context.Context, background bool) time.Time {
	now := time.Now()
	if background {
		return now.Add(4 * e.cfg.Background.Lease)
	}
	if d, ok := ctx.Deadline(); ok {
		return d.Add(storeTimeout)
	}
	return now.Add(e.cfg.Background.Lease)
}

// openConversation takes the lock of the request's conversation for r's
// response (unless lock is false: a token count, which appends nothing)
// and loads its items as r's history (checked against
// Limits.ConversationItems), starting the run's cut from the
// conversation's (startCut). On success with the lock r.conv is set: the
// caller must end it (endConversation) on every path.
func (e *Engine) openConversation(ctx context.Context, r *run, lock bool) error {
	id := r.req.Conversation
	cs := e.conversations()
	if cs == nil || !api.ValidConversationID(id) {
		return conversationNotFound(id, "conversation")
	}
	if err := checkItemIDs("input", r.req.Input, false); err != nil {
		return err
	}
	c, err := e.conversationHead(ctx, r, cs, lock)
	if err != nil {
		return e.conversationErr(err, id, "conversation")
	}
	items, err := cs.LoadConversationItems(ctx, id, e.cfg.Limits.ConversationItems)
	if err != nil {
		e.endConversation(ctx, r)
		return e.conversationErr(err, id, "conversation")
	}
	r.history = items
	if c != nil {
		r.startCut(c.Cut)
	}
	return nil
}

// conversationHead takes the lock of r's conversation (setting r.conv)
// and returns the conversation; without lock (a count) it reads the
// conversation only when the run may start from its cut (truncation
// "auto"), else returns nil.
func (e *Engine) conversationHead(ctx context.Context, r *run, cs store.ConversationStore, lock bool) (*store.Conversation, error) {
	id := r.req.Conversation
	if !lock {
		if r.resp.Truncation != api.TruncationAuto {
			return nil, nil
		}
		return cs.GetConversation(ctx, id)
	}
	c, err := cs.LockConversation(ctx, id, r.resp.ID, e.lockUntil(ctx, r.req.Background))
	if err != nil {
		return nil, err
	}
	r.conv = &runConversation{cs: cs, id: id, locked: e.cfg.Now()}
	return c, nil
}

// resumeConversation loads the conversation of a background response
// that a worker runs, renewing its lock: the items it loaded at its create
// cannot have changed, as it holds the lock.
func (e *Engine) resumeConversation(ctx context.Context, r *run) error {
	id := r.resp.Conversation.ID
	cs := e.conversations()
	if cs == nil {
		return conversationNotFound(id, "conversation")
	}
	r.conv = &runConversation{cs: cs, id: id, locked: e.cfg.Now()}
	if _, err := cs.LockConversation(ctx, id, r.resp.ID, e.lockUntil(ctx, true)); err != nil {
		return e.conversationErr(err, id, "conversation")
	}
	items, err := cs.LoadConversationItems(ctx, id, e.cfg.Limits.ConversationItems)
	if err != nil {
		return e.conversationErr(err, id, "conversation")
	}
	r.history = items
	return nil
}

// renewConversation renews the lock of r's conversation at the start of a
// turn when a third of Background.Lease has passed since it was taken or
// last renewed and nothing bounds the run (its context has no deadline: a
// local server's request, a worker without an invocation deadline), so
// that a loop running longer than the lock keeps the conversation to
// itself; with a deadline the lock outlasts the run already. A lock
// another writer took once it lapsed is logged: the response's items will
// not be appended (endConversation).
func (e *Engine) renewConversation(ctx context.Context, r *run) {
	c := r.conv
	if c == nil || c.ended || e.cfg.Now().Sub(c.locked) < e.cfg.Background.Lease/3 {
		return
	}
	if _, ok := ctx.Deadline(); ok {
		return
	}
	if _, err := c.cs.LockConversation(ctx, c.id, r.resp.ID, e.lockUntil(ctx, r.req.Background)); err != nil {
		e.log.WarnContext(ctx, "conversation lock not renewed", "conversation_id", c.id, "response_id", r.resp.ID, "err", err)
		return
	}
	c.locked = e.cfg.Now()
}

// appends reports whether a response that ended with status adds its items
// to its conversation.
func appends(status api.Status) bool {
	switch status {
	case api.StatusCompleted, api.StatusRequiresAction, api.StatusIncomplete, api.StatusFailed:
		return true
	}
	return false
}

// endConversation ends r's hold on its conversation (none: nothing to
// do; called again: nothing more): when the response ended with a status
// that appends, its input items (but those whose id the conversation holds
// already — references to its items, as its history or the store
// (appendTurn) tells — or that an earlier input item had) and then its
// output items as a continuation carries on with them (api.Continued:
// without the items set aside, nor the calls a model call cut) are
// appended, with the run's cut as the conversation's (the cut of its
// last response, as a response's record keeps its own: storedCut, none
// when the model saw every item), which
// releases the lock;
// otherwise (and for a response refused: runConversation.refused) the
// lock is released. A failure is logged: the response itself
// is stored apart.
func (e *Engine) endConversation(ctx context.Context, r *run) {
	c := r.conv
	if c == nil || c.ended {
		return
	}
	c.ended = true
	var items []api.Item
	nInput := 0
	if appends(r.resp.Status) && !c.refused {
		held := make(map[string]bool, len(r.history))
		for i := range r.history {
			held[r.history[i].ID] = true
		}
		items = make([]api.Item, 0, len(r.input)+len(r.resp.Output))
		for _, it := range r.input {
			if !held[it.ID] {
				held[it.ID] = true
				items = append(items, it)
			}
		}
		nInput = len(items)
		items = append(items, api.Continued(r.resp.Output)...)
	}
	sctx, cancel := writeContext(ctx, c.cs)
	defer cancel()
	err := appendTurn(sctx, c, r.resp.ID, items, nInput, r.storedCut())
	if err == nil {
		return
	}
	attrs := []any{"conversation_id", c.id, "response_id", r.resp.ID, "items", len(items), "err", err}
	switch {
	case errors.Is(err, store.ErrNotFound):
		e.log.WarnContext(ctx, "conversation deleted while the response ran: items not appended", attrs...)
	case len(items) == 0:
		e.log.WarnContext(ctx, "conversation lock not released", attrs...)
	default:
		// A lost turn: another writer took the lock, or the store failed.
		e.log.ErrorContext(ctx, "items not appended to the conversation", attrs...)
		// The append failed whole: the lock may still be held, and the
		// conversation's next writer should not wait for it to lapse.
		e.unlockConversation(ctx, c.cs, c.id, r.resp.ID)
	}
}

// appendTurn appends items, the first nInput of them the response's
// input, to c as owner, with cut as the conversation's cut. An input item
// whose id the conversation holds already (one it names, when the run did
// not load the conversation: a background response that failed before its
// worker did) is left out and the append tried again.
func appendTurn(ctx context.Context, c *runConversation, owner string, items []api.Item, nInput int, cut string) error {
	for {
		err := c.cs.AppendConversationItems(ctx, c.id, owner, items, cut)
		var dup *store.DuplicateItemError
		if !errors.As(err, &dup) {
			return err
		}
		i := slices.IndexFunc(items[:nInput], func(it api.Item) bool { return it.ID == dup.ItemID })
		if i < 0 {
			return err
		}
		items, nInput = slices.Delete(items, i, i+1), nInput-1
	}
}

// storedContext is the context a response's record keeps: the history
// before its input, except in a conversation, which keeps it instead (the
// record would otherwise copy the whole conversation on every turn).
func (r *run) storedContext() []api.Item {
	if r.req.Conversation != "" || r.resp.Conversation != nil {
		return nil
	}
	return r.history
}
