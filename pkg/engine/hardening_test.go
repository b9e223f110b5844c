package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/internal/testing/dynamotest"
	"github.com/lambent/lambent/internal/testing/mcptest"
	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/compaction"
	"github.com/lambent/lambent/pkg/engine/schemacheck"
	"github.com/lambent/lambent/pkg/limits"
	"github.com/lambent/lambent/pkg/provider"
	"github.com/lambent/lambent/pkg/store"
	"github.com/lambent/lambent/pkg/store/dynamodb"
	"github.com/lambent/lambent/pkg/tenant"
	"github.com/lambent/lambent/pkg/tools"
	"github.com/lambent/lambent/pkg/tools/mcp"
)

// spyStore counts the calls that reach a store.
type spyStore struct {
	store.ResponseStore
	calls atomic.Int64
}

func (s *spyStore) Get(ctx context.Context, id string) (*store.Record, error) {
	s.calls.Add(1)
	return s.ResponseStore.Get(ctx, id)
}

func (s *spyStore) Delete(ctx context.Context, id string) error {
	s.calls.Add(1)
	return s.ResponseStore.Delete(ctx, id)
}

func (s *spyStore) ListInputItems(ctx context.Context, id string, opts api.ListOptions) (*store.ItemPage, error) {
	s.calls.Add(1)
	return s.ResponseStore.ListInputItems(ctx, id, opts)
}

func (s *spyStore) Update(ctx context.Context, rec *store.Record, expect api.Status) error {
	s.calls.Add(1)
	return s.ResponseStore.Update(ctx, rec, expect)
}

// logCounter is a slog handler that keeps the messages of records at
// Error level and above.
type logCounter struct {
	mu     sync.Mutex
	errors []string
}

func (l *logCounter) Enabled(context.Context, slog.Level) bool { return true }
func (l *logCounter) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *logCounter) WithGroup(string) slog.Handler            { return l }
func (l *logCounter) Handle(_ context.Context, r slog.Record) error {
	if r.Level >= slog.LevelError {
		msg := r.Message
		r.Attrs(func(a slog.Attr) bool { msg += " " + a.String(); return true })
		l.mu.Lock()
		l.errors = append(l.errors, msg)
		l.mu.Unlock()
	}
	return nil
}

func (l *logCounter) errs() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.errors...)
}

// wantNotFound asserts err is the 404 of an unknown response id.
func wantNotFound(t *testing.T, err error, param, code string) {
	t.Helper()
	var ae *api.Error
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, http.StatusNotFound, ae.Status, ae.Message)
	assert.Equal(t, param, ae.Param)
	assert.Equal(t, code, ae.Code)
	assert.LessOrEqual(t, len(ae.Message), 300, "the message quotes a bounded part of the id")
}

// Ids that are not well-formed response ids are unknown on every entry
// point and on both stores, without a store call; a well-formed id of the
// greatest length is an ordinary lookup (404 when absent).
func TestMalformedIDsNeverReachTheStore(t *testing.T) { forStores(t, testMalformedIDs) }

func testMalformedIDs(t *testing.T, mk storeMaker) {
	spy := &spyStore{ResponseStore: mk(t)}
	e, _ := newEngine(t, script(), nil, func(c *Config) { c.Store = spy })
	ctx := context.Background()
	for _, id := range []string{
		"resp_" + strings.Repeat("a", 3000), "resp_" + strings.Repeat("a", 2048), "msg_abc", "resp_", "resp_a#b",
		"resp_é", "resp_a\x00b", "resp_a/b", "RESP_abc", strings.Repeat("\xff", 40),
	} {
		_, err := e.GetResponse(ctx, id)
		wantNotFound(t, err, "id", "response_not_found")
		_, err = e.DeleteResponse(ctx, id)
		wantNotFound(t, err, "id", "response_not_found")
		_, err = e.ListInputItems(ctx, id, api.ListOptions{})
		wantNotFound(t, err, "id", "response_not_found")
		_, err = e.CancelResponse(ctx, id)
		wantNotFound(t, err, "id", "response_not_found")
		err = e.StreamResponse(ctx, id, -1, &rawRecorder{})
		wantNotFound(t, err, "id", "response_not_found")
		req := &api.CreateResponseRequest{Input: []api.Item{{Type: api.ItemMessage, Role: api.RoleUser,
			Content: []api.ContentPart{{Type: api.PartInputText, Text: "hi"}}}}, PreviousResponseID: id}
		err = e.CreateResponse(ctx, req, &recorder{})
		wantNotFound(t, err, "previous_response_id", "previous_response_not_found")
	}
	require.Zero(t, spy.calls.Load(), "no malformed id reached the store")

	longest := "resp_" + strings.Repeat("z", api.MaxResponseIDLen-len("resp_"))
	_, err := e.GetResponse(ctx, longest)
	wantNotFound(t, err, "id", "response_not_found")
	_, err = e.DeleteResponse(ctx, longest)
	wantNotFound(t, err, "id", "response_not_found")
	require.Equal(t, int64(2), spy.calls.Load(), "a well-formed id is looked up")
}

// A caller-chosen id of an event-started background response must be a
// well-formed response id.
func TestStartBackgroundRejectsMalformedID(t *testing.T) {
	t.Parallel()
	e, _, _ := bgEngine(t, func(*testing.T) store.ResponseStore { return store.NewMemory(store.MemoryConfig{}) }, script(), nil)
	_, err := e.StartBackground(context.Background(), decodeReq(t, `{"input":"hi"}`), "resp_"+strings.Repeat("a", 200))
	var ae *api.Error
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, http.StatusBadRequest, ae.Status)
	assert.Equal(t, "id", ae.Param)
}

// A caller that went away (its context is done) gets its context's error
// from every read and delete on DynamoDB, never a server error.
func TestCallerGoneIsNotAServerError(t *testing.T) {
	t.Parallel()
	e, _ := newEngine(t, script(text("hi", 1, 1)), nil, func(c *Config) { c.Store = dynamotest.NewStore(t, "") })
	rec, err := run1(t, e, `{"input":"hello"}`)
	require.NoError(t, err)
	id := rec.response(t).ID
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	check := func(op string, err error) {
		t.Helper()
		require.ErrorIs(t, err, context.Canceled, op)
		var ae *api.Error
		assert.False(t, errors.As(err, &ae), "%s: %v is not an API error", op, err)
	}
	_, err = e.GetResponse(ctx, id)
	check("get", err)
	_, err = e.DeleteResponse(ctx, id)
	check("delete", err)
	_, err = e.ListInputItems(ctx, id, api.ListOptions{})
	check("input_items", err)
	_, err = e.CancelResponse(ctx, id)
	check("cancel", err)
	got, err := e.GetResponse(context.Background(), id)
	require.NoError(t, err, "nothing was deleted")
	assert.Equal(t, id, got.ID)
}

// Deleting a running (or queued) background response while a cancel
// request for it is on its way: each answers 200 or 404, the worker stops
// without an error, and nothing is logged as one. Five runs per store.
func TestCancelRacingDeleteOfBackground(t *testing.T) { forStores(t, testCancelRacingDelete) }

func testCancelRacingDelete(t *testing.T, mk storeMaker) {
	okOrNotFound := func(op string, err error) {
		t.Helper()
		if err == nil {
			return
		}
		var ae *api.Error
		require.ErrorAs(t, err, &ae, "%s: %v", op, err)
		require.Equal(t, http.StatusNotFound, ae.Status, "%s: %v", op, err)
	}
	for i := range 5 {
		for _, running := range []bool{true, false} {
			t.Run(fmt.Sprintf("run%d/running=%v", i, running), func(t *testing.T) {
				logs := &logCounter{}
				called := make(chan struct{})
				p := script(step{res: text("never", 1, 1).res, hook: func(ctx context.Context) {
					close(called)
					<-ctx.Done()
				}})
				e, _, q := bgEngine(t, mk, p, nil, func(c *Config) { c.Logger = slog.New(logs) })
				rec, err := runBackground(t, e, `{"input":"take your time","background":true}`)
				require.NoError(t, err)
				id := rec.response(t).ID
				<-q.c
				worker := make(chan error, 1)
				if running {
					go func() { worker <- e.RunBackground(context.Background(), id) }()
					<-called
				}
				var wg sync.WaitGroup
				var cancelErr, deleteErr error
				wg.Go(func() { _, cancelErr = e.CancelResponse(context.Background(), id) })
				wg.Go(func() { _, deleteErr = e.DeleteResponse(context.Background(), id) })
				wg.Wait()
				okOrNotFound("cancel", cancelErr)
				okOrNotFound("delete", deleteErr)
				if running {
					require.NoError(t, <-worker, "the worker stops without an error")
				}
				_, err = e.GetResponse(context.Background(), id)
				if deleteErr == nil {
					wantNotFound(t, err, "id", "response_not_found")
				}
				require.Empty(t, logs.errs(), "nothing is logged as an error")
			})
		}
	}
}

// A conversation that would be larger than the store keeps is refused
// with a 400 before the model is called, on both stores; the response it
// continues is intact, and a new conversation still works.
func TestContextTooLargeBeforeModelCall(t *testing.T) {
	t.Parallel()
	const limit = 256 << 10
	makers := map[string]storeMaker{
		"memory": func(*testing.T) store.ResponseStore { return store.NewMemory(store.MemoryConfig{MaxBytes: limit}) },
		"dynamodb": func(t *testing.T) store.ResponseStore {
			return dynamotest.NewStoreWith(t, dynamodb.Config{MaxRecordBytes: limit})
		},
	}
	for name, mk := range makers {
		t.Run(name, func(t *testing.T) {
			steps := make([]step, 20)
			for i := range steps {
				steps[i] = text("ok", 1, 1)
			}
			p := script(steps...)
			e, _, _ := bgEngine(t, mk, p, nil)
			chunk := strings.Repeat("lorem ipsum ", (60<<10)/12)
			body := func(prev string) string {
				if prev == "" {
					return fmt.Sprintf(`{"input":%q}`, chunk)
				}
				return fmt.Sprintf(`{"input":%q,"previous_response_id":%q}`, chunk, prev)
			}
			prev := ""
			var refused error
			for range 10 {
				rec, err := run1(t, e, body(prev))
				if err != nil {
					refused = err
					break
				}
				prev = rec.response(t).ID
			}
			var ae *api.Error
			require.ErrorAs(t, refused, &ae, "a conversation past %d bytes is refused", limit)
			assert.Equal(t, http.StatusBadRequest, ae.Status)
			assert.Equal(t, "previous_response_id", ae.Param)
			assert.Equal(t, "context_too_large", ae.Code)
			assert.Contains(t, ae.Message, fmt.Sprint(limit))
			made := len(p.requests())
			assert.Greater(t, made, 1)
			got, err := e.GetResponse(context.Background(), prev)
			require.NoError(t, err, "the last stored response is intact")
			assert.Equal(t, api.StatusCompleted, got.Status)

			// Too large on its own: param input; background too.
			big := strings.Repeat("x", limit+1)
			_, err = run1(t, e, fmt.Sprintf(`{"input":%q}`, big))
			require.ErrorAs(t, err, &ae)
			assert.Equal(t, "input", ae.Param)
			assert.Equal(t, "context_too_large", ae.Code)
			_, err = runBackground(t, e, fmt.Sprintf(`{"input":%q,"background":true}`, big))
			require.ErrorAs(t, err, &ae)
			assert.Equal(t, http.StatusBadRequest, ae.Status)
			assert.Equal(t, "context_too_large", ae.Code)
			assert.Equal(t, made, len(p.requests()), "no refused request reached the model")

			_, err = run1(t, e, `{"input":"a new conversation"}`)
			require.NoError(t, err)
		})
	}
}

// wantLimit asserts err is the 400 limit_exceeded of param.
func wantLimit(t *testing.T, err error, param string) {
	t.Helper()
	var ae *api.Error
	require.ErrorAs(t, err, &ae, "over a limit: a 400")
	assert.Equal(t, http.StatusBadRequest, ae.Status, ae.Message)
	assert.Equal(t, limits.CodeLimitExceeded, ae.Code, ae.Message)
	assert.Equal(t, param, ae.Param, ae.Message)
}

// deepSchema is a JSON schema nested n levels ("items" in "items"), of
// JSON depth n+1.
func deepSchema(n int) string {
	return strings.Repeat(`{"items":`, n) + `{}` + strings.Repeat(`}`, n)
}

// wideSchema is a shallow schema of at least size bytes.
func wideSchema(size int) string {
	var b strings.Builder
	b.WriteString(`{"type":"object","properties":{`)
	for i := 0; b.Len() < size; i++ {
		fmt.Fprintf(&b, `"p%d":{"type":"string"},`, i)
	}
	return strings.TrimSuffix(b.String(), ",") + `}}`
}

func TestScanJSON(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]int{
		`1`: 0, `"[[{"`: 0, `{}`: 1, `[]`: 1, `{"a":[1,{"b":2}]}`: 3, `[[],[[]]]`: 3,
		`{"a":"\"[[[","b":{"c":"\\"}}`: 2, `{"a":"\\\"{{"}`: 1, deepSchema(2000): 2001,
	} {
		assert.Equal(t, want, schemacheck.Scan(s).Depth, s)
	}
	for s, want := range map[string]int{
		`1`: 1, `-12.5`: 3, `[1e5,2E+17,"1e999",3e-9]`: 17, `{"a":0.000001}`: 7, `1e99999999999999999999`: schemacheck.MaxNumberSize + 1,
		strings.Repeat("9", 1000): schemacheck.MaxNumberSize + 1, `{"a":[true,null,"x"]}`: 0,
	} {
		assert.Equal(t, want, schemacheck.Scan(s).Number, s)
	}
	for s, want := range map[string]int{
		`{"enum":[]}`: 0, `{"enum": [ ] }`: 0, `{"enum":[1,2,3]}`: 3, `{"enum" : [ "a,b" , [1,2], {"x":[3,4]} ]}`: 3,
		`{"properties":{"enum":{"type":"string"},"b":{"enum":["x","y"]}}}`: 2, `{"enum":[{"enum":[1,2]}]}`: 1,
		`{"a":{"enum":[1]},"b":{"items":{"enum":[1,2]}}}`: 3, `{"description":"enum","x":[1,2]}`: 0, `["enum",[1,2]]`: 0,
	} {
		assert.Equal(t, want, schemacheck.Scan(s).Enum, s)
	}
}

// A schema's enum values are bounded (all enum keywords together): an
// output validated against 22,000 numeric enum values cost ~90 s of CPU
// per check (each output number compared with each value as an exact
// fraction).
func TestSchemaEnumValuesBounded(t *testing.T) {
	t.Parallel()
	p := script(text(`1`, 1, 1))
	e, _ := newEngine(t, p, nil)
	enum := func(n int) string {
		v := make([]string, n)
		for i := range v {
			v[i] = strconv.Itoa(i)
		}
		return `{"type":"object","properties":{"a":{"enum":[` + strings.Join(v[:n/2], ",") + `]},"b":{"items":{"enum":[` + strings.Join(v[n/2:], ",") + `]}}}}`
	}
	_, err := run1(t, e, `{"input":"hi","text":{"format":{"type":"json_schema","name":"x","schema":`+enum(limits.DefaultSchemaEnumValues+1)+`}}}`)
	wantLimit(t, err, "text.format.schema")
	_, err = run1(t, e, `{"input":"hi","tools":[{"type":"function","name":"f","parameters":`+enum(22000)+`}]}`)
	wantLimit(t, err, "tools[0].parameters")
	require.Empty(t, p.requests(), "no refused request reached the model")
	_, err = run1(t, e, `{"input":"hi","tools":[{"type":"function","name":"f","parameters":`+enum(limits.DefaultSchemaEnumValues)+`}]}`)
	require.NoError(t, err)
	assert.Len(t, p.requests(), 1)
}

// Every JSON schema a request carries is bounded in depth and size before
// it is compiled and before any model call: text.format, function tool
// parameters, the output tool's parameters, on foreground and background
// requests. A schema nested 2,000 levels took ~10 s of CPU to compile
// before (9,000: minutes and over 1 GB); now it is a 400 at once.
func TestSchemaLimitsBeforeCompile(t *testing.T) {
	t.Parallel()
	p := script(text(`{}`, 1, 1), text(`{}`, 1, 1), text("ok", 1, 1))
	e, _, _ := bgEngine(t, func(*testing.T) store.ResponseStore { return store.NewMemory(store.MemoryConfig{}) }, p, newMock(echoTool))
	deep, big := deepSchema(2000), wideSchema(limits.DefaultSchemaBytes+1)
	for _, tc := range []struct{ name, body, param string }{
		{"text.format depth", `"text":{"format":{"type":"json_schema","name":"x","schema":` + deep + `}}`, "text.format.schema"},
		{"text.format size", `"text":{"format":{"type":"json_schema","name":"x","schema":` + big + `}}`, "text.format.schema"},
		{"function depth", `"tools":[{"type":"function","name":"f"},{"type":"function","name":"g","parameters":` + deepSchema(9000) + `}]`, "tools[1].parameters"},
		{"function size", `"tools":[{"type":"function","name":"g","parameters":` + big + `}]`, "tools[0].parameters"},
		{"output depth", `"tools":[{"type":"lambent:output","name":"report","parameters":` + deep + `}]`, "tools[0].parameters"},
		{"output size", `"tools":[{"type":"lambent:output","name":"report","parameters":` + big + `}]`, "tools[0].parameters"},
		{"namespace depth", `"tools":[{"type":"namespace","name":"n","tools":[{"type":"function","name":"f"},{"type":"function","name":"g","parameters":` + deep + `}]}]`, "tools[0].tools[1].parameters"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := `{"input":"hi",` + tc.body + `}`
			_, err := run1(t, e, body)
			wantLimit(t, err, tc.param)
			_, err = runBackground(t, e, strings.Replace(body, "{", `{"background":true,`, 1))
			wantLimit(t, err, tc.param)
		})
	}
	require.Empty(t, p.requests(), "no refused request reached the model")

	// At the limits: depth 32 (31 levels of items), and a schema of
	// brackets inside strings, are compiled and used.
	_, err := run1(t, e, `{"input":"hi","text":{"format":{"type":"json_schema","name":"x","schema":`+deepSchema(limits.DefaultSchemaDepth-1)+`}}}`)
	require.NoError(t, err)
	_, err = run1(t, e, `{"input":"hi","text":{"format":{"type":"json_schema","name":"x","schema":{"type":"object","description":"`+strings.Repeat("[{", 1000)+`"}}}}`)
	require.NoError(t, err)
	_, err = run1(t, e, `{"input":"hi","tools":[{"type":"function","name":"f","parameters":`+wideSchema(limits.DefaultSchemaBytes-100)+`}]}`)
	require.NoError(t, err)
	assert.Len(t, p.requests(), 3)
}

// The number of tools and the length of the model name are bounded.
func TestToolsAndModelNameLimits(t *testing.T) {
	t.Parallel()
	p := script(text("ok", 1, 1), text("ok", 1, 1))
	e, _ := newEngine(t, p, nil)
	tools := func(n int) string {
		l := make([]string, n)
		for i := range l {
			l[i] = fmt.Sprintf(`{"type":"function","name":"f%d"}`, i)
		}
		return `[` + strings.Join(l, ",") + `]`
	}
	_, err := run1(t, e, `{"input":"hi","tools":`+tools(limits.DefaultTools+1)+`}`)
	wantLimit(t, err, "tools")
	// A namespace's tools count: 127 functions and a namespace of two.
	_, err = run1(t, e, `{"input":"hi","tools":`+strings.TrimSuffix(tools(limits.DefaultTools-1), "]")+`,{"type":"namespace","name":"n","tools":[{"type":"function","name":"a"},{"type":"function","name":"b"}]}]}`)
	wantLimit(t, err, "tools")
	_, err = run1(t, e, `{"input":"hi","model":"`+strings.Repeat("m", limits.DefaultModelName+1)+`"}`)
	wantLimit(t, err, "model")
	_, err = run1(t, e, `{"input":"hi","model":"`+strings.Repeat("m", 2<<20)+`"}`)
	wantLimit(t, err, "model")
	require.Empty(t, p.requests())

	_, err = run1(t, e, `{"input":"hi","tools":`+tools(limits.DefaultTools)+`}`)
	require.NoError(t, err)
	_, err = run1(t, e, `{"input":"hi","model":"`+strings.Repeat("m", limits.DefaultModelName)+`"}`)
	require.NoError(t, err)
	assert.Len(t, p.requests(), 2)
}

// The operator's attempts and iterations settings cap a request's loop
// policy: asking for more is a 400 before any model call (it was 20 × 100 =
// 2,000 model calls whatever the operator set), asking for less is
// honoured, and a validated output makes at most attempts × iterations
// model calls.
func TestLoopPolicyCappedByOperator(t *testing.T) {
	t.Parallel()
	var steps []step
	for i := range 100 {
		steps = append(steps, calls(1, 1, call(fmt.Sprintf("l%d", i), "lookup", `{}`)), calls(1, 1, call(fmt.Sprintf("r%d", i), "report", invalidReport)))
	}
	p := script(steps...)
	e, _, _ := bgEngine(t, func(*testing.T) store.ResponseStore { return store.NewMemory(store.MemoryConfig{}) }, p, newMock(echoTool, "lookup"),
		func(c *Config) { c.Loop.MaxAttempts, c.Loop.MaxIterationsPerAttempt = 2, 2 })
	body := func(policy string) string {
		return `{"input":"assess","lambent":` + policy + `,"tools":[{"type":"lambent:lookup"},` + outputTool("") + `]}`
	}
	for _, tc := range []struct{ policy, param string }{
		{`{"max_attempts":20,"max_iterations_per_attempt":100}`, "lambent.max_attempts"},
		{`{"max_attempts":3}`, "lambent.max_attempts"},
		{`{"max_iterations_per_attempt":3}`, "lambent.max_iterations_per_attempt"},
		{`{"max_attempts":1,"max_iterations_per_attempt":100}`, "lambent.max_iterations_per_attempt"},
	} {
		_, err := run1(t, e, body(tc.policy))
		wantLimit(t, err, tc.param)
		_, err = runBackground(t, e, strings.Replace(body(tc.policy), "{", `{"background":true,`, 1))
		wantLimit(t, err, tc.param)
	}
	_, err := run1(t, e, `{"input":"x","text":{"format":{"type":"json_schema","name":"x","schema":{}}},"lambent":{"max_attempts":3}}`)
	wantLimit(t, err, "lambent.max_attempts")
	require.Empty(t, p.requests(), "no refused request reached the model")

	// Each attempt looks something up, then gives an invalid output: two
	// attempts of two iterations.
	for _, policy := range []string{`{}`, `{"max_attempts":2,"max_iterations_per_attempt":2}`} {
		before := len(p.requests())
		rec, err := run1(t, e, body(policy))
		require.NoError(t, err)
		r := rec.response(t)
		assert.Equal(t, api.StatusFailed, r.Status)
		assert.Equal(t, api.CodeValidationFailed, r.Error.Code)
		assert.Equal(t, 2*2, len(p.requests())-before, "%s: attempts × iterations model calls", policy)
	}
	// Lower: one attempt of one iteration.
	before := len(p.requests())
	rec, err := run1(t, e, body(`{"max_attempts":1,"max_iterations_per_attempt":1}`))
	require.NoError(t, err)
	low := rec.response(t)
	require.NotNil(t, low.Error, "%s %+v", low.Status, low.IncompleteDetails)
	assert.Equal(t, api.CodeMaxIterations, low.Error.Code)
	assert.Equal(t, 1, len(p.requests())-before)
}

// A background response queued under higher caps is refused by a worker
// whose caps are lower, before any model call.
func TestBackgroundWorkerAppliesItsLimits(t *testing.T) {
	t.Parallel()
	shared := store.NewMemory(store.MemoryConfig{})
	mk := func(*testing.T) store.ResponseStore { return shared }
	p := script(text("never", 1, 1))
	gw, _, _ := bgEngine(t, mk, p, nil, func(c *Config) { c.Loop.MaxAttempts = 5 })
	worker, _, _ := bgEngine(t, mk, p, nil)
	rec, err := runBackground(t, gw, `{"input":"x","background":true,"text":{"format":{"type":"json_schema","name":"x","schema":{}}},"lambent":{"max_attempts":5}}`)
	require.NoError(t, err)
	id := rec.response(t).ID
	require.NoError(t, worker.RunBackground(context.Background(), id))
	got, err := worker.GetResponse(context.Background(), id)
	require.NoError(t, err)
	assert.Equal(t, api.StatusFailed, got.Status)
	require.NotNil(t, got.Error)
	assert.Equal(t, limits.CodeLimitExceeded, got.Error.Code)
	assert.Empty(t, p.requests())
}

// item_reference fan-out is bounded: previous_response_id plus the
// distinct stored responses the references point into, counted before any
// of them is read (80,000 references were 80,000 store reads; an input now
// holds at most api.MaxInputItems items).
func TestReferencedResponsesBounded(t *testing.T) {
	t.Parallel()
	var steps []step
	for range 40 {
		steps = append(steps, text("ok", 1, 1))
	}
	p := script(steps...)
	spy := &spyStore{ResponseStore: store.NewMemory(store.MemoryConfig{})}
	e, _ := newEngine(t, p, nil, func(c *Config) { c.Store = spy })
	const limit = limits.DefaultReferencedResponses
	var resps, items []string // one output message of each stored response
	for i := range limit + 1 {
		rec, err := run1(t, e, fmt.Sprintf(`{"input":"turn %d"}`, i))
		require.NoError(t, err)
		r := rec.response(t)
		resps, items = append(resps, r.ID), append(items, r.Output[0].ID)
	}
	refs := func(ids ...string) string {
		l := make([]string, len(ids))
		for i, id := range ids {
			l[i] = `{"type":"item_reference","id":"` + id + `"}`
		}
		return `[` + strings.Join(l, ",") + `]`
	}
	reads := func() int64 { return spy.calls.Load() }
	models := len(p.requests())

	r0 := reads()
	_, err := run1(t, e, `{"input":`+refs(items...)+`}`)
	wantLimit(t, err, fmt.Sprintf("input[%d].id", limit))
	assert.Equal(t, r0, reads(), "nothing read")

	// The previous response counts: it is read, the others are not.
	r0 = reads()
	_, err = run1(t, e, `{"previous_response_id":"`+resps[0]+`","input":`+refs(items[1:]...)+`}`)
	wantLimit(t, err, fmt.Sprintf("input[%d].id", limit-1))
	assert.Equal(t, r0+1, reads(), "only previous_response_id read")

	// As many references as an input may hold (api.MaxInputItems), into
	// distinct (unknown) responses.
	many := make([]string, api.MaxInputItems)
	for i := range many {
		many[i] = api.NewItemID(api.PrefixMessage, api.NewID(api.PrefixResponse))
	}
	r0 = reads()
	_, err = run1(t, e, `{"input":`+refs(many...)+`}`)
	wantLimit(t, err, fmt.Sprintf("input[%d].id", limit))
	assert.Equal(t, r0, reads(), "nothing read")
	assert.Equal(t, models, len(p.requests()), "no refused request reached the model")

	// At the limit: read once each; references into the previous chain
	// need no read and do not count.
	r0 = reads()
	_, err = run1(t, e, `{"input":`+refs(items[:limit]...)+`}`)
	require.NoError(t, err)
	assert.Equal(t, r0+limit, reads())
	r0 = reads()
	_, err = run1(t, e, `{"previous_response_id":"`+resps[1]+`","input":`+refs(append([]string{items[1]}, items[2:limit+1]...)...)+`}`)
	require.NoError(t, err)
	assert.Equal(t, r0+limit, reads())
}

// mcp_call items sent back without their result are looked up in the
// responses their ids name within what the reference limit leaves, never
// refused for it: the calls past it keep what the client sent.
func TestReplayedCallResultsBounded(t *testing.T) {
	t.Parallel()
	p := script(text("ok", 1, 1), text("ok", 1, 1), text("ok", 1, 1))
	spy := &spyStore{ResponseStore: store.NewMemory(store.MemoryConfig{})}
	e, _ := newEngine(t, p, newMock(echoTool, "calc"), mcpMode, func(c *Config) { c.Store = spy })
	const limit = limits.DefaultReferencedResponses
	items := []string{`{"role":"user","content":"x"}`}
	for range limit + 4 {
		id := api.NewItemID(api.PrefixMCPCall, api.NewID(api.PrefixResponse))
		items = append(items, `{"type":"mcp_call","id":"`+id+`","server_label":"lambent","name":"calc","arguments":"{}","status":"completed"}`)
	}
	body := `{"tools":[{"type":"lambent:calc"}],"input":[` + strings.Join(items, ",")
	r0 := spy.calls.Load()
	_, err := run1(t, e, body+`]}`)
	require.NoError(t, err)
	assert.Equal(t, r0+limit, spy.calls.Load())

	// A reference takes its place first.
	stored, err := run1(t, e, `{"input":"y"}`)
	require.NoError(t, err)
	ref := `{"type":"item_reference","id":"` + stored.response(t).Output[0].ID + `"}`
	r0 = spy.calls.Load()
	_, err = run1(t, e, body+`,`+ref+`]}`)
	require.NoError(t, err)
	assert.Equal(t, r0+limit, spy.calls.Load())
}

// The input images a model call carries (the conversation continued, this
// input, references resolved) are bounded before the model is called: the
// Bedrock provider fetches or decodes each on every call.
func TestImagesBounded(t *testing.T) {
	t.Parallel()
	var steps []step
	for range 10 {
		steps = append(steps, text("ok", 1, 1))
	}
	p := script(steps...)
	shared := store.NewMemory(store.MemoryConfig{})
	e, _ := newEngine(t, p, nil, func(c *Config) { c.Store = shared })
	roomy, _ := newEngine(t, p, nil, func(c *Config) { c.Store = shared; c.Limits.Images = 100 })
	const limit = limits.DefaultImages
	img := `{"type":"input_image","image_url":"https://images.invalid/cat.png"}`
	messages := func(n int) string {
		l := make([]string, n)
		for i := range l {
			l[i] = `{"type":"message","role":"user","content":[` + img + `]}`
		}
		return strings.Join(l, ",")
	}
	_, err := run1(t, e, `{"input":[`+messages(limit+1)+`]}`)
	wantLimit(t, err, fmt.Sprintf("input[%d]", limit))
	_, err = run1(t, e, `{"input":[{"type":"message","role":"user","content":[`+strings.TrimSuffix(strings.Repeat(img+",", 100), ",")+`]}]}`)
	wantLimit(t, err, "input[0]")
	require.Empty(t, p.requests())

	rec, err := run1(t, e, `{"input":[`+messages(limit)+`]}`)
	require.NoError(t, err, "at the limit")
	full := rec.response(t).ID
	_, err = run1(t, e, `{"previous_response_id":"`+full+`","input":[{"type":"message","role":"user","content":"and?"},`+messages(1)+`]}`)
	wantLimit(t, err, "input[1]")
	rec, err = run1(t, roomy, `{"input":[`+messages(limit+5)+`]}`)
	require.NoError(t, err)
	over := rec.response(t).ID
	_, err = run1(t, e, `{"previous_response_id":"`+over+`","input":"and?"}`)
	wantLimit(t, err, "previous_response_id")

	// A reference to a stored message with an image counts.
	stored, err := shared.Get(context.Background(), full)
	require.NoError(t, err)
	_, err = run1(t, e, `{"input":[`+messages(limit)+`,{"type":"item_reference","id":"`+stored.Input[0].ID+`"}]}`)
	wantLimit(t, err, fmt.Sprintf("input[%d]", limit))

	// Images of tool outputs count: a function's image output, a computer
	// call's screenshot.
	_, err = run1(t, e, `{"store":false,"input":[`+messages(limit)+`,
		{"type":"function_call","call_id":"c1","name":"f","arguments":"{}"},
		{"type":"function_call_output","call_id":"c1","output":[`+img+`]}]}`)
	wantLimit(t, err, fmt.Sprintf("input[%d]", limit+1))
	_, err = run1(t, e, `{"store":false,"input":[`+messages(limit)+`,
		{"type":"computer_call","call_id":"c2","action":{"type":"screenshot"}},
		{"type":"computer_call_output","call_id":"c2","output":{"type":"computer_screenshot","image_url":"https://images.invalid/s.png"}}]}`)
	wantLimit(t, err, fmt.Sprintf("input[%d]", limit+1))
	assert.Len(t, p.requests(), 2)
}

// jsonSchemaBody is a create body asking for text.format json_schema
// schema.
func jsonSchemaBody(schema string) string {
	return `{"input":"hi","text":{"format":{"type":"json_schema","name":"x","schema":` + schema + `}}}`
}

// The validator reads every number as an exact rational: a schema number
// with an exponent past a million panicked it (a 500), and 1e-999999 took
// ~20 ms each; numbers past ±400 (digits or exponent) are a 400
// invalid_schema, before compiling.
func TestSchemaNumbersBounded(t *testing.T) {
	t.Parallel()
	p := script(text(`{"n":1}`, 1, 1))
	e, _ := newEngine(t, p, newMock(echoTool))
	for _, schema := range []string{
		`{"multipleOf":1e-100000000}`, `{"minLength":1e100000000}`, `{"maximum":1e401}`, `{"minimum":-0.` + strings.Repeat("0", 400) + `1}`,
		`{"anyOf":[` + strings.TrimSuffix(strings.Repeat(`{"multipleOf":1e-999999},`, 200), ",") + `]}`,
	} {
		_, err := run1(t, e, jsonSchemaBody(schema))
		var ae *api.Error
		require.ErrorAs(t, err, &ae, "%.60s", schema)
		assert.Equal(t, http.StatusBadRequest, ae.Status)
		assert.Equal(t, "text.format.schema", ae.Param)
		assert.Equal(t, "invalid_schema", ae.Code)
	}
	_, err := run1(t, e, `{"input":"hi","tools":[{"type":"lambent:output","name":"report","parameters":{"type":"object","properties":{"n":{"exclusiveMinimum":-1e999999999}}}}]}`)
	var ae *api.Error
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, "tools[0].parameters", ae.Param)
	require.Empty(t, p.requests())
	_, err = run1(t, e, jsonSchemaBody(`{"type":"object","properties":{"n":{"maximum":1.7976931348623157e308,"multipleOf":1e-300}}}`))
	require.NoError(t, err, "float64's range is fine")
}

// A schema reaching a $dynamicRef is a 400 invalid_schema naming it,
// before any model call: its check's cost grows with the square of the
// output's depth, and it resolves beyond what the evaluations budget counts.
func TestSchemaDynamicRefRefused(t *testing.T) {
	t.Parallel()
	p := script(text(`{}`, 1, 1))
	e, _ := newEngine(t, p, nil)
	_, err := run1(t, e, jsonSchemaBody(`{"$dynamicAnchor":"n","type":"object","properties":{"c":{"$dynamicRef":"#n"}}}`))
	var ae *api.Error
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, http.StatusBadRequest, ae.Status)
	assert.Equal(t, "text.format.schema", ae.Param)
	assert.Equal(t, "invalid_schema", ae.Code)
	assert.Contains(t, ae.Message, "$dynamicRef (at #/properties/c) is not supported")
	require.Empty(t, p.requests())
}

// An output whose numbers the validator cannot read (an exponent past a
// million panicked it) fails its attempt with an error the model can act
// on; the next attempt is validated as usual.
func TestOutputNumbersBounded(t *testing.T) {
	t.Parallel()
	p := script(text(`{"n":1e100000000}`, 1, 1), text(`{"n":-1e-100000000}`, 1, 1), text(`{"n":1}`, 1, 1))
	e, _ := newEngine(t, p, nil)
	rec, err := run1(t, e, `{"input":"hi","text":{"format":{"type":"json_schema","name":"x","schema":{"type":"object","properties":{"n":{"minimum":0}}}}}}`)
	require.NoError(t, err)
	r := rec.response(t)
	assert.Equal(t, api.StatusCompleted, r.Status)
	info := rec.lambent(t)
	require.Len(t, info.Attempts, 3)
	for _, a := range info.Attempts[:2] {
		assert.Equal(t, api.CodeValidationFailed, a.Code)
		require.Len(t, a.Errors, 1)
		assert.Contains(t, a.Errors[0], "exponent beyond ±400")
	}
	assert.True(t, info.Attempts[2].Valid)
}

// The regular expressions of a validated schema are bounded in summed size
// (repetitions expanded), each distinct one compiled once: 128 KiB of
// "[a-z]{1,1000}" patterns cost seconds of CPU and over 3 GB to compile.
func TestSchemaPatternsBounded(t *testing.T) {
	t.Parallel()
	p := script(text(`{}`, 1, 1), text(`{}`, 1, 1))
	e, _ := newEngine(t, p, newMock(echoTool))
	props := func(n int, pattern func(i int) string) string {
		l := make([]string, n)
		for i := range l {
			l[i] = fmt.Sprintf(`"p%d":{"type":"string","pattern":%q}`, i, pattern(i))
		}
		return `{"type":"object","properties":{` + strings.Join(l, ",") + `}}`
	}
	distinct := props(60, func(i int) string { return fmt.Sprintf("^[a-z]{1,1000}x%d$", i) })
	_, err := run1(t, e, jsonSchemaBody(distinct))
	wantLimit(t, err, "text.format.schema")
	_, err = run1(t, e, `{"input":"hi","tools":[{"type":"lambent:output","name":"report","parameters":`+distinct+`}]}`)
	wantLimit(t, err, "tools[0].parameters")
	keys := make([]string, 60)
	for i := range keys {
		keys[i] = fmt.Sprintf(`"^[a-z]{1,1000}k%d$":{}`, i)
	}
	_, err = run1(t, e, jsonSchemaBody(`{"type":"object","patternProperties":{`+strings.Join(keys, ",")+`}}`))
	wantLimit(t, err, "text.format.schema")
	require.Empty(t, p.requests())

	// Ordinary patterns, and one repeated on 2,000 properties, are fine.
	_, err = run1(t, e, jsonSchemaBody(props(50, func(int) string { return `^[A-Z]{2}[0-9]{6}$` })))
	require.NoError(t, err)
	_, err = run1(t, e, jsonSchemaBody(props(2000, func(int) string { return `^.{1,1000}$` })))
	require.NoError(t, err)
	assert.Len(t, p.requests(), 2)
}

// A failed validation reports at most 20 errors of at most 500 bytes: an
// enum's error quotes every value, once per value of the output that fails
// it (5,000 failing values against 22,000 strings took 1.8 GB).
func TestSchemaErrorsBounded(t *testing.T) {
	t.Parallel()
	values := make([]string, 500)
	for i := range values {
		values[i] = fmt.Sprintf(`"value-%d"`, i)
	}
	bad := `[` + strings.TrimSuffix(strings.Repeat(`"nope",`, 300), ",") + `]`
	p := script(text(bad, 1, 1), text(`["value-1"]`, 1, 1))
	e, _ := newEngine(t, p, nil)
	rec, err := run1(t, e, jsonSchemaBody(`{"type":"array","items":{"enum":[`+strings.Join(values, ",")+`]}}`))
	require.NoError(t, err)
	info := rec.lambent(t)
	require.Len(t, info.Attempts, 2)
	errs := info.Attempts[0].Errors
	require.Len(t, errs, 21)
	for _, m := range errs {
		assert.LessOrEqual(t, len(m), 520)
	}
	assert.Equal(t, "(and 280 more errors)", errs[20])
	assert.Less(t, len(p.requests()[1].Items[len(p.requests()[1].Items)-1].Text()), 20_000, "the feedback the model gets is bounded")
	assert.True(t, info.Attempts[1].Valid)
}

// startHostile starts the hostile MCP server h for the test.
func startHostile(t *testing.T, h mcptest.Hostile) *mcptest.Server {
	t.Helper()
	srv := mcptest.StartHostile(h)
	t.Cleanup(srv.Close)
	return srv
}

// withLimits sets the engine's limits.
func withLimits(l limits.Limits) func(*Config) { return func(c *Config) { c.Limits = l } }

// withMCPTimeout gives the engine a loopback MCP connector whose operations
// end after d.
func withMCPTimeout(d time.Duration) func(*Config) {
	return func(c *Config) { c.MCP.Connector = mcp.New(mcp.Config{AllowHosts: []string{"127.0.0.1"}, Timeout: d}) }
}

// mcpTools is n request MCP tools on url, labelled s0, s1, ….
func mcpTools(n int, url string) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"type":"mcp","server_label":"s%d","server_url":%q,"require_approval":"never"}`, i, url)
	}
	return b.String()
}

// A request enables at most Limits.MCPServers servers, request mcp tools
// and manifest servers counted together; one more is a 400 naming tools
// before anything connects or the model is called.
func TestMCPServersPerRequestCapped(t *testing.T) {
	t.Parallel()
	srv := startHostile(t, mcptest.Hostile{})
	manifest := &tools.MCPServer{Label: "calc", URL: srv.Endpoint, Transport: tools.MCPStreamableHTTP, Trusted: true,
		Approval: tools.MCPApproval{Mode: tools.MCPApproveNever}}
	p := script(text("ok", 1, 1))
	e, _ := newEngine(t, p, nil, withMCP, withLimits(limits.Limits{MCPServers: 3}), func(c *Config) {
		c.MCP.Servers = map[string]*tools.MCPServer{"calc": manifest}
	})
	rec, err := run1(t, e, `{"input":"x","tools":[`+mcpTools(2, srv.Endpoint)+`,{"type":"lambent:calc"}]}`)
	require.NoError(t, err, "at the limit")
	assert.Equal(t, []string{"mcp_list_tools", "mcp_list_tools", "mcp_list_tools", "message"}, types(rec.openAIResponse(t).Output))

	before := len(srv.Headers())
	for name, body := range map[string]string{
		"request servers":  `{"input":"x","tools":[` + mcpTools(4, srv.Endpoint) + `]}`,
		"with manifest":    `{"input":"x","tools":[` + mcpTools(3, srv.Endpoint) + `,{"type":"lambent:calc"}]}`,
		"many":             `{"input":"x","tools":[` + mcpTools(100, srv.Endpoint) + `]}`,
		"refused url last": `{"input":"x","tools":[` + mcpTools(3, srv.Endpoint) + `,` + mcpServerTool("https://169.254.169.254/mcp", "") + `]}`,
	} {
		t.Run(name, func(t *testing.T) {
			_, err := run1(t, e, body)
			var ae *api.Error
			require.ErrorAs(t, err, &ae)
			assert.Equal(t, http.StatusBadRequest, ae.Status)
			assert.Equal(t, "tools", ae.Param)
			assert.Equal(t, limits.CodeLimitExceeded, ae.Code)
			assert.Contains(t, ae.Message, "MCP servers")
			assert.Contains(t, ae.Message, "limit of 3")
		})
	}
	assert.Len(t, srv.Headers(), before, "no refused request reached the server")
	assert.Len(t, p.requests(), 1, "no refused request reached the model")

	// The default is 8.
	d, _ := newEngine(t, script(), nil, withMCP)
	_, err = run1(t, d, `{"input":"x","tools":[`+mcpTools(limits.DefaultMCPServers+1, srv.Endpoint)+`]}`)
	assertAPIError(t, err, http.StatusBadRequest, limits.CodeLimitExceeded)
}

// listing runs one response against the server at url and returns its
// mcp_list_tools item and the tools the model was offered.
func listing(t *testing.T, url string, mut ...func(*Config)) (api.Item, []string) {
	t.Helper()
	p := script(text("ok", 1, 1))
	e, _ := newEngine(t, p, nil, append([]func(*Config){withMCP}, mut...)...)
	rec, err := run1(t, e, `{"input":"x","tools":[`+mcpServerTool(url, "")+`]}`)
	require.NoError(t, err, "a server's failure is not the response's")
	r := rec.openAIResponse(t)
	assert.Equal(t, api.StatusCompleted, r.Status)
	require.Equal(t, []string{"mcp_list_tools", "message"}, types(r.Output))
	return r.Output[0], toolNames(p.requests()[0].Tools)
}

// A listing longer than Limits.MCPToolsPerServer, larger than
// Limits.MCPReplyBytes, paging on and on, or trickling fails that server's
// listing (the item's error; the model sees none of its tools) after a
// bounded number of requests; a listing at the limits is offered whole.
func TestMCPHostileListings(t *testing.T) {
	t.Parallel()
	small := withLimits(limits.Limits{MCPToolsPerServer: 10, MCPReplyBytes: 64 << 10})
	t.Run("at the limits", func(t *testing.T) {
		srv := startHostile(t, mcptest.Hostile{Tools: 10, DescriptionBytes: 4 << 10})
		it, names := listing(t, srv.Endpoint, small)
		assert.Empty(t, it.Error)
		assert.Len(t, it.Tools, 10)
		assert.Len(t, names, 10)
	})
	for name, tc := range map[string]struct {
		h    mcptest.Hostile
		want string
	}{
		"too many tools":          {mcptest.Hostile{Tools: 11}, "more than 10 tools"},
		"too many tools on pages": {mcptest.Hostile{Tools: 4, EndlessPages: true}, "more than 10 tools"},
		"endless empty pages":     {mcptest.Hostile{Empty: true, EndlessPages: true}, "pages"},
		"oversized page":          {mcptest.Hostile{Tools: 2, DescriptionBytes: 40 << 10}, "65536 bytes"},
		"oversized page json":     {mcptest.Hostile{Tools: 2, DescriptionBytes: 40 << 10, JSONResponse: true}, "65536 bytes"},
		"oversized over pages":    {mcptest.Hostile{Tools: 1, DescriptionBytes: 20 << 10, EndlessPages: true}, "65536 bytes"},
	} {
		t.Run(name, func(t *testing.T) {
			srv := startHostile(t, tc.h)
			it, names := listing(t, srv.Endpoint, small, withMCPTimeout(10*time.Second))
			assert.Contains(t, it.Error, `MCP server "docs"`)
			assert.Contains(t, it.Error, tc.want)
			assert.NotContains(t, it.Error, "no answer in time", "stopped by a limit, not by the timeout")
			assert.Len(t, it.Tools, 0)
			assert.Len(t, names, 0)
			assert.LessOrEqual(t, len(srv.Headers()), 24, "a bounded number of requests")
		})
	}
	t.Run("same cursor forever", func(t *testing.T) {
		srv := startHostile(t, mcptest.Hostile{Empty: true, EndlessPages: true, SameCursor: true})
		it, _ := listing(t, srv.Endpoint, small, withMCPTimeout(10*time.Second))
		assert.Contains(t, it.Error, "pages")
		assert.NotContains(t, it.Error, "no answer in time")
	})
	t.Run("trickling", func(t *testing.T) {
		srv := startHostile(t, mcptest.Hostile{Trickle: 5 * time.Millisecond, TrickleMethod: "tools/list"})
		it, names := listing(t, srv.Endpoint, withMCPTimeout(300*time.Millisecond))
		assert.Contains(t, it.Error, "no answer in time")
		assert.Len(t, names, 0)
	})
}

// A listing of tools that all have one name offers each under a name of
// its own, deterministically: the tool's, then "<label>_<tool>", then that
// numbered.
func TestMCPDuplicateToolNames(t *testing.T) {
	t.Parallel()
	srv := startHostile(t, mcptest.Hostile{Tools: limits.DefaultMCPToolsPerServer, Name: "t"})
	it, names := listing(t, srv.Endpoint)
	require.Empty(t, it.Error)
	require.Len(t, names, limits.DefaultMCPToolsPerServer)
	assert.Equal(t, []string{"t", "docs_t", "docs_t_2", "docs_t_3"}, names[:4])
	assert.Equal(t, "docs_t_255", names[len(names)-1])
}

// Naming n tools costs O(n), however many share a name: the allocations
// per tool stay constant (the numbering does not restart per tool).
func TestMCPToolNamingIsLinear(t *testing.T) {
	const n = 4000
	list := make([]api.MCPTool, n)
	for i := range list {
		list[i] = api.MCPTool{Name: "t", InputSchema: json.RawMessage(`{"type":"object"}`)}
	}
	long := strings.Repeat("x", 70)
	for i := range n / 2 {
		list[i].Name = long + strconv.Itoa(i)
	}
	ts := &toolset{mcp: []*mcpServer{{srv: &tools.MCPServer{Label: "docs"}, tools: list}}}
	allocs := testing.AllocsPerRun(1, func() {
		ts.defs, ts.defList = map[string]requestTool{}, nil
		ts.addMCPDefs(true)
	})
	assert.Len(t, ts.defs, n, "every tool has a name of its own")
	assert.Less(t, allocs, float64(16*n), "allocations per tool stay constant")
}

// A call result larger than Limits.MCPReplyBytes is a failed mcp_call
// whose error the model reads; a call that trickles ends with the
// connector's timeout. The response completes.
func TestMCPHostileCalls(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		h    mcptest.Hostile
		mut  func(*Config)
		want string
	}{
		"oversized":      {mcptest.Hostile{CallBytes: 100 << 10}, withLimits(limits.Limits{MCPReplyBytes: 64 << 10}), "65536 bytes"},
		"oversized json": {mcptest.Hostile{CallBytes: 100 << 10, JSONResponse: true}, withLimits(limits.Limits{MCPReplyBytes: 64 << 10}), "65536 bytes"},
		"trickling":      {mcptest.Hostile{Trickle: 5 * time.Millisecond, TrickleMethod: "tools/call"}, withMCPTimeout(300 * time.Millisecond), "no answer in time"},
	} {
		t.Run(name, func(t *testing.T) {
			srv := startHostile(t, tc.h)
			p := script(calls(1, 1, call("c1", "t0", `{}`)), text("it failed", 1, 1))
			e, _ := newEngine(t, p, nil, withMCP, tc.mut)
			rec, err := run1(t, e, `{"input":"x","tools":[`+mcpServerTool(srv.Endpoint, `,"require_approval":"never"`)+`]}`)
			require.NoError(t, err)
			r := rec.openAIResponse(t)
			assert.Equal(t, api.StatusCompleted, r.Status)
			require.Equal(t, []string{"mcp_list_tools", "mcp_call", "message"}, types(r.Output))
			assert.Equal(t, api.ItemFailed, r.Output[1].Status)
			assert.Contains(t, r.Output[1].Error, tc.want)
			fed := p.requests()[1].Items[2]
			assert.True(t, fed.IsError)
			assert.Contains(t, fed.Output, tc.want, "the model reads the error")
		})
	}
}

// A list of a server's tools sent in the input is adopted only within
// Limits.MCPToolsPerServer: a longer one (a client may send any) is not,
// and the server is listed again, within the limits.
func TestMCPInputListOverLimitIsListedAgain(t *testing.T) {
	t.Parallel()
	srv := startHostile(t, mcptest.Hostile{Tools: 2})
	var b strings.Builder
	for i := range 11 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"name":"fake%d","input_schema":{"type":"object"}}`, i)
	}
	sent := `{"type":"mcp_list_tools","id":"mcpl_sent","server_label":"docs","tools":[` + b.String() + `]}`
	for _, tc := range []struct {
		limit int
		want  []string
	}{
		{10, []string{"t0", "t1"}},
		{11, []string{"fake0", "fake1", "fake2", "fake3", "fake4", "fake5", "fake6", "fake7", "fake8", "fake9", "fake10"}},
	} {
		p := script(text("ok", 1, 1))
		e, _ := newEngine(t, p, nil, withMCP, withLimits(limits.Limits{MCPToolsPerServer: tc.limit}))
		rec, err := run1(t, e, `{"input":[`+sent+`,{"type":"message","role":"user","content":"x"}],"tools":[`+mcpServerTool(srv.Endpoint, "")+`]}`)
		require.NoError(t, err)
		r := rec.openAIResponse(t)
		assert.Equal(t, tc.want, toolNames(p.requests()[0].Tools), "limit %d", tc.limit)
		if tc.limit == 10 {
			assert.Equal(t, []string{"mcp_list_tools", "message"}, types(r.Output))
		} else {
			assert.Equal(t, []string{"message"}, types(r.Output))
		}
	}
}

// leakyStore fails the operations named in fail with what an AWS SDK error
// says (an ARN, an account, a table).
type leakyStore struct {
	*store.Memory
	fail map[string]bool
}

const leakedARN = "arn:aws:dynamodb:us-east-1:123456789012:table/lambent-responses"

func (s *leakyStore) err(op string) error {
	if s.fail[op] {
		return fmt.Errorf("operation error DynamoDB: %s, api error AccessDeniedException: User: arn:aws:sts::123456789012:assumed-role/gw/x is not authorized on resource: %s", op, leakedARN)
	}
	return nil
}

func (s *leakyStore) Get(ctx context.Context, id string) (*store.Record, error) {
	if err := s.err("Get"); err != nil {
		return nil, err
	}
	return s.Memory.Get(ctx, id)
}

func (s *leakyStore) Create(ctx context.Context, rec *store.Record) error {
	if err := s.err("Create"); err != nil {
		return err
	}
	return s.Memory.Create(ctx, rec)
}

func (s *leakyStore) Update(ctx context.Context, rec *store.Record, expect api.Status) error {
	if err := s.err("Update"); err != nil {
		return err
	}
	return s.Memory.Update(ctx, rec, expect)
}

func (s *leakyStore) Delete(ctx context.Context, id string) error {
	if err := s.err("Delete"); err != nil {
		return err
	}
	return s.Memory.Delete(ctx, id)
}

func (s *leakyStore) ListInputItems(ctx context.Context, id string, opts api.ListOptions) (*store.ItemPage, error) {
	if err := s.err("ListInputItems"); err != nil {
		return nil, err
	}
	return s.Memory.ListInputItems(ctx, id, opts)
}

func (s *leakyStore) AppendEvents(ctx context.Context, id string, evs []store.Event) error {
	if err := s.err("AppendEvents"); err != nil {
		return err
	}
	return s.Memory.AppendEvents(ctx, id, evs)
}

func (s *leakyStore) AppendEventsClaimed(ctx context.Context, id, claim string, expiresAt time.Time, evs []store.Event) error {
	if err := s.err("AppendEvents"); err != nil {
		return err
	}
	return s.Memory.AppendEventsClaimed(ctx, id, claim, expiresAt, evs)
}

func (s *leakyStore) Events(ctx context.Context, id string, after int64) ([]store.Event, error) {
	if err := s.err("Events"); err != nil {
		return nil, err
	}
	return s.Memory.Events(ctx, id, after)
}

// A store failing with an AWS error on any one operation, on every entry
// point: what a client gets — the error the transport answers
// (api.AsError, ForClient), the events written, the stored response and
// its events — never holds the error's text.
func TestStoreFailuresNeverReachClients(t *testing.T) {
	t.Parallel()
	for _, op := range []string{"Get", "Create", "Update", "Delete", "ListInputItems", "AppendEvents", "Events"} {
		t.Run(op, func(t *testing.T) {
			st := &leakyStore{Memory: store.NewMemory(store.MemoryConfig{}), fail: map[string]bool{}}
			q := newJobQueue()
			e, _ := newEngine(t, script(text("a", 1, 1), text("b", 1, 1), text("c", 1, 1), text("d", 1, 1), text("e", 1, 1), text("f", 1, 1)), nil,
				func(c *Config) {
					c.Store, c.Background.Queue, c.Background.PollInterval, c.Background.CancelWait = st, q, time.Millisecond, time.Millisecond
				})
			ctx := context.Background()
			seeded, err := run1(t, e, `{"input":"seed"}`)
			require.NoError(t, err)
			seedID := decodeResponse(t, seeded.resp).ID
			bgRec := &recorder{}
			require.NoError(t, e.CreateBackground(ctx, decodeReq(t, `{"input":"later","background":true}`), bgRec))
			bgID := (<-q.c).ResponseID

			st.fail[op] = true
			var seen []string
			client := func(err error) {
				if err != nil {
					b, merr := json.Marshal(api.ErrorBody{Error: api.AsError(err).ForClient("req_test")})
					require.NoError(t, merr)
					seen = append(seen, string(b))
				}
			}
			_, err = e.GetResponse(ctx, seedID)
			client(err)
			_, err = e.ListInputItems(ctx, seedID, api.ListOptions{Limit: 10, Order: "asc"})
			client(err)
			for _, body := range []string{`{"input":"x"}`, `{"input":"x","stream":true}`, `{"input":"x","previous_response_id":"` + seedID + `"}`} {
				rec, err := run1(t, e, body)
				client(err)
				seen = append(seen, string(rec.resp))
				for _, ev := range rec.events {
					seen = append(seen, string(ev))
				}
			}
			rec := &recorder{}
			client(e.CreateBackground(ctx, decodeReq(t, `{"input":"x","background":true}`), rec))
			for _, ev := range rec.events {
				seen = append(seen, string(ev))
			}
			client(e.RunBackground(ctx, bgID))
			// Following a response that never ends here (its worker could
			// not run) stops after its first read: the follower's context
			// is done.
			follow := ctx
			if r, err := st.Memory.Get(ctx, bgID); err != nil || !r.Response.Status.Terminal() {
				done, cancel := context.WithCancel(ctx)
				cancel()
				follow = done
			}
			raw := &rawRecorder{}
			client(e.StreamResponse(follow, bgID, -1, raw))
			for _, ev := range raw.events {
				seen = append(seen, string(ev))
			}
			_, err = e.CancelResponse(ctx, bgID)
			client(err)
			client(func() error { _, err := e.DeleteResponse(ctx, seedID); return err }())

			// What is stored (read without the failure).
			st.fail = map[string]bool{}
			for _, id := range []string{seedID, bgID} {
				if r, err := st.Memory.Get(ctx, id); err == nil {
					b, _ := json.Marshal(r.Response)
					seen = append(seen, string(b))
				}
				evs, _ := st.Memory.Events(ctx, id, -1)
				for _, ev := range evs {
					seen = append(seen, string(ev.Data))
				}
			}
			failures := 0
			for _, s := range seen {
				assert.NotContains(t, s, "arn:aws")
				assert.NotContains(t, s, "AccessDenied")
				if strings.Contains(s, "req_test") || strings.Contains(s, "server_error") || strings.Contains(s, "store_failed") {
					failures++
				}
			}
			assert.Positive(t, failures, "the failure reached the client, in general terms")
		})
	}
}

// gate is a model whose calls block until released, keeping responses in
// flight for as long as a test needs: each call signals entered when it
// starts.
type gate struct {
	entered chan struct{}
	release chan struct{}
	calls   atomic.Int64
}

func newGate() *gate { return &gate{entered: make(chan struct{}, 64), release: make(chan struct{})} }

func (g *gate) Complete(ctx context.Context, _ *provider.Request) (*provider.Result, error) {
	g.calls.Add(1)
	g.entered <- struct{}{}
	select {
	case <-g.release:
		return &provider.Result{Text: "done", FinishReason: provider.FinishStop}, nil
	case <-ctx.Done():
		return nil, provider.ContextError(ctx)
	}
}

func (g *gate) Stream(ctx context.Context, req *provider.Request, fn func(provider.Delta) error) (*provider.Result, error) {
	res, err := g.Complete(ctx, req)
	if err != nil {
		return nil, err
	}
	return res, fn(provider.Delta{Kind: provider.DeltaText, Text: res.Text})
}

// wantTenantBusy asserts err is the 429 of a tenant at its in-flight cap.
func wantTenantBusy(t *testing.T, err error) {
	t.Helper()
	var ae *api.Error
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, http.StatusTooManyRequests, ae.Status, ae.Message)
	assert.Equal(t, api.ErrTypeRateLimit, ae.Type)
	assert.Equal(t, "rate_limit_exceeded", ae.Code)
	assert.NotEmpty(t, ae.RetryAfter, "a 429 says when to retry")
}

// A tenant may have Limits.TenantInFlight responses running at once on
// an engine: foreground creates (streamed or not), background runs and
// compactions all count; over the cap a create is refused at once with 429
// and Retry-After, before any model call or store write. Other tenants are
// not affected, and the slots free as responses end.
func TestTenantInFlightCap(t *testing.T) {
	t.Parallel()
	g := newGate()
	q := newJobQueue()
	keys, err := compaction.NewDevKeyring()
	require.NoError(t, err)
	e, _ := newEngine(t, g, nil, func(c *Config) {
		c.Limits.TenantInFlight = 2
		c.Background.Queue = q
		c.Compaction = keys
		c.Background.PollInterval = time.Millisecond
	})
	ctx := t.Context()
	a, b := tenant.With(ctx, "tenant-a"), tenant.With(ctx, "tenant-b")
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	// A: a background response run by a worker, and a streamed create, both
	// held at the model.
	require.NoError(t, e.CreateBackground(a, decodeReq(t, `{"input":"x","background":true}`), &recorder{}))
	job := <-q.c
	wg.Go(func() { errs <- e.RunBackground(tenant.With(ctx, job.Tenant), job.ResponseID) })
	<-g.entered
	wg.Go(func() { errs <- e.CreateResponse(a, decodeReq(t, `{"input":"x","stream":true}`), &recorder{}) })
	<-g.entered

	// A's next response of any kind is refused at once.
	calls := g.calls.Load()
	for _, body := range []string{`{"input":"x"}`, `{"input":"x","stream":true}`} {
		wantTenantBusy(t, e.CreateResponse(a, decodeReq(t, body), &recorder{}))
	}
	wantTenantBusy(t, e.CreateBackground(a, decodeReq(t, `{"input":"x","background":true}`), &recorder{}))
	_, err = e.Compact(a, &api.CompactRequest{Input: []api.Item{{Type: api.ItemMessage, Role: api.RoleUser, Content: []api.ContentPart{{Type: api.PartInputText, Text: "x"}}}}})
	wantTenantBusy(t, err)
	assert.Equal(t, calls, g.calls.Load(), "no model call for a refused response")
	assert.Empty(t, q.c, "no job queued for a refused background response")

	// B is not affected.
	wg.Go(func() { errs <- e.CreateResponse(b, decodeReq(t, `{"input":"x"}`), &recorder{}) })
	<-g.entered

	close(g.release)
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	// The slots are free again.
	require.NoError(t, e.CreateResponse(a, decodeReq(t, `{"input":"x"}`), &recorder{}))
	require.NoError(t, e.CreateResponse(a, decodeReq(t, `{"input":"x","stream":true}`), &recorder{}))
	assert.Zero(t, e.inflight.tenants(), "no tenant holds a slot")
}

// BenchmarkInflight is the in-flight cap's cost on a create: one slot
// taken and freed, by 1 or by many goroutines of 100 tenants at once.
func BenchmarkInflight(b *testing.B) {
	f := newInflight(64)
	ctx := tenant.With(b.Context(), "tenant-a")
	b.Run("serial", func(b *testing.B) {
		for range b.N {
			t, err := f.enter(ctx)
			if err != nil {
				b.Fatal(err)
			}
			f.leave(t)
		}
	})
	b.Run("parallel", func(b *testing.B) {
		var n atomic.Int64
		b.RunParallel(func(pb *testing.PB) {
			ctx := tenant.With(b.Context(), fmt.Sprintf("tenant-%d", n.Add(1)%100))
			for pb.Next() {
				t, err := f.enter(ctx)
				if err != nil {
					b.Error(err)
					return
				}
				f.leave(t)
			}
		})
	})
}

// A background response queued under one image limit and run (or resumed)
// by a worker whose limit was lowered since fails with limit_exceeded
// before any model call, as checkRequest's limits do: the worker checks
// the images its model call would carry with the one check a create
// passes (checkImages).
func TestBackgroundImagesRecheckedByTheWorker(t *testing.T) {
	t.Parallel()
	shared := store.NewMemory(store.MemoryConfig{})
	q := newJobQueue()
	p := script(text("ok", 1, 1))
	on := func(images int) func(*Config) {
		return func(c *Config) { c.Store, c.Background.Queue, c.Limits.Images = shared, q, images }
	}
	gateway, _ := newEngine(t, p, nil, on(3))
	worker, _ := newEngine(t, p, nil, on(1))
	img := `{"type":"input_image","image_url":"https://images.invalid/cat.png"}`
	rec, err := runBackground(t, gateway, `{"background":true,"input":[{"type":"message","role":"user","content":[`+img+`,`+img+`]}]}`)
	require.NoError(t, err)
	id := rec.response(t).ID
	workerFails(t, worker, q, id, "limit_exceeded", p)
}

// workerFails runs the job queued on q with worker and requires that the
// response id failed with code before any model call of p.
func workerFails(t *testing.T, worker *Engine, q *jobQueue, id, code string, p *scripted) {
	t.Helper()
	require.NoError(t, worker.RunBackground(context.Background(), (<-q.c).ResponseID))
	got, err := worker.GetResponse(context.Background(), id)
	require.NoError(t, err)
	require.Equal(t, api.StatusFailed, got.Status)
	require.NotNil(t, got.Error)
	assert.Equal(t, code, got.Error.Code)
	assert.Empty(t, p.requests(), "no model call")
}

// contentChecking is a scripted provider that refuses, as this module's
// providers do (provider.ContentChecker), the content parts neither sends.
type contentChecking struct{ *scripted }

func (contentChecking) CheckContent(items []api.Item) error { return provider.CheckMessages(items) }

// A background response whose conversation got, while it was queued (its
// lock lapsed), an item the model provider does not take (an input_file)
// fails with the provider's 400 unsupported_content before any model call,
// as a create does (checkContent), instead of listing its MCP servers
// first and failing at the model call's conversion.
func TestBackgroundContentRecheckedByTheWorker(t *testing.T) {
	t.Parallel()
	p := script(text("ok", 1, 1))
	q := newJobQueue()
	e, st := newEngine(t, contentChecking{p}, nil, func(c *Config) { c.Background.Queue = q })
	cs, conv := newConversation(t, st)
	rec, err := runBackground(t, e, `{"background":true,"conversation":"`+conv.ID+`","input":"x"}`)
	require.NoError(t, err)
	id := rec.response(t).ID
	file := api.Item{Type: api.ItemMessage, ID: "msg_file", Role: api.RoleUser,
		Content: []api.ContentPart{{Type: api.PartInputFile, FileData: "data:application/pdf;base64,JVBERi0=", Filename: "a.pdf"}}}
	require.NoError(t, cs.AppendConversationItems(context.Background(), conv.ID, id, []api.Item{file}, ""))
	workerFails(t, e, q, id, "unsupported_content", p)
}
