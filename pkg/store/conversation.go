package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lambent/lambent/pkg/api"
)

// Errors of conversations, next to the response errors.
var (
	// ErrLocked: a response is running in the conversation (it holds the
	// conversation's lock), so the conversation's items cannot change.
	ErrLocked = errors.New("conversation is locked by a running response")
	// ErrTooManyItems: a conversation holds more items than the caller
	// may load (ConversationStore.LoadConversationItems).
	ErrTooManyItems = errors.New("conversation has too many items")
)

// Conversation is a stored conversation without its items.
type Conversation struct {
	// ID is the conversation's id ("conv_…").
	ID string
	// CreatedAt is the creation time, in Unix seconds.
	CreatedAt int64
	// Metadata is the conversation's metadata.
	Metadata map[string]string
	// ExpiresAt is when the conversation and its items stop being
	// readable; zero at create means the store's default retention from
	// now. It never moves: a conversation lives as long as a response.
	ExpiresAt time.Time
	// Next is the sequence number of the next item appended: items are
	// numbered 0, 1, … in the order they were appended.
	Next int64
	// Lock is the id of the holder of the conversation's lock (a running
	// response), empty when nobody holds it; LockUntil is when the lock
	// lapses if its holder never releases it.
	Lock      string
	LockUntil time.Time
	// Cut is the id of the first item that the model of the last response
	// appended still saw after truncation "auto" cut the oldest items
	// from its view (docs/api.md, "Truncation"); empty when nothing was
	// cut. The conversation's next response starts its model's view from
	// it. Never on the wire.
	Cut string
}

// Locked reports whether the lock is held by someone at now.
func (c *Conversation) Locked(now time.Time) bool {
	return c.Lock != "" && now.Before(c.LockUntil)
}

// ConversationStore keeps conversations (the Conversations API) and their
// items, scoped to the tenant of the context like responses. Items are
// kept one by one, in the order they were appended: appending and listing
// a page cost what they touch, not the conversation's length. Every
// method is safe for concurrent use; ErrNotFound when the conversation is
// absent, expired or deleted.
//
// The lock makes one writer at a time: a response running in the
// conversation holds it from before it reads the items until its own
// items are appended (AppendConversationItems with its owner), and so does every
// items-create call for the length of its write.
type ConversationStore interface {
	// CreateConversation stores c with items as its first items (ids
	// assigned); ErrConflict when the id exists. c.Next and c.ExpiresAt
	// are set. A create that fails (its items too large) leaves no
	// conversation.
	CreateConversation(ctx context.Context, c *Conversation, items []api.Item) error
	// GetConversation returns the conversation.
	GetConversation(ctx context.Context, id string) (*Conversation, error)
	// SetConversationMetadata replaces the conversation's metadata and
	// returns the conversation.
	SetConversationMetadata(ctx context.Context, id string, md map[string]string) (*Conversation, error)
	// DeleteConversation deletes the conversation and its items, whether
	// or not a response holds its lock (that response's items are then
	// not appended: AppendConversationItems finds no conversation); an
	// error wrapping ErrPartlyDeleted when items remain (they expire).
	DeleteConversation(ctx context.Context, id string) error
	// LockConversation takes the conversation's lock for owner until until and returns
	// the conversation; ErrLocked when another owner holds it (a lock
	// past its LockUntil is free).
	LockConversation(ctx context.Context, id, owner string, until time.Time) (*Conversation, error)
	// AppendConversationItems appends items, in order, after the
	// conversation's items and releases owner's lock, atomically: nobody
	// sees part of them, and an append that fails leaves none of them.
	// Item ids are unique in a conversation: an mcp_call item whose id it
	// holds replaces that item in place (a server-side call paused with
	// its turn, executed in a continuation: Replaces); any other item
	// whose id it holds fails the append with a *DuplicateItemError.
	// ErrConflict when owner does not hold the lock (any more): a lock
	// that lapsed is still its holder's until another owner takes it (a
	// response that ran past its LockUntil, which nobody else wrote
	// meanwhile, still appends its turn). The conversation's Cut becomes
	// cut. With no items it only releases the lock (Cut left as it was).
	AppendConversationItems(ctx context.Context, id, owner string, items []api.Item, cut string) error
	// ListConversationItems pages through the conversation's items (opts as for input
	// items: after an item id, limit, order, default desc).
	ListConversationItems(ctx context.Context, id string, opts api.ListOptions) (*ItemPage, error)
	// LoadConversationItems returns all the conversation's items in order; an error
	// wrapping ErrTooManyItems when it holds more than max.
	LoadConversationItems(ctx context.Context, id string, max int) ([]api.Item, error)
	// GetConversationItem returns the item with itemID; ErrNotFound when the
	// conversation holds none (the error then says which was not found:
	// see ItemNotFound).
	GetConversationItem(ctx context.Context, id, itemID string) (*api.Item, error)
	// DeleteConversationItem deletes the item with itemID and returns the
	// conversation; the conversation and an error wrapping ErrPartlyDeleted
	// when the item is gone but parts of it remain (they expire).
	DeleteConversationItem(ctx context.Context, id, itemID string) (*Conversation, error)
}

// ItemNotFoundError is the error of an item that a conversation does not
// hold; it matches ErrNotFound.
type ItemNotFoundError struct{ ConversationID, ItemID string }

func (e *ItemNotFoundError) Error() string {
	return fmt.Sprintf("conversation %s has no item %s", e.ConversationID, e.ItemID)
}

// Is reports whether target is ErrNotFound.
func (e *ItemNotFoundError) Is(target error) bool { return target == ErrNotFound }

// Replaces reports whether it, appended to a conversation holding an item
// with its id, replaces that item (AppendConversationItems): an mcp_call
// does, the call executed after its turn paused.
func Replaces(it *api.Item) bool { return it.Type == api.ItemMCPCall }

// DuplicateItemError is the error of an item appended with the id of an
// item the conversation holds already; it matches ErrConflict.
type DuplicateItemError struct{ ConversationID, ItemID string }

func (e *DuplicateItemError) Error() string {
	return fmt.Sprintf("conversation %s holds an item %s already", e.ConversationID, e.ItemID)
}

// Is reports whether target is ErrConflict.
func (e *DuplicateItemError) Is(target error) bool { return target == ErrConflict }

// ItemCursorError is InvalidCursorError for a conversation's items.
func ItemCursorError(after string) error {
	return fmt.Errorf("%w: %w", ErrInvalidCursor,
		api.InvalidRequest("after", "No item with id '%s' in this conversation.", after))
}

// AssignItemIDs gives every item without an id a new one (its type's
// prefix, as OpenAI's ids) and a status completed when it has none.
func AssignItemIDs(items []api.Item) {
	for i := range items {
		if items[i].ID == "" {
			items[i].ID = api.NewID(api.ItemIDPrefix(items[i].Type))
		}
		if items[i].Status == "" {
			items[i].Status = api.ItemCompleted
		}
	}
}
