// Package ddbmeter meters what a DynamoDB client costs: a middleware on the
// SDK client (Meter.Options) that asks every data call for its consumed
// capacity (ReturnConsumedCapacity TOTAL) and sums, per operation, the
// calls, their attempts (retries included) and the capacity units DynamoDB
// answered with. Tests use it for call budgets; `make bench` for the cost
// of a response. The figures are DynamoDB's own (DynamoDB Local's replies
// when run against it), never estimates.
package ddbmeter

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"
)

// Figures are what a Meter counted.
type Figures struct {
	// Calls and Attempts count the calls per operation ("PutItem") and
	// their HTTP attempts (retries included).
	Calls, Attempts map[string]int
	// WCU and RCU are the write and read capacity units DynamoDB reported.
	// DynamoDB Local reports a write's units only as a total, counted as
	// WCU; its transactional writes count single units (AWS bills them
	// double).
	WCU, RCU float64
}

// Requests is the number of calls of every operation.
func (f Figures) Requests() int {
	n := 0
	for _, v := range f.Calls {
		n += v
	}
	return n
}

// Sub returns f minus g (what happened between two snapshots).
func (f Figures) Sub(g Figures) Figures {
	out := Figures{Calls: maps.Clone(f.Calls), Attempts: maps.Clone(f.Attempts), WCU: f.WCU - g.WCU, RCU: f.RCU - g.RCU}
	for k, v := range g.Calls {
		out.Calls[k] -= v
		if out.Calls[k] == 0 {
			delete(out.Calls, k)
		}
	}
	for k, v := range g.Attempts {
		out.Attempts[k] -= v
		if out.Attempts[k] == 0 {
			delete(out.Attempts, k)
		}
	}
	return out
}

// Ops lists the calls per operation, "GetItem 2, PutItem 1", by name.
func (f Figures) Ops() string {
	var b strings.Builder
	for i, k := range slices.Sorted(maps.Keys(f.Calls)) {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %d", k, f.Calls[k])
	}
	return b.String()
}

// String is "calls map[...], WCU w, RCU r".
func (f Figures) String() string {
	return fmt.Sprintf("calls %v, WCU %.0f, RCU %.1f", f.Calls, f.WCU, f.RCU)
}

// Meter counts the calls of the clients it is installed on. It is safe
// for concurrent use; the zero value is not: use New.
type Meter struct {
	mu sync.Mutex
	f  Figures
}

// New returns a Meter with nothing counted.
func New() *Meter {
	return &Meter{f: Figures{Calls: map[string]int{}, Attempts: map[string]int{}}}
}

// Reset forgets what was counted.
func (m *Meter) Reset() {
	m.mu.Lock()
	defer m.mu.Unlock()
	clear(m.f.Calls)
	clear(m.f.Attempts)
	m.f.WCU, m.f.RCU = 0, 0
}

// Snapshot returns a copy of what was counted so far.
func (m *Meter) Snapshot() Figures {
	m.mu.Lock()
	defer m.mu.Unlock()
	return Figures{Calls: maps.Clone(m.f.Calls), Attempts: maps.Clone(m.f.Attempts), WCU: m.f.WCU, RCU: m.f.RCU}
}

// Total is the number of calls so far.
func (m *Meter) Total() int { return m.Snapshot().Requests() }

// Calls is the number of calls of operation op so far.
func (m *Meter) Calls(op string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.f.Calls[op]
}

// String describes what was counted (Figures.String).
func (m *Meter) String() string { return m.Snapshot().String() }

// Options installs the meter on a client: pass it to ddb.New or
// ddb.NewFromConfig (or dynamodb.NewClient) as an option function.
func (m *Meter) Options(o *ddb.Options) {
	o.APIOptions = append(o.APIOptions, func(st *middleware.Stack) error {
		err := st.Initialize.Add(middleware.InitializeMiddlewareFunc("lambentMeterCalls", func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			op := middleware.GetOperationName(ctx)
			askCapacity(in.Parameters)
			m.mu.Lock()
			m.f.Calls[op]++
			m.mu.Unlock()
			out, md, err := next.HandleInitialize(ctx, in)
			w, r := capacity(out.Result)
			m.mu.Lock()
			m.f.WCU += w
			m.f.RCU += r
			m.mu.Unlock()
			return out, md, err
		}), middleware.Before)
		if err != nil {
			return err
		}
		return st.Finalize.Add(middleware.FinalizeMiddlewareFunc("lambentMeterAttempts", func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
			m.mu.Lock()
			m.f.Attempts[middleware.GetOperationName(ctx)]++
			m.mu.Unlock()
			return next.HandleFinalize(ctx, in)
		}), middleware.After)
	})
}

// askCapacity sets ReturnConsumedCapacity TOTAL on the input of a data
// call (control-plane calls have no such field).
func askCapacity(params any) {
	total := types.ReturnConsumedCapacityTotal
	switch p := params.(type) {
	case *ddb.GetItemInput:
		p.ReturnConsumedCapacity = total
	case *ddb.PutItemInput:
		p.ReturnConsumedCapacity = total
	case *ddb.UpdateItemInput:
		p.ReturnConsumedCapacity = total
	case *ddb.DeleteItemInput:
		p.ReturnConsumedCapacity = total
	case *ddb.QueryInput:
		p.ReturnConsumedCapacity = total
	case *ddb.ScanInput:
		p.ReturnConsumedCapacity = total
	case *ddb.BatchGetItemInput:
		p.ReturnConsumedCapacity = total
	case *ddb.BatchWriteItemInput:
		p.ReturnConsumedCapacity = total
	case *ddb.TransactWriteItemsInput:
		p.ReturnConsumedCapacity = total
	case *ddb.TransactGetItemsInput:
		p.ReturnConsumedCapacity = total
	}
}

// capacity returns the units a call's result reports: reads as RCU,
// writes as WCU (a write reported only as a total counts as WCU).
func capacity(result any) (wcu, rcu float64) {
	write := func(cs ...types.ConsumedCapacity) {
		for _, c := range cs {
			wcu += aws.ToFloat64(c.WriteCapacityUnits)
			rcu += aws.ToFloat64(c.ReadCapacityUnits)
			if c.WriteCapacityUnits == nil && c.ReadCapacityUnits == nil {
				wcu += aws.ToFloat64(c.CapacityUnits)
			}
		}
	}
	read := func(cs ...types.ConsumedCapacity) {
		for _, c := range cs {
			rcu += aws.ToFloat64(c.CapacityUnits)
		}
	}
	one := func(c *types.ConsumedCapacity) []types.ConsumedCapacity {
		if c == nil {
			return nil
		}
		return []types.ConsumedCapacity{*c}
	}
	switch r := result.(type) {
	case *ddb.GetItemOutput:
		read(one(r.ConsumedCapacity)...)
	case *ddb.QueryOutput:
		read(one(r.ConsumedCapacity)...)
	case *ddb.ScanOutput:
		read(one(r.ConsumedCapacity)...)
	case *ddb.BatchGetItemOutput:
		read(r.ConsumedCapacity...)
	case *ddb.TransactGetItemsOutput:
		read(r.ConsumedCapacity...)
	case *ddb.PutItemOutput:
		write(one(r.ConsumedCapacity)...)
	case *ddb.UpdateItemOutput:
		write(one(r.ConsumedCapacity)...)
	case *ddb.DeleteItemOutput:
		write(one(r.ConsumedCapacity)...)
	case *ddb.BatchWriteItemOutput:
		write(r.ConsumedCapacity...)
	case *ddb.TransactWriteItemsOutput:
		write(r.ConsumedCapacity...)
	}
	return wcu, rcu
}

// ItemSize is an item's size as DynamoDB counts it for storage and
// capacity: each attribute's name plus its value (strings and binaries
// their length, numbers about one byte per two digits plus one, lists and
// maps 3 bytes plus their elements).
func ItemSize(item map[string]types.AttributeValue) int {
	n := 0
	for k, v := range item {
		n += len(k) + valueSize(v)
	}
	return n
}

func valueSize(v types.AttributeValue) int {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return len(v.Value)
	case *types.AttributeValueMemberN:
		return numberSize(v.Value)
	case *types.AttributeValueMemberB:
		return len(v.Value)
	case *types.AttributeValueMemberBOOL, *types.AttributeValueMemberNULL:
		return 1
	case *types.AttributeValueMemberSS:
		n := 0
		for _, s := range v.Value {
			n += len(s)
		}
		return n
	case *types.AttributeValueMemberNS:
		n := 0
		for _, s := range v.Value {
			n += numberSize(s)
		}
		return n
	case *types.AttributeValueMemberBS:
		n := 0
		for _, b := range v.Value {
			n += len(b)
		}
		return n
	case *types.AttributeValueMemberL:
		n := 3
		for _, e := range v.Value {
			n += 1 + valueSize(e)
		}
		return n
	case *types.AttributeValueMemberM:
		return 3 + ItemSize(v.Value)
	}
	return 0
}

func numberSize(s string) int {
	digits := 0
	for _, c := range s {
		if c >= '0' && c <= '9' {
			digits++
		}
	}
	return (digits+1)/2 + 1
}

// Scanner is the part of the DynamoDB client Stored uses.
type Scanner interface {
	Scan(ctx context.Context, in *ddb.ScanInput, optFns ...func(*ddb.Options)) (*ddb.ScanOutput, error)
}

// Stored scans table and returns its items and their bytes (ItemSize);
// keep, when non-nil, selects the items counted.
func Stored(ctx context.Context, c Scanner, table string, keep func(map[string]types.AttributeValue) bool) (items int, bytes int64, err error) {
	in := &ddb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true)}
	for {
		out, err := c.Scan(ctx, in)
		if err != nil {
			return 0, 0, fmt.Errorf("scan %s: %w", table, err)
		}
		for _, it := range out.Items {
			if keep == nil || keep(it) {
				items++
				bytes += int64(ItemSize(it))
			}
		}
		if len(out.LastEvaluatedKey) == 0 {
			return items, bytes, nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}
