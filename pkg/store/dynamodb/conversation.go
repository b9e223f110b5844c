package dynamodb

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/store"
	"github.com/lambent/lambent/pkg/tenant"
)

var _ store.ConversationStore = (*Store)(nil)

// Sort keys and attributes of a conversation's partition (see the package
// doc, "Conversations").
const (
	skConversation = "conversation"
	skItemPrefix   = "item#"
	skItemIDPrefix = "id#"
	attrNext       = "next"
	attrLock       = "lock"
	attrLockUntil  = "lock_until"
	attrMetadata   = "metadata"
	attrCut        = "cut"
	// maxTxItems is the most conversation items one TransactWriteItems
	// appends: two rows each and the head stay within DynamoDB's 100
	// actions.
	maxTxItems = 48
	// maxTxBytes bounds the bodies one TransactWriteItems carries, under
	// its 4 MB limit.
	maxTxBytes = 3 << 20
	// createLockTime is how long CreateConversation holds the lock of a
	// conversation whose first items it appends.
	createLockTime = time.Minute
)

// convHead is the head item of a conversation.
type convHead struct {
	PK        string       `dynamodbav:"pk"`
	SK        string       `dynamodbav:"sk"`
	CreatedAt int64        `dynamodbav:"created_at"`
	ExpiresAt int64        `dynamodbav:"expires_at"`
	Metadata  convMetadata `dynamodbav:"metadata"`
	Next      int64        `dynamodbav:"next"`
	Lock      string       `dynamodbav:"lock,omitempty"`
	LockUntil int64        `dynamodbav:"lock_until,omitempty"`
	// Gen is random per create: a create retried after its answer was
	// lost recognises its own head (ownHead).
	Gen string `dynamodbav:"gen,omitempty"`
	// Cut is store.Conversation.Cut, an attribute the releases before it
	// ignore (they start a response uncut, and their appends leave it).
	Cut string `dynamodbav:"cut,omitempty"`
}

func (h *convHead) conversation(id string) *store.Conversation {
	c := &store.Conversation{ID: id, CreatedAt: h.CreatedAt, Metadata: h.Metadata, ExpiresAt: time.Unix(h.ExpiresAt, 0), Next: h.Next, Lock: h.Lock, Cut: h.Cut}
	if h.LockUntil != 0 {
		c.LockUntil = time.Unix(h.LockUntil, 0)
	}
	return c
}

// convMetadata is a conversation's metadata as its head keeps it: a map
// attribute, or a JSON object in a string attribute when it has an empty
// key, which a map attribute refuses. A map is what releases before
// convMetadata read (during a rolling deploy they read the heads this one
// writes); both read here.
type convMetadata map[string]string

// MarshalDynamoDBAttributeValue writes m as a map (nil: {}), or as a JSON
// object when it has an empty key.
func (m convMetadata) MarshalDynamoDBAttributeValue() (types.AttributeValue, error) {
	if m == nil {
		m = convMetadata{}
	}
	if _, ok := m[""]; !ok {
		return attributevalue.Marshal(map[string]string(m))
	}
	b, err := json.Marshal(map[string]string(m))
	if err != nil {
		return nil, err
	}
	return &types.AttributeValueMemberS{Value: string(b)}, nil
}

// UnmarshalDynamoDBAttributeValue reads a JSON object, or a map.
func (m *convMetadata) UnmarshalDynamoDBAttributeValue(av types.AttributeValue) error {
	var md map[string]string
	switch v := av.(type) {
	case *types.AttributeValueMemberS:
		if err := json.Unmarshal([]byte(v.Value), &md); err != nil {
			return fmt.Errorf("metadata: %w", err)
		}
	case *types.AttributeValueMemberM:
		if err := attributevalue.UnmarshalMap(v.Value, &md); err != nil {
			return fmt.Errorf("metadata: %w", err)
		}
	}
	*m = md
	return nil
}

// convItem is one item of a conversation: its JSON, gzip-compressed, in
// the row or (past inlineMax) in chunks of generation Gen.
type convItem struct {
	PK        string `dynamodbav:"pk"`
	SK        string `dynamodbav:"sk"`
	ID        string `dynamodbav:"id"`
	ExpiresAt int64  `dynamodbav:"expires_at"`
	Body      []byte `dynamodbav:"body,omitempty"`
	Gen       string `dynamodbav:"gen,omitempty"`
	Chunks    int    `dynamodbav:"chunks,omitempty"`
	// ModelCallID, TurnStart and Listed are the item's api.ItemHidden,
	// which its JSON (the wire shape) leaves out.
	ModelCallID string `dynamodbav:"model_call_id,omitempty"`
	TurnStart   bool   `dynamodbav:"turn_start,omitempty"`
	Listed      bool   `dynamodbav:"listed,omitempty"`
	// StateHidden marks a reasoning item whose encrypted_content in the
	// body is its hidden state (api.ItemHidden.Encrypted), not shown to
	// the client: kept in the body, whose size the chunks handle.
	StateHidden bool `dynamodbav:"state_hidden,omitempty"`
}

// convIndex points from an item id to the item's sequence number.
type convIndex struct {
	PK        string `dynamodbav:"pk"`
	SK        string `dynamodbav:"sk"`
	Seq       int64  `dynamodbav:"seq"`
	ExpiresAt int64  `dynamodbav:"expires_at"`
}

func itemSK(seq int64) string { return fmt.Sprintf("%s%016d", skItemPrefix, seq) }

func convPK(ctx context.Context, id string) string { return pk(tenant.From(ctx), id) }

// CreateConversation stores c: a conditional PutItem of its head, then
// (with items) their append as AppendConversationItems does, under a lock
// the create holds meanwhile; an append that fails deletes the head (and
// what the append wrote).
func (s *Store) CreateConversation(ctx context.Context, c *store.Conversation, items []api.Item) error {
	if c.ExpiresAt.IsZero() {
		c.ExpiresAt = s.now().Add(s.retention)
	}
	h := convHead{PK: convPK(ctx, c.ID), SK: skConversation, CreatedAt: c.CreatedAt, ExpiresAt: c.ExpiresAt.Unix(), Metadata: c.Metadata, Gen: newGen()}
	owner := ""
	if len(items) > 0 {
		owner = "create_" + h.Gen
		h.Lock, h.LockUntil = owner, s.now().Add(createLockTime).Unix()
	}
	item, err := attributevalue.MarshalMap(h)
	if err != nil {
		return fmt.Errorf("dynamodb: create conversation %s: %w", c.ID, err)
	}
	cond := expression.AttributeNotExists(expression.Name(attrPK)).
		Or(expression.Name(attrExpiresAt).LessThanEqual(expression.Value(s.nowUnix())))
	ex, err := expression.NewBuilder().WithCondition(cond).Build()
	if err != nil {
		return fmt.Errorf("dynamodb: create conversation %s: %w", c.ID, err)
	}
	_, err = s.api.PutItem(ctx, &ddb.PutItemInput{
		TableName: s.table, Item: item,
		ConditionExpression: ex.Condition(), ExpressionAttributeNames: ex.Names(), ExpressionAttributeValues: ex.Values(),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if err != nil {
		var ccf *types.ConditionalCheckFailedException
		switch {
		case !errors.As(err, &ccf):
			return fmt.Errorf("dynamodb: create conversation %s: %w", c.ID, err)
		case !ownHead(ccf.Item, h.Gen):
			return fmt.Errorf("dynamodb: create conversation %s: %w", c.ID, store.ErrConflict)
		}
		// The head is this create's own: a retry whose first attempt
		// succeeded.
	}
	c.Next = 0
	if len(items) == 0 {
		return nil
	}
	if err := s.append(ctx, c.ID, &h, owner, items, ""); err != nil {
		// The create fails whole: its caller never learns the id of a
		// conversation left behind. Best effort: what remains expires.
		_ = s.DeleteConversation(ctx, c.ID)
		return err
	}
	c.Next = int64(len(items))
	return nil
}

// ownHead reports whether old (the head that failed a create's condition)
// is the one the create of generation gen put: a retried PutItem whose
// first attempt had succeeded.
func ownHead(old map[string]types.AttributeValue, gen string) bool {
	var h convHead
	return old != nil && attributevalue.UnmarshalMap(old, &h) == nil && h.Gen == gen
}

// readConv returns the live head of conversation id; ErrNotFound when
// absent or expired.
func (s *Store) readConv(ctx context.Context, id string) (*convHead, error) {
	out, err := s.api.GetItem(ctx, &ddb.GetItemInput{TableName: s.table, Key: keyOf(convPK(ctx, id), skConversation), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return nil, fmt.Errorf("dynamodb: get conversation %s: %w", id, err)
	}
	return s.liveConv(id, out.Item)
}

// liveConv decodes a head item; ErrNotFound when nil or expired.
func (s *Store) liveConv(id string, item map[string]types.AttributeValue) (*convHead, error) {
	if item == nil {
		return nil, fmt.Errorf("dynamodb: conversation %s: %w", id, store.ErrNotFound)
	}
	var h convHead
	if err := attributevalue.UnmarshalMap(item, &h); err != nil {
		return nil, fmt.Errorf("dynamodb: conversation %s: %w: %v", id, store.ErrCorrupt, err)
	}
	if h.ExpiresAt <= s.nowUnix() {
		return nil, fmt.Errorf("dynamodb: conversation %s: %w", id, store.ErrNotFound)
	}
	return &h, nil
}

// GetConversation returns the conversation: one consistent GetItem.
func (s *Store) GetConversation(ctx context.Context, id string) (*store.Conversation, error) {
	h, err := s.readConv(ctx, id)
	if err != nil {
		return nil, err
	}
	return h.conversation(id), nil
}

// updateConv applies update to the live head of conversation id under
// cond (besides its being live) and returns the new head: one UpdateItem.
// A failed condition is ErrNotFound (no live head) or failed(old head).
func (s *Store) updateConv(ctx context.Context, id string, update expression.UpdateBuilder, cond *expression.ConditionBuilder, failed func(*convHead) error) (*convHead, error) {
	live := expression.AttributeExists(expression.Name(attrPK)).
		And(expression.Name(attrExpiresAt).GreaterThan(expression.Value(s.nowUnix())))
	if cond != nil {
		live = live.And(*cond)
	}
	ex, err := expression.NewBuilder().WithUpdate(update).WithCondition(live).Build()
	if err != nil {
		return nil, fmt.Errorf("dynamodb: update conversation %s: %w", id, err)
	}
	out, err := s.api.UpdateItem(ctx, &ddb.UpdateItemInput{
		TableName: s.table, Key: keyOf(convPK(ctx, id), skConversation),
		UpdateExpression: ex.Update(), ConditionExpression: ex.Condition(),
		ExpressionAttributeNames: ex.Names(), ExpressionAttributeValues: ex.Values(),
		ReturnValues:                        types.ReturnValueAllNew,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if err != nil {
		var ccf *types.ConditionalCheckFailedException
		if errors.As(err, &ccf) {
			old, lerr := s.liveConv(id, ccf.Item)
			if lerr != nil {
				return nil, lerr
			}
			return nil, failed(old)
		}
		return nil, fmt.Errorf("dynamodb: update conversation %s: %w", id, err)
	}
	return s.liveConv(id, out.Attributes)
}

// SetConversationMetadata replaces the metadata: one UpdateItem.
func (s *Store) SetConversationMetadata(ctx context.Context, id string, md map[string]string) (*store.Conversation, error) {
	h, err := s.updateConv(ctx, id, expression.Set(expression.Name(attrMetadata), expression.Value(convMetadata(md))), nil,
		func(*convHead) error { return fmt.Errorf("dynamodb: conversation %s: %w", id, store.ErrConflict) })
	if err != nil {
		return nil, err
	}
	return h.conversation(id), nil
}

// LockConversation takes the lock: one conditional UpdateItem.
func (s *Store) LockConversation(ctx context.Context, id, owner string, until time.Time) (*store.Conversation, error) {
	now := s.nowUnix()
	free := expression.AttributeNotExists(expression.Name(attrLock)).
		Or(expression.Name(attrLockUntil).LessThanEqual(expression.Value(now))).
		Or(expression.Name(attrLock).Equal(expression.Value(owner)))
	upd := expression.Set(expression.Name(attrLock), expression.Value(owner)).
		Set(expression.Name(attrLockUntil), expression.Value(until.Unix()))
	h, err := s.updateConv(ctx, id, upd, &free, func(*convHead) error {
		return fmt.Errorf("dynamodb: conversation %s: %w", id, store.ErrLocked)
	})
	if err != nil {
		return nil, err
	}
	return h.conversation(id), nil
}

// AppendConversationItems appends items and releases owner's lock: a
// consistent read of the head, then one TransactWriteItems per 48 items
// (or 3 MB) holding each item's row and its id's row, conditional on
// owner's lock (lapsed or not: see store.ConversationStore) and the
// sequence number read (a check of the head), the
// last one updating the head (next sequence number past every item, the
// cut, the lock released). Items larger than a row keep
// their body in chunks, written before.
// An append whose replaced item is deleted under it (errReplacedGone) is
// tried again, appendAttempts times in all.
func (s *Store) AppendConversationItems(ctx context.Context, id, owner string, items []api.Item, cut string) error {
	for try := 1; ; try++ {
		h, err := s.readConv(ctx, id)
		if err != nil {
			return err
		}
		if h.Lock != owner {
			return fmt.Errorf("dynamodb: append to conversation %s: the lock of %s is not held: %w", id, owner, store.ErrConflict)
		}
		err = s.append(ctx, id, h, owner, items, cut)
		if !errors.Is(err, errReplacedGone) || try == appendAttempts {
			return err
		}
	}
}

// errReplacedGone: an item that an append replaces (store.Replaces) was
// deleted between the append's read of its id row and its transaction.
// Tried again, the append finds it gone and appends the item anew.
var errReplacedGone = errors.New("an item the append replaces was deleted meanwhile")

// appendAttempts bounds the tries of an append (errReplacedGone).
const appendAttempts = 3

// append writes items after head h (read under owner's lock), and cut
// as the conversation's (setCut). A long
// append takes several transactions (maxTxItems, maxTxBytes): the rows of
// all but the last are written above the head's next, where no reader
// looks, and the last moves next past them all and rewrites the rows of
// the items it replaces (store.Replaces), so that nobody sees part of the
// append, and one that fails leaves nothing seen (its rows, above next,
// are overwritten by the next append or expire).
func (s *Store) append(ctx context.Context, id string, h *convHead, owner string, items []api.Item, cut string) error {
	for i := range items {
		if slices.IndexFunc(items[:i], func(it api.Item) bool { return it.ID == items[i].ID }) >= 0 {
			return &store.DuplicateItemError{ConversationID: id, ItemID: items[i].ID}
		}
	}
	a, err := s.newConvAppend(id, h, owner, cut, len(items))
	if err != nil {
		return fmt.Errorf("dynamodb: append to conversation %s: %w", id, err)
	}
	for i := range items {
		if err := a.add(ctx, &items[i]); err != nil {
			return fmt.Errorf("dynamodb: append to conversation %s: %w", id, err)
		}
	}
	if err := a.flush(ctx, true); err != nil {
		return fmt.Errorf("dynamodb: append to conversation %s: %w", id, err)
	}
	return nil
}

// convAppend is the state of one append (Store.append): the transaction
// being built and the replacements of held items it keeps for the last.
type convAppend struct {
	s         *Store
	id        string // the conversation's id
	p         string // its partition key
	owner     string // the lock's owner
	cut       string // the conversation's cut (setCut)
	n         int    // the number of items appended
	start     int64  // the head's next, as read
	expiresAt int64  // the head's expiry, given to every row
	next      int64  // the sequence number of the next new item

	tx      []types.TransactWriteItem
	txIDs   []string // the ids of the items in tx
	txBytes int
	// The replacements of held items (their rows are below next, where
	// readers look) go in the last transaction, with the head's update.
	replaced      []types.TransactWriteItem
	replacedIDs   []string
	replacedBytes int

	idCond expression.Expression // the condition on a new item's id row
	heldID expression.Expression // the condition on a held item's id row
}

// newConvAppend starts an append of n items after head h, read under
// owner's lock.
func (s *Store) newConvAppend(id string, h *convHead, owner, cut string, n int) (*convAppend, error) {
	a := &convAppend{s: s, id: id, p: h.PK, owner: owner, cut: cut, n: n,
		start: h.Next, expiresAt: h.ExpiresAt, next: h.Next}
	// An id row is new, or one a failed append left above next.
	newID := expression.AttributeNotExists(expression.Name(attrPK)).
		Or(expression.Name("seq").GreaterThanEqual(expression.Value(a.start)))
	var err error
	if a.idCond, err = expression.NewBuilder().WithCondition(newID).Build(); err != nil {
		return nil, err
	}
	if a.heldID, err = expression.NewBuilder().WithCondition(expression.AttributeExists(expression.Name(attrPK))).Build(); err != nil {
		return nil, err
	}
	return a, nil
}

// headAction is the transaction's action on the head, conditional on
// owner's lock, the next read and the conversation live: a check, or in
// the last transaction the update (next past every item, the cut, the
// lock released).
func (a *convAppend) headAction(last bool) (types.TransactWriteItem, error) {
	s := a.s
	cond := expression.Name(attrLock).Equal(expression.Value(a.owner)).
		And(expression.Name(attrNext).Equal(expression.Value(a.start))).
		And(expression.Name(attrExpiresAt).GreaterThan(expression.Value(s.nowUnix())))
	if !last {
		ex, err := expression.NewBuilder().WithCondition(cond).Build()
		if err != nil {
			return types.TransactWriteItem{}, err
		}
		return types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{
			TableName: s.table, Key: keyOf(a.p, skConversation), ConditionExpression: ex.Condition(),
			ExpressionAttributeNames: ex.Names(), ExpressionAttributeValues: ex.Values(),
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		}}, nil
	}
	upd := setCut(expression.Set(expression.Name(attrNext), expression.Value(a.next)).
		Remove(expression.Name(attrLock)).Remove(expression.Name(attrLockUntil)), a.cut, a.n)
	ex, err := expression.NewBuilder().WithUpdate(upd).WithCondition(cond).Build()
	if err != nil {
		return types.TransactWriteItem{}, err
	}
	return types.TransactWriteItem{Update: &types.Update{
		TableName: s.table, Key: keyOf(a.p, skConversation),
		UpdateExpression: ex.Update(), ConditionExpression: ex.Condition(),
		ExpressionAttributeNames: ex.Names(), ExpressionAttributeValues: ex.Values(),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}}, nil
}

// flush sends the transaction with the head's action (headAction) last,
// and starts the next. The last one also holds the replacements of held
// items, after the new items.
func (a *convAppend) flush(ctx context.Context, last bool) error {
	// The actions from fresh on (before the head's) check the id rows
	// of replaced items.
	fresh := len(a.tx)
	if last {
		a.tx, a.txIDs = append(a.tx, a.replaced...), append(a.txIDs, a.replacedIDs...)
	}
	head, err := a.headAction(last)
	if err != nil {
		return err
	}
	a.tx = append(a.tx, head)
	if _, err := a.s.api.TransactWriteItems(ctx, &ddb.TransactWriteItemsInput{TransactItems: a.tx}); err != nil {
		return a.canceled(err, fresh)
	}
	a.tx, a.txIDs, a.txBytes = a.tx[:0], a.txIDs[:0], 0
	return nil
}

// canceled maps the failure err of the transaction tx, whose actions from
// fresh on check the id rows of replaced items: the head's check failed
// (the lock lost, or the conversation gone), a new item's id row exists
// (store.DuplicateItemError), a replaced one's is gone (errReplacedGone),
// or err as it is.
func (a *convAppend) canceled(err error, fresh int) error {
	var tce *types.TransactionCanceledException
	if !errors.As(err, &tce) || len(tce.CancellationReasons) != len(a.tx) {
		return err
	}
	if r := tce.CancellationReasons[len(a.tx)-1]; aws.ToString(r.Code) == "ConditionalCheckFailed" {
		if _, lerr := a.s.liveConv(a.id, r.Item); lerr != nil {
			return lerr
		}
		return fmt.Errorf("the lock of %s was lost: %w", a.owner, store.ErrConflict)
	}
	// The id row of a new item (every second action) exists,
	// or that of a replaced one is gone.
	for j := 1; j < len(a.tx)-1; j += 2 {
		switch {
		case aws.ToString(tce.CancellationReasons[j].Code) != "ConditionalCheckFailed":
		case j >= fresh:
			return fmt.Errorf("item %s: %w", a.txIDs[j/2], errReplacedGone)
		default:
			return &store.DuplicateItemError{ConversationID: a.id, ItemID: a.txIDs[j/2]}
		}
	}
	return err
}

// add adds the rows of item: its row and its id row's, in tx, which is
// sent first when item would overfill it (maxTxItems, maxTxBytes), or
// the rewrite of a held item's row and a check of its id row, kept for
// the last transaction.
func (a *convAppend) add(ctx context.Context, item *api.Item) error {
	// An mcp_call the conversation holds (store.Replaces) takes the
	// place of that item: its row is rewritten, its id row checked.
	seq, held, stale := a.next, false, int64(-1)
	if store.Replaces(item) {
		at, ok, st, err := a.s.heldAt(ctx, a.p, item.ID, a.start)
		if err != nil {
			return err
		}
		if held = ok; held {
			seq = at
		} else if st {
			stale = at
		}
	}
	row, err := a.s.itemRow(ctx, a.p, seq, a.expiresAt, item)
	if err != nil {
		return err
	}
	if len(a.tx) > 0 && ((len(a.tx)+len(a.replaced))/2 >= maxTxItems || a.txBytes+a.replacedBytes+len(row.Body) > maxTxBytes) {
		if err := a.flush(ctx, false); err != nil {
			return err
		}
	}
	ri, err := attributevalue.MarshalMap(row)
	if err != nil {
		return err
	}
	if held {
		a.replaced = append(a.replaced, types.TransactWriteItem{Put: &types.Put{TableName: a.s.table, Item: ri}},
			types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{TableName: a.s.table, Key: keyOf(a.p, skItemIDPrefix+item.ID),
				ConditionExpression: a.heldID.Condition(), ExpressionAttributeNames: a.heldID.Names()}})
		a.replacedIDs = append(a.replacedIDs, item.ID)
		a.replacedBytes += len(row.Body)
		return nil
	}
	a.next++
	ii, err := attributevalue.MarshalMap(convIndex{PK: a.p, SK: skItemIDPrefix + item.ID, Seq: seq, ExpiresAt: a.expiresAt})
	if err != nil {
		return err
	}
	// An id row is new (or one a failed append left above next):
	// item ids are unique in a conversation. A stale one (heldAt) is
	// replaced as it was read.
	cond := a.idCond
	if stale >= 0 {
		if cond, err = expression.NewBuilder().WithCondition(expression.Name("seq").Equal(expression.Value(stale))).Build(); err != nil {
			return err
		}
	}
	a.tx = append(a.tx, types.TransactWriteItem{Put: &types.Put{TableName: a.s.table, Item: ri}},
		types.TransactWriteItem{Put: &types.Put{TableName: a.s.table, Item: ii,
			ConditionExpression: cond.Condition(), ExpressionAttributeNames: cond.Names(), ExpressionAttributeValues: cond.Values()}})
	a.txIDs = append(a.txIDs, item.ID)
	a.txBytes += len(row.Body)
	return nil
}

// setCut adds the conversation's cut to upd, the head's update of an
// append of n items: cut, or none when it is empty; without items the cut
// is left as it is.
func setCut(upd expression.UpdateBuilder, cut string, n int) expression.UpdateBuilder {
	switch {
	case n == 0:
		return upd
	case cut == "":
		return upd.Remove(expression.Name(attrCut))
	}
	return upd.Set(expression.Name(attrCut), expression.Value(cut))
}

// itemRow encodes item as the row of sequence number seq; a body larger
// than a row is written to chunks first (left to TTL if the append fails).
func (s *Store) itemRow(ctx context.Context, p string, seq, expiresAt int64, item *api.Item) (*convItem, error) {
	stored := item
	if item.Hidden.Encrypted != "" {
		c := *item
		c.EncryptedContent = item.Hidden.Encrypted
		stored = &c
	}
	body, n, err := s.codec.compressJSON(stored)
	if err != nil {
		if errors.Is(err, errTooLargeRaw) {
			err = s.codec.tooLarge(n)
		}
		return nil, fmt.Errorf("item %s: %w", item.ID, err)
	}
	row := &convItem{PK: p, SK: itemSK(seq), ID: item.ID, ExpiresAt: expiresAt, ModelCallID: item.Hidden.ModelCallID, TurnStart: item.Hidden.TurnStart, Listed: item.Hidden.Listed,
		StateHidden: item.Hidden.Encrypted != ""}
	if len(body) <= s.inlineMax {
		row.Body = body
		return row, nil
	}
	chunks, err := s.split(body)
	if err != nil {
		return nil, fmt.Errorf("item %s: %w", item.ID, err)
	}
	row.Gen, row.Chunks = newGen(), len(chunks)
	if err := s.putChunks(ctx, p, row.Gen, expiresAt, chunks); err != nil {
		s.dropChunks(ctx, p, row.Gen, len(chunks))
		return nil, fmt.Errorf("item %s: write chunks: %w", item.ID, err)
	}
	return row, nil
}

// decodeRow returns the item a row holds (reading its chunks if any).
func (s *Store) decodeRow(ctx context.Context, id string, row *convItem) (api.Item, error) {
	body := row.Body
	if row.Chunks > 0 {
		parts, missing, err := s.readChunks(ctx, row.PK, row.Gen, row.Chunks)
		if err != nil {
			return api.Item{}, fmt.Errorf("dynamodb: conversation %s: item %s: %w", id, row.ID, err)
		}
		if missing > 0 {
			return api.Item{}, fmt.Errorf("dynamodb: conversation %s: item %s: %w: %d of %d chunks missing", id, row.ID, store.ErrCorrupt, missing, row.Chunks)
		}
		body = bytes.Join(parts, nil)
	}
	var it api.Item
	if err := s.codec.decompressJSON(bytes.NewReader(body), &it); err != nil {
		return api.Item{}, fmt.Errorf("dynamodb: conversation %s: item %s: %w", id, row.ID, err)
	}
	it.Hidden = api.ItemHidden{ModelCallID: row.ModelCallID, TurnStart: row.TurnStart, Listed: row.Listed}
	if row.StateHidden {
		it.Hidden.Encrypted, it.EncryptedContent = it.EncryptedContent, ""
	}
	return it, nil
}

// queryItems returns the rows of sequence numbers lo..hi (inclusive), in
// order (or reversed: desc), at most max of them (max+1 with more: the
// caller's has_more): consistent Query calls, one per 1 MB.
func (s *Store) queryItems(ctx context.Context, p string, lo, hi int64, desc bool, max int) ([]convItem, error) {
	if lo > hi {
		return nil, nil
	}
	kc := expression.Key(attrPK).Equal(expression.Value(p)).
		And(expression.Key(attrSK).Between(expression.Value(itemSK(lo)), expression.Value(itemSK(hi))))
	ex, err := expression.NewBuilder().WithKeyCondition(kc).Build()
	if err != nil {
		return nil, err
	}
	in := &ddb.QueryInput{
		TableName: s.table, KeyConditionExpression: ex.KeyCondition(),
		ExpressionAttributeNames: ex.Names(), ExpressionAttributeValues: ex.Values(),
		ConsistentRead: aws.Bool(true), ScanIndexForward: aws.Bool(!desc),
	}
	var rows []convItem
	for {
		in.Limit = aws.Int32(int32(min(max-len(rows), 1000)))
		out, err := s.api.Query(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("query items: %w", err)
		}
		for _, item := range out.Items {
			var r convItem
			if err := attributevalue.UnmarshalMap(item, &r); err != nil {
				return nil, fmt.Errorf("%w: conversation item: %v", store.ErrCorrupt, err)
			}
			rows = append(rows, r)
		}
		if len(out.LastEvaluatedKey) == 0 || len(rows) >= max {
			return rows, nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

// heldAt returns the sequence number of the live item itemID of partition
// p, and whether there is one: its id row below next and its row holding
// that id. An id row a failed append left above next, which next has since
// passed, points at another item's row: stale is true, and the id is free.
func (s *Store) heldAt(ctx context.Context, p, itemID string, next int64) (seq int64, held, stale bool, err error) {
	seq, ok, err := s.seqOf(ctx, p, itemID, next)
	if err != nil || !ok {
		return seq, false, false, err
	}
	proj, err := expression.NewBuilder().WithProjection(expression.NamesList(expression.Name("id"))).Build()
	if err != nil {
		return 0, false, false, err
	}
	out, err := s.api.GetItem(ctx, &ddb.GetItemInput{TableName: s.table, Key: keyOf(p, itemSK(seq)), ConsistentRead: aws.Bool(true),
		ProjectionExpression: proj.Projection(), ExpressionAttributeNames: proj.Names()})
	if err != nil {
		return 0, false, false, err
	}
	var r struct {
		ID string `dynamodbav:"id"`
	}
	if out.Item == nil || attributevalue.UnmarshalMap(out.Item, &r) != nil || r.ID != itemID {
		return seq, false, true, nil
	}
	return seq, true, false, nil
}

// seqOf returns the sequence number of the item itemID of partition p,
// false when no live item has it (below next).
func (s *Store) seqOf(ctx context.Context, p, itemID string, next int64) (int64, bool, error) {
	if itemID == "" || len(itemID) > api.MaxItemIDLen {
		return 0, false, nil
	}
	out, err := s.api.GetItem(ctx, &ddb.GetItemInput{TableName: s.table, Key: keyOf(p, skItemIDPrefix+itemID), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return 0, false, err
	}
	if out.Item == nil {
		return 0, false, nil
	}
	var ix convIndex
	if err := attributevalue.UnmarshalMap(out.Item, &ix); err != nil {
		return 0, false, fmt.Errorf("%w: item index: %v", store.ErrCorrupt, err)
	}
	return ix.Seq, ix.Seq < next, nil
}

// ListConversationItems pages through the items: a consistent GetItem of
// the head, one of the cursor's id row (with after), and a Query of at
// most limit+1 rows (with after, from the cursor's own row, which is
// checked: pageRows) — O(page), whatever the conversation's length.
func (s *Store) ListConversationItems(ctx context.Context, id string, opts api.ListOptions) (*store.ItemPage, error) {
	h, err := s.readConv(ctx, id)
	if err != nil {
		return nil, err
	}
	limit := opts.PageSize()
	rows, err := s.pageRows(ctx, h, opts, limit+1)
	if err != nil {
		if errors.Is(err, store.ErrInvalidCursor) {
			return nil, err
		}
		return nil, fmt.Errorf("dynamodb: list items of %s: %w", id, err)
	}
	page := &store.ItemPage{HasMore: len(rows) > limit}
	rows = rows[:min(len(rows), limit)]
	page.Items = make([]api.Item, 0, len(rows))
	for i := range rows {
		it, err := s.decodeRow(ctx, id, &rows[i])
		if err != nil {
			return nil, err
		}
		page.Items = append(page.Items, it)
	}
	return page, nil
}

// pageRows returns at most max rows of the page opts asks for, of the
// conversation of head h. With after, the Query starts at the cursor's own
// row, which must hold the cursor's id (an id row a failed append left
// above next, which next has since passed, points at another item's row:
// heldAt) and is left out; store.ItemCursorError otherwise.
func (s *Store) pageRows(ctx context.Context, h *convHead, opts api.ListOptions, max int) ([]convItem, error) {
	desc := opts.Descending()
	lo, hi := int64(0), h.Next-1
	if opts.After == "" {
		return s.queryItems(ctx, h.PK, lo, hi, desc, max)
	}
	seq, ok, err := s.seqOf(ctx, h.PK, opts.After, h.Next)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, store.ItemCursorError(opts.After)
	}
	if desc {
		hi = seq
	} else {
		lo = seq
	}
	rows, err := s.queryItems(ctx, h.PK, lo, hi, desc, max+1)
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 || rows[0].SK != itemSK(seq) || rows[0].ID != opts.After {
		return nil, store.ItemCursorError(opts.After)
	}
	return rows[1:], nil
}

// LoadConversationItems returns every item in order: a consistent GetItem
// of the head and Query calls of 1 MB each — O(conversation), the model's
// context.
func (s *Store) LoadConversationItems(ctx context.Context, id string, max int) ([]api.Item, error) {
	h, err := s.readConv(ctx, id)
	if err != nil {
		return nil, err
	}
	rows, err := s.queryItems(ctx, h.PK, 0, h.Next-1, false, max+1)
	if err != nil {
		return nil, fmt.Errorf("dynamodb: load items of %s: %w", id, err)
	}
	if len(rows) > max {
		return nil, fmt.Errorf("dynamodb: conversation %s: more than %d items: %w", id, max, store.ErrTooManyItems)
	}
	items := make([]api.Item, 0, len(rows))
	for i := range rows {
		it, err := s.decodeRow(ctx, id, &rows[i])
		if err != nil {
			return nil, err
		}
		items = append(items, it)
	}
	return items, nil
}

// row returns the row of the item itemID and the conversation's head:
// three consistent GetItem calls (head, id row, item row).
func (s *Store) row(ctx context.Context, id, itemID string) (*convHead, *convItem, error) {
	h, err := s.readConv(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	seq, ok, err := s.seqOf(ctx, h.PK, itemID, h.Next)
	if err != nil {
		return nil, nil, fmt.Errorf("dynamodb: conversation %s: item %s: %w", id, itemID, err)
	}
	notFound := &store.ItemNotFoundError{ConversationID: id, ItemID: itemID}
	if !ok {
		return nil, nil, notFound
	}
	out, err := s.api.GetItem(ctx, &ddb.GetItemInput{TableName: s.table, Key: keyOf(h.PK, itemSK(seq)), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return nil, nil, fmt.Errorf("dynamodb: conversation %s: item %s: %w", id, itemID, err)
	}
	var r convItem
	if out.Item == nil {
		return nil, nil, notFound
	}
	if err := attributevalue.UnmarshalMap(out.Item, &r); err != nil {
		return nil, nil, fmt.Errorf("dynamodb: conversation %s: item %s: %w: %v", id, itemID, store.ErrCorrupt, err)
	}
	if r.ID != itemID {
		return nil, nil, notFound // the id row of an append that failed
	}
	return h, &r, nil
}

// GetConversationItem returns the item itemID.
func (s *Store) GetConversationItem(ctx context.Context, id, itemID string) (*api.Item, error) {
	_, r, err := s.row(ctx, id, itemID)
	if err != nil {
		return nil, err
	}
	it, err := s.decodeRow(ctx, id, r)
	if err != nil {
		return nil, err
	}
	return &it, nil
}

// DeleteConversationItem deletes the item itemID (its row and its id row,
// then its chunks, which nobody reads once the row is gone) and returns
// the conversation; with store.ErrPartlyDeleted when chunks remain.
func (s *Store) DeleteConversationItem(ctx context.Context, id, itemID string) (*store.Conversation, error) {
	h, r, err := s.row(ctx, id, itemID)
	if err != nil {
		return nil, err
	}
	if err := s.batchWrite(ctx, []types.WriteRequest{
		{DeleteRequest: &types.DeleteRequest{Key: keyOf(h.PK, r.SK)}},
		{DeleteRequest: &types.DeleteRequest{Key: keyOf(h.PK, skItemIDPrefix+itemID)}},
	}); err != nil {
		return nil, fmt.Errorf("dynamodb: conversation %s: delete item %s: %w", id, itemID, err)
	}
	if r.Chunks > 0 {
		if err := s.deleteChunks(ctx, h.PK, r.Gen, r.Chunks); err != nil {
			return h.conversation(id), fmt.Errorf("dynamodb: conversation %s: delete item %s: %w: of its %d chunk items: %w", id, itemID, store.ErrPartlyDeleted, r.Chunks, err)
		}
	}
	return h.conversation(id), nil
}

// DeleteConversation deletes the head (a conditional DeleteItem: from then
// on nobody finds the conversation, and a running response's append
// fails), then every other item of its partition (Query of the keys,
// BatchWriteItem), best effort: what remains expires
// (store.ErrPartlyDeleted).
func (s *Store) DeleteConversation(ctx context.Context, id string) error {
	p := convPK(ctx, id)
	// A head an earlier attempt deleted (deleteLive) leaves the same
	// rows to delete.
	if _, err := s.deleteLive(ctx, keyOf(p, skConversation)); err != nil {
		return fmt.Errorf("dynamodb: delete conversation %s: %w", id, err)
	}
	if err := s.clearPartition(ctx, p); err != nil {
		return fmt.Errorf("dynamodb: delete conversation %s: %w: of its items: %w", id, store.ErrPartlyDeleted, err)
	}
	return nil
}
