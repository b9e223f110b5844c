package store

import (
	"container/list"
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/tenant"
)

var _ ConversationStore = (*Memory)(nil)

// memConversations are the conversations of a Memory store, bounded apart
// from its responses by the same numbers: at most MaxEntries conversations
// and MaxBytes of items. When a bound is passed, the conversation evicted
// is the oldest of the tenant holding the most (conversations, or bytes),
// never the one being written, as for responses.
type memConversations struct {
	mu      sync.Mutex
	convs   map[memKey]*memConv
	tenants map[string]*list.List // each tenant's conversations, oldest first (values *memConv)
	tbytes  map[string]int64      // each tenant's item bytes
	bytes   int64                 // all items' bytes
}

type memConv struct {
	key   memKey
	conv  Conversation
	items []api.Item // in order
	bytes int64      // the items' bytes (itemBytes)
	el    *list.Element
}

// itemBytes is what items hold: each item and what it refers to (sizeOf
// of each, without the array that holds them).
func itemBytes(items []api.Item) int64 {
	n := int64(len(items)) * itemSize
	for i := range items {
		n += itemRefBytes(&items[i])
	}
	return n
}

func newMemConversations() *memConversations {
	return &memConversations{convs: map[memKey]*memConv{}, tenants: map[string]*list.List{}, tbytes: map[string]int64{}}
}

func (m *Memory) convs() *memConversations { return m.conversations }

// CreateConversation stores c with its first items.
func (m *Memory) CreateConversation(ctx context.Context, c *Conversation, items []api.Item) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("store: create conversation %s: %w", c.ID, err)
	}
	mc := m.convs()
	now := time.Now()
	if c.ExpiresAt.IsZero() {
		c.ExpiresAt = now.Add(m.ttl)
	}
	c.Next = int64(len(items))
	e := &memConv{key: memKey{tenant.From(ctx), c.ID}, conv: *c, items: slices.Clone(items)}
	e.conv.Metadata = maps.Clone(c.Metadata)
	e.bytes = itemBytes(e.items)
	if err := m.fits(e.bytes); err != nil {
		return fmt.Errorf("store: create conversation %s: %w", c.ID, err)
	}
	mc.mu.Lock()
	defer mc.mu.Unlock()
	if old, ok := mc.convs[e.key]; ok {
		if now.Before(old.conv.ExpiresAt) {
			return fmt.Errorf("store: create conversation %s: %w", c.ID, ErrConflict)
		}
		mc.remove(old)
	}
	for len(mc.convs) >= m.maxEntries {
		mc.remove(mc.victim(nil, func(t string) int64 { return int64(mc.tenants[t].Len()) }))
	}
	l := mc.tenants[e.key.tenant]
	if l == nil {
		l = list.New()
		mc.tenants[e.key.tenant] = l
	}
	e.el = l.PushBack(e)
	mc.convs[e.key] = e
	mc.account(e.key.tenant, e.bytes)
	mc.shrink(e, m.maxBytes)
	return nil
}

// account counts n more item bytes (negative: fewer) of tenant t (mc.mu
// held).
func (mc *memConversations) account(t string, n int64) {
	mc.tbytes[t] += n
	mc.bytes += n
}

func (mc *memConversations) remove(e *memConv) {
	delete(mc.convs, e.key)
	l := mc.tenants[e.key.tenant]
	l.Remove(e.el)
	mc.account(e.key.tenant, -e.bytes)
	if l.Len() == 0 {
		delete(mc.tenants, e.key.tenant)
		delete(mc.tbytes, e.key.tenant)
	}
}

// shrink evicts conversations other than keep while the items hold more
// than limit bytes.
func (mc *memConversations) shrink(keep *memConv, limit int64) {
	for mc.bytes > limit {
		v := mc.victim(keep, func(t string) int64 { return mc.tbytes[t] })
		if v == nil {
			return
		}
		mc.remove(v)
	}
}

// victim is the oldest conversation, other than keep, of the tenant
// holding the most by held; nil when there is none.
func (mc *memConversations) victim(keep *memConv, held func(string) int64) *memConv {
	var best *memConv
	var most int64 = -1
	for t, l := range mc.tenants {
		el := l.Front()
		if el != nil && el.Value.(*memConv) == keep {
			el = el.Next()
		}
		if el == nil {
			continue
		}
		if h := held(t); h > most {
			best, most = el.Value.(*memConv), h
		}
	}
	return best
}

// lookup returns the live conversation id of ctx's tenant (mc.mu held).
func (mc *memConversations) lookup(ctx context.Context, id string) (*memConv, error) {
	e, ok := mc.convs[memKey{tenant.From(ctx), id}]
	if !ok {
		return nil, fmt.Errorf("store: conversation %s: %w", id, ErrNotFound)
	}
	if !time.Now().Before(e.conv.ExpiresAt) {
		mc.remove(e)
		return nil, fmt.Errorf("store: conversation %s: %w", id, ErrNotFound)
	}
	return e, nil
}

func copyConversation(c *Conversation) *Conversation {
	cp := *c
	cp.Metadata = maps.Clone(c.Metadata)
	return &cp
}

// withConv runs fn on the live conversation id of ctx's tenant, with the
// conversations' lock held.
func (m *Memory) withConv(ctx context.Context, id string, fn func(mc *memConversations, e *memConv) error) error {
	mc := m.convs()
	mc.mu.Lock()
	defer mc.mu.Unlock()
	e, err := mc.lookup(ctx, id)
	if err != nil {
		return err
	}
	return fn(mc, e)
}

// GetConversation returns a copy of the conversation.
func (m *Memory) GetConversation(ctx context.Context, id string) (c *Conversation, err error) {
	err = m.withConv(ctx, id, func(_ *memConversations, e *memConv) error {
		c = copyConversation(&e.conv)
		return nil
	})
	return c, err
}

// SetConversationMetadata replaces the conversation's metadata.
func (m *Memory) SetConversationMetadata(ctx context.Context, id string, md map[string]string) (c *Conversation, err error) {
	err = m.withConv(ctx, id, func(_ *memConversations, e *memConv) error {
		e.conv.Metadata = maps.Clone(md)
		c = copyConversation(&e.conv)
		return nil
	})
	return c, err
}

// DeleteConversation deletes the conversation and its items.
func (m *Memory) DeleteConversation(ctx context.Context, id string) error {
	return m.withConv(ctx, id, func(mc *memConversations, e *memConv) error {
		mc.remove(e)
		return nil
	})
}

// LockConversation takes the conversation's lock for owner.
func (m *Memory) LockConversation(ctx context.Context, id, owner string, until time.Time) (c *Conversation, err error) {
	err = m.withConv(ctx, id, func(_ *memConversations, e *memConv) error {
		if e.conv.Locked(time.Now()) && e.conv.Lock != owner {
			return fmt.Errorf("store: conversation %s: %w", id, ErrLocked)
		}
		e.conv.Lock, e.conv.LockUntil = owner, until
		c = copyConversation(&e.conv)
		return nil
	})
	return c, err
}

// AppendConversationItems appends items and releases owner's lock (its
// own, lapsed or not), and sets the conversation's cut (with items).
func (m *Memory) AppendConversationItems(ctx context.Context, id, owner string, items []api.Item, cut string) error {
	n := itemBytes(items)
	return m.withConv(ctx, id, func(mc *memConversations, e *memConv) error {
		if e.conv.Lock != owner {
			return fmt.Errorf("store: append to conversation %s: the lock of %s is not held: %w", id, owner, ErrConflict)
		}
		if err := m.fits(e.bytes + n); err != nil {
			return fmt.Errorf("store: append to conversation %s: %w", id, err)
		}
		held := make([]int, len(items)) // where items[i] replaces an item, or -1
		for i := range items {
			held[i] = e.index(items[i].ID)
			if held[i] >= 0 && !Replaces(&items[i]) || slices.IndexFunc(items[:i], func(it api.Item) bool { return it.ID == items[i].ID }) >= 0 {
				return &DuplicateItemError{ConversationID: id, ItemID: items[i].ID}
			}
		}
		for i := range items {
			if held[i] >= 0 {
				n -= itemBytes(e.items[held[i] : held[i]+1])
				e.items[held[i]] = items[i]
				continue
			}
			e.items = append(e.items, items[i])
			e.conv.Next++
		}
		e.conv.Lock, e.conv.LockUntil = "", time.Time{}
		if len(items) > 0 {
			e.conv.Cut = cut
		}
		e.bytes += n
		mc.account(e.key.tenant, n)
		mc.shrink(e, m.maxBytes)
		return nil
	})
}

// ListConversationItems pages through the conversation's items (see PageItems).
func (m *Memory) ListConversationItems(ctx context.Context, id string, opts api.ListOptions) (page *ItemPage, err error) {
	err = m.withConv(ctx, id, func(_ *memConversations, e *memConv) error {
		var perr error
		if page, perr = PageItems(e.items, opts); perr != nil {
			return ItemCursorError(opts.After)
		}
		return nil
	})
	return page, err
}

// LoadConversationItems returns a copy of the conversation's items.
func (m *Memory) LoadConversationItems(ctx context.Context, id string, max int) (items []api.Item, err error) {
	err = m.withConv(ctx, id, func(_ *memConversations, e *memConv) error {
		if len(e.items) > max {
			return fmt.Errorf("store: conversation %s: %d items, more than %d: %w", id, len(e.items), max, ErrTooManyItems)
		}
		items = slices.Clone(e.items)
		return nil
	})
	return items, err
}

// GetConversationItem returns the item with itemID.
func (m *Memory) GetConversationItem(ctx context.Context, id, itemID string) (it *api.Item, err error) {
	err = m.withConv(ctx, id, func(_ *memConversations, e *memConv) error {
		i, err := e.find(id, itemID)
		if err != nil {
			return err
		}
		c := e.items[i]
		it = &c
		return nil
	})
	return it, err
}

// DeleteConversationItem deletes the item with itemID.
func (m *Memory) DeleteConversationItem(ctx context.Context, id, itemID string) (c *Conversation, err error) {
	err = m.withConv(ctx, id, func(mc *memConversations, e *memConv) error {
		i, err := e.find(id, itemID)
		if err != nil {
			return err
		}
		n := itemBytes(e.items[i : i+1])
		e.items = slices.Delete(e.items, i, i+1)
		e.bytes -= n
		mc.account(e.key.tenant, -n)
		c = copyConversation(&e.conv)
		return nil
	})
	return c, err
}

// find is the index of the item with itemID of conversation id, or an
// *ItemNotFoundError.
func (e *memConv) find(id, itemID string) (int, error) {
	if i := e.index(itemID); i >= 0 {
		return i, nil
	}
	return -1, &ItemNotFoundError{ConversationID: id, ItemID: itemID}
}

// index is the index of the item with itemID, -1 when none.
func (e *memConv) index(itemID string) int {
	for i := len(e.items) - 1; i >= 0; i-- {
		if e.items[i].ID == itemID {
			return i
		}
	}
	return -1
}
