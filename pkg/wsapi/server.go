package wsapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"golang.org/x/net/http/httpguts"

	"github.com/lambent/lambent/internal/bounded"
	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/engine"
	"github.com/lambent/lambent/pkg/limits"
	"github.com/lambent/lambent/pkg/requestid"
	"github.com/lambent/lambent/pkg/tenant"
)

// Server defaults.
const (
	DefaultMaxAge       = 60 * time.Minute
	DefaultPingInterval = 30 * time.Second
	DefaultMaxQueued    = 16
	DefaultWriteTimeout = time.Minute
	// DefaultTenantConnections is LAMBENT_LIMIT_TENANT_WEBSOCKETS's
	// default.
	DefaultTenantConnections = limits.DefaultTenantWebSockets
)

// Config configures a Server. Service is required; the rest have working
// zero values.
type Config struct {
	Service Service
	// Logger receives connection errors (default slog.Default()).
	Logger *slog.Logger
	// ReadLimit bounds a client message (default DefaultReadLimit); a
	// larger one is read to its end and answered with a 413 error
	// envelope, and the connection stays open.
	ReadLimit int64
	// MaxAge is how long a connection lives (default 60 minutes, the
	// spec's limit). Then no new response starts: the ones in flight
	// complete (the queued messages are dropped), the client gets
	// websocket_connection_limit_reached and the connection closes (1000).
	MaxAge time.Duration
	// PingInterval paces the server's pings (default 30 s; negative: none).
	// A pong missing for an interval closes the connection. Client pings
	// are answered whenever the connection is read: also while a response
	// is in flight or a message is held, not once backpressure (MaxQueued)
	// has stopped the reading.
	PingInterval time.Duration
	// MaxQueued bounds the response.create messages of a connection
	// waiting behind its lanes' responses in flight, on all its lanes
	// together (default 16). When one more arrives for a busy lane (or
	// for a new lane while MaxLanes+1 lanes are busy), the server holds it,
	// reads the connection on until the next message has come (answering
	// pings meanwhile), then stops reading it until the lane takes the held
	// one (backpressure): nothing is refused.
	MaxQueued int
	// WriteTimeout bounds sending one message to a client that does not
	// read (default 1 minute); then the connection closes.
	WriteTimeout time.Duration
	// TenantConnections bounds the connections one tenant (tenant.From
	// of the upgrade's context) holds open at once on this server
	// (default DefaultTenantConnections; LAMBENT_LIMIT_TENANT_WEBSOCKETS):
	// each holds memory until it ends (its store:false responses, its
	// lanes). Past it the upgrade is refused with a 429
	// rate_limit_exceeded and Retry-After; other tenants are not affected.
	TenantConnections int
	// CacheBytes bounds the store:false responses a connection keeps in
	// memory (CacheBudget.NewCache; default limits.DefaultWebSocketCacheBytes;
	// LAMBENT_LIMIT_WEBSOCKET_CACHE_BYTES).
	CacheBytes int64
	// TenantCacheBytes bounds the store:false responses all the
	// connections of one tenant keep together (CacheBudget; default
	// limits.DefaultTenantWebSocketCacheBytes;
	// LAMBENT_LIMIT_TENANT_WEBSOCKET_CACHE_BYTES): each tenant has a
	// budget of its own.
	TenantCacheBytes int64
}

// Server is the local WebSocket front door: its ServeHTTP upgrades an
// authenticated request (the caller authenticates and scopes its context
// to the tenant) and serves the connection until it ends.
type Server struct {
	cfg Config
	log *slog.Logger

	mu      sync.Mutex
	closing chan struct{}
	closed  bool
	conns   sync.WaitGroup
	// tenants holds what each tenant with open connections shares.
	tenants map[string]*tenantConns
	// abort ends every connection at once (stop: Shutdown's deadline).
	abort context.Context
	stop  context.CancelFunc
}

// tenantConns is what a tenant's open connections share.
type tenantConns struct {
	// n counts them (never 0).
	n int
	// budget bounds their caches together.
	budget *CacheBudget
}

// NewServer returns a server for cfg.
func NewServer(cfg Config) *Server {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.ReadLimit <= 0 {
		cfg.ReadLimit = DefaultReadLimit
	}
	if cfg.MaxAge <= 0 {
		cfg.MaxAge = DefaultMaxAge
	}
	if cfg.PingInterval == 0 {
		cfg.PingInterval = DefaultPingInterval
	}
	if cfg.MaxQueued <= 0 {
		cfg.MaxQueued = DefaultMaxQueued
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = DefaultWriteTimeout
	}
	if cfg.TenantConnections <= 0 {
		cfg.TenantConnections = DefaultTenantConnections
	}
	abort, stop := context.WithCancel(context.Background())
	return &Server{cfg: cfg, log: cfg.Logger, closing: make(chan struct{}), tenants: make(map[string]*tenantConns), abort: abort, stop: stop}
}

// IsUpgrade reports whether r asks for a WebSocket.
func IsUpgrade(r *http.Request) bool {
	return r.Method == http.MethodGet && httpguts.HeaderValuesContainsToken(r.Header["Connection"], "upgrade") &&
		httpguts.HeaderValuesContainsToken(r.Header["Upgrade"], "websocket")
}

// ServeHTTP upgrades r and serves the connection until it ends. After
// Shutdown it answers 503; a tenant holding Config.TenantConnections
// connections gets a 429.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	t := tenant.From(r.Context())
	budget, e := s.enter(t)
	if e != nil {
		e.WriteHTTP(w, requestid.From(r.Context()))
		return
	}
	defer s.leave(t)
	c, err := websocket.Accept(w, r, nil)
	if err != nil {
		s.log.InfoContext(r.Context(), "websocket upgrade refused", "err", err)
		return
	}
	s.serve(r.Context(), c, budget)
}

// enter admits a connection of tenant t, for leave, and returns the
// tenant's cache budget; the error refuses it: the server is shutting
// down, or t holds TenantConnections.
func (s *Server) enter(t string) (*CacheBudget, *api.Error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, &api.Error{Status: http.StatusServiceUnavailable, Type: api.ErrTypeServer, Code: "server_shutting_down",
			Message: "The server is shutting down."}
	}
	tc := s.tenants[t]
	if tc == nil {
		tc = &tenantConns{budget: NewCacheBudget(s.cfg.TenantCacheBytes)}
		s.tenants[t] = tc
	}
	if tc.n >= s.cfg.TenantConnections {
		return nil, api.RateLimited(api.RetryAfterSeconds(engine.TenantRetryAfter), nil,
			"Too many WebSocket connections: this tenant already has %d open on this gateway instance, its limit (LAMBENT_LIMIT_TENANT_WEBSOCKETS). Close one, or retry after %s.",
			tc.n, engine.TenantRetryAfter)
	}
	tc.n++
	s.conns.Add(1)
	return tc.budget, nil
}

// leave ends a connection of tenant t that enter admitted.
func (s *Server) leave(t string) {
	s.mu.Lock()
	tc := s.tenants[t]
	if tc.n--; tc.n <= 0 {
		delete(s.tenants, t)
	}
	s.mu.Unlock()
	s.conns.Done()
}

// Shutdown stops accepting connections and closes the open ones: each
// finishes its responses in flight (its queued messages are dropped), then
// closes with 1001 (going away). It
// returns when every connection has ended, or with ctx's error when ctx
// ends first: the connections left are then closed at once, their
// responses in flight cancelled (and kept as far as they got, as when a
// client goes away), and Shutdown returns once they have ended.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		close(s.closing)
	}
	s.mu.Unlock()
	done := make(chan struct{})
	go func() {
		s.conns.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
	}
	s.stop()
	<-done
	return ctx.Err()
}

// serve runs one connection: a reader goroutine reads messages (and lets
// the library answer pings and close frames while responses are in
// flight), this goroutine answers those that are not a response.create at
// once and runs each response.create on its lane (lanes), and a pinger
// checks that the client is alive. It returns once every lane has ended.
func (s *Server) serve(parent context.Context, c *websocket.Conn, budget *CacheBudget) {
	ctx, cancel := context.WithCancel(parent)
	stopAbort := context.AfterFunc(s.abort, cancel)
	cache := budget.NewCache(s.cfg.CacheBytes)
	sess := &Session{Service: s.cfg.Service, Cache: cache, Sender: newConnSender(c, s.cfg.WriteTimeout),
		ReadLimit: s.cfg.ReadLimit, Logger: s.log}
	ln := newLanes(ctx, sess, cancel, s.cfg.MaxQueued)
	var wg sync.WaitGroup
	defer func() {
		stopAbort()
		cancel()
		_ = c.CloseNow()
		ln.wait()
		wg.Wait()
		// No response runs any more: the cache's bytes go back to the
		// tenant's budget.
		if err := cache.Close(parent); err != nil {
			s.log.ErrorContext(parent, "websocket: close the connection's cache", "err", err)
		}
	}()
	deadline := time.Now().Add(s.cfg.MaxAge)
	age := time.NewTimer(s.cfg.MaxAge)
	defer age.Stop()
	c.SetReadLimit(-1) // read() applies ReadLimit and keeps the connection
	msgs := make(chan Message)
	readDone := make(chan error, 1)
	rs := &readState{}
	wg.Add(1)
	go func() {
		defer wg.Done()
		err := s.read(ctx, c, msgs, rs)
		// The client is gone (or closed the connection): its response in
		// flight stops too, as an SSE request's does (what it produced so
		// far is stored all the same).
		cancel()
		readDone <- err
	}()
	if s.cfg.PingInterval > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.ping(ctx, cancel, c, rs)
		}()
	}
	limit := func() {
		if s.drain(ctx, ln, msgs) {
			_ = sess.Sender.Send(ctx, EncodeError(ctx, ConnectionLimitError()))
			_ = c.Close(websocket.StatusNormalClosure, CodeConnectionLimit)
		}
	}
	goingAway := func() {
		if s.drain(ctx, ln, msgs) {
			_ = c.Close(websocket.StatusGoingAway, "server shutting down")
		}
	}
	// ended ends the connection when no response may start any more: the
	// server shuts down, or the connection has reached its age limit.
	// Every message offered (read, or held until its lane had room) is
	// checked so first.
	ended := func() bool {
		switch {
		case s.isClosing():
			goingAway()
		case !time.Now().Before(deadline):
			limit()
		default:
			return false
		}
		return true
	}
	// pending is a message its lane had no room for (lanes.offer): no
	// other is taken from the reader until it has (the reader reads the
	// next one from the socket, then waits).
	var pending *Message
	var pendingLane string
	for {
		in := msgs
		if pending != nil {
			in = nil
		}
		select {
		case <-ctx.Done():
			return
		case err := <-readDone:
			if err != nil && websocket.CloseStatus(err) == -1 && !errors.Is(err, context.Canceled) {
				s.log.DebugContext(ctx, "websocket connection ended", "err", err)
			}
			return
		case <-age.C:
			limit()
			return
		case <-s.closing:
			goingAway()
			return
		case <-ln.space:
			if pending == nil {
				continue
			}
			if ended() {
				return
			}
			if ln.offer(pendingLane, *pending) {
				pending = nil
			}
		case m := <-in:
			if ended() {
				return
			}
			lane, create := Route(m)
			if !create {
				// Not a response: answered at once (a response.steer while
				// its target runs too).
				if err := sess.Handle(requestid.With(ctx, requestid.New()), m); err != nil {
					return
				}
				continue
			}
			if !ln.offer(lane, m) {
				pending, pendingLane = &m, lane
				s.log.DebugContext(ctx, logHeld, "stream_id", lane)
			}
		}
	}
}

// logHeld is the debug log line of a message held for want of room on
// its lane (backpressure: the connection is read only until the next
// message has come, then not until the held one has room).
const logHeld = "websocket message held: no room on its lane"

// drain drops the messages queued on ln's lanes and waits until the
// responses they run have ended, dropping what the client sends
// meanwhile; false when the connection ended first.
func (s *Server) drain(ctx context.Context, ln *lanes, msgs <-chan Message) bool {
	ln.drop()
	for ln.busyCount() > 0 {
		select {
		case <-ctx.Done():
			return false
		case <-ln.space:
		case <-msgs:
		}
	}
	return true
}

func (s *Server) isClosing() bool {
	select {
	case <-s.closing:
		return true
	default:
		return false
	}
}

// readState tells the pinger when the reader waits for room for a message
// (backpressure): it reads no pong then.
type readState struct {
	waiting atomic.Bool
	// pauses counts the waits.
	pauses atomic.Int64
}

// pausedSince reports whether the reader waits, or waited since it had
// waited n times (pauses).
func (r *readState) pausedSince(n int64) bool { return r.waiting.Load() || r.pauses.Load() != n }

// put sends m on msgs, noting in rs a wait for room; false when ctx ends
// first.
func (r *readState) put(ctx context.Context, msgs chan<- Message, m Message) bool {
	select {
	case msgs <- m:
		return true
	default:
	}
	r.pauses.Add(1)
	r.waiting.Store(true)
	defer r.waiting.Store(false)
	select {
	case msgs <- m:
		return true
	case <-ctx.Done():
		return false
	}
}

// read reads messages into msgs until the connection fails. A message
// over ReadLimit is read to its end without being kept. While msgs has no
// room for a message, nothing more is read (backpressure).
func (s *Server) read(ctx context.Context, c *websocket.Conn, msgs chan<- Message, rs *readState) error {
	for {
		typ, r, err := c.Reader(ctx)
		if err != nil {
			return err
		}
		data, over, err := bounded.Read(r, 0, s.cfg.ReadLimit)
		if err != nil {
			return err
		}
		m := Message{Binary: typ == websocket.MessageBinary, Data: data, Size: int64(len(data))}
		if over {
			// bounded.Read took ReadLimit+1 bytes of it.
			n, err := io.Copy(io.Discard, r)
			if err != nil {
				return err
			}
			m.Data, m.Size = nil, s.cfg.ReadLimit+1+n
		}
		if !rs.put(ctx, msgs, m) {
			return ctx.Err()
		}
	}
}

// ping pings the client every PingInterval; a missing pong ends the
// connection, unless the reader waited for room meanwhile (rs): then no
// pong could be read.
func (s *Server) ping(ctx context.Context, cancel context.CancelFunc, c *websocket.Conn, rs *readState) {
	t := time.NewTicker(s.cfg.PingInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		pauses := rs.pauses.Load()
		pctx, pcancel := context.WithTimeout(ctx, s.cfg.PingInterval)
		err := c.Ping(pctx)
		pcancel()
		if err != nil && ctx.Err() == nil && rs.pausedSince(pauses) {
			continue
		}
		if err != nil {
			if ctx.Err() == nil {
				s.log.InfoContext(ctx, "websocket client missed a pong", "err", err)
			}
			cancel()
			return
		}
	}
}

// connSender sends messages on a coder/websocket connection, one at a
// time: the lanes of a connection send concurrently, each message whole.
type connSender struct {
	c       *websocket.Conn
	timeout time.Duration
	// turn is held by the sender writing a message.
	turn chan struct{}
}

func newConnSender(c *websocket.Conn, timeout time.Duration) *connSender {
	return &connSender{c: c, timeout: timeout, turn: make(chan struct{}, 1)}
}

// Send writes msg as one text message, once no other is being written.
func (cs *connSender) Send(ctx context.Context, msg []byte) error {
	select {
	case cs.turn <- struct{}{}:
	case <-ctx.Done():
		return fmt.Errorf("wsapi: write: %w", ctx.Err())
	}
	defer func() { <-cs.turn }()
	ctx, cancel := context.WithTimeout(ctx, cs.timeout)
	defer cancel()
	if err := cs.c.Write(ctx, websocket.MessageText, msg); err != nil {
		return fmt.Errorf("wsapi: write: %w", err)
	}
	return nil
}
