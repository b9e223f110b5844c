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
	"github.com/lambent/lambent/pkg/wsapi"
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
	// attrRunning is the request id of the turn running on a lane (Begin
	// to Settle), in a named lane's entry (another lane's eviction of the
	// lane's response leaves its entry, which still counts) and on the
	// item for the lane without stream_id: the 60-minute limit waits for
	// the running turns.
	attrRunning = "running"
	// attrRunningUntil (Unix milliseconds) ends the running mark beside
	// it: a turn runs no longer than Connections.TurnTimeout, so a mark
	// past it is one whose Settle failed, and no longer counts.
	attrRunningUntil = "running_until"
	// attrRunningResponse beside a running mark is the id the running
	// turn's response gets (Begin): a response.steer naming it is
	// answered on its lane while it runs.
	attrRunningResponse = "running_response"
	attrExpiresAt       = "expires_at"
	// attrLatest is the latest response of the lane without stream_id, as
	// items written before lanes keep it (and the release before lanes
	// reads it).
	attrLatest = "latest"
	// laneKeyPrefix starts the key of a lane in the lanes map, so that the
	// lane without stream_id ("") has a key that is not empty.
	laneKeyPrefix = "lane:"
)

// Attributes of a tenant's turns item (Connections.TenantTurns): its key
// is pk "tenant-turns#<tenant>", sk "tenant-turns", which neither a
// connection item (sk "connection") nor a record of package
// store/dynamodb has; its turns map holds, for each turn of the tenant
// running deployment-wide, its request id → its running_until (Unix
// milliseconds, the lapse rule of a lane's running mark).
const (
	turnsPKPrefix = "tenant-turns#"
	turnsSK       = "tenant-turns"
	attrTurns     = "turns"
	// maxLapsedRemoved bounds the lapsed entries one write removes (its
	// expression's size): room for the next turn needs one.
	maxLapsedRemoved = 32
)

// Connections is the connection table of the WebSocket API: for each open
// connection its tenant, when it opened, and for each of its lanes
// (stream_id; wsapi.Cache) the id of its latest response and the request
// id of the turn it last started, whose record (store: false ones
// included) lives in the same table through a store/dynamodb.Store. The
// HTTP API has no access to this table, so nothing kept here is readable
// through it. Every item expires with the connection (connected_at +
// MaxConnectionDuration) and $disconnect deletes the connection's items at
// once.
//
// The lanes of a connection run on concurrent invocations, so each write
// of the connection item updates only its lane's attributes (UpdateItem),
// under a condition of its own: a new lane enters the lanes map only
// while it has fewer than wsapi.MaxLanes entries. Each write counts the
// item's version up, which the release that wrote the whole item checks.
type Connections struct {
	db      dynamodb.API
	table   *string
	records *dynamodb.Store
	// TurnTimeout is the longest a turn runs (default DefaultTurnTimeout):
	// the running mark Begin sets lapses after it, so that a turn whose
	// Settle failed does not keep its lane running for the connection's
	// life.
	TurnTimeout time.Duration
	// TenantTurns bounds the turns one tenant may have running at once,
	// deployment-wide (LAMBENT_LIMIT_TENANT_WEBSOCKET_TURNS): each running
	// turn is an entry of the tenant's turns item from EnterTurn to Settle
	// (or until its running_until lapses). 0: no bound, and no item.
	TenantTurns int
}

// DefaultTurnTimeout is Connections.TurnTimeout by default: Lambda's
// longest invocation, which no turn outlives.
const DefaultTurnTimeout = 15 * time.Minute

// settleTimeout bounds the writes of Connection.Settle, which run after
// the turn whatever ended it, its context cancelled included.
const settleTimeout = 10 * time.Second

// NewConnections returns the connections of table through client.
func NewConnections(client dynamodb.API, table string) (*Connections, error) {
	records, err := dynamodb.New(client, dynamodb.Config{Table: table})
	if err != nil {
		return nil, fmt.Errorf("websocket connections: %w", err)
	}
	return &Connections{db: client, table: aws.String(table), records: records, TurnTimeout: DefaultTurnTimeout}, nil
}

// Records is the store of the connections' responses (tests create its
// table with EnsureTable).
func (c *Connections) Records() *dynamodb.Store { return c.records }

// ErrTooManyLanes is Begin's error when a new lane would be one more than
// wsapi.MaxLanes.
var ErrTooManyLanes = errors.New("websocket connection: too many lanes")

// Connection is one open connection and its cache (wsapi.Cache): the
// latest response of each lane, replaced by the lane's every new one.
// A Connection is the state of its item when loaded, as its own turn
// changed it; it is not safe for concurrent use (each turn loads its
// own).
type Connection struct {
	ID          string
	Tenant      string
	ConnectedAt time.Time
	// Latest is each lane's latest response and turn ("": the lane of a
	// response.create without stream_id); a lane whose first response
	// runs has an empty ID.
	Latest map[string]Latest
	// hasLanes says the item has its lanes map (an item written before
	// lanes has none).
	hasLanes bool
	c        *Connections
}

// Latest is the latest response of a lane, and its turn.
type Latest struct {
	ID string
	// Pointer says the response is only pointed at: its record is in the
	// engine's shared store, not in this table (sharedCache).
	Pointer bool
	// Turn is the request id of the turn last started on the lane (Begin).
	Turn string
	// Running says a turn runs on the lane (Begin to Settle, and no longer
	// than Connections.TurnTimeout), as far as the item was loaded.
	Running bool
	// Responding is the id the running turn's response gets (Begin), while
	// Running.
	Responding string
}

func connKey(id string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		attrPK: &types.AttributeValueMemberS{Value: connPKPrefix + id},
		attrSK: &types.AttributeValueMemberS{Value: connSK},
	}
}

func (c *Connection) expiresAt() time.Time { return c.ConnectedAt.Add(MaxConnectionDuration) }

// Open records a new connection ($connect), with no lanes. The lane
// without stream_id will keep the attributes of an item written before
// lanes (latest, pointer, turn), which the previous release reads: during
// a gradual deployment both serve the same connection.
func (c *Connections) Open(ctx context.Context, id, tenantName string, connectedAt time.Time) error {
	conn := &Connection{ID: id, Tenant: tenantName, ConnectedAt: connectedAt}
	it := connKey(id)
	it[attrTenant] = &types.AttributeValueMemberS{Value: tenantName}
	it[attrConnectedAt] = millis(connectedAt)
	it[attrExpiresAt] = &types.AttributeValueMemberN{Value: strconv.FormatInt(conn.expiresAt().Unix(), 10)}
	it[attrLanes] = &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{}}
	if _, err := c.db.PutItem(ctx, &ddb.PutItemInput{TableName: c.table, Item: it}); err != nil {
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
	_, conn.hasLanes = it[attrLanes].(*types.AttributeValueMemberM)
	conn.Latest = decodeLanes(it)
	if !time.Now().Before(conn.expiresAt()) {
		return nil
	}
	return conn
}

// decodeLanes returns the lanes of connection item it (those of an item
// written before lanes: its latest response and turn, as the lane "").
func decodeLanes(it map[string]types.AttributeValue) map[string]Latest {
	lanes := map[string]Latest{}
	if l, ok := decodeLane(it, attrLatest); ok {
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
		l, _ := decodeLane(lm.Value, attrLaneID)
		lanes[strings.TrimPrefix(k, laneKeyPrefix)] = l
	}
	return lanes
}

// decodeLane returns the lane whose attributes are attrs, its response's
// id under idAttr; false when it has neither a response nor a turn.
func decodeLane(attrs map[string]types.AttributeValue, idAttr string) (Latest, bool) {
	var l Latest
	id, hasID := attrs[idAttr].(*types.AttributeValueMemberS)
	if hasID {
		l.ID = id.Value
	}
	if p, ok := attrs[attrPointer].(*types.AttributeValueMemberBOOL); ok {
		l.Pointer = p.Value
	}
	turn, hasTurn := attrs[attrTurn].(*types.AttributeValueMemberS)
	if hasTurn {
		l.Turn = turn.Value
	}
	l.Running = running(attrs, time.Now())
	if r, ok := attrs[attrRunningResponse].(*types.AttributeValueMemberS); ok && l.Running {
		l.Responding = r.Value
	}
	return l, hasID || hasTurn
}

// running reports whether a turn runs at now on the lane whose attributes
// are attrs: it has a running mark, which has not lapsed (its
// running_until is after now; a mark written before running_until has
// none, and holds). notRunning is the same rule in a condition.
func running(attrs map[string]types.AttributeValue, now time.Time) bool {
	if _, ok := attrs[attrRunning].(*types.AttributeValueMemberS); !ok {
		return false
	}
	until, ok := attrs[attrRunningUntil].(*types.AttributeValueMemberN)
	if !ok {
		return true
	}
	ms, _ := strconv.ParseInt(until.Value, 10, 64)
	return now.Before(time.UnixMilli(ms))
}

// millis is t as the item's attributes hold times: Unix milliseconds.
func millis(t time.Time) *types.AttributeValueMemberN {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(t.UnixMilli(), 10)}
}

// notRunning returns the condition expression that no turn runs at now
// (running's rule) on the lane whose attributes are under path ("" for
// the lane without stream_id, "lanes.#k." for a named lane's entry),
// setting the value :now of vals it reads.
func notRunning(path string, vals map[string]types.AttributeValue, now time.Time) string {
	vals[":now"] = millis(now)
	return "(attribute_not_exists(" + path + attrRunning + ") OR " + path + attrRunningUntil + " <= :now)"
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
		if l.ID != "" && !l.Pointer {
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

// Lanes returns the id of the latest response of each lane ("" for a lane
// whose first response runs: it counts as a lane).
func (c *Connection) Lanes(context.Context) (map[string]string, error) {
	ids := make(map[string]string, len(c.Latest))
	for lane, l := range c.Latest {
		ids[lane] = l.ID
	}
	return ids, nil
}

// Running returns the id of the response running on each lane whose turn
// noted it (Begin), as far as the item was loaded (wsapi.RunningCache).
func (c *Connection) Running(context.Context) (map[string]string, error) {
	ids := map[string]string{}
	for lane, l := range c.Latest {
		if l.Running && l.Responding != "" {
			ids[lane] = l.Responding
		}
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
// gone, or the lane is new and the connection has wsapi.MaxLanes lanes.
func (c *Connection) point(ctx context.Context, lane string, l Latest) (bool, error) {
	vals := map[string]types.AttributeValue{":id": str(l.ID), ":p": &types.AttributeValueMemberBOOL{Value: l.Pointer}}
	var old map[string]types.AttributeValue
	var ok bool
	var err error
	if lane == "" {
		old, ok, err = c.update(ctx, "SET latest = :id, pointer = :p", "", nil, vals)
	} else {
		old, ok, err = c.pointLane(ctx, lane, vals)
	}
	if err != nil || !ok {
		return false, err
	}
	l.Turn = c.Latest[lane].Turn
	c.Latest[lane] = l
	idAttr := attrLatest
	if lane != "" {
		old, idAttr = laneAttrs(old, lane), attrLaneID
	}
	prev, had := decodeLane(old, idAttr)
	if had && prev.ID != "" && prev.ID != l.ID && !prev.Pointer {
		return true, c.dropRecord(ctx, prev.ID)
	}
	return true, nil
}

// pointLane sets the response (vals :id, :p) of named lane in the lanes
// map: in its entry (Begin made one), else in a new one while there is
// room. It returns what it replaced (UPDATED_OLD).
func (c *Connection) pointLane(ctx context.Context, lane string, vals map[string]types.AttributeValue) (map[string]types.AttributeValue, bool, error) {
	if err := c.ensureLanes(ctx); err != nil {
		return nil, false, err
	}
	names := laneNames(lane)
	old, ok, err := c.update(ctx, "SET lanes.#k.id = :id, lanes.#k.pointer = :p", "attribute_exists(lanes.#k)", names, vals)
	if err != nil || ok {
		return old, ok, err
	}
	vals[":entry"] = &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{attrLaneID: vals[":id"], attrPointer: vals[":p"]}}
	delete(vals, ":id")
	delete(vals, ":p")
	return c.newLane(ctx, lane, vals)
}

// newLane adds named lane to the lanes map, its entry vals[":entry"],
// while the map has fewer than wsapi.MaxLanes lanes; false when it has
// that many, or the lane, or the connection is gone.
func (c *Connection) newLane(ctx context.Context, lane string, vals map[string]types.AttributeValue) (map[string]types.AttributeValue, bool, error) {
	vals[":max"] = &types.AttributeValueMemberN{Value: strconv.Itoa(wsapi.MaxLanes)}
	return c.update(ctx, "SET lanes.#k = :entry", "attribute_not_exists(lanes.#k) AND size(lanes) < :max", laneNames(lane), vals)
}

// laneAttrs returns the attributes of lane's entry in old, an update's
// UPDATED_OLD attributes.
func laneAttrs(old map[string]types.AttributeValue, lane string) map[string]types.AttributeValue {
	m, ok := old[attrLanes].(*types.AttributeValueMemberM)
	if !ok {
		return nil
	}
	e, _ := m.Value[laneKeyPrefix+lane].(*types.AttributeValueMemberM)
	if e == nil {
		return nil
	}
	return e.Value
}

// laneNames are the expression attribute names of lane's entry (#k).
func laneNames(lane string) map[string]string {
	return map[string]string{"#k": laneKeyPrefix + lane}
}

func str(s string) *types.AttributeValueMemberS { return &types.AttributeValueMemberS{Value: s} }

// ensureLanes gives the item its lanes map when it was written without
// one (before lanes).
func (c *Connection) ensureLanes(ctx context.Context) error {
	if c.hasLanes {
		return nil
	}
	empty := map[string]types.AttributeValue{":empty": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{}}}
	if _, _, err := c.update(ctx, "SET lanes = if_not_exists(lanes, :empty)", "", nil, empty); err != nil {
		return err
	}
	c.hasLanes = true
	return nil
}

// Begin notes that the turn of request id requestID starts on lane, so
// that a delivery of it again, after an invocation that died while running
// it, is known (Interrupted), and that its response gets the id
// responseID (a new one: a response.steer naming it while it runs is
// answered on lane, Running). A new lane enters the lanes map, and counts
// towards wsapi.MaxLanes, from its first turn on: the error wraps
// ErrTooManyLanes when it would be one more (then Latest holds the
// connection's lanes as they are). False when the connection is gone.
func (c *Connection) Begin(ctx context.Context, lane, requestID, responseID string) (bool, error) {
	until := millis(time.Now().Add(c.c.TurnTimeout))
	vals := map[string]types.AttributeValue{":rid": str(requestID), ":until": until, ":resp": str(responseID)}
	if lane == "" {
		_, ok, err := c.update(ctx, "SET turn = :rid, running = :rid, running_until = :until, running_response = :resp", "", nil, vals)
		if ok {
			c.setTurn(lane, requestID, responseID)
		}
		return ok, err
	}
	if err := c.ensureLanes(ctx); err != nil {
		return false, err
	}
	for range 2 {
		var ok bool
		var err error
		if _, had := c.Latest[lane]; had {
			_, ok, err = c.update(ctx, "SET lanes.#k.turn = :rid, lanes.#k.running = :rid, lanes.#k.running_until = :until, lanes.#k.running_response = :resp",
				"attribute_exists(lanes.#k)", laneNames(lane), vals)
		} else {
			entry := map[string]types.AttributeValue{":entry": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{
				attrTurn: vals[":rid"], attrRunning: vals[":rid"], attrRunningUntil: until, attrRunningResponse: vals[":resp"]}}}
			_, ok, err = c.newLane(ctx, lane, entry)
		}
		if err != nil || ok {
			if ok {
				c.setTurn(lane, requestID, responseID)
			}
			return ok, err
		}
		// The item changed: another lane's turn came or went.
		fresh, err := c.c.Load(ctx, c.ID)
		if err != nil || fresh == nil {
			return false, err
		}
		c.Latest = fresh.Latest
		if _, had := c.Latest[lane]; !had && namedLanes(c.Latest) >= wsapi.MaxLanes {
			return false, fmt.Errorf("websocket connection %s: lane %s: %w", c.ID, lane, ErrTooManyLanes)
		}
	}
	return false, fmt.Errorf("websocket connection %s: lane %s: the item kept changing", c.ID, lane)
}

// runs reports whether a turn runs on a lane of the connection, as far as
// it was loaded, other than *except (nil: any lane).
func (c *Connection) runs(except *string) bool {
	for l, latest := range c.Latest {
		if (except == nil || l != *except) && latest.Running {
			return true
		}
	}
	return false
}

// namedLanes counts the lanes with a stream_id.
func namedLanes(lanes map[string]Latest) int {
	n := len(lanes)
	if _, ok := lanes[""]; ok {
		n--
	}
	return n
}

// setTurn notes requestID as lane's turn, running, its response to be
// responseID.
func (c *Connection) setTurn(lane, requestID, responseID string) {
	l := c.Latest[lane]
	l.Turn, l.Running, l.Responding = requestID, true, responseID
	c.Latest[lane] = l
}

// Interrupted reports whether the turn of request id requestID started on
// lane before (Begin): this delivery of it is another one.
func (c *Connection) Interrupted(lane, requestID string) bool {
	return requestID != "" && c.Latest[lane].Turn == requestID
}

// EnterTurn notes the turn of request id requestID as running for the
// connection's tenant, while the tenant has fewer than
// Connections.TenantTurns turns running deployment-wide (an entry whose
// running_until has passed does not count, and is removed to make room);
// false when it has that many. Settle removes the entry. Always true
// when TenantTurns is 0, with no request.
func (c *Connection) EnterTurn(ctx context.Context, requestID string) (bool, error) {
	if c.c.TenantTurns <= 0 {
		return true, nil
	}
	now := time.Now()
	until := now.Add(c.c.TurnTimeout)
	exp := &types.AttributeValueMemberN{Value: strconv.FormatInt(until.Unix()+1, 10)}
	for range 2 {
		vals := map[string]types.AttributeValue{":until": millis(until), ":exp": exp, ":max": num(c.c.TenantTurns)}
		ok, err := c.updateTurns(ctx, "SET turns.#r = :until, expires_at = :exp", "size(turns) < :max", map[string]string{"#r": requestID}, vals)
		if err != nil || ok {
			return ok, err
		}
		out, err := c.c.db.GetItem(ctx, &ddb.GetItemInput{TableName: c.c.table, Key: turnsKey(c.Tenant), ConsistentRead: aws.Bool(true)})
		if err != nil {
			return false, fmt.Errorf("websocket turns of %s: %w", c.Tenant, err)
		}
		turns, has := out.Item[attrTurns].(*types.AttributeValueMemberM)
		if !has {
			// The tenant's first turn: it writes the map, unless another
			// turn just did (then it tries again).
			first := map[string]types.AttributeValue{":m": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{requestID: millis(until)}}, ":exp": exp}
			ok, err := c.updateTurns(ctx, "SET turns = :m, expires_at = :exp", "attribute_not_exists(turns)", nil, first)
			if err != nil || ok {
				return ok, err
			}
			continue
		}
		return c.replaceLapsed(ctx, requestID, turns.Value, now, vals)
	}
	return false, nil
}

// replaceLapsed adds the entry of requestID (vals :until, :exp) to the
// tenant's turns, as they were read, in place of their entries that had
// lapsed at now (each removed only while it is as read); false when none
// had, or the turns changed meanwhile.
func (c *Connection) replaceLapsed(ctx context.Context, requestID string, turns map[string]types.AttributeValue, now time.Time, vals map[string]types.AttributeValue) (bool, error) {
	names := map[string]string{"#r": requestID}
	var removes, conds []string
	for id, v := range turns {
		if len(removes) == maxLapsedRemoved {
			break
		}
		ms, ok := v.(*types.AttributeValueMemberN)
		if !ok || id == requestID || running(map[string]types.AttributeValue{attrRunning: str(id), attrRunningUntil: ms}, now) {
			continue
		}
		i := strconv.Itoa(len(removes))
		names["#l"+i], vals[":l"+i] = id, ms
		removes = append(removes, "turns.#l"+i)
		conds = append(conds, "turns.#l"+i+" = :l"+i)
	}
	if len(removes) == 0 {
		return false, nil
	}
	vals[":max"] = num(c.c.TenantTurns + len(removes))
	return c.updateTurns(ctx, "SET turns.#r = :until, expires_at = :exp REMOVE "+strings.Join(removes, ", "),
		"size(turns) < :max AND "+strings.Join(conds, " AND "), names, vals)
}

// leaveTurn removes the entry of the turn of request id requestID from
// the tenant's turns (EnterTurn), if it has one.
func (c *Connection) leaveTurn(ctx context.Context, requestID string) error {
	if c.c.TenantTurns <= 0 {
		return nil
	}
	_, err := c.updateTurns(ctx, "REMOVE turns.#r", "attribute_exists(turns.#r)", map[string]string{"#r": requestID}, nil)
	return err
}

// updateTurns applies the update expression expr to the tenant's turns
// item when cond holds; false when it does not.
func (c *Connection) updateTurns(ctx context.Context, expr, cond string, names map[string]string, vals map[string]types.AttributeValue) (bool, error) {
	in := &ddb.UpdateItemInput{TableName: c.c.table, Key: turnsKey(c.Tenant), UpdateExpression: aws.String(expr), ConditionExpression: aws.String(cond)}
	if len(names) > 0 {
		in.ExpressionAttributeNames = names
	}
	if len(vals) > 0 {
		in.ExpressionAttributeValues = vals
	}
	_, err := c.c.db.UpdateItem(ctx, in)
	var failed *types.ConditionalCheckFailedException
	switch {
	case errors.As(err, &failed):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("websocket turns of %s: %w", c.Tenant, err)
	}
	return true, nil
}

func turnsKey(tenantName string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{attrPK: str(turnsPKPrefix + tenantName), attrSK: str(turnsSK)}
}

func num(n int) *types.AttributeValueMemberN {
	return &types.AttributeValueMemberN{Value: strconv.Itoa(n)}
}

// Settle ends the turn on lane, which no longer runs (Begin marked it
// running; so does the delivery again of a turn whose invocation died,
// which is not run again): a named lane that has no latest response
// after it (its response.create was refused, its continuation failed, or
// another lane's failed continuation evicted its response meanwhile)
// leaves the lanes map, and no longer counts towards wsapi.MaxLanes; one
// that has is no longer running. It writes whatever ended the turn: on
// ctx without its cancellation and deadline (the client went away, which
// cancels the turn's context), within settleTimeout. The turn leaves its
// tenant's running turns (EnterTurn).
func (c *Connection) Settle(ctx context.Context, lane string) error {
	l, ok := c.Latest[lane]
	if !ok || l.Turn == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
	defer cancel()
	return errors.Join(c.leaveTurn(ctx, l.Turn), c.settleLane(ctx, lane, l))
}

// settleLane ends the turn of l on lane (Settle).
func (c *Connection) settleLane(ctx context.Context, lane string, l Latest) error {
	vals := map[string]types.AttributeValue{":rid": str(l.Turn)}
	ended, err := c.endRunning(ctx, lane, vals)
	if err != nil {
		return err
	}
	if ended {
		l.Running, l.Responding = false, ""
		c.Latest[lane] = l
	}
	if lane == "" || ended {
		return nil
	}
	if _, _, err := c.update(ctx, "REMOVE lanes.#k", "attribute_not_exists(lanes.#k.id) AND lanes.#k.turn = :rid", laneNames(lane), vals); err != nil {
		return err
	}
	delete(c.Latest, lane)
	return nil
}

// endRunning removes the running mark of lane's turn vals[":rid"], a named
// lane's only while the lane has a response; false when it removed none.
func (c *Connection) endRunning(ctx context.Context, lane string, vals map[string]types.AttributeValue) (bool, error) {
	if lane == "" {
		_, ok, err := c.update(ctx, "REMOVE running, running_until, running_response", "running = :rid", nil, vals)
		return ok, err
	}
	_, ok, err := c.update(ctx, "REMOVE lanes.#k.running, lanes.#k.running_until, lanes.#k.running_response", "attribute_exists(lanes.#k.id) AND lanes.#k.running = :rid", laneNames(lane), vals)
	return ok, err
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
// lane (its whole entry, unless it is the lane without stream_id or a
// turn runs on it, by running's rule: its turn stays, and the running
// lane still counts until Settle; a lapsed mark does not hold it).
func (c *Connection) Evict(ctx context.Context, id string) error {
	lane, ok := c.laneOf(id)
	if !ok {
		return nil
	}
	prev := c.Latest[lane]
	vals := map[string]types.AttributeValue{":id": str(id)}
	var err error
	whole := false
	if lane == "" {
		_, _, err = c.update(ctx, "REMOVE latest, pointer", "latest = :id", nil, vals)
	} else {
		_, whole, err = c.update(ctx, "REMOVE lanes.#k", "lanes.#k.id = :id AND "+notRunning("lanes.#k.", vals, time.Now()), laneNames(lane), vals)
		if err == nil && !whole {
			delete(vals, ":now")
			_, _, err = c.update(ctx, "REMOVE lanes.#k.id, lanes.#k.pointer", "lanes.#k.id = :id", laneNames(lane), vals)
		}
	}
	if err != nil {
		return err
	}
	delete(c.Latest, lane)
	if !whole && prev.Turn != "" {
		c.Latest[lane] = Latest{Turn: prev.Turn}
	}
	if prev.Pointer {
		return nil // the record is the shared store's
	}
	return c.dropRecord(ctx, id)
}

// update applies the update expression expr to the connection item when
// it exists and cond ("": none) holds, and counts its version up (the
// guard of the release that wrote the whole item). It returns the
// attributes it replaced (UPDATED_OLD); false when the item is gone or
// cond does not hold.
func (c *Connection) update(ctx context.Context, expr, cond string, names map[string]string, vals map[string]types.AttributeValue) (map[string]types.AttributeValue, bool, error) {
	full := "attribute_exists(pk)"
	if cond != "" {
		full += " AND (" + cond + ")"
	}
	if vals == nil {
		vals = map[string]types.AttributeValue{}
	}
	vals[":one"] = &types.AttributeValueMemberN{Value: "1"}
	in := &ddb.UpdateItemInput{TableName: c.c.table, Key: connKey(c.ID), UpdateExpression: aws.String(expr + " ADD version :one"),
		ConditionExpression: aws.String(full), ExpressionAttributeValues: vals, ReturnValues: types.ReturnValueUpdatedOld}
	if len(names) > 0 {
		in.ExpressionAttributeNames = names
	}
	out, err := c.c.db.UpdateItem(ctx, in)
	var failed *types.ConditionalCheckFailedException
	switch {
	case errors.As(err, &failed):
		return nil, false, nil
	case err != nil:
		return nil, false, fmt.Errorf("websocket connection %s: %w", c.ID, err)
	}
	return out.Attributes, true, nil
}

func (c *Connection) dropRecord(ctx context.Context, id string) error {
	if err := c.c.records.Delete(c.scoped(ctx), id); err != nil && !errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("websocket connection %s: drop %s: %w", c.ID, id, err)
	}
	return nil
}
