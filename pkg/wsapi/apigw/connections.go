package apigw

import (
	"context"
	"errors"
	"fmt"
	"strconv"
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
	attrLatest      = "latest"
	attrPointer     = "pointer"
	attrTurn        = "turn"
	attrExpiresAt   = "expires_at"
)

// Connections is the connection table of the WebSocket API: for each open
// connection its tenant, when it opened, the request id of the turn it
// last started and the id of its latest response,
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
// latest response, replaced by every new one.
type Connection struct {
	ID          string
	Tenant      string
	ConnectedAt time.Time
	Latest      string
	// Pointer says Latest is only pointed at: its record is in the
	// engine's shared store, not in this table (sharedCache).
	Pointer bool
	// Turn is the request id of the last turn started on the connection
	// (Begin).
	Turn string
	c    *Connections
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
	if c.Latest != "" {
		it[attrLatest] = &types.AttributeValueMemberS{Value: c.Latest}
		if c.Pointer {
			it[attrPointer] = &types.AttributeValueMemberBOOL{Value: true}
		}
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
	if v, ok := it[attrLatest].(*types.AttributeValueMemberS); ok {
		conn.Latest = v.Value
	}
	if v, ok := it[attrPointer].(*types.AttributeValueMemberBOOL); ok {
		conn.Pointer = v.Value
	}
	if v, ok := it[attrTurn].(*types.AttributeValueMemberS); ok {
		conn.Turn = v.Value
	}
	if !time.Now().Before(conn.expiresAt()) {
		return nil
	}
	return conn
}

// Close forgets connection id and its latest response ($disconnect).
func (c *Connections) Close(ctx context.Context, id string) error {
	out, err := c.db.DeleteItem(ctx, &ddb.DeleteItemInput{TableName: c.table, Key: connKey(id), ReturnValues: types.ReturnValueAllOld})
	if err != nil {
		return fmt.Errorf("websocket connections: close %s: %w", id, err)
	}
	if conn := c.decode(id, out.Attributes); conn != nil && conn.Latest != "" && !conn.Pointer {
		return conn.dropRecord(ctx, conn.Latest)
	}
	return nil
}

func (c *Connection) scoped(ctx context.Context) context.Context { return tenant.With(ctx, c.Tenant) }

// Get returns the record of id when it is the connection's latest
// response.
func (c *Connection) Get(ctx context.Context, id string) (*store.Record, error) {
	if id == "" || id != c.Latest {
		return nil, fmt.Errorf("websocket connection %s: %s: %w", c.ID, id, store.ErrNotFound)
	}
	return c.c.records.Get(c.scoped(ctx), id)
}

// Put makes rec the connection's latest response: it stores the record
// (expiring with the connection), points the connection item at it and
// deletes the record it replaced. A connection closed meanwhile keeps
// nothing.
func (c *Connection) Put(ctx context.Context, rec *store.Record) error {
	kept := *rec
	kept.ExpiresAt = c.expiresAt()
	id := rec.Response.ID
	if err := c.c.records.Create(c.scoped(ctx), &kept); err != nil {
		return fmt.Errorf("websocket connection %s: keep %s: %w", c.ID, id, err)
	}
	ok, err := c.point(ctx, id, false)
	if err != nil || !ok {
		if derr := c.dropRecord(ctx, id); derr != nil {
			err = errors.Join(err, derr)
		}
	}
	return err
}

// point makes id the connection's latest response (pointer: its record
// is not in this table) and deletes the record of the one it replaced, if
// this table keeps it; false when the connection is gone or changed.
func (c *Connection) point(ctx context.Context, id string, pointer bool) (bool, error) {
	prev, prevPointer := c.Latest, c.Pointer
	c.Latest, c.Pointer = id, pointer
	ok, err := c.swap(ctx, prev)
	if err != nil || !ok {
		c.Latest, c.Pointer = prev, prevPointer
		return false, err
	}
	if prev != "" && !prevPointer {
		return true, c.dropRecord(ctx, prev)
	}
	return true, nil
}

// Begin notes that the turn of request id requestID starts on the
// connection, so that a delivery of it again, after an invocation that
// died while running it, is known (Interrupted); false when the
// connection is gone.
func (c *Connection) Begin(ctx context.Context, requestID string) (bool, error) {
	prev := c.Turn
	c.Turn = requestID
	ok, err := c.swap(ctx, c.Latest)
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
// is only pointed at (its id is the latest, Get finds no record of it
// here, and the engine reads it from its store); a response not stored
// is kept whole (Connection.Put).
type sharedCache struct{ *Connection }

// Put makes rec the connection's latest response.
func (s sharedCache) Put(ctx context.Context, rec *store.Record) error {
	if !rec.Response.Store {
		return s.Connection.Put(ctx, rec)
	}
	_, err := s.point(ctx, rec.Response.ID, true)
	return err
}

// Evict forgets id when it is the latest response.
func (c *Connection) Evict(ctx context.Context, id string) error {
	if id == "" || id != c.Latest {
		return nil
	}
	pointer := c.Pointer
	c.Latest, c.Pointer = "", false
	if _, err := c.swap(ctx, id); err != nil {
		c.Latest, c.Pointer = id, pointer
		return err
	}
	if pointer {
		return nil // the record is the shared store's
	}
	return c.dropRecord(ctx, id)
}

// swap writes the connection item with its new Latest if the stored one
// is still prev; false when the connection is gone or changed.
func (c *Connection) swap(ctx context.Context, prev string) (bool, error) {
	cond := "attribute_exists(pk) AND attribute_not_exists(latest)"
	vals := map[string]types.AttributeValue{}
	if prev != "" {
		cond = "latest = :prev"
		vals[":prev"] = &types.AttributeValueMemberS{Value: prev}
	}
	in := &ddb.PutItemInput{TableName: c.c.table, Item: c.item(), ConditionExpression: aws.String(cond)}
	if len(vals) > 0 {
		in.ExpressionAttributeValues = vals
	}
	_, err := c.c.db.PutItem(ctx, in)
	var failed *types.ConditionalCheckFailedException
	switch {
	case errors.As(err, &failed):
		return false, nil
	case err != nil:
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
