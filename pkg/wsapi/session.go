// Package wsapi serves the Responses API in WebSocket mode (OpenResponses
// 2026-04-24, "WebSocket Transport"): a client opens a WebSocket on
// /v1/responses and sends response.create messages; each is a create
// request whose events come back as messages, the same event objects, in
// the same order and with the same sequence_number as on an SSE stream.
//
// Session is the transport-free part, shared by both front doors: it
// decodes a message, runs it through the engine with a WebSocket
// engine.ResponseWriter and the connection's Cache (the latest response
// of each lane, OpenAI's stream_id, store: false included, so that
// continuations on the same connection need no store), evicts the
// referenced previous response when a continuation fails, answers errors
// with the spec's envelope (carrying the message's stream_id), and
// answers OpenAI's response.steer with response.steer.failed (Lambent does
// not steer). The front doors keep each lane FIFO and run the lanes of a
// connection in parallel, answering the messages that are not a
// response.create at once (Route): Server runs each busy lane on a
// goroutine of its own, apigw gives each lane an SQS FIFO message group of
// its own. Server
// is the local front door (github.com/coder/websocket), which bounds the
// connections a tenant holds open (Config.TenantConnections,
// LAMBENT_LIMIT_TENANT_WEBSOCKETS), the bytes of each connection's
// store: false responses (CacheBudget.NewCache, LAMBENT_LIMIT_WEBSOCKET_CACHE_BYTES)
// and those of all a tenant's connections together (CacheBudget,
// LAMBENT_LIMIT_TENANT_WEBSOCKET_CACHE_BYTES);
// package apigw is the API Gateway WebSocket API front door.
package wsapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/lambent/lambent/internal/wirejson"
	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/engine"
	"github.com/lambent/lambent/pkg/pacing"
	"github.com/lambent/lambent/pkg/store"
)

// DefaultReadLimit is the default limit of a client message (8 MiB, the
// HTTP API's body limit).
const DefaultReadLimit = 8 << 20

// Service is what WebSocket mode needs of the engine.
type Service interface {
	CreateResponse(ctx context.Context, req *api.CreateResponseRequest, w engine.ResponseWriter) error
}

// Sender sends one text message to the client of a connection.
type Sender interface {
	Send(ctx context.Context, msg []byte) error
}

// Cache is the connection-local cache of a connection's lanes (OpenAI's
// stream_id; "" is the lane of a response.create without one): the latest
// response of each.
type Cache interface {
	// Get returns the record of response id if the connection keeps it,
	// on any lane, else an error wrapping store.ErrNotFound.
	Get(ctx context.Context, id string) (*store.Record, error)
	// PutLatest keeps rec, a terminal response of lane, as the lane's
	// latest response, in place of the one before.
	PutLatest(ctx context.Context, lane string, rec *store.Record) error
	// Evict forgets response id; a cache that does not hold it does
	// nothing.
	Evict(ctx context.Context, id string) error
	// Lanes returns the id of the latest response of each lane that has
	// one.
	Lanes(ctx context.Context) (map[string]string, error)
}

// RunningCache is a Cache that also knows the responses running on the
// connection's lanes beyond its Session (apigw's connection, each of whose
// turns runs on a Session of its own), for a response.steer.
type RunningCache interface {
	Cache
	// Running returns the id of the response running on each lane that
	// runs one, as far as known.
	Running(ctx context.Context) (map[string]string, error)
}

// Session processes the messages of one connection. The transport calls
// Handle for each message; it may call it concurrently for messages of
// different lanes (stream_id), but the messages of a lane one at a time,
// in order of arrival (FIFO per lane). Its Sender must then be safe for
// concurrent use, and send each message whole.
type Session struct {
	Service Service
	Cache   Cache
	Sender  Sender
	// ReadLimit bounds a client message (default DefaultReadLimit).
	ReadLimit int64
	// WriteLimit bounds a message the transport can send (0: no limit). An
	// event over it is never sent cut or dropped silently: see Handle.
	WriteLimit int
	// Logger receives errors (default slog.Default()).
	Logger *slog.Logger
	// OpeningHold bounds how long the opening of a response's events is
	// held for the model provider to accept its first call (default
	// pacing.DefaultOpeningHold; negative: until it does, or until the
	// response's next event): see eventWriter.
	OpeningHold time.Duration
	// ResponseID, when set, is the id the response of the response.create
	// it handles gets (engine.IdentifiedWriter): a new one, which the
	// transport noted beforehand (apigw, whose Session handles one
	// message). "": the engine makes one.
	ResponseID string

	mu sync.Mutex
	// running is the lanes with a response.create in Handle, each with
	// the id of its response once known ("" before).
	running map[string]string
}

// Handle processes one client message, whose context carries its own
// request id (the transport gives each message one: package requestid),
// repeated by its error envelope and its log lines. A response.create runs as a
// streaming create request, its events sent as they come, each carrying
// the message's stream_id when it named one (so does its error envelope);
// a response.steer is answered with response.steer.failed (steer); Codex's
// response.processed notice gets no reply (but the error of an invalid
// one). Any
// error is sent as the error envelope, after which the connection stays
// usable:
//
//   - a message that is not a valid response.create (binary, not JSON,
//     over ReadLimit, another type, HTTP transport fields, an invalid
//     create body, a new lane beyond MaxLanes) and a create the engine
//     refuses (previous_response_not_found, ...) get the envelope of that
//     error, and no event;
//   - an error after the response started (its store failing once it had
//     run) ends its events as that envelope with the error event's
//     sequence_number (EncodeStreamError);
//   - an event over WriteLimit is not sent, nor are the events after it;
//     the response runs to its end (and is kept by the connection and,
//     with store=true, stored), and the turn ends with an envelope of
//     status 500, code websocket_message_too_large, naming the event and
//     the response id.
//
// When a continuation fails (an error envelope, or response.failed), the
// referenced previous_response_id is evicted from the connection's cache,
// also when the message itself is invalid but names one (a
// response.create JSON object with a previous_response_id string).
// Handle returns an error only when the connection can no longer send.
func (s *Session) Handle(ctx context.Context, m Message) error {
	limit := s.ReadLimit
	if limit <= 0 {
		limit = DefaultReadLimit
	}
	fields, typ, err := decodeFields(m, limit)
	if err == nil && typ == TypeResponseSteer {
		return s.steer(ctx, fields)
	}
	if err == nil && typ == TypeResponseProcessed {
		// A notice: nothing to do, nothing to answer but its fault.
		if err := checkProcessed(fields); err != nil {
			return s.sendError(ctx, "", err)
		}
		return nil
	}
	var c *Create
	if err == nil && typ != TypeResponseCreate {
		err = unknownType(fields["type"])
	}
	if err == nil {
		c, err = createFrom(fields)
	}
	if err == nil {
		err = s.admitLane(ctx, c.StreamID)
	}
	if err != nil {
		// A response.create that continues a response fails as a
		// continuation, whatever its fault: the response it names is
		// evicted too.
		prev, lane, _ := createRefs(m)
		s.evict(ctx, prev)
		return s.sendError(ctx, lane, err)
	}
	defer s.leaveLane(c.StreamID)
	return s.create(ctx, c)
}

// create runs the response of c and sends its events, or its error.
func (s *Session) create(ctx context.Context, c *Create) error {
	req := c.Request
	hold := s.OpeningHold
	if hold == 0 {
		hold = pacing.DefaultOpeningHold
	}
	w := &eventWriter{ctx: ctx, send: s.Sender, limit: s.WriteLimit, cache: laneCache{c: s.Cache, lane: c.StreamID}, lane: c.StreamID, hold: hold,
		id: s.ResponseID, identified: func(id string) { s.identify(c.StreamID, id) }}
	err := s.Service.CreateResponse(ctx, req, w)
	// What the engine left held (nothing, when it opened or took back the
	// opening) goes out before the turn ends, never after it.
	w.Open()
	failed := w.failed
	var reply error
	switch {
	case w.sendErr != nil:
		// The connection is gone: nothing more reaches the client.
		return w.sendErr
	case err != nil && errors.Is(err, context.Canceled) && ctx.Err() != nil:
		return ctx.Err()
	case err != nil:
		if w.started {
			s.logger().WarnContext(ctx, "websocket: error after the response started", "response_id", w.responseID, "err", err)
		}
		failed, reply = true, err
	case w.tooLarge != nil:
		failed, reply = true, w.tooLarge
	}
	if failed {
		s.evict(ctx, req.PreviousResponseID)
	}
	if reply != nil {
		return s.sendError(ctx, c.StreamID, reply)
	}
	return nil
}

// admitLane notes that lane runs a response (leaveLane ends it), and
// refuses a new lane (stream_id) beyond the connection's MaxLanes: a lane
// counts when the cache keeps a response of it or one runs on it. ""
// (no lane) and the lanes the connection has are admitted.
func (s *Session) admitLane(ctx context.Context, lane string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	lanes, err := s.Cache.Lanes(ctx)
	if err != nil {
		return fmt.Errorf("wsapi: read the connection's lanes: %w", err)
	}
	_, kept := lanes[lane]
	_, running := s.running[lane]
	if lane != "" && !kept && !running {
		for l := range s.running {
			lanes[l] = ""
		}
		delete(lanes, "")
		if len(lanes) >= MaxLanes {
			return api.InvalidRequestCode("stream_id", CodeTooManyLanes,
				"This connection already has %d lanes (stream_id values), its limit: continue on one of them, send no stream_id, or open another connection.", MaxLanes)
		}
	}
	if s.running == nil {
		s.running = map[string]string{}
	}
	s.running[lane] = ""
	return nil
}

// identify notes that the response running on lane is id.
func (s *Session) identify(lane, id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.running[lane]; ok {
		s.running[lane] = id
	}
}

// leaveLane notes that lane's response has ended (admitLane).
func (s *Session) leaveLane(lane string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.running, lane)
}

// laneOf returns the lane of response id: the one it runs on (on this
// Session, else as a RunningCache knows), else the one the cache keeps it
// as the latest of ("": none).
func (s *Session) laneOf(ctx context.Context, id string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if lane, ok := laneWith(s.running, id); ok {
		return lane
	}
	if rc, ok := s.Cache.(RunningCache); ok {
		running, err := rc.Running(ctx)
		if err != nil {
			s.logger().ErrorContext(ctx, "websocket: read the connection's running responses", "err", err)
		}
		if lane, ok := laneWith(running, id); ok {
			return lane
		}
	}
	lanes, err := s.Cache.Lanes(ctx)
	if err != nil {
		s.logger().ErrorContext(ctx, "websocket: read the connection's lanes", "err", err)
	}
	lane, _ := laneWith(lanes, id)
	return lane
}

// laneWith returns the lane of ids (lane to response id) whose response
// is id.
func laneWith(ids map[string]string, id string) (string, bool) {
	for lane, rid := range ids {
		if rid == id {
			return lane, true
		}
	}
	return "", false
}

// steer answers the response.steer whose fields are fields with
// response.steer.failed: Lambent does not steer. It starts no response and
// changes none; the event carries the lane of the targeted response when
// it runs on the connection or the connection keeps it.
func (s *Session) steer(ctx context.Context, fields map[string]json.RawMessage) error {
	ev := decodeSteer(fields)
	if ev.Steer.PreviousResponseID != "" {
		ev.StreamID = s.laneOf(ctx, ev.Steer.PreviousResponseID)
	}
	msg, err := encodeSteerFailed(ev)
	if err == nil && s.WriteLimit > 0 && len(msg) > s.WriteLimit {
		// What it quotes of the message does not fit in one back.
		msg, err = encodeSteerFailed(ev.shortened())
	}
	if err != nil {
		return s.sendError(ctx, "", err)
	}
	return s.Sender.Send(ctx, msg)
}

// evict evicts response id ("": none), the previous response of a failed
// continuation, from the connection's cache; a failure is logged.
func (s *Session) evict(ctx context.Context, id string) {
	if id == "" {
		return
	}
	if err := s.Cache.Evict(ctx, id); err != nil {
		s.logger().ErrorContext(ctx, "websocket: evict the previous response", "previous_response_id", id, "err", err)
	}
}

// sendError sends the error envelope of err, with stream_id lane ("":
// none); a server error's cause is logged with the message's request id.
// An envelope over WriteLimit (an error quoting a long part of the
// message, such as an unknown parameter's name) is sent with its message
// and param shortened.
func (s *Session) sendError(ctx context.Context, lane string, err error) error {
	e := api.AsError(err)
	if e.ServerFailure() {
		s.logger().ErrorContext(ctx, "websocket: request failed", "status", e.Status, "code", e.Code, "err", err)
	}
	msg := encodeEnvelope(ctx, e, nil, lane)
	if s.WriteLimit > 0 && len(msg) > s.WriteLimit {
		msg = encodeEnvelope(ctx, shortened(e), nil, lane)
	}
	return s.Sender.Send(ctx, msg)
}

func (s *Session) logger() *slog.Logger {
	if s.Logger == nil {
		return slog.Default()
	}
	return s.Logger
}

// eventWriter is the WebSocket engine.ResponseWriter: each event is one
// text message holding the event's JSON, the bytes an SSE stream carries
// on its data line, but for an error event: the error envelope every
// WebSocket error gets, with the event's sequence_number
// (EncodeStreamError); each message carries the response's stream_id, if
// any. It is an engine.ConnectionWriter: the engine reads and keeps the
// connection's responses in its cache, as the latest of the response's
// lane. It holds the opening of a
// stream (response.created, response.in_progress) until the stream truly
// begins (HoldOpening, Open), at most hold, so that a response.create the
// model provider refuses gets the error envelope of the refusal instead
// (Retract), as OpenAI's WebSocket mode answers one. Its methods may be
// called concurrently (the hold's timer opens the stream).
type eventWriter struct {
	ctx   context.Context
	send  Sender
	limit int
	cache engine.ConnectionCache
	// lane is the response's stream_id ("": none).
	lane string
	hold time.Duration
	// id is the id the transport chose for the response ("": none).
	id string
	// identified, when set, is told the response's id once known.
	identified func(id string)

	mu sync.Mutex
	// started is set once an event was written; responseID is the
	// response's id, from the first event that carries the response.
	started    bool
	responseID string
	// failed is set by response.failed and error events.
	failed bool
	// tooLarge is the error of the first event over limit.
	tooLarge *api.Error
	sendErr  error
	// holding is set while the opening is held; held are its messages;
	// timer opens the stream when the hold has lasted hold.
	holding bool
	held    [][]byte
	timer   *time.Timer
}

// HoldOpening holds the messages of the events written next until Open,
// at most w.hold (when positive).
func (w *eventWriter) HoldOpening() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.holding = true
	if w.hold > 0 {
		w.timer = time.AfterFunc(w.hold, w.Open)
	}
}

// Open sends the held messages: the stream has begun.
func (w *eventWriter) Open() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.endHoldLocked() {
		return
	}
	for _, msg := range w.held {
		if w.sendErr == nil {
			w.sendErr = w.send.Send(w.ctx, msg)
		}
	}
	w.held = nil
}

// Retract drops the held messages, none of which was sent, and reports
// whether it did (false once the stream opened).
func (w *eventWriter) Retract() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.endHoldLocked() {
		return false
	}
	w.held, w.started = nil, false
	return true
}

// endHoldLocked ends the hold, and reports whether there was one (w.mu
// held).
func (w *eventWriter) endHoldLocked() bool {
	if !w.holding {
		return false
	}
	w.holding = false
	if w.timer != nil {
		w.timer.Stop()
	}
	return true
}

var errNotSent = errors.New("wsapi: event over the message limit")

// WriteEvent sends ev as one message.
func (w *eventWriter) WriteEvent(ev *api.StreamEvent) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.sendErr != nil {
		return w.sendErr
	}
	if w.tooLarge != nil {
		return errNotSent
	}
	w.started = true
	if ev.Response != nil && w.responseID == "" {
		w.responseID = ev.Response.ID
		if w.identified != nil {
			w.identified(w.responseID)
		}
	}
	switch ev.Type {
	case api.EventResponseFailed, api.EventError:
		w.failed = true
	}
	data, err := w.encode(ev)
	if err != nil {
		return err
	}
	if w.limit > 0 && len(data) > w.limit {
		w.tooLarge = &api.Error{Status: http.StatusInternalServerError, Type: api.ErrTypeServer, Code: CodeMessageTooLarge,
			Message: fmt.Sprintf("Event %s (sequence_number %d) of response %s is %d bytes, over this WebSocket's message limit of %d bytes, so it and the rest of the response's events were not sent. "+
				"The response ran to its end: continue from it with previous_response_id on this connection, or read it with GET /v1/responses/%s when it was stored (store=true).",
				ev.Type, ev.SequenceNumber, w.responseID, len(data), w.limit, w.responseID)}
		return errNotSent
	}
	if w.holding {
		w.held = append(w.held, data)
		return nil
	}
	if err := w.send.Send(w.ctx, data); err != nil {
		w.sendErr = err
		return err
	}
	return nil
}

// encode returns the message of ev: its JSON, an error event's being the
// spec's error envelope (EncodeStreamError), with the lane's stream_id.
func (w *eventWriter) encode(ev *api.StreamEvent) ([]byte, error) {
	if ev.Type == api.EventError {
		return EncodeStreamError(w.ctx, ev, w.lane), nil
	}
	data, err := wirejson.Marshal(ev.Wire())
	if err != nil {
		return nil, fmt.Errorf("encode %s event: %w", ev.Type, err)
	}
	return withStreamID(data, w.lane)
}

// withStreamID returns data, a JSON object, with the field stream_id lane
// added last ("": data as it is); an event always has fields (its type).
func withStreamID(data []byte, lane string) ([]byte, error) {
	if lane == "" {
		return data, nil
	}
	n := len(data)
	if n <= 2 || data[n-1] != '}' {
		return nil, fmt.Errorf("wsapi: an event is not a JSON object with fields: %.32q", data)
	}
	q, err := json.Marshal(lane)
	if err != nil {
		return nil, fmt.Errorf("encode stream_id: %w", err)
	}
	out := append(data[:n-1:n-1], `,"stream_id":`...)
	out = append(out, q...)
	return append(out, '}'), nil
}

var (
	_ engine.ConnectionWriter = (*eventWriter)(nil)
	_ engine.IdentifiedWriter = (*eventWriter)(nil)
)

// ResponseID implements engine.IdentifiedWriter: the id Session.ResponseID
// chose, if any.
func (w *eventWriter) ResponseID() string { return w.id }

// ConnectionCache implements engine.ConnectionWriter.
func (w *eventWriter) ConnectionCache() engine.ConnectionCache { return w.cache }

// WriteResponse is never called: WebSocket requests always stream.
func (w *eventWriter) WriteResponse(*api.Response) error {
	return errors.New("wsapi: a WebSocket response is streamed, never written whole")
}

// laneCache is the engine.ConnectionCache of a response on lane: it reads
// every lane's responses and keeps the response as the lane's latest.
type laneCache struct {
	c    Cache
	lane string
}

// Get returns the record of id, on any lane.
func (l laneCache) Get(ctx context.Context, id string) (*store.Record, error) {
	return l.c.Get(ctx, id)
}

// Put keeps rec as the latest response of the lane.
func (l laneCache) Put(ctx context.Context, rec *store.Record) error {
	return l.c.PutLatest(ctx, l.lane, rec)
}

// InProcess reports whether the cache is in memory (store.InProcess).
func (l laneCache) InProcess() bool {
	p, ok := l.c.(store.InProcess)
	return ok && p.InProcess()
}
