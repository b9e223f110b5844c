// Package apigw is the AWS front door of WebSocket mode: an API Gateway
// WebSocket API whose $connect, $default and $disconnect routes invoke one
// Lambda function, which sends the events back through the API Gateway
// Management API (PostToConnection).
//
// An API Gateway integration must answer within 29 s, and a response may
// take minutes, so $default does not run a response.create: it puts the
// message on an SQS FIFO queue, in the message group of its lane
// (stream_id) of its connection (messageGroup), and returns at once; any
// other message (a response.steer, an invalid one) it answers itself, at
// once. The same function consumes that queue (an event source mapping,
// one message per invocation, up to the Lambda maximum of 15 minutes) and
// runs the turn through wsapi.Session, posting each event as it comes.
// FIFO message groups give what OpenAI's WebSocket mode does: the
// messages of a lane are processed one at a time, in order, while the
// other lanes and connections run in parallel.
//
// Each message may land on another Lambda instance, so a connection's
// state lives in DynamoDB (Connections): its tenant (by the tenant rule
// at $connect: the IAM caller, else the API key), when it opened (the
// 60-minute limit), and for each of its lanes the request id of the turn
// it last started (a turn SQS delivers again after its invocation died is
// not run twice) and its latest response, store: false ones included,
// expiring with the connection (of a stored response only its id when the
// engine's store is shared, SharedStore), and while a turn runs its
// running mark (Connection.Begin to Connection.Settle, which writes
// whatever ended the turn; beside the mark, the id the turn chose for its
// response, so that a response.steer naming it is answered on its lane;
// the mark lapses at running_until,
// Connections.TurnTimeout after Begin, so a failed Settle does not keep
// the lane running). Concurrent turns of a connection each update only
// their lane of its item. No count of a tenant's connections is kept
// (docs/aws.md, Tenants): LAMBENT_LIMIT_TENANT_WEBSOCKETS bounds the local
// server's only.
//
// API Gateway refuses a message over 128 KB. An event over that limit is
// not sent; the turn ends with a websocket_message_too_large error
// envelope naming the event and the response id (wsapi.Session.Handle),
// while the response runs to its end and remains continuable from the
// connection (and readable over HTTP when store=true).
package apigw

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/apigatewaymanagementapi"
	mgmttypes "github.com/aws/aws-sdk-go-v2/service/apigatewaymanagementapi/types"

	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/awsjson"
	"github.com/lambent/lambent/pkg/engine"
	"github.com/lambent/lambent/pkg/requestid"
	"github.com/lambent/lambent/pkg/tenant"
	"github.com/lambent/lambent/pkg/wsapi"
)

// MaxMessage is API Gateway's limit of a WebSocket message (128 KB), in
// both directions.
const MaxMessage = 128 << 10

// ManagementAPI is the part of the API Gateway Management API client the
// handler uses; *apigatewaymanagementapi.Client implements it.
type ManagementAPI interface {
	PostToConnection(ctx context.Context, in *apigatewaymanagementapi.PostToConnectionInput, optFns ...func(*apigatewaymanagementapi.Options)) (*apigatewaymanagementapi.PostToConnectionOutput, error)
	DeleteConnection(ctx context.Context, in *apigatewaymanagementapi.DeleteConnectionInput, optFns ...func(*apigatewaymanagementapi.Options)) (*apigatewaymanagementapi.DeleteConnectionOutput, error)
}

// QueueAPI is the part of the SQS client the handler uses (*awsjson.SQS).
type QueueAPI interface {
	SendMessage(ctx context.Context, in awsjson.SendMessageInput) (string, error)
}

// Config configures a Handler. Service, Connections, Management, Queue
// and QueueURL are required.
type Config struct {
	Service     wsapi.Service
	Connections *Connections
	Management  ManagementAPI
	Queue       QueueAPI
	// QueueURL is the SQS FIFO queue of the turns.
	QueueURL string
	// Tenants is the tenant rule $connect applies, the HTTP front doors'
	// own: an AWS_IAM-authorized upgrade belongs to its caller (from the
	// event's requestContext.identity), any other needs one of the API
	// keys when keys are configured.
	Tenants tenant.Rule
	// SharedStore says the engine's store is one every instance reads
	// (DynamoDB): then the connection keeps only the id of a stored
	// response (store: true), which a continuation reads from that store,
	// instead of a second copy of its record; store: false responses are
	// kept whole as before.
	SharedStore bool
	// Endpoint overrides the Management API endpoint; by default it is
	// https://{domainName}/{stage} of the route event.
	Endpoint string
	// MaxAge is how long a connection is served (default 60 minutes).
	MaxAge time.Duration
	// KeepAlive is how long a running turn may send nothing before a
	// keep-alive message goes to its connection (default DefaultKeepAlive,
	// under API Gateway's 10-minute idle timeout; negative: none).
	KeepAlive time.Duration
	// Logger (default slog.Default()).
	Logger *slog.Logger
}

// Handler handles the invocations of the WebSocket function.
type Handler struct {
	cfg Config
	log *slog.Logger
}

// New returns a handler for cfg.
func New(cfg Config) (*Handler, error) {
	if cfg.Service == nil || cfg.Connections == nil || cfg.Management == nil || cfg.Queue == nil || cfg.QueueURL == "" {
		return nil, errors.New("apigw: Service, Connections, Management, Queue and QueueURL are required")
	}
	if cfg.MaxAge <= 0 {
		cfg.MaxAge = wsapi.DefaultMaxAge
	}
	if cfg.KeepAlive == 0 {
		cfg.KeepAlive = DefaultKeepAlive
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Handler{cfg: cfg, log: cfg.Logger}, nil
}

// Invoke handles one invocation: a route event of the WebSocket API, or an
// SQS batch of turns (answered with its partial batch failures).
func (h *Handler) Invoke(ctx context.Context, payload json.RawMessage) (any, error) {
	var probe struct {
		Records        []json.RawMessage `json:"Records"`
		RequestContext struct {
			EventType string `json:"eventType"`
		} `json:"requestContext"`
	}
	if err := json.Unmarshal(payload, &probe); err != nil {
		return nil, fmt.Errorf("apigw: event is not a JSON object: %w", err)
	}
	if len(probe.Records) > 0 {
		var ev events.SQSEvent
		if err := json.Unmarshal(payload, &ev); err != nil {
			return nil, fmt.Errorf("apigw: SQS event: %w", err)
		}
		return h.Turns(ctx, ev), nil
	}
	var ev events.APIGatewayWebsocketProxyRequest
	if err := json.Unmarshal(payload, &ev); err != nil {
		return nil, fmt.Errorf("apigw: WebSocket event: %w", err)
	}
	// Each route event is a request of its own: its log lines carry its
	// request id and API Gateway's.
	ctx, _ = requestid.Ensure(requestid.WithAttrs(requestid.WithLambda(ctx), slog.String(GatewayRequestKey, ev.RequestContext.RequestID)))
	switch probe.RequestContext.EventType {
	case "CONNECT":
		return h.connect(ctx, &ev), nil
	case "MESSAGE":
		return h.message(ctx, &ev)
	case "DISCONNECT":
		return h.disconnect(ctx, &ev), nil
	}
	return nil, fmt.Errorf("apigw: unknown event (requestContext.eventType %q)", probe.RequestContext.EventType)
}

// accepted is the 200 of a route handled.
func accepted() events.APIGatewayProxyResponse {
	return events.APIGatewayProxyResponse{StatusCode: http.StatusOK}
}

// refuse answers with e in the OpenAI error shape (e's status).
func refuse(ctx context.Context, e *api.Error) events.APIGatewayProxyResponse {
	return events.APIGatewayProxyResponse{StatusCode: e.Status, Body: string(e.Body(requestid.From(ctx))),
		Headers: map[string]string{"Content-Type": "application/json"}}
}

// connect finds the tenant of the upgrade by the tenant rule (its IAM
// caller when the route is AWS_IAM-authorized, else the API key of its
// Authorization header) and records the connection under it; any other
// answer than 200 refuses it.
func (h *Handler) connect(ctx context.Context, ev *events.APIGatewayWebsocketProxyRequest) events.APIGatewayProxyResponse {
	id := &ev.RequestContext.Identity
	name, err := h.cfg.Tenants.Resolve(tenant.CallerOf(id.UserArn, id.Caller), header(ev, "Authorization"))
	if err != nil {
		return refuse(ctx, api.Unauthorized(err.Error()))
	}
	connectedAt := time.UnixMilli(ev.RequestContext.ConnectedAt)
	if ev.RequestContext.ConnectedAt == 0 {
		connectedAt = time.Now()
	}
	if err := h.cfg.Connections.Open(ctx, ev.RequestContext.ConnectionID, name, connectedAt); err != nil {
		h.log.ErrorContext(ctx, "websocket $connect", "connection_id", ev.RequestContext.ConnectionID, "err", err)
		return refuse(ctx, api.ServerError(err, "The connection could not be opened."))
	}
	return accepted()
}

func header(ev *events.APIGatewayWebsocketProxyRequest, name string) string {
	if v := http.Header(ev.MultiValueHeaders).Get(name); v != "" {
		return v
	}
	for k, v := range ev.Headers {
		if http.CanonicalHeaderKey(k) == name {
			return v
		}
	}
	return ""
}

// turn is a client message on the queue.
type turn struct {
	ConnectionID string `json:"connection_id"`
	Endpoint     string `json:"endpoint"`
	Body         string `json:"body"`
	Base64       bool   `json:"base64,omitempty"`
	// RequestID is the message's request id (package requestid), given
	// by $default; GatewayRequestID is API Gateway's id of that request.
	RequestID        string `json:"request_id,omitempty"`
	GatewayRequestID string `json:"apigw_request_id,omitempty"`
}

// GatewayRequestKey is the log attribute of API Gateway's request id.
const GatewayRequestKey = "apigw_request_id"

// message handles a client message ($default) and returns at once: a
// response.create is queued in the message group of its lane
// (messageGroup), and its turn runs from the queue; any other message (a
// response.steer, an invalid one) is answered here (answer). A message
// that cannot be queued or answered is answered on the connection with the
// error envelope (a failed $default would reach the client as API
// Gateway's own {"message":"Internal server error"}, which no client of
// the spec knows).
func (h *Handler) message(ctx context.Context, ev *events.APIGatewayWebsocketProxyRequest) (events.APIGatewayProxyResponse, error) {
	rc := ev.RequestContext
	t := turn{ConnectionID: rc.ConnectionID, Endpoint: "https://" + rc.DomainName + "/" + rc.Stage, Body: ev.Body, Base64: ev.IsBase64Encoded,
		RequestID: requestid.From(ctx), GatewayRequestID: rc.RequestID}
	m := t.message()
	lane, create := wsapi.Route(m)
	if !create {
		err := h.answer(ctx, &t, m)
		if err == nil {
			return accepted(), nil
		}
		return h.failed(ctx, &t, "", err, "The message could not be answered; send it again.")
	}
	err := h.queue(ctx, &t, rc, lane)
	if err == nil {
		return accepted(), nil
	}
	return h.failed(ctx, &t, lane, err, "The message could not be queued; send it again.")
}

// failed answers the message t, which $default could not handle (err),
// with a server error envelope saying msg, on lane (a response.create's
// stream_id; "": none).
func (h *Handler) failed(ctx context.Context, t *turn, lane string, err error, msg string) (events.APIGatewayProxyResponse, error) {
	h.log.ErrorContext(ctx, "websocket $default", "connection_id", t.ConnectionID, "err", err)
	p := h.poster(t, func() {})
	if perr := p.Send(ctx, wsapi.EncodeLaneError(ctx, api.ServerError(err, "%s", msg), lane)); perr != nil {
		// API Gateway tells the client the integration failed.
		return events.APIGatewayProxyResponse{}, errors.Join(err, perr)
	}
	return accepted(), nil
}

// answer answers m, the message t that is not a response.create, at once
// through a wsapi.Session over t's connection (a response.steer needs its
// lanes); nothing when the connection is gone. A connection past MaxAge
// is ended instead (limit), as a turn's is.
func (h *Handler) answer(ctx context.Context, t *turn, m wsapi.Message) error {
	conn, err := h.cfg.Connections.Load(ctx, t.ConnectionID)
	if err != nil || conn == nil {
		return err
	}
	p := h.poster(t, func() {})
	if h.expired(conn) {
		return h.limit(ctx, p, conn.runs(nil))
	}
	if err := h.session(conn, p).Handle(tenant.With(ctx, conn.Tenant), m); err != nil {
		h.log.InfoContext(ctx, "websocket $default: the client went away", "connection_id", t.ConnectionID, "err", err)
	}
	return nil
}

// session returns the session of a message of conn, sending through
// sender.
func (h *Handler) session(conn *Connection, sender wsapi.Sender) *wsapi.Session {
	var cache wsapi.Cache = conn
	if h.cfg.SharedStore {
		cache = sharedCache{conn}
	}
	return &wsapi.Session{Service: h.cfg.Service, Cache: cache, Sender: sender, ReadLimit: MaxMessage, WriteLimit: MaxMessage, Logger: h.log}
}

// message returns the client message t holds.
func (t *turn) message() wsapi.Message {
	m := wsapi.Message{Binary: t.Base64, Data: []byte(t.Body), Size: int64(len(t.Body))}
	if t.Base64 {
		data, err := base64.StdEncoding.DecodeString(t.Body)
		if err != nil {
			data = nil
		}
		m.Data, m.Size = data, int64(len(data))
	}
	return m
}

// maxGroupID bounds an SQS MessageGroupId.
const maxGroupID = 128

// messageGroup returns the FIFO message group of lane of connection id,
// so that the lanes of a connection run in parallel, each FIFO: the
// connection id for the lane without stream_id (the group of all its
// messages before lanes ran in parallel), else id/lane, or its SHA-256
// in hex when that is over SQS's 128 characters. Connection ids and
// stream_ids hold only characters a group id may have.
func messageGroup(id, lane string) string {
	if lane == "" {
		return id
	}
	g := id + "/" + lane
	if len(g) <= maxGroupID {
		return g
	}
	sum := sha256.Sum256([]byte(g))
	return hex.EncodeToString(sum[:])
}

// queue puts t, the message of the route event whose context is rc, in
// the message group of its lane.
func (h *Handler) queue(ctx context.Context, t *turn, rc events.APIGatewayWebsocketProxyRequestContext, lane string) error {
	body, err := json.Marshal(t)
	if err != nil {
		return fmt.Errorf("apigw: encode turn: %w", err)
	}
	body = sqsText(body)
	dedup := rc.RequestID
	if dedup == "" {
		dedup = fmt.Sprint(rc.MessageID)
	}
	if _, err := h.cfg.Queue.SendMessage(ctx, awsjson.SendMessageInput{
		QueueURL:               h.cfg.QueueURL,
		MessageBody:            string(body),
		MessageGroupID:         messageGroup(rc.ConnectionID, lane),
		MessageDeduplicationID: dedup,
	}); err != nil {
		return fmt.Errorf("apigw: queue the message of %s: %w", rc.ConnectionID, err)
	}
	return nil
}

// sqsText returns body, JSON from json.Marshal, with the characters an
// SQS message body may not hold written as JSON escapes: SQS accepts #x9,
// #xA, #xD, #x20-#xD7FF, #xE000-#xFFFD and #x10000-#x10FFFF, and of the
// others json.Marshal escapes all but the noncharacters U+FFFE and U+FFFF,
// which a client's text may hold. They occur only in JSON strings, where
// the escapes decode to them again.
func sqsText(body []byte) []byte {
	body = bytes.ReplaceAll(body, []byte("\ufffe"), []byte(`\ufffe`))
	return bytes.ReplaceAll(body, []byte("\uffff"), []byte(`\uffff`))
}

func (h *Handler) disconnect(ctx context.Context, ev *events.APIGatewayWebsocketProxyRequest) events.APIGatewayProxyResponse {
	if err := h.cfg.Connections.Close(ctx, ev.RequestContext.ConnectionID); err != nil {
		h.log.ErrorContext(ctx, "websocket $disconnect", "connection_id", ev.RequestContext.ConnectionID, "err", err)
	}
	return accepted()
}

// Turns runs the queued messages of ev in order. A message whose
// connection could not be read is reported as a batch item failure, so
// SQS delivers it again (and holds its group's later messages back); a
// turn that started is never repeated, even when its invocation died
// (begin).
func (h *Handler) Turns(ctx context.Context, ev events.SQSEvent) events.SQSEventResponse {
	var res events.SQSEventResponse
	ctx = requestid.WithLambda(ctx)
	for i, rec := range ev.Records {
		if err := h.runTurn(ctx, rec.Body); err != nil {
			h.log.ErrorContext(ctx, "websocket turn", "message_id", rec.MessageId, "err", err)
			// FIFO: the records after a failure must not run before it.
			for _, r := range ev.Records[i:] {
				res.BatchItemFailures = append(res.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: r.MessageId})
			}
			return res
		}
	}
	return res
}

func (h *Handler) runTurn(ctx context.Context, body string) error {
	var t turn
	if err := json.Unmarshal([]byte(body), &t); err != nil || t.ConnectionID == "" {
		h.log.ErrorContext(ctx, "websocket turn: malformed queue message, dropped", "err", err)
		return nil
	}
	// The turn's log lines and error envelopes carry the request id its
	// $default request got.
	ctx = requestid.WithAttrs(ctx, slog.String(GatewayRequestKey, t.GatewayRequestID))
	queued := t.RequestID
	if t.RequestID == "" {
		t.RequestID = requestid.New()
	}
	ctx = requestid.With(ctx, t.RequestID)
	conn, err := h.cfg.Connections.Load(ctx, t.ConnectionID)
	if err != nil {
		return err
	}
	if conn == nil {
		h.log.InfoContext(ctx, "websocket turn: the connection is gone, message dropped", "connection_id", t.ConnectionID)
		return nil
	}
	ctx, cancel := context.WithCancel(tenant.With(ctx, conn.Tenant))
	defer cancel()
	p := h.poster(&t, cancel)
	m := t.message()
	lane, _ := wsapi.Route(m)
	if h.expired(conn) {
		// A turn delivered again after its invocation died no longer
		// runs, as begin settles it: else its lane's mark would keep the
		// other lanes' turns from ever ending the connection.
		if conn.Interrupted(lane, queued) {
			if err := conn.Settle(ctx, lane); err != nil {
				return err
			}
		}
		return h.limit(ctx, p, conn.runs(&lane))
	}
	// The response's id is noted as the turn begins, so that a
	// response.steer naming it while it runs is answered on its lane.
	respID := api.NewID(api.PrefixResponse)
	if ok, err := h.begin(ctx, conn, p, queued, lane, respID); err != nil || !ok {
		return err
	}
	// API Gateway closes a connection idle for 10 minutes: a turn silent
	// that long (a slow tool) keeps it open with keep-alives.
	ka := startKeepAlive(ctx, p.Send, h.cfg.KeepAlive)
	sess := h.session(conn, ka)
	sess.ResponseID = respID
	err = sess.Handle(ctx, m)
	ka.stop()
	if serr := conn.Settle(ctx, lane); serr != nil {
		h.log.ErrorContext(ctx, "websocket turn: settle its lane", "connection_id", t.ConnectionID, "err", serr)
	}
	if err != nil {
		h.log.InfoContext(ctx, "websocket turn: the client went away", "connection_id", t.ConnectionID, "err", err)
		return nil
	}
	if !h.expired(conn) {
		return nil
	}
	fresh, err := h.cfg.Connections.Load(ctx, t.ConnectionID)
	if err != nil || fresh == nil {
		h.log.ErrorContext(ctx, "websocket turn: read the connection at its limit", "connection_id", t.ConnectionID, "err", err)
		return nil
	}
	return h.limit(ctx, p, fresh.runs(&lane))
}

// begin notes that the turn of request id requestID starts on lane of
// conn, its response to be responseID (Connection.Begin), and reports
// whether it is to run. A turn that
// started before was interrupted (its invocation died: SQS delivers it
// again): it is not run twice, the client gets an error envelope instead.
// A message queued without a request id is run, and so is one whose new
// lane is one too many: its Session refuses it (too_many_stream_ids).
// With Connections.TenantTurns set, a turn of a tenant that has that many
// running deployment-wide is not run (EnterTurn, before Begin marks its
// lane): the client gets the 429 rate_limit_exceeded envelope a local
// gateway gives over LAMBENT_LIMIT_TENANT_IN_FLIGHT, and the message is
// consumed.
func (h *Handler) begin(ctx context.Context, conn *Connection, p *poster, requestID, lane, responseID string) (bool, error) {
	if requestID == "" {
		return true, nil
	}
	if conn.Interrupted(lane, requestID) {
		h.log.ErrorContext(ctx, "websocket turn: interrupted by the end of its invocation, not run again", "connection_id", conn.ID)
		_ = p.Send(ctx, wsapi.EncodeLaneError(ctx, api.ServerError(errors.New("turn delivered again"),
			"The response to this message was interrupted (the function running it stopped) and is not run again; send the message again."), lane))
		return false, conn.Settle(ctx, lane)
	}
	entered, err := conn.EnterTurn(ctx, requestID)
	if err != nil {
		return false, err
	}
	if !entered {
		h.log.InfoContext(ctx, "websocket turn: the tenant has its limit of turns running, refused", "connection_id", conn.ID)
		_ = p.Send(ctx, wsapi.EncodeLaneError(ctx, api.RateLimited(api.RetryAfterSeconds(engine.TenantRetryAfter), nil,
			"Too many responses in flight: this tenant already has %d WebSocket turns running, its limit (LAMBENT_LIMIT_TENANT_WEBSOCKET_TURNS). Retry after %s, when one of them has ended.",
			h.cfg.Connections.TenantTurns, engine.TenantRetryAfter), lane))
		return false, nil
	}
	ok, err := conn.Begin(ctx, lane, requestID, responseID)
	if errors.Is(err, ErrTooManyLanes) {
		// Its Session refuses it (too_many_stream_ids); Settle finds no
		// turn on the lane.
		return true, conn.leaveTurn(ctx, requestID)
	}
	if err != nil || !ok {
		if lerr := conn.leaveTurn(context.WithoutCancel(ctx), requestID); lerr != nil {
			err = errors.Join(err, lerr)
		}
	}
	if err == nil && !ok {
		h.log.InfoContext(ctx, "websocket turn: the connection is gone, message dropped", "connection_id", conn.ID)
	}
	return ok, err
}

func (h *Handler) expired(c *Connection) bool {
	return !time.Now().Before(c.ConnectedAt.Add(h.cfg.MaxAge))
}

// limit ends a connection past MaxAge, unless a turn of another lane
// still runs on it (busy): the error, then DeleteConnection (whose
// $disconnect forgets its state). While one runs the message is dropped,
// as the local server drops the messages that arrive once the limit is
// reached, and the turn that ends last ends the connection: the responses
// in flight are not cut.
func (h *Handler) limit(ctx context.Context, p *poster, busy bool) error {
	if busy {
		h.log.InfoContext(ctx, "websocket: message past the connection's limit dropped while other lanes run", "connection_id", p.id)
		return nil
	}
	if err := p.Send(ctx, wsapi.EncodeError(ctx, wsapi.ConnectionLimitError())); err != nil {
		return nil
	}
	if _, err := p.api.DeleteConnection(ctx, &apigatewaymanagementapi.DeleteConnectionInput{ConnectionId: aws.String(p.id)}, p.at); err != nil && !isGone(err) {
		h.log.ErrorContext(ctx, "websocket: close a connection at its limit", "connection_id", p.id, "err", err)
	}
	return nil
}

// poster sends messages to one connection through the Management API.
type poster struct {
	api      ManagementAPI
	id       string
	endpoint string
	// gone cancels the turn when the client has gone away.
	gone context.CancelFunc
}

// poster returns the poster of t's connection, through Config.Endpoint
// when set, else the endpoint of t's route event; gone is called when the
// client has gone away.
func (h *Handler) poster(t *turn, gone context.CancelFunc) *poster {
	endpoint := t.Endpoint
	if h.cfg.Endpoint != "" {
		endpoint = h.cfg.Endpoint
	}
	return &poster{api: h.cfg.Management, id: t.ConnectionID, endpoint: endpoint, gone: gone}
}

func (p *poster) at(o *apigatewaymanagementapi.Options) { o.BaseEndpoint = aws.String(p.endpoint) }

// Send posts msg (PostToConnection).
func (p *poster) Send(ctx context.Context, msg []byte) error {
	_, err := p.api.PostToConnection(ctx, &apigatewaymanagementapi.PostToConnectionInput{ConnectionId: aws.String(p.id), Data: msg}, p.at)
	if err != nil {
		if isGone(err) {
			p.gone()
		}
		return fmt.Errorf("apigw: post to %s: %w", p.id, err)
	}
	return nil
}

func isGone(err error) bool {
	var gone *mgmttypes.GoneException
	return errors.As(err, &gone)
}
