package wsapi_test

// WebSocket lanes (OpenAI's stream_id on response.create) and
// response.steer, through Session against the real engine and a fake
// Chat Completions model.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/internal/testing/fakellm"
	"github.com/lambent/lambent/internal/testing/ssecheck"
	"github.com/lambent/lambent/pkg/app"
	"github.com/lambent/lambent/pkg/requestid"
	"github.com/lambent/lambent/pkg/wsapi"
)

// recorder records the messages a session sends.
type recorder struct {
	mu   sync.Mutex
	msgs [][]byte
}

func (r *recorder) Send(_ context.Context, msg []byte) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.msgs = append(r.msgs, msg)
	return nil
}

func (r *recorder) len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.msgs)
}

func (r *recorder) since(n int) [][]byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.msgs[n:]
}

// laneSession is one connection's Session over the real engine.
type laneSession struct {
	t    *testing.T
	s    *wsapi.Session
	out  *recorder
	fake *fakellm.Server
}

func newLaneSession(t *testing.T) *laneSession {
	t.Helper()
	return newLaneSessionModel(t, fakellm.NameModel("Hello."))
}

// newLaneSessionModel is newLaneSession over the model fake.
func newLaneSessionModel(t *testing.T, fake *fakellm.Server) *laneSession {
	t.Helper()
	t.Cleanup(fake.Close)
	vars := map[string]string{"LAMBENT_PROVIDER_URL": fake.URL, "LAMBENT_DEFAULT_MODEL": "test-model", "LAMBENT_STORE": "memory", "LAMBENT_LOG_LEVEL": "error"}
	cfg, err := app.FromEnv(func(k string) string { return vars[k] })
	require.NoError(t, err)
	a, err := app.Build(t.Context(), cfg, app.Logger(cfg, io.Discard), nil)
	require.NoError(t, err)
	t.Cleanup(a.Close)
	out := &recorder{}
	s := &wsapi.Session{Service: a.Engine, Cache: wsapi.NewMemoryCache(0), Sender: out, Logger: app.Logger(cfg, io.Discard)}
	return &laneSession{t: t, s: s, out: out, fake: fake}
}

// handle sends body as one message and returns the messages it got, each
// decoded as a JSON object.
func (l *laneSession) handle(body string) []map[string]json.RawMessage {
	l.t.Helper()
	n := l.out.len()
	m := wsapi.Message{Data: []byte(body), Size: int64(len(body))}
	require.NoError(l.t, l.s.Handle(requestid.With(l.t.Context(), requestid.New()), m))
	var got []map[string]json.RawMessage
	for _, msg := range l.out.since(n) {
		var obj map[string]json.RawMessage
		require.NoError(l.t, json.Unmarshal(msg, &obj), "%s", msg)
		got = append(got, obj)
	}
	require.NotEmpty(l.t, got, "no message for %s", body)
	return got
}

// events runs a turn that succeeds: it checks its events and that each
// carries stream_id lane ("": none at all), and returns its response id and
// output text.
func (l *laneSession) events(body, lane string) (id, text string) {
	l.t.Helper()
	msgs := l.handle(body)
	var evs []ssecheck.Event
	for _, obj := range msgs {
		l.requireLane(obj, lane)
		b, err := json.Marshal(obj)
		require.NoError(l.t, err)
		ev, err := ssecheck.Decode(b)
		require.NoError(l.t, err, "%s", b)
		evs = append(evs, ev)
	}
	require.NoError(l.t, ssecheck.Check(nil, evs))
	last := evs[len(evs)-1]
	require.Equal(l.t, "response.completed", last.Type, "%s", msgs[len(msgs)-1])
	text, err := ssecheck.OutputText(evs)
	require.NoError(l.t, err)
	return last.Response.ID, text
}

// requireLane checks that obj carries stream_id lane, or none when lane is
// "".
func (l *laneSession) requireLane(obj map[string]json.RawMessage, lane string) {
	l.t.Helper()
	raw, ok := obj["stream_id"]
	if lane == "" {
		require.False(l.t, ok, "a message of a response without stream_id carries one: %s", raw)
		return
	}
	require.True(l.t, ok, "a message of lane %s has no stream_id (type %s)", lane, obj["type"])
	require.JSONEq(l.t, fmt.Sprintf("%q", lane), string(raw))
}

// envelope runs a turn that fails: one error envelope with status and
// param, carrying stream_id lane ("": none).
func (l *laneSession) envelope(body string, status int, param, lane string) wsapi.Envelope {
	l.t.Helper()
	msgs := l.handle(body)
	require.Len(l.t, msgs, 1, "one error envelope")
	l.requireLane(msgs[0], lane)
	b, err := json.Marshal(msgs[0])
	require.NoError(l.t, err)
	var env wsapi.Envelope
	require.NoError(l.t, json.Unmarshal(b, &env))
	require.Equal(l.t, "error", env.Type)
	require.Equal(l.t, status, env.Status, "%s", b)
	require.Equal(l.t, param, env.Error.Param, "%s", b)
	return env
}

func create(lane, prev, input string, store bool) string {
	body := map[string]any{"type": "response.create", "model": "test-model", "input": input, "store": store}
	if lane != "" {
		body["stream_id"] = lane
	}
	if prev != "" {
		body["previous_response_id"] = prev
	}
	b, _ := json.Marshal(body)
	return string(b)
}

// A valid stream_id is echoed by every event of its response; without one
// no message has the field; an invalid one is a 400 naming stream_id that
// calls no model.
func TestStreamIDDecode(t *testing.T) {
	l := newLaneSession(t)
	l.events(create("", "", "Hi", false), "")
	for _, lane := range []string{"a", "lane-A.1:x_y", strings.Repeat("z", 64)} {
		l.events(create(lane, "", "Hi", false), lane)
	}
	calls := l.fake.Calls()
	for _, bad := range []string{`""`, `"has space"`, `"` + strings.Repeat("z", 65) + `"`, `"é"`, `"a/b"`, `5`, `["a"]`} {
		env := l.envelope(`{"type":"response.create","model":"test-model","input":"Hi","stream_id":`+bad+`}`, http.StatusBadRequest, "stream_id", "")
		assert.Equal(t, "invalid_request_error", env.Error.Type, bad)
	}
	// null is no stream_id.
	l.events(`{"type":"response.create","model":"test-model","input":"Hi","stream_id":null}`, "")
	require.Equal(t, calls+1, l.fake.Calls(), "an invalid stream_id calls no model")
}

// The error envelope of a create with a valid stream_id carries it, be the
// create invalid or refused by the engine.
func TestStreamIDErrorEnvelope(t *testing.T) {
	l := newLaneSession(t)
	l.envelope(`{"type":"response.create","model":"test-model","input":"Hi","temperature":"hot","stream_id":"L1"}`, http.StatusBadRequest, "temperature", "L1")
	l.envelope(`{"type":"response.create","model":"test-model","input":"Hi","bogus":1,"stream_id":"L1"}`, http.StatusBadRequest, "bogus", "L1")
	l.envelope(`{"type":"response.create","model":"test-model","input":"Hi","background":true,"stream_id":"L1"}`, http.StatusBadRequest, "background", "L1")
	env := l.envelope(create("L2", "resp_missing", "Hi", false), http.StatusNotFound, "previous_response_id", "L2")
	assert.Equal(t, "previous_response_not_found", env.Error.Code)
	l.envelope(create("", "resp_missing", "Hi", false), http.StatusNotFound, "previous_response_id", "")
}

// A connection has at most MaxLanes lanes: a create naming one more is a
// 400 naming stream_id, before any model call; the lanes it has go on.
func TestStreamIDLaneLimit(t *testing.T) {
	l := newLaneSession(t)
	for i := range wsapi.MaxLanes {
		l.events(create(fmt.Sprintf("lane%d", i), "", "Hi", false), fmt.Sprintf("lane%d", i))
	}
	calls := l.fake.Calls()
	env := l.envelope(create("one-too-many", "", "Hi", false), http.StatusBadRequest, "stream_id", "one-too-many")
	assert.Equal(t, wsapi.CodeTooManyLanes, env.Error.Code)
	require.Equal(t, calls, l.fake.Calls(), "refused before any model call")
	l.events(create("lane0", "", "Hi", false), "lane0")
	l.events(create("", "", "Hi", false), "")
}

// Two lanes interleaved, store: false, each continue their own chain from
// the connection's cache; a new lane forks from another lane's latest
// response; a failed continuation evicts only the response it continued.
func TestLanesInterleavedStoreFalse(t *testing.T) {
	l := newLaneSession(t)
	a1, _ := l.events(create("A", "", "My name is Ann", false), "A")
	b1, _ := l.events(create("B", "", "My name is Bob", false), "B")
	d1, _ := l.events(create("", "", "My name is Dan", false), "")
	a2, text := l.events(create("A", a1, "What is my name?", false), "A")
	assert.Equal(t, "Your name is Ann.", text)
	b2, text := l.events(create("B", b1, "What is my name?", false), "B")
	assert.Equal(t, "Your name is Bob.", text)
	_, text = l.events(create("", d1, "What is my name?", false), "")
	assert.Equal(t, "Your name is Dan.", text)
	// A fork: lane C from lane A's latest response.
	_, text = l.events(create("C", a2, "What is my name?", false), "C")
	assert.Equal(t, "Your name is Ann.", text)
	// Lane A continues after lanes B and C ran.
	_, text = l.events(create("A", a2, "What is my name?", false), "A")
	assert.Equal(t, "Your name is Ann.", text)
	// A failed continuation of lane B evicts b2, and nothing else.
	msgs := l.handle(create("B", b2, "fail", false))
	l.requireLane(msgs[len(msgs)-1], "B")
	env := l.envelope(create("B", b2, "What is my name?", false), http.StatusNotFound, "previous_response_id", "B")
	assert.Equal(t, "previous_response_not_found", env.Error.Code)
}

// steerFailed is OpenAI's response.steer.failed event.
type steerFailed struct {
	Type           string  `json:"type"`
	SequenceNumber *int64  `json:"sequence_number"`
	StreamID       *string `json:"stream_id"`
	Steer          struct {
		ID                 *string         `json:"id"`
		Input              json.RawMessage `json:"input"`
		PreviousResponseID string          `json:"previous_response_id"`
	} `json:"steer"`
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
		Type    string `json:"type"`
	} `json:"error"`
}

// steer sends a response.steer and returns the one message it got, a
// response.steer.failed.
func (l *laneSession) steer(body string) steerFailed {
	l.t.Helper()
	msgs := l.handle(body)
	require.Len(l.t, msgs, 1)
	b, err := json.Marshal(msgs[0])
	require.NoError(l.t, err)
	var ev steerFailed
	require.NoError(l.t, json.Unmarshal(b, &ev), "%s", b)
	require.Equal(l.t, "response.steer.failed", ev.Type, "%s", b)
	require.NotNil(l.t, ev.SequenceNumber, "%s", b)
	require.Nil(l.t, ev.Steer.ID, "no steering id is allocated")
	require.Equal(l.t, "invalid_request_error", ev.Error.Type)
	require.NotEmpty(l.t, ev.Error.Message)
	return ev
}

// A response.steer is answered with response.steer.failed
// (steering_not_supported; invalid_input for a message OpenAI would
// refuse), returning its input, with the lane of the response it targets;
// it starts no response and changes none.
func TestSteerNotSupported(t *testing.T) {
	l := newLaneSession(t)
	a1, _ := l.events(create("A", "", "My name is Ann", false), "A")
	d1, _ := l.events(create("", "", "My name is Dan", false), "")
	calls := l.fake.Calls()

	input := `[{"role":"user","content":[{"type":"input_text","text":"Be brief."}]}]`
	ev := l.steer(`{"type":"response.steer","previous_response_id":"` + a1 + `","input":` + input + `}`)
	assert.Equal(t, "steering_not_supported", ev.Error.Code)
	assert.JSONEq(t, input, string(ev.Steer.Input))
	assert.Equal(t, a1, ev.Steer.PreviousResponseID)
	require.NotNil(t, ev.StreamID)
	assert.Equal(t, "A", *ev.StreamID)

	ev = l.steer(`{"type":"response.steer","previous_response_id":"` + d1 + `","input":"Be brief."}`)
	assert.Equal(t, "steering_not_supported", ev.Error.Code)
	assert.JSONEq(t, `"Be brief."`, string(ev.Steer.Input))
	assert.Nil(t, ev.StreamID, "the target response has no lane")

	ev = l.steer(`{"type":"response.steer","previous_response_id":"resp_unknown","input":"x"}`)
	assert.Equal(t, "steering_not_supported", ev.Error.Code)
	assert.Nil(t, ev.StreamID)

	for _, bad := range []string{
		`{"type":"response.steer","previous_response_id":"` + a1 + `","input":"x","stream_id":"A"}`,
		`{"type":"response.steer","input":"x"}`,
		`{"type":"response.steer","previous_response_id":"` + a1 + `"}`,
		`{"type":"response.steer","previous_response_id":"` + a1 + `","input":[]}`,
		`{"type":"response.steer","previous_response_id":"` + a1 + `","input":""}`,
		`{"type":"response.steer","previous_response_id":"` + a1 + `","input":[{"role":"assistant","content":"x"}]}`,
		`{"type":"response.steer","previous_response_id":"` + a1 + `","input":[{"type":"function_call_output","call_id":"c","output":"x"}]}`,
		`{"type":"response.steer","previous_response_id":"` + a1 + `","input":[{"role":"user","content":[{"type":"output_text","text":"x"}]}]}`,
		`{"type":"response.steer","previous_response_id":"` + a1 + `","input":[{"role":"user","content":"x","name":"n"}]}`,
		`{"type":"response.steer","previous_response_id":5,"input":"x"}`,
	} {
		ev := l.steer(bad)
		assert.Equal(t, "invalid_input", ev.Error.Code, bad)
	}
	require.Equal(t, calls, l.fake.Calls(), "a steer calls no model")
	// The steered response is still the lane's latest.
	_, text := l.events(create("A", a1, "What is my name?", false), "A")
	assert.Equal(t, "Your name is Ann.", text)
}

// Codex's response.processed notice (its response_id processed) gets no
// reply and changes nothing: the next turn continues as before. An invalid
// one gets the error envelope of its fault.
func TestResponseProcessedNotice(t *testing.T) {
	l := newLaneSession(t)
	r1, _ := l.events(create("", "", "My name is Ann", false), "")
	calls := l.fake.Calls()
	for _, notice := range []string{`{"type":"response.processed","response_id":"` + r1 + `"}`, `{"type":"response.processed"}`} {
		n := l.out.len()
		require.NoError(t, l.s.Handle(requestid.With(t.Context(), requestid.New()), wsapi.Message{Data: []byte(notice), Size: int64(len(notice))}))
		assert.Empty(t, l.out.since(n), "no reply to %s", notice)
	}
	assert.Equal(t, calls, l.fake.Calls())
	_, text := l.events(create("", r1, "What is my name?", false), "")
	assert.Equal(t, "Your name is Ann.", text)

	l.envelope(`{"type":"response.processed","response_id":"`+r1+`","extra":1}`, 400, "extra", "")
	l.envelope(`{"type":"response.processed","response_id":5}`, 400, "response_id", "")
}

// A response.steer's reply fits the transport's message limit whatever
// the steer quotes back: an unknown parameter's or field's long name, a
// long previous_response_id, a long input (API Gateway refuses a message
// over 128 KB, and the client would get no reply at all).
func TestSteerFailedFitsTheWriteLimit(t *testing.T) {
	l := newLaneSession(t)
	const limit = 4 << 10
	l.s.WriteLimit = limit
	long := strings.Repeat("k", 3*limit)
	for name, body := range map[string]string{
		"unknown parameter": `{"type":"response.steer","previous_response_id":"resp_1","input":"x","` + long + `":1}`,
		"unknown field":     `{"type":"response.steer","previous_response_id":"resp_1","input":[{"role":"user","content":"x","` + long + `":1}]}`,
		"part type":         `{"type":"response.steer","previous_response_id":"resp_1","input":[{"role":"user","content":[{"type":"` + long + `"}]}]}`,
		"response id":       `{"type":"response.steer","previous_response_id":"` + long + `","input":"x"}`,
		"input":             `{"type":"response.steer","previous_response_id":"resp_1","input":"` + long + `"}`,
	} {
		n := l.out.len()
		ev := l.steer(body)
		msg := l.out.since(n)[0]
		assert.LessOrEqual(t, len(msg), limit, name)
		assert.NotEmpty(t, ev.Error.Code, name)
	}
}

// announcer is a Sender that records the messages and passes each on.
type announcer struct {
	*recorder
	sent chan []byte
}

func (a announcer) Send(ctx context.Context, msg []byte) error {
	a.sent <- msg
	return a.recorder.Send(ctx, msg)
}

// A previous_response_id naming a response still running on another lane
// is not waited for: the connection keeps a response once it ends, so it
// is previous_response_not_found, on the continuing lane; once it has
// ended it continues.
func TestContinuingAResponseStillRunning(t *testing.T) {
	release := make(chan struct{})
	l := newLaneSessionModel(t, fakellm.NewHandler(func(req fakellm.Request) fakellm.Turn {
		if req.Messages[len(req.Messages)-1].Content.String() == "slow" {
			return fakellm.Turn{Text: "Slow.", Block: release, HoldAfterChunks: 1}
		}
		return fakellm.Turn{Text: "Hello."}
	}))
	a := announcer{recorder: l.out, sent: make(chan []byte, 64)}
	l.s.Sender = a
	done := make(chan error, 1)
	go func() {
		m := create("A", "", "slow", false)
		done <- l.s.Handle(requestid.With(t.Context(), requestid.New()), wsapi.Message{Data: []byte(m), Size: int64(len(m))})
	}()
	var created struct {
		Response struct{ ID string } `json:"response"`
	}
	require.NoError(t, json.Unmarshal(<-a.sent, &created))
	require.NotEmpty(t, created.Response.ID)
	go func() {
		for range a.sent {
		}
	}()
	env := l.envelope(create("B", created.Response.ID, "What is my name?", false), http.StatusNotFound, "previous_response_id", "B")
	assert.Equal(t, "previous_response_not_found", env.Error.Code)
	close(release)
	require.NoError(t, <-done)
	l.events(create("B", created.Response.ID, "Hi", false), "B")
	close(a.sent)
}
