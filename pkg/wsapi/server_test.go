package wsapi

// The local front door's lanes: each lane (stream_id) of a connection runs
// on its own, FIFO, while the others run too, over a real WebSocket and a
// fake Service whose responses wait on barriers.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/engine"
)

// guard bounds how long a test waits for what must happen: reaching it is
// a failure, never the proof of anything.
const guard = 20 * time.Second

// barrierService runs each response as: response.created (id
// "resp_<input>"), a note on reached, a wait for release (or the
// request's end), response.completed. It records the order in which the
// responses started and how many of each lane ran at once.
type barrierService struct {
	reached chan string
	release chan struct{}

	mu      sync.Mutex
	started []string
	running map[string]int
	overlap []string
}

func newBarrierService() *barrierService {
	return &barrierService{reached: make(chan string, 64), release: make(chan struct{}), running: map[string]int{}}
}

// laneOf is the lane of an input: its text up to its first '/'.
func laneOf(input string) string { return strings.SplitN(input, "/", 2)[0] }

func (s *barrierService) CreateResponse(ctx context.Context, req *api.CreateResponseRequest, w engine.ResponseWriter) error {
	input := req.Input[0].Content[0].Text
	lane := laneOf(input)
	s.mu.Lock()
	s.started = append(s.started, input)
	s.running[lane]++
	if s.running[lane] > 1 {
		s.overlap = append(s.overlap, input)
	}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.running[lane]--
		s.mu.Unlock()
	}()
	resp := &api.Response{ID: "resp_" + strings.ReplaceAll(input, "/", "_"), Object: "response", Status: api.StatusInProgress}
	if err := w.WriteEvent(&api.StreamEvent{Type: api.EventResponseCreated, Response: resp}); err != nil {
		return err
	}
	s.reached <- input
	select {
	case <-s.release:
	case <-ctx.Done():
		return ctx.Err()
	}
	done := *resp
	done.Status = api.StatusCompleted
	return w.WriteEvent(&api.StreamEvent{Type: api.EventResponseCompleted, SequenceNumber: 1, Response: &done})
}

// wait returns the input of the next response that reached its barrier.
func (s *barrierService) wait(t *testing.T) string {
	t.Helper()
	select {
	case in := <-s.reached:
		return in
	case <-time.After(guard):
		t.Fatal("no response reached the model")
		return ""
	}
}

// laneServer serves svc on a test server; done is closed when its
// connection's handler has returned.
func laneServer(t *testing.T, svc Service, cfg Config) (url string, done <-chan struct{}) {
	t.Helper()
	cfg.Service, cfg.PingInterval, cfg.Logger = svc, -1, slog.New(slog.DiscardHandler)
	s := NewServer(cfg)
	ended := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer close(ended)
		s.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return "ws" + strings.TrimPrefix(srv.URL, "http"), ended
}

// laneClient is a client connection.
type laneClient struct {
	t *testing.T
	c *websocket.Conn
}

func dialLanes(t *testing.T, url string) *laneClient {
	t.Helper()
	c, _, err := websocket.Dial(t.Context(), url, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.CloseNow() })
	return &laneClient{t: t, c: c}
}

// create sends a response.create of input on lane ("": none).
func (l *laneClient) create(lane, input string) {
	l.t.Helper()
	body := map[string]any{"type": "response.create", "model": "m", "input": input}
	if lane != "" {
		body["stream_id"] = lane
	}
	b, err := json.Marshal(body)
	require.NoError(l.t, err)
	l.send(string(b))
}

func (l *laneClient) send(msg string) {
	l.t.Helper()
	require.NoError(l.t, l.c.Write(l.t.Context(), websocket.MessageText, []byte(msg)))
}

// serverMsg is what a test reads of a server message.
type serverMsg struct {
	Type     string `json:"type"`
	StreamID string `json:"stream_id"`
	Response *struct {
		ID string `json:"id"`
	} `json:"response"`
	Steer *struct {
		PreviousResponseID string `json:"previous_response_id"`
	} `json:"steer"`
}

func (l *laneClient) read() serverMsg {
	l.t.Helper()
	ctx, cancel := context.WithTimeout(l.t.Context(), guard)
	defer cancel()
	_, b, err := l.c.Read(ctx)
	require.NoError(l.t, err)
	var m serverMsg
	require.NoError(l.t, json.Unmarshal(b, &m), "%s", b)
	return m
}

// Two lanes run at once: the second lane's response reaches the model
// while the first one's waits there, and each ends when released.
func TestServerLanesRunConcurrently(t *testing.T) {
	svc := newBarrierService()
	url, _ := laneServer(t, svc, Config{})
	c := dialLanes(t, url)
	c.create("A", "A/1")
	c.create("B", "B/1")
	got := []string{svc.wait(t), svc.wait(t)}
	assert.ElementsMatch(t, []string{"A/1", "B/1"}, got, "both lanes reached the model before either finished")
	close(svc.release)
	completed := map[string]string{}
	for len(completed) < 2 {
		if m := c.read(); m.Type == api.EventResponseCompleted {
			completed[m.StreamID] = m.Response.ID
		}
	}
	assert.Equal(t, map[string]string{"A": "resp_A_1", "B": "resp_B_1"}, completed)
}

// Each lane is FIFO: its responses start in order of arrival, one at a
// time, while another lane runs beside them; the lane without stream_id is
// one lane too.
func TestServerLaneFIFO(t *testing.T) {
	svc := newBarrierService()
	url, _ := laneServer(t, svc, Config{})
	c := dialLanes(t, url)
	for i := range 3 {
		c.create("A", fmt.Sprintf("A/%d", i))
		c.create("", fmt.Sprintf("none/%d", i))
	}
	c.create("B", "B/0")
	// A/0, none/0 and B/0 run at once; the rest wait behind their lane's.
	assert.ElementsMatch(t, []string{"A/0", "none/0", "B/0"}, []string{svc.wait(t), svc.wait(t), svc.wait(t)})
	close(svc.release)
	completed := map[string][]string{}
	for n := 0; n < 7; {
		if m := c.read(); m.Type == api.EventResponseCompleted {
			completed[m.StreamID] = append(completed[m.StreamID], m.Response.ID)
			n++
		}
	}
	assert.Equal(t, []string{"resp_A_0", "resp_A_1", "resp_A_2"}, completed["A"])
	assert.Equal(t, []string{"resp_none_0", "resp_none_1", "resp_none_2"}, completed[""])
	assert.Equal(t, []string{"resp_B_0"}, completed["B"])
	svc.mu.Lock()
	defer svc.mu.Unlock()
	assert.Empty(t, svc.overlap, "two responses of one lane ran at once")
	var a []string
	for _, in := range svc.started {
		if laneOf(in) == "A" {
			a = append(a, in)
		}
	}
	assert.Equal(t, []string{"A/0", "A/1", "A/2"}, a)
}

// A response.steer is answered at once, while the response it targets
// runs, with that response's lane.
func TestServerSteerAnsweredWhileLaneBusy(t *testing.T) {
	svc := newBarrierService()
	url, _ := laneServer(t, svc, Config{})
	c := dialLanes(t, url)
	c.create("A", "A/1")
	created := c.read()
	require.Equal(t, api.EventResponseCreated, created.Type)
	svc.wait(t)
	c.send(`{"type":"response.steer","previous_response_id":"` + created.Response.ID + `","input":"Be brief."}`)
	m := c.read()
	require.Equal(t, TypeSteerFailed, m.Type, "the steer is answered before the response ends")
	assert.Equal(t, "A", m.StreamID, "the lane of the running response")
	assert.Equal(t, created.Response.ID, m.Steer.PreviousResponseID)
	close(svc.release)
	assert.Equal(t, api.EventResponseCompleted, c.read().Type)
}

// A lane's queue full (MaxQueued) stops the reading of the connection
// until the lane takes its next message: nothing is refused, the
// connection stays open, every response runs in order.
func TestServerLaneQueueBackpressure(t *testing.T) {
	svc := newBarrierService()
	url, _ := laneServer(t, svc, Config{MaxQueued: 1})
	c := dialLanes(t, url)
	const n = 5
	for i := range n {
		c.create("A", fmt.Sprintf("A/%d", i))
	}
	svc.wait(t)
	close(svc.release)
	var ids []string
	for len(ids) < n {
		m := c.read()
		require.NotEqual(t, "error", m.Type)
		if m.Type == api.EventResponseCompleted {
			ids = append(ids, m.Response.ID)
		}
	}
	assert.Equal(t, []string{"resp_A_0", "resp_A_1", "resp_A_2", "resp_A_3", "resp_A_4"}, ids)
}

// A client that goes away while lanes run ends every lane: the
// connection's handler returns once they have, and nothing is left
// running.
func TestServerCloseWhileLanesRun(t *testing.T) {
	// Registered first, so run last: after the test server closed.
	t.Cleanup(func() { goleak.VerifyNone(t, goleak.IgnoreCurrent()) })
	svc := newBarrierService()
	url, done := laneServer(t, svc, Config{})
	c := dialLanes(t, url)
	c.create("A", "A/1")
	c.create("B", "B/1")
	c.create("B", "B/2")
	svc.wait(t)
	svc.wait(t)
	require.NoError(t, c.c.CloseNow())
	select {
	case <-done:
	case <-time.After(guard):
		t.Fatal("the connection's handler did not return")
	}
	svc.mu.Lock()
	defer svc.mu.Unlock()
	assert.Equal(t, map[string]int{"A": 0, "B": 0}, svc.running, "every response ended")
	assert.NotContains(t, svc.started, "B/2", "a queued message does not start once the client is gone")
}

// Lanes running at once count towards MaxLanes: with MaxLanes lanes
// running, a create on one more is refused (too_many_stream_ids, on its
// lane) while they run; the lane without stream_id still runs beside them.
func TestServerLaneLimitWhileLanesRun(t *testing.T) {
	svc := newBarrierService()
	url, _ := laneServer(t, svc, Config{})
	c := dialLanes(t, url)
	for i := range MaxLanes {
		c.create(fmt.Sprintf("L%d", i), fmt.Sprintf("L%d/0", i))
	}
	for range MaxLanes {
		svc.wait(t)
	}
	c.create("X", "X/0")
	c.create("", "none/0")
	assert.Equal(t, "none/0", svc.wait(t))
	var refused *serverMsg
	for refused == nil {
		if m := c.read(); m.Type == "error" {
			refused = &m
		}
	}
	assert.Equal(t, "X", refused.StreamID)
	close(svc.release)
	svc.mu.Lock()
	defer svc.mu.Unlock()
	assert.NotContains(t, svc.started, "X/0")
}

// The messages queued on a connection are bounded across its lanes
// (MaxQueued in all), not lane by lane: with two lanes busy and MaxQueued
// messages queued between them, one more on either is held (offer is
// false: the reader stops), so a connection never holds more than
// MaxQueued waiting messages (each up to ReadLimit) beside its running
// ones, however many lanes it uses.
func TestLanesQueueBoundIsPerConnection(t *testing.T) {
	svc := newBarrierService()
	ctx, cancel := context.WithCancel(t.Context())
	sess := &Session{Service: svc, Cache: NewMemoryCache(0), Sender: nopSender{}, Logger: slog.New(slog.DiscardHandler)}
	ln := newLanes(ctx, sess, cancel, 2)
	released := false
	t.Cleanup(func() {
		if !released {
			close(svc.release)
		}
		ln.wait()
		cancel()
	})
	msg := func(lane, input string) Message {
		b, err := json.Marshal(map[string]any{"type": "response.create", "model": "m", "input": input, "stream_id": lane})
		require.NoError(t, err)
		return Message{Data: b, Size: int64(len(b))}
	}
	require.True(t, ln.offer("A", msg("A", "A/0")))
	require.True(t, ln.offer("B", msg("B", "B/0")))
	svc.wait(t)
	svc.wait(t)
	require.True(t, ln.offer("A", msg("A", "A/1")))
	require.True(t, ln.offer("B", msg("B", "B/1")))
	assert.False(t, ln.offer("A", msg("A", "A/2")), "a third queued message waits")
	assert.False(t, ln.offer("B", msg("B", "B/2")), "on any lane")
	close(svc.release)
	released = true
	ln.wait()
	svc.mu.Lock()
	defer svc.mu.Unlock()
	assert.ElementsMatch(t, []string{"A/0", "B/0", "A/1", "B/1"}, svc.started)
}

// nopSender sends nothing.
type nopSender struct{}

func (nopSender) Send(context.Context, []byte) error { return nil }

// freeingService is a barrierService whose response of input free waits
// for its own release (freed), then fails (its lane keeps nothing, so a
// new lane is admitted in its place).
type freeingService struct {
	*barrierService
	free  string
	freed chan struct{}
}

func (s *freeingService) CreateResponse(ctx context.Context, req *api.CreateResponseRequest, w engine.ResponseWriter) error {
	if req.Input[0].Content[0].Text != s.free {
		return s.barrierService.CreateResponse(ctx, req, w)
	}
	s.reached <- s.free
	select {
	case <-s.freed:
		return errors.New("freed")
	case <-ctx.Done():
		return ctx.Err()
	}
}

// pausingHandler blocks the connection's loop where it logs that it holds
// a message, once, until resume is closed: the test acts meanwhile.
type pausingHandler struct {
	held   chan struct{}
	resume chan struct{}
	once   sync.Once
}

func (h *pausingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *pausingHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *pausingHandler) WithGroup(string) slog.Handler            { return h }
func (h *pausingHandler) Handle(_ context.Context, r slog.Record) error {
	if r.Message == logHeld {
		h.once.Do(func() {
			close(h.held)
			<-h.resume
		})
	}
	return nil
}

// lanesRunning counts the goroutines of busy lanes.
func lanesRunning() int {
	buf := make([]byte, 1<<20)
	return strings.Count(string(buf[:runtime.Stack(buf, true)]), "wsapi.(*lanes).run(")
}

// A message held for want of a lane (MaxLanes+1 busy) does not start once
// the server shuts down, when a lane frees: the loop checks shutdown (and
// the connection's age) before offering it, as before offering a message
// it reads. The loop is paused where it holds the message (its log line)
// until shutdown has begun and a lane has ended (its goroutine gone, its
// room signalled); Go's select then picks either one: before the check,
// 10 to 18 of the 32 rounds started the held message (5 runs).
func TestServerHeldMessageDoesNotStartAtShutdown(t *testing.T) {
	for round := range 32 {
		t.Run(fmt.Sprint(round), func(t *testing.T) {
			svc := &freeingService{barrierService: newBarrierService(), free: "L0/0", freed: make(chan struct{})}
			h := &pausingHandler{held: make(chan struct{}), resume: make(chan struct{})}
			s := NewServer(Config{Service: svc, PingInterval: -1, Logger: slog.New(h)})
			srv := httptest.NewServer(s)
			t.Cleanup(srv.Close)
			c := dialLanes(t, "ws"+strings.TrimPrefix(srv.URL, "http"))
			holdOne(t, c, svc.barrierService, h)
			read := make(chan struct{}) // the client reads to the end: the server's close waits for its answer
			go func() {
				defer close(read)
				for {
					if _, _, err := c.c.Read(context.Background()); err != nil {
						return
					}
				}
			}()
			shut := make(chan error, 1)
			go func() { shut <- s.Shutdown(context.Background()) }()
			<-s.closing
			close(svc.freed)
			for lanesRunning() > MaxLanes {
				runtime.Gosched()
			}
			close(h.resume)
			close(svc.release)
			select {
			case err := <-shut:
				require.NoError(t, err)
			case <-time.After(guard):
				t.Fatal("Shutdown did not return")
			}
			<-read
			svc.mu.Lock()
			defer svc.mu.Unlock()
			assert.NotContains(t, svc.started, "Y/0", "the held message started after shutdown began")
		})
	}
}

// holdOne fills every lane of c with a response svc holds (MaxLanes
// lanes and the lane without stream_id), then sends "Y/0" on a new lane,
// which has no room, and waits until the server logs (h) that it holds it.
func holdOne(t *testing.T, c *laneClient, svc *barrierService, h *pausingHandler) {
	t.Helper()
	c.create("", "none/0")
	for i := range MaxLanes {
		c.create(fmt.Sprintf("L%d", i), fmt.Sprintf("L%d/0", i))
	}
	for range MaxLanes + 1 {
		svc.wait(t)
	}
	c.create("Y", "Y/0")
	select {
	case <-h.held:
	case <-time.After(guard):
		t.Fatal("the message was not held")
	}
}

// A client's ping is answered while the connection holds a message for
// want of a lane: holding it, the loop reads no other message, but the
// reader still waits on the socket for the next one, and so answers pings
// (it stops reading only once it has read that next one: backpressure).
func TestServerPongWhileMessageHeld(t *testing.T) {
	svc := newBarrierService()
	h := &pausingHandler{held: make(chan struct{}), resume: make(chan struct{})}
	close(h.resume)
	s := NewServer(Config{Service: svc, PingInterval: -1, Logger: slog.New(h)})
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	c := dialLanes(t, "ws"+strings.TrimPrefix(srv.URL, "http"))
	holdOne(t, c, svc, h)
	read := make(chan struct{}) // the client reads, as Ping requires, to get the pong
	go func() {
		defer close(read)
		for {
			if _, _, err := c.c.Read(context.Background()); err != nil {
				return
			}
		}
	}()
	ctx, cancel := context.WithTimeout(t.Context(), guard)
	defer cancel()
	require.NoError(t, c.c.Ping(ctx), "no pong while a message was held")
	close(svc.release)
	require.NoError(t, s.Shutdown(ctx))
	<-read
}
