package apigw

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/lambent/lambent/pkg/store"
	"github.com/lambent/lambent/pkg/store/dynamodb"
	"github.com/lambent/lambent/pkg/tenant"
)

// MaxConnectionDuration is API Gateway's limit of a WebSocket connection
// (2 hours): what the connections table keeps expires by then at the
// latest.
const MaxConnectionDuration = 2 * time.Hour

// Attributes of a connection item. Its key is pk "connection#<id>", sk
// "connection": the sort key no response item has, so connections and
// the records of package store/dynamodb share the table's key schema
// (pk, sk, TTL on expires_at) without meeting.
const (
	connPKPrefix    = "connection#"
	connSK          = "connection"
	attrPK          = "pk"
	attrSK          = "sk"
	attrTenant      = "tenant"
	attrConnectedAt = "connected_at"
	attrLanes       = "lanes"
	attrLaneID      = "id"
	attrPointer     = "pointer"
	attrTurn        = "turn"
	attrVersion     = "version"
	attrExpiresAt   = "expires_at"
	// attrLatest is the latest response of the lane without stream_id, as
	// items written before lanes keep it (and the release before lanes
	// reads it).
	attrLatest = "latest"
	// laneKeyPrefix starts the key of a lane in the lanes map, so that the
	// lane without stream_id ("") has a key that is not empty.
	laneKeyPrefix = "lane:"
)

// Connections is the connection table of the WebSocket API: for each open
// connection its tenant, when it opened, the request id of the turn it
// last started and the id of the latest response of each of its lanes
// (stream_id; wsapi.Cache),
// whose record (store: false ones included) lives in the same table through
// a store/dynamodb.Store. The HTTP API has no access to this table, so
// nothing kept here is readable through it. Every item expires with
// the connection (connected_at + MaxConnectionDuration) and $disconnect
// deletes the connection's items at once.
type Connections struct {
	db      dynamodb.API
	table   *string
	records *dynamodb.Store
}

// NewConnections returns the connections of table through client.
func NewConnections(client dynamodb.API, table string) (*Connections, error) {
	records, err := dynamodb.New(client, dynamodb.Config{Table: table})
	if err != nil {
		return nil, fmt.Errorf("websocket connections: %w", err)
	}
	return &Connections{db: client, table: aws.String(table), records: records}, nil
}

// Records is the store of the connections' responses (tests create its
// table with EnsureTable).
func (c *Connections) Records() *dynamodb.Store { return c.records }

// Connection is one open connection and its cache (wsapi.Cache): the
// latest response of each lane, replaced by the lane's every new one.
type Connection struct {
	ID          string
	Tenant      string
	ConnectedAt time.Time
	// Latest is the latest response of each lane ("": the lane of a
	// response.create without stream_id).
	Latest map[string]Latest
	// Turn is the request id of the last turn started on the connection
	// (Begin).
	Turn string
	// version counts the writes of the connection's item: a write
	// succeeds only over the version it read (swap).
	version int64
	c       *Connections
}

// Latest is the latest response of a lane.
type Latest struct {
	ID string
	// Pointer says the response is only pointed at: its record is in the
	// engine's shared store, not in this table (sharedCache).
	Pointer bool
}

func connKey(id string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		attrPK: &types.AttributeValueMemberS{Value: connPKPrefix + id},
		attrSK: &types.AttributeValueMemberS{Value: connSK},
	}
}

func (c *Connection) expiresAt() time.Time { return c.ConnectedAt.Add(MaxConnectionDuration) }

func (c *Connection) item() map[string]types.AttributeValue {
	it := connKey(c.ID)
	it[attrTenant] = &types.AttributeValueMemberS{Value: c.Tenant}
	it[attrConnectedAt] = &types.AttributeValueMemberN{Value: strconv.FormatInt(c.ConnectedAt.UnixMilli(), 10)}
	it[attrExpiresAt] = &types.AttributeValueMemberN{Value: strconv.FormatInt(c.expiresAt().Unix(), 10)}
	// The lane without stream_id keeps the attributes of an item written
	// before lanes (latest, pointer), which the previous release reads:
	// during a gradual deployment both serve the same connection.
	lanes := make(map[string]types.AttributeValue, len(c.Latest))
	for lane, l := range c.Latest {
		if lane == "" {
			it[attrLatest] = &types.AttributeValueMemberS{Value: l.ID}
			if l.Pointer {
				it[attrPointer] = &types.AttributeValueMemberBOOL{Value: true}
			}
			continue
		}
		lanes[laneKeyPrefix+lane] = &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{
			attrLaneID:  &types.AttributeValueMemberS{Value: l.ID},
			attrPointer: &types.AttributeValueMemberBOOL{Value: l.Pointer},
		}}
	}
	if len(lanes) > 0 {
		it[attrLanes] = &types.AttributeValueMemberM{Value: lanes}
	}
	if c.version > 0 {
		it[attrVersion] = &types.AttributeValueMemberN{Value: strconv.FormatInt(c.version, 10)}
	}
	if c.Turn != "" {
		it[attrTurn] = &types.AttributeValueMemberS{Value: c.Turn}
	}
	return it
}

// Open records a new connection ($connect).
func (c *Connections) Open(ctx context.Context, id, tenantName string, connectedAt time.Time) error {
	conn := &Connection{ID: id, Tenant: tenantName, ConnectedAt: connectedAt, c: c}
	if _, err := c.db.PutItem(ctx, &ddb.PutItemInput{TableName: c.table, Item: conn.item()}); err != nil {
		return fmt.Errorf("websocket connections: open %s: %w", id, err)
	}
	return nil
}

// Load returns connection id, nil when it is not open (it disconnected,
// or expired).
func (c *Connections) Load(ctx context.Context, id string) (*Connection, error) {
	out, err := c.db.GetItem(ctx, &ddb.GetItemInput{TableName: c.table, Key: connKey(id), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return nil, fmt.Errorf("websocket connections: load %s: %w", id, err)
	}
	return c.decode(id, out.Item), nil
}

func (c *Connections) decode(id string, it map[string]types.AttributeValue) *Connection {
	if it == nil {
		return nil
	}
	conn := &Connection{ID: id, c: c}
	if v, ok := it[attrTenant].(*types.AttributeValueMemberS); ok {
		conn.Tenant = v.Value
	}
	if v, ok := it[attrConnectedAt].(*types.AttributeValueMemberN); ok {
		ms, _ := strconv.ParseInt(v.Value, 10, 64)
		conn.ConnectedAt = time.UnixMilli(ms)
	}
	conn.Latest = decodeLanes(it)
	if v, ok := it[attrVersion].(*types.AttributeValueMemberN); ok {
		conn.version, _ = strconv.ParseInt(v.Value, 10, 64)
	}
	if v, ok := it[attrTurn].(*types.AttributeValueMemberS); ok {
		conn.Turn = v.Value
	}
	if !time.Now().Before(conn.expiresAt()) {
		return nil
	}
	return conn
}

// decodeLanes returns the lanes of connection item it (those of an item
// written before lanes: its latest response, as the lane "").
func decodeLanes(it map[string]types.AttributeValue) map[string]Latest {
	lanes := map[string]Latest{}
	if v, ok := it[attrLatest].(*types.AttributeValueMemberS); ok {
		l := Latest{ID: v.Value}
		if p, ok := it[attrPointer].(*types.AttributeValueMemberBOOL); ok {
			l.Pointer = p.Value
		}
		lanes[""] = l
	}
	m, ok := it[attrLanes].(*types.AttributeValueMemberM)
	if !ok {
		return lanes
	}
	for k, v := range m.Value {
		lm, ok := v.(*types.AttributeValueMemberM)
		if !ok || !strings.HasPrefix(k, laneKeyPrefix) {
			continue
		}
		var l Latest
		if id, ok := lm.Value[attrLaneID].(*types.AttributeValueMemberS); ok {
			l.ID = id.Value
		}
		if p, ok := lm.Value[attrPointer].(*types.AttributeValueMemberBOOL); ok {
			l.Pointer = p.Value
		}
		lanes[strings.TrimPrefix(k, laneKeyPrefix)] = l
	}
	return lanes
}

// Close forgets connection id and the latest response of each of its
// lanes ($disconnect).
func (c *Connections) Close(ctx context.Context, id string) error {
	out, err := c.db.DeleteItem(ctx, &ddb.DeleteItemInput{TableName: c.table, Key: connKey(id), ReturnValues: types.ReturnValueAllOld})
	if err != nil {
		return fmt.Errorf("websocket connections: close %s: %w", id, err)
	}
	conn := c.decode(id, out.Attributes)
	if conn == nil {
		return nil
	}
	var errs []error
	for _, l := range conn.Latest {
		if !l.Pointer {
			errs = append(errs, conn.dropRecord(ctx, l.ID))
		}
	}
	return errors.Join(errs...)
}

func (c *Connection) scoped(ctx context.Context) context.Context { return tenant.With(ctx, c.Tenant) }

// laneOf returns the lane whose latest response is id.
func (c *Connection) laneOf(id string) (string, bool) {
	for lane, l := range c.Latest {
		if id != "" && l.ID == id {
			return lane, true
		}
	}
	return "", false
}

// Get returns the record of id when it is the latest response of one of
// the connection's lanes.
func (c *Connection) Get(ctx context.Context, id string) (*store.Record, error) {
	if _, ok := c.laneOf(id); !ok {
		return nil, fmt.Errorf("websocket connection %s: %s: %w", c.ID, id, store.ErrNotFound)
	}
	return c.c.records.Get(c.scoped(ctx), id)
}

// Lanes returns the id of the latest response of each lane.
func (c *Connection) Lanes(context.Context) (map[string]string, error) {
	ids := make(map[string]string, len(c.Latest))
	for lane, l := range c.Latest {
		ids[lane] = l.ID
	}
	return ids, nil
}

// PutLatest makes rec the latest response of lane: it stores the record
// (expiring with the connection), points the connection item's lane at it
// and deletes the record it replaced. A connection closed meanwhile keeps
// nothing.
func (c *Connection) PutLatest(ctx context.Context, lane string, rec *store.Record) error {
	kept := *rec
	kept.ExpiresAt = c.expiresAt()
	id := rec.Response.ID
	if err := c.c.records.Create(c.scoped(ctx), &kept); err != nil {
		return fmt.Errorf("websocket connection %s: keep %s: %w", c.ID, id, err)
	}
	ok, err := c.point(ctx, lane, Latest{ID: id})
	if err != nil || !ok {
		if derr := c.dropRecord(ctx, id); derr != nil {
			err = errors.Join(err, derr)
		}
	}
	return err
}

// point makes l the latest response of lane and deletes the record of the
// one it replaced, if this table keeps it; false when the connection is
// gone or changed.
func (c *Connection) point(ctx context.Context, lane string, l Latest) (bool, error) {
	prev, had := c.Latest[lane]
	if c.Latest == nil {
		c.Latest = map[string]Latest{}
	}
	c.Latest[lane] = l
	ok, err := c.swap(ctx)
	if err != nil || !ok {
		c.restore(lane, prev, had)
		return false, err
	}
	if had && !prev.Pointer {
		return true, c.dropRecord(ctx, prev.ID)
	}
	return true, nil
}

// restore sets lane back to prev, or to none when it had none.
func (c *Connection) restore(lane string, prev Latest, had bool) {
	if had {
		c.Latest[lane] = prev
		return
	}
	delete(c.Latest, lane)
}

// Begin notes that the turn of request id requestID starts on the
// connection, so that a delivery of it again, after an invocation that
// died while running it, is known (Interrupted); false when the
// connection is gone.
func (c *Connection) Begin(ctx context.Context, requestID string) (bool, error) {
	prev := c.Turn
	c.Turn = requestID
	ok, err := c.swap(ctx)
	if err != nil || !ok {
		c.Turn = prev
	}
	return ok, err
}

// Interrupted reports whether the turn of request id requestID started on
// the connection before (Begin): this delivery of it is another one.
func (c *Connection) Interrupted(requestID string) bool {
	return requestID != "" && c.Turn == requestID
}

// sharedCache is the cache of a connection whose engine stores responses
// in a store every instance reads (Config.SharedStore): a stored response
// is only pointed at (its id is its lane's latest, Get finds no record of
// it here, and the engine reads it from its store); a response not stored
// is kept whole (Connection.PutLatest).
type sharedCache struct{ *Connection }

// PutLatest makes rec the latest response of lane.
func (s sharedCache) PutLatest(ctx context.Context, lane string, rec *store.Record) error {
	if !rec.Response.Store {
		return s.Connection.PutLatest(ctx, lane, rec)
	}
	_, err := s.point(ctx, lane, Latest{ID: rec.Response.ID, Pointer: true})
	return err
}

// Evict forgets id when it is the latest response of a lane, and that
// lane.
func (c *Connection) Evict(ctx context.Context, id string) error {
	lane, ok := c.laneOf(id)
	if !ok {
		return nil
	}
	prev := c.Latest[lane]
	delete(c.Latest, lane)
	if _, err := c.swap(ctx); err != nil {
		c.Latest[lane] = prev
		return err
	}
	if prev.Pointer {
		return nil // the record is the shared store's
	}
	return c.dropRecord(ctx, id)
}

// swap writes the connection item, with its version counted up, if the
// stored one is still of the version read; false when the connection is
// gone or changed.
func (c *Connection) swap(ctx context.Context) (bool, error) {
	cond := "attribute_exists(pk) AND attribute_not_exists(version)"
	vals := map[string]types.AttributeValue{}
	if c.version > 0 {
		cond = "version = :v"
		vals[":v"] = &types.AttributeValueMemberN{Value: strconv.FormatInt(c.version, 10)}
	}
	c.version++
	in := &ddb.PutItemInput{TableName: c.c.table, Item: c.item(), ConditionExpression: aws.String(cond)}
	if len(vals) > 0 {
		in.ExpressionAttributeValues = vals
	}
	_, err := c.c.db.PutItem(ctx, in)
	var failed *types.ConditionalCheckFailedException
	switch {
	case errors.As(err, &failed):
		c.version--
		return false, nil
	case err != nil:
		c.version--
		return false, fmt.Errorf("websocket connection %s: %w", c.ID, err)
	}
	return true, nil
}

func (c *Connection) dropRecord(ctx context.Context, id string) error {
	if err := c.c.records.Delete(c.scoped(ctx), id); err != nil && !errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("websocket connection %s: drop %s: %w", c.ID, id, err)
	}
	return nil
}
