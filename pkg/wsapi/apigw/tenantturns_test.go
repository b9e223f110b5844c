package apigw_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/internal/testing/fakellm"
	"github.com/lambent/lambent/internal/testing/fakesqs"
	"github.com/lambent/lambent/pkg/store/dynamodb"
	"github.com/lambent/lambent/pkg/tenant"
)

// countDB counts the requests to the connections table.
type countDB struct {
	dynamodb.API
	n *atomic.Int64
}

func (c countDB) GetItem(ctx context.Context, in *ddb.GetItemInput, optFns ...func(*ddb.Options)) (*ddb.GetItemOutput, error) {
	c.n.Add(1)
	return c.API.GetItem(ctx, in, optFns...)
}

func (c countDB) PutItem(ctx context.Context, in *ddb.PutItemInput, optFns ...func(*ddb.Options)) (*ddb.PutItemOutput, error) {
	c.n.Add(1)
	return c.API.PutItem(ctx, in, optFns...)
}

func (c countDB) UpdateItem(ctx context.Context, in *ddb.UpdateItemInput, optFns ...func(*ddb.Options)) (*ddb.UpdateItemOutput, error) {
	c.n.Add(1)
	return c.API.UpdateItem(ctx, in, optFns...)
}

func (c countDB) DeleteItem(ctx context.Context, in *ddb.DeleteItemInput, optFns ...func(*ddb.Options)) (*ddb.DeleteItemOutput, error) {
	c.n.Add(1)
	return c.API.DeleteItem(ctx, in, optFns...)
}

// turnsPerTenantRule has two tenants: acme (keyA) and globex (keyB).
func turnsPerTenantRule() tenant.Rule {
	return tenant.Rule{Keys: tenant.NewKeyring(map[string]string{keyA: "acme", keyB: "globex"})}
}

// With LAMBENT_LIMIT_TENANT_WEBSOCKET_TURNS at 1, a tenant's second turn
// while its first runs (on another connection, another Lambda
// invocation) is refused at once with the 429 a local gateway gives over
// its in-flight limit, with no model call, and its message is consumed;
// another tenant's turn runs meanwhile; once the first turn settles the
// tenant's next turn runs, and an entry whose running_until has passed
// does not count. (Every turn ran: one tenant could take every slot of
// WebSocketQueueMaxConcurrency.)
func TestTenantTurnsCap(t *testing.T) {
	t.Parallel()
	release, called := make(chan struct{}), make(chan struct{}, 1)
	fake := fakellm.NewHandler(func(req fakellm.Request) fakellm.Turn {
		if bytes.Contains(req.Body, []byte("Take your time.")) {
			called <- struct{}{}
			return fakellm.Turn{Text: "Slow answer.", Block: release}
		}
		return fakellm.Turn{Text: "Quick answer."}
	})
	e := newEnvModel(t, turnsPerTenantRule(), false, fake)
	e.conns.TenantTurns = 1
	a1, a2, b := e.connect(keyA), e.connect(keyA), e.connect(keyB)

	e.invoke(routeEvent("MESSAGE", "$default", a1, "", `{"type":"response.create","input":"Take your time."}`, time.Now()))
	body, err := json.Marshal(fakesqs.Event(e.queue.Take()...))
	require.NoError(t, err)
	ran := make(chan error, 1)
	go func() {
		_, err := e.h.Invoke(context.WithoutCancel(t.Context()), body)
		ran <- err
	}()
	<-called // the first turn is at the model

	calls := e.fake.Calls()
	env := e.envelope(e.send(a2, `{"type":"response.create","input":"Hi"}`))
	require.Equal(t, http.StatusTooManyRequests, env.Status)
	require.Equal(t, "rate_limit_exceeded", env.Error.Code)
	require.Contains(t, env.Error.Message, "LAMBENT_LIMIT_TENANT_WEBSOCKET_TURNS")
	require.Equal(t, calls, e.fake.Calls(), "a refused turn makes no model call")
	require.Empty(t, e.load(t, tenantCtx(t, "acme"), a2).Latest, "the refused turn left no lane")

	require.Equal(t, "Quick answer.", e.text(e.events(e.send(b, `{"type":"response.create","input":"Hi"}`))), "another tenant's turn runs")

	close(release)
	require.NoError(t, <-ran)
	require.Equal(t, "Quick answer.", e.text(e.events(e.send(a2, `{"type":"response.create","input":"Hi"}`))), "the first turn settled")

	// A turn whose invocation died holds its entry only until its
	// running_until.
	timeout := e.conns.TurnTimeout
	e.conns.TurnTimeout = time.Nanosecond
	ok, err := e.load(t, tenantCtx(t, "acme"), a1).EnterTurn(t.Context(), "req_died")
	require.NoError(t, err)
	require.True(t, ok)
	e.conns.TurnTimeout = timeout
	require.Equal(t, "Quick answer.", e.text(e.events(e.send(a2, `{"type":"response.create","input":"Hi"}`))), "a lapsed entry does not count")
	// And a live one does.
	ok, err = e.load(t, tenantCtx(t, "acme"), a1).EnterTurn(t.Context(), "req_live")
	require.NoError(t, err)
	require.True(t, ok)
	env = e.envelope(e.send(a2, `{"type":"response.create","input":"Hi"}`))
	require.Equal(t, http.StatusTooManyRequests, env.Status)
	require.Empty(t, env.StreamID)
	// The refusal of a lane's turn carries its stream_id, as every message
	// of that response.create does.
	env = e.envelope(e.send(a2, `{"type":"response.create","input":"Hi","stream_id":"B"}`))
	require.Equal(t, http.StatusTooManyRequests, env.Status)
	require.Equal(t, "B", env.StreamID)
}

// A turn's DynamoDB requests: with the cap unset, as many as before it
// existed; with it set, two more writes (its entry, and its removal), and
// for the tenant's first turn a read and the write of its item.
func TestTenantTurnsCost(t *testing.T) {
	t.Parallel()
	var n atomic.Int64
	e := newEnvDB(t, turnsPerTenantRule(), false, fakellm.NameModel("ok"), func(db dynamodb.API) dynamodb.API { return countDB{db, &n} })
	c := e.connect(keyA)
	turn := func() int64 {
		before := n.Load()
		e.events(e.send(c, `{"type":"response.create","input":"Hi"}`))
		return n.Load() - before
	}
	turn()
	unset := turn()
	require.EqualValues(t, 6, unset, "a turn's requests with the cap unset")
	e.conns.TenantTurns = 4
	require.Equal(t, unset+4, turn(), "the tenant's first turn also reads its turns item, and writes it whole")
	require.Equal(t, unset+2, turn())
}
