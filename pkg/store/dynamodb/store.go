package dynamodb

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/lambent/lambent/internal/wait"
	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/store"
	"github.com/lambent/lambent/pkg/tenant"
)

// ErrTooLarge: the record's JSON is larger than Config.MaxRecordBytes. It
// is store.ErrTooLarge; the error carries a *store.TooLargeError.
var ErrTooLarge = store.ErrTooLarge

// Defaults and limits.
const (
	// DefaultRetention is how long records are kept when Config.Retention is zero.
	DefaultRetention = 30 * 24 * time.Hour
	// DefaultMaxRecordBytes is the default limit of a record's JSON.
	DefaultMaxRecordBytes = 64 << 20
	// ChunkSize is the largest compressed body in one item: well under
	// DynamoDB's 400 KB item limit, leaving room for keys and attributes.
	ChunkSize = 350 << 10
	// MaxChunks bounds the items of one record; MaxChunks*ChunkSize bounds
	// its compressed size (about 342 MiB; Config.MaxRecordBytes is the
	// practical limit).
	MaxChunks = 1000
	// maxTxChunks is the most chunks written in one TransactWriteItems by
	// Create: 10 × 350 KiB + the head stays under the 4 MB transaction limit.
	maxTxChunks = 10
	// batchSize is BatchWriteItem's item limit.
	batchSize = 25
	// batchRounds is how many times a batch call is made while DynamoDB
	// leaves items unprocessed (throttling), with backoff between.
	batchRounds = 8
	// cleanupTimeout bounds the deletion of chunks no head names any more,
	// which runs even when the request's context is done.
	cleanupTimeout = 10 * time.Second
)

// Attribute names and key values.
const (
	attrPK        = "pk"
	attrSK        = "sk"
	attrStatus    = "status"
	attrCreatedAt = "created_at"
	attrExpiresAt = "expires_at"
	attrGen       = "gen"
	attrVersion   = "version"
	attrClaim     = "claim"
	skHead        = "response"
	skChunkPrefix = "chunk#"
)

// API is the part of the DynamoDB client the store uses;
// *dynamodb.Client implements it. Tests wrap it to count or fail calls.
type API interface {
	GetItem(ctx context.Context, in *ddb.GetItemInput, optFns ...func(*ddb.Options)) (*ddb.GetItemOutput, error)
	PutItem(ctx context.Context, in *ddb.PutItemInput, optFns ...func(*ddb.Options)) (*ddb.PutItemOutput, error)
	DeleteItem(ctx context.Context, in *ddb.DeleteItemInput, optFns ...func(*ddb.Options)) (*ddb.DeleteItemOutput, error)
	UpdateItem(ctx context.Context, in *ddb.UpdateItemInput, optFns ...func(*ddb.Options)) (*ddb.UpdateItemOutput, error)
	BatchGetItem(ctx context.Context, in *ddb.BatchGetItemInput, optFns ...func(*ddb.Options)) (*ddb.BatchGetItemOutput, error)
	Query(ctx context.Context, in *ddb.QueryInput, optFns ...func(*ddb.Options)) (*ddb.QueryOutput, error)
	BatchWriteItem(ctx context.Context, in *ddb.BatchWriteItemInput, optFns ...func(*ddb.Options)) (*ddb.BatchWriteItemOutput, error)
	TransactWriteItems(ctx context.Context, in *ddb.TransactWriteItemsInput, optFns ...func(*ddb.Options)) (*ddb.TransactWriteItemsOutput, error)
	DescribeTable(ctx context.Context, in *ddb.DescribeTableInput, optFns ...func(*ddb.Options)) (*ddb.DescribeTableOutput, error)
	CreateTable(ctx context.Context, in *ddb.CreateTableInput, optFns ...func(*ddb.Options)) (*ddb.CreateTableOutput, error)
	DescribeTimeToLive(ctx context.Context, in *ddb.DescribeTimeToLiveInput, optFns ...func(*ddb.Options)) (*ddb.DescribeTimeToLiveOutput, error)
	UpdateTimeToLive(ctx context.Context, in *ddb.UpdateTimeToLiveInput, optFns ...func(*ddb.Options)) (*ddb.UpdateTimeToLiveOutput, error)
}

var _ API = (*ddb.Client)(nil)

// Config configures New.
type Config struct {
	// Table is the table name (required).
	Table string
	// Retention is how long a record stored without ExpiresAt is kept
	// (default 30 days).
	Retention time.Duration
	// MaxRecordBytes limits the JSON of one record (response, input and
	// context; default 64 MiB). Larger records fail with ErrTooLarge.
	MaxRecordBytes int
}

// Store is a store.ResponseStore on a DynamoDB table. It is safe for
// concurrent use.
type Store struct {
	api       API
	table     *string
	retention time.Duration
	codec     *codec

	// Layout thresholds; constants except in tests.
	inlineMax   int // largest compressed body kept in the head item
	chunkSize   int
	maxTxChunks int
	batchRounds int // batch calls per batch while items stay unprocessed
	// now is the clock that tells a live record from an expired one
	// (time.Now except in tests: DynamoDB Local's TTL deletes an item
	// expired by the real clock within a second or so).
	now func() time.Time
}

var _ store.ResponseStore = (*Store)(nil)

// New returns a store on cfg.Table through client. It makes no call;
// EnsureTable creates the table when needed.
func New(client API, cfg Config) (*Store, error) {
	if client == nil {
		return nil, errors.New("dynamodb: no client")
	}
	if cfg.Table == "" {
		return nil, errors.New("dynamodb: no table name")
	}
	if cfg.Retention <= 0 {
		cfg.Retention = DefaultRetention
	}
	if cfg.MaxRecordBytes <= 0 {
		cfg.MaxRecordBytes = DefaultMaxRecordBytes
	}
	return &Store{
		api:         client,
		table:       aws.String(cfg.Table),
		retention:   cfg.Retention,
		codec:       newCodec(cfg.MaxRecordBytes, compressionLevel),
		inlineMax:   ChunkSize,
		chunkSize:   ChunkSize,
		maxTxChunks: maxTxChunks,
		batchRounds: batchRounds,
		now:         time.Now,
	}, nil
}

var _ store.SizeChecker = (*Store)(nil)

// CheckSize returns a *store.TooLargeError when rec's JSON is longer than
// Config.MaxRecordBytes, which Create and Update refuse. It makes no call.
func (s *Store) CheckSize(rec *store.Record) error {
	if err := store.CheckRecord(rec); err != nil {
		return err
	}
	return s.codec.checkSize(rec)
}

// head is the head item of a record: its key, the attributes conditions
// use, and either the whole body or the generation and count of its chunks.
type head struct {
	PK        string `dynamodbav:"pk"`
	SK        string `dynamodbav:"sk"`
	Status    string `dynamodbav:"status"`
	CreatedAt int64  `dynamodbav:"created_at"`
	ExpiresAt int64  `dynamodbav:"expires_at"`
	// Gen is random per write: it names the write's chunks and lets a
	// retried write recognise its own earlier success.
	Gen string `dynamodbav:"gen"`
	// Version is the record's store.Record.Version.
	Version int64  `dynamodbav:"version"`
	Format  string `dynamodbav:"format"`
	// Size is the length of the record's JSON.
	Size int `dynamodbav:"size"`
	// Body is the compressed record when it fits here (Chunks == 0).
	Body []byte `dynamodbav:"body,omitempty"`
	// Chunks is the number of chunk items holding the body.
	Chunks int `dynamodbav:"chunks,omitempty"`
	// Claim is the background job's store.Job.Claim, which a claimed
	// append's condition reads (AppendEventsClaimed).
	Claim string `dynamodbav:"claim,omitempty"`
}

// chunk is one part of a large record's compressed body.
type chunk struct {
	PK        string `dynamodbav:"pk"`
	SK        string `dynamodbav:"sk"`
	ExpiresAt int64  `dynamodbav:"expires_at"`
	Body      []byte `dynamodbav:"body"`
}

// item is c as a DynamoDB item: attributevalue.MarshalMap's, without the
// copy of the body it makes.
func (c *chunk) item() map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		attrPK:        &types.AttributeValueMemberS{Value: c.PK},
		attrSK:        &types.AttributeValueMemberS{Value: c.SK},
		attrExpiresAt: &types.AttributeValueMemberN{Value: strconv.FormatInt(c.ExpiresAt, 10)},
		"body":        &types.AttributeValueMemberB{Value: c.Body},
	}
}

// pk is the partition key of (tenant, id). The tenant is escaped so that
// it contains no '#': the first '#' always ends it, and no id can reach
// another tenant's records.
func pk(tenant, id string) string {
	if strings.ContainsAny(tenant, "%#") {
		tenant = strings.ReplaceAll(tenant, "%", "%25")
		tenant = strings.ReplaceAll(tenant, "#", "%23")
	}
	return tenant + "#" + id
}

func chunkSK(gen string, i int) string {
	return fmt.Sprintf("%s%s#%05d", skChunkPrefix, gen, i)
}

func keyOf(pk, sk string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		attrPK: &types.AttributeValueMemberS{Value: pk},
		attrSK: &types.AttributeValueMemberS{Value: sk},
	}
}

func newGen() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// encoded is a record ready to write.
type encoded struct {
	id     string
	head   head
	chunks [][]byte
}

// encode prepares rec for writing as the given version.
func (s *Store) encode(ctx context.Context, rec *store.Record, version int64) (*encoded, error) {
	if err := store.CheckRecord(rec); err != nil {
		return nil, err
	}
	body, size, err := s.codec.encode(rec)
	if err != nil {
		return nil, err
	}
	exp := rec.ExpiresAt
	if exp.IsZero() {
		exp = s.now().Add(s.retention)
	}
	e := &encoded{id: rec.Response.ID, head: head{
		PK:        pk(tenant.From(ctx), rec.Response.ID),
		SK:        skHead,
		Status:    string(rec.Response.Status),
		CreatedAt: rec.Response.CreatedAt,
		ExpiresAt: exp.Unix(),
		Gen:       newGen(),
		Version:   version,
		Format:    formatJSONGzip,
		Size:      size,
	}}
	if rec.Job != nil {
		e.head.Claim = rec.Job.Claim
	}
	if len(body) <= s.inlineMax {
		e.head.Body = body
		return e, nil
	}
	if e.chunks, err = s.split(body); err != nil {
		return nil, fmt.Errorf("dynamodb: response %s: %w", e.id, err)
	}
	e.head.Chunks = len(e.chunks)
	return e, nil
}

// split cuts a compressed body into chunks.
func (s *Store) split(body []byte) ([][]byte, error) {
	var chunks [][]byte
	for len(body) > 0 {
		n := min(s.chunkSize, len(body))
		chunks = append(chunks, body[:n])
		body = body[n:]
	}
	if len(chunks) > MaxChunks {
		return nil, fmt.Errorf("%d chunks needed, more than %d: %w", len(chunks), MaxChunks, ErrTooLarge)
	}
	return chunks, nil
}

func (s *Store) nowUnix() int64 { return s.now().Unix() }

// Create stores a new record: one PutItem when its compressed JSON fits in
// one item; else one TransactWriteItems (up to 10 chunks), or the chunks
// by BatchWriteItem and then the head by a conditional PutItem. The
// condition (no live record with this key) is on the head, which is
// written last or atomically with the chunks, so no reader ever sees part
// of a record. ErrConflict when a live record has the id. The record is
// stored as version 0; rec.Version is set to 0 and rec.ExpiresAt to the
// stored expiry.
func (s *Store) Create(ctx context.Context, rec *store.Record) error {
	e, err := s.encode(ctx, rec, 0)
	if err != nil {
		return err
	}
	cond := expression.AttributeNotExists(expression.Name(attrPK)).
		Or(expression.Name(attrExpiresAt).LessThanEqual(expression.Value(s.nowUnix())))
	if n := len(e.chunks); n > 0 && n <= s.maxTxChunks {
		err = s.createTx(ctx, e, cond)
	} else {
		err = s.putHead(ctx, e, cond, nil)
	}
	if err == nil {
		rec.Version, rec.ExpiresAt = 0, time.Unix(e.head.ExpiresAt, 0)
	}
	return err
}

// Update replaces the record when its stored status is expect, its stored
// version is rec.Version and store.UpdateAllowed(expect,
// rec.Response.Status): a PutItem of the head conditional on status and
// version (after the new chunks, for a large record), which stores version
// rec.Version+1 and, on success, increments rec.Version. Chunks of the
// replaced version are deleted afterwards. On success rec.ExpiresAt is the
// stored expiry: a zero one restarts the retention.
func (s *Store) Update(ctx context.Context, rec *store.Record, expect api.Status) error {
	if err := store.CheckRecord(rec); err != nil {
		return err
	}
	id := rec.Response.ID
	if next := rec.Response.Status; !store.UpdateAllowed(expect, next) {
		// Illegal whatever is stored; only "absent" needs a read.
		if _, err := s.readHead(ctx, pk(tenant.From(ctx), id), id, true); err != nil {
			return err
		}
		return fmt.Errorf("dynamodb: update %s: status %s cannot become %s: %w", id, expect, next, store.ErrConflict)
	}
	e, err := s.encode(ctx, rec, rec.Version+1)
	if err != nil {
		return err
	}
	cond := expression.Name(attrStatus).Equal(expression.Value(string(expect))).
		And(expression.Name(attrVersion).Equal(expression.Value(rec.Version))).
		And(expression.Name(attrExpiresAt).GreaterThan(expression.Value(s.nowUnix())))
	if err := s.putHead(ctx, e, cond, &expect); err != nil {
		return err
	}
	rec.Version++
	rec.ExpiresAt = time.Unix(e.head.ExpiresAt, 0)
	return nil
}

// putHead writes e's chunks (if any), then its head under cond. expect is
// nil for a create. On a definite failure the new chunks are deleted
// again; after success, the chunks of the replaced version are.
func (s *Store) putHead(ctx context.Context, e *encoded, cond expression.ConditionBuilder, expect *api.Status) error {
	op := "create"
	if expect != nil {
		op = "update"
	}
	if len(e.chunks) > 0 {
		if err := s.putChunks(ctx, e.head.PK, e.head.Gen, e.head.ExpiresAt, e.chunks); err != nil {
			s.dropChunks(ctx, e.head.PK, e.head.Gen, len(e.chunks))
			return fmt.Errorf("dynamodb: %s %s: write chunks: %w", op, e.id, err)
		}
	}
	item, err := attributevalue.MarshalMap(e.head)
	if err != nil {
		return fmt.Errorf("dynamodb: %s %s: %w", op, e.id, err)
	}
	ex, err := expression.NewBuilder().WithCondition(cond).Build()
	if err != nil {
		return fmt.Errorf("dynamodb: %s %s: %w", op, e.id, err)
	}
	out, err := s.api.PutItem(ctx, &ddb.PutItemInput{
		TableName:                           s.table,
		Item:                                item,
		ConditionExpression:                 ex.Condition(),
		ExpressionAttributeNames:            ex.Names(),
		ExpressionAttributeValues:           ex.Values(),
		ReturnValues:                        types.ReturnValueAllOld,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if err != nil {
		var ccf *types.ConditionalCheckFailedException
		if errors.As(err, &ccf) {
			if own := s.ownWrite(ccf.Item, e.head.Gen); own {
				return nil // a retry of a write that had succeeded
			}
			err = s.conditionError(op, e.id, ccf.Item, expect, e.head.Version-1)
		} else {
			err = fmt.Errorf("dynamodb: %s %s: %w", op, e.id, err)
		}
		if len(e.chunks) > 0 && definite(err) {
			s.dropChunks(ctx, e.head.PK, e.head.Gen, len(e.chunks))
		}
		return err
	}
	s.dropReplaced(ctx, out.Attributes)
	return nil
}

// createTx writes e's chunks and head in one transaction; the head carries
// the create condition. The SDK's idempotency token makes its retries safe.
func (s *Store) createTx(ctx context.Context, e *encoded, cond expression.ConditionBuilder) error {
	ex, err := expression.NewBuilder().WithCondition(cond).Build()
	if err != nil {
		return fmt.Errorf("dynamodb: create %s: %w", e.id, err)
	}
	items := make([]types.TransactWriteItem, 0, len(e.chunks)+1)
	for i, body := range e.chunks {
		c := chunk{PK: e.head.PK, SK: chunkSK(e.head.Gen, i), ExpiresAt: e.head.ExpiresAt, Body: body}
		items = append(items, types.TransactWriteItem{Put: &types.Put{TableName: s.table, Item: c.item()}})
	}
	hitem, err := attributevalue.MarshalMap(e.head)
	if err != nil {
		return fmt.Errorf("dynamodb: create %s: %w", e.id, err)
	}
	items = append(items, types.TransactWriteItem{Put: &types.Put{
		TableName:                           s.table,
		Item:                                hitem,
		ConditionExpression:                 ex.Condition(),
		ExpressionAttributeNames:            ex.Names(),
		ExpressionAttributeValues:           ex.Values(),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}})
	_, err = s.api.TransactWriteItems(ctx, &ddb.TransactWriteItemsInput{TransactItems: items})
	if err == nil {
		return nil
	}
	var tce *types.TransactionCanceledException
	if errors.As(err, &tce) && len(tce.CancellationReasons) == len(items) {
		r := tce.CancellationReasons[len(items)-1]
		if aws.ToString(r.Code) == "ConditionalCheckFailed" {
			if s.ownWrite(r.Item, e.head.Gen) {
				return nil
			}
			return s.conditionError("create", e.id, r.Item, nil, 0)
		}
	}
	return fmt.Errorf("dynamodb: create %s: %w", e.id, err)
}

// ownWrite reports whether old (the item that failed a condition) is the
// head this very write put: a retried request whose first attempt had
// succeeded.
func (s *Store) ownWrite(old map[string]types.AttributeValue, gen string) bool {
	if old == nil {
		return false
	}
	var h head
	return attributevalue.UnmarshalMap(old, &h) == nil && h.Gen == gen
}

// conditionError maps a failed condition to ErrNotFound (no live record) or
// ErrConflict, given the item that failed it and, for an update, the
// status and version it expected.
func (s *Store) conditionError(op, id string, old map[string]types.AttributeValue, expect *api.Status, version int64) error {
	var h head
	if old != nil {
		if err := attributevalue.UnmarshalMap(old, &h); err != nil {
			return fmt.Errorf("dynamodb: %s %s: %w", op, id, err)
		}
	}
	live := old != nil && h.ExpiresAt > s.nowUnix()
	switch {
	case expect == nil:
		return fmt.Errorf("dynamodb: create %s: %w", id, store.ErrConflict)
	case !live:
		return fmt.Errorf("dynamodb: %s %s: %w", op, id, store.ErrNotFound)
	}
	if h.Status != string(*expect) {
		return fmt.Errorf("dynamodb: %s %s: status is %s, not %s: %w", op, id, h.Status, *expect, store.ErrConflict)
	}
	return fmt.Errorf("dynamodb: %s %s: version is %d, not %d: %w", op, id, h.Version, version, store.ErrConflict)
}

// definite reports whether err says the request certainly was not applied:
// a domain error or an error the service answered as the client's fault
// (throttling included). Timeouts, transport and server errors are
// ambiguous: the write may have happened.
func definite(err error) bool {
	if errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrLeaseLost) {
		return true
	}
	var ae smithy.APIError
	return errors.As(err, &ae) && ae.ErrorFault() != smithy.FaultServer && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled)
}

// putChunks writes the chunks of generation gen with BatchWriteItem, 25
// at a time.
func (s *Store) putChunks(ctx context.Context, pk, gen string, expiresAt int64, chunks [][]byte) error {
	reqs := make([]types.WriteRequest, 0, len(chunks))
	for i, body := range chunks {
		c := chunk{PK: pk, SK: chunkSK(gen, i), ExpiresAt: expiresAt, Body: body}
		reqs = append(reqs, types.WriteRequest{PutRequest: &types.PutRequest{Item: c.item()}})
	}
	return s.batchWrite(ctx, reqs)
}

// batchWrite sends reqs in batches, resending unprocessed items (what
// DynamoDB did not write under throttling) with backoff.
func (s *Store) batchWrite(ctx context.Context, reqs []types.WriteRequest) error {
	for len(reqs) > 0 {
		batch := reqs[:min(batchSize, len(reqs))]
		reqs = reqs[len(batch):]
		for round := 0; len(batch) > 0; round++ {
			if round == s.batchRounds {
				return fmt.Errorf("%d items still unprocessed after %d rounds (throttled)", len(batch), round)
			}
			if round > 0 {
				if err := sleep(ctx, backoff(round)); err != nil {
					return err
				}
			}
			out, err := s.api.BatchWriteItem(ctx, &ddb.BatchWriteItemInput{
				RequestItems: map[string][]types.WriteRequest{*s.table: batch},
			})
			if err != nil {
				return err
			}
			batch = out.UnprocessedItems[*s.table]
		}
	}
	return nil
}

// backoff is the delay before resending unprocessed items in round (1,
// 2, ...): a random duration up to min(2 s, 50 ms × 2^round).
func backoff(round int) time.Duration {
	d, _ := jitterBackoff(round, nil)
	return d
}

// sleep waits d, or returns ctx's error when it ends first.
func sleep(ctx context.Context, d time.Duration) error {
	if !wait.Sleep(ctx, d) {
		return ctx.Err()
	}
	return nil
}

// dropChunks deletes n chunks of generation gen, best effort: chunks no
// head names are invisible, and they carry the record's expiry, so
// DynamoDB's TTL removes whatever this fails to.
func (s *Store) dropChunks(ctx context.Context, pk, gen string, n int) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	_ = s.deleteChunks(ctx, pk, gen, n)
}

func (s *Store) deleteChunks(ctx context.Context, pk, gen string, n int) error {
	reqs := make([]types.WriteRequest, n)
	for i := range reqs {
		reqs[i] = types.WriteRequest{DeleteRequest: &types.DeleteRequest{Key: keyOf(pk, chunkSK(gen, i))}}
	}
	return s.batchWrite(ctx, reqs)
}

// dropReplaced deletes the chunks of a replaced head (old attributes).
func (s *Store) dropReplaced(ctx context.Context, old map[string]types.AttributeValue) {
	if old == nil {
		return
	}
	var h head
	if attributevalue.UnmarshalMap(old, &h) == nil && h.Chunks > 0 {
		s.dropChunks(ctx, h.PK, h.Gen, h.Chunks)
	}
}

// readHead returns the live head of pk; ErrNotFound when absent or
// expired. keysOnly reads only what a status check needs.
func (s *Store) readHead(ctx context.Context, pk, id string, keysOnly bool) (*head, error) {
	in := &ddb.GetItemInput{TableName: s.table, Key: keyOf(pk, skHead), ConsistentRead: aws.Bool(true)}
	if keysOnly {
		proj := expression.NamesList(expression.Name(attrPK), expression.Name(attrStatus), expression.Name(attrExpiresAt),
			expression.Name(attrGen), expression.Name(attrVersion))
		ex, err := expression.NewBuilder().WithProjection(proj).Build()
		if err != nil {
			return nil, fmt.Errorf("dynamodb: get %s: %w", id, err)
		}
		in.ProjectionExpression, in.ExpressionAttributeNames = ex.Projection(), ex.Names()
	}
	out, err := s.api.GetItem(ctx, in)
	if err != nil {
		return nil, fmt.Errorf("dynamodb: get %s: %w", id, err)
	}
	if out.Item == nil {
		return nil, fmt.Errorf("dynamodb: get %s: %w", id, store.ErrNotFound)
	}
	var h head
	if err := attributevalue.UnmarshalMap(out.Item, &h); err != nil {
		return nil, fmt.Errorf("dynamodb: get %s: %w: %v", id, store.ErrCorrupt, err)
	}
	if h.ExpiresAt <= s.nowUnix() {
		return nil, fmt.Errorf("dynamodb: get %s: %w", id, store.ErrNotFound)
	}
	return &h, nil
}

// Get returns the record: one consistent GetItem when it fits in one item,
// plus a BatchGetItem of its chunks when it does not. ErrNotFound when absent or
// expired.
func (s *Store) Get(ctx context.Context, id string) (*store.Record, error) {
	if id == "" {
		return nil, fmt.Errorf("dynamodb: get: empty id: %w", store.ErrNotFound)
	}
	p := pk(tenant.From(ctx), id)
	// A concurrent Update or Delete may remove the chunks of the head just
	// read; then the head has changed too, and reading again sees it.
	const attempts = 4
	for attempt := 1; ; attempt++ {
		h, err := s.readHead(ctx, p, id, false)
		if err != nil {
			return nil, err
		}
		if h.Format != formatJSONGzip {
			return nil, fmt.Errorf("dynamodb: get %s: %w: unknown format %q", id, store.ErrCorrupt, h.Format)
		}
		var body []byte
		if h.Chunks == 0 {
			body = h.Body
		} else {
			parts, missing, err := s.readChunks(ctx, p, h.Gen, h.Chunks)
			if err != nil {
				return nil, fmt.Errorf("dynamodb: get %s: %w", id, err)
			}
			if missing > 0 {
				if attempt < attempts {
					continue
				}
				return nil, fmt.Errorf("dynamodb: get %s: %w: %d of %d chunks missing", id, store.ErrCorrupt, missing, h.Chunks)
			}
			body = bytes.Join(parts, nil)
		}
		rec, err := s.codec.decode(id, bytes.NewReader(body))
		if err != nil {
			return nil, err
		}
		rec.ExpiresAt, rec.Version = time.Unix(h.ExpiresAt, 0), h.Version
		return rec, nil
	}
}

// readChunks returns the bodies of generation gen's n chunks, in order,
// by consistent BatchGetItem: one call for up to 100 chunks and 16 MB,
// where a Query would take one call per 1 MB page. missing counts chunks
// that are not there (replaced or deleted since the head was read).
func (s *Store) readChunks(ctx context.Context, pk, gen string, n int) (parts [][]byte, missing int, err error) {
	const maxKeys = 100 // BatchGetItem's limit
	parts = make([][]byte, n)
	index := make(map[string]int, n)
	for i := range n {
		index[chunkSK(gen, i)] = i
	}
	for start := 0; start < n; start += maxKeys {
		keys := make([]map[string]types.AttributeValue, 0, min(maxKeys, n-start))
		for i := start; i < min(start+maxKeys, n); i++ {
			keys = append(keys, keyOf(pk, chunkSK(gen, i)))
		}
		req := map[string]types.KeysAndAttributes{*s.table: {Keys: keys, ConsistentRead: aws.Bool(true)}}
		for round := 0; len(req) > 0; round++ {
			if round == s.batchRounds {
				return nil, 0, fmt.Errorf("read chunks: %d keys still unprocessed after %d rounds (throttled)", len(req[*s.table].Keys), round)
			}
			if round > 0 {
				if err := sleep(ctx, backoff(round)); err != nil {
					return nil, 0, fmt.Errorf("read chunks: %w", err)
				}
			}
			out, err := s.api.BatchGetItem(ctx, &ddb.BatchGetItemInput{RequestItems: req})
			if err != nil {
				return nil, 0, fmt.Errorf("read chunks: %w", err)
			}
			for _, item := range out.Responses[*s.table] {
				var c chunk
				if err := attributevalue.UnmarshalMap(item, &c); err != nil {
					return nil, 0, fmt.Errorf("%w: chunk: %v", store.ErrCorrupt, err)
				}
				i, ok := index[c.SK]
				if !ok || c.PK != pk {
					return nil, 0, fmt.Errorf("%w: unexpected chunk %s", store.ErrCorrupt, c.SK)
				}
				parts[i] = c.Body
			}
			req = out.UnprocessedKeys
		}
	}
	for _, p := range parts {
		if p == nil {
			missing++
		}
	}
	return parts, missing, nil
}

// Delete removes the record: a conditional DeleteItem of the head (so no
// reader finds it from then on), a BatchWriteItem of its chunks if it has
// any, and a Query for its event items (deleted by BatchWriteItem if there
// are any). ErrNotFound when absent or expired; store.ErrPartlyDeleted when
// the head is deleted but some chunks or events are not. When the SDK's
// retry finds the head deleted by its earlier attempt (see deleteLive),
// a Query of the partition finds what remains.
func (s *Store) Delete(ctx context.Context, id string) error {
	if id == "" {
		return fmt.Errorf("dynamodb: delete: empty id: %w", store.ErrNotFound)
	}
	p := pk(tenant.From(ctx), id)
	old, err := s.deleteLive(ctx, keyOf(p, skHead))
	if err != nil {
		return fmt.Errorf("dynamodb: delete %s: %w", id, err)
	}
	if old == nil {
		// An earlier attempt deleted the head, whose answer named its
		// chunks: delete what remains of the partition.
		if err := s.clearPartition(ctx, p); err != nil {
			return fmt.Errorf("dynamodb: delete %s: %w: of its items: %w", id, store.ErrPartlyDeleted, err)
		}
		return nil
	}
	var h head
	if err := attributevalue.UnmarshalMap(old, &h); err != nil {
		return nil // deleted; what it named is left to TTL
	}
	if h.Chunks > 0 {
		if err := s.deleteChunks(ctx, p, h.Gen, h.Chunks); err != nil {
			return fmt.Errorf("dynamodb: delete %s: %w: of its %d chunk items: %w", id, store.ErrPartlyDeleted, h.Chunks, err)
		}
	}
	// Any response may have events (AppendEvents does not ask), so look.
	if err := s.deleteEvents(ctx, p, h.ExpiresAt); err != nil {
		return fmt.Errorf("dynamodb: delete %s: %w: of its event items: %w", id, store.ErrPartlyDeleted, err)
	}
	return nil
}

// ListInputItems pages through the record's Input. The input items live in
// the record, so a page costs the record's one read (see the package doc).
func (s *Store) ListInputItems(ctx context.Context, id string, opts api.ListOptions) (*store.ItemPage, error) {
	rec, err := s.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	page, err := store.PageItems(rec.Input, opts)
	if err != nil {
		return nil, fmt.Errorf("dynamodb: list input items of %s: %w", id, err)
	}
	return page, nil
}
