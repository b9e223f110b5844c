package lambdaexec_test

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/awsjson"
	"github.com/lambent/lambent/pkg/tools"
	"github.com/lambent/lambent/pkg/tools/lambdaexec"
)

// rawEndpoint is a Lambda Invoke endpoint on loopback written on raw TCP,
// so that a test decides when each connection is read, answered or closed.
// serve runs for each accepted connection, with its index (0 for the first).
type rawEndpoint struct {
	ln    net.Listener
	read  atomic.Int32 // requests read in full: invocations delivered
	serve func(i int, c net.Conn, br *bufio.Reader)
	wg    sync.WaitGroup
}

func newRawEndpoint(t *testing.T, serve func(e *rawEndpoint, i int, c net.Conn, br *bufio.Reader)) *rawEndpoint {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e := &rawEndpoint{ln: ln}
	e.serve = func(i int, c net.Conn, br *bufio.Reader) { serve(e, i, c, br) }
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		for i := 0; ; i++ {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			e.wg.Add(1)
			go func() {
				defer e.wg.Done()
				defer func() { _ = c.Close() }()
				e.serve(i, c, bufio.NewReader(c))
			}()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		e.wg.Wait()
	})
	return e
}

func (e *rawEndpoint) url() string { return "http://" + e.ln.Addr().String() }

// readInvoke reads one request in full and counts it; false when the
// connection ended first.
func (e *rawEndpoint) readInvoke(br *bufio.Reader) bool {
	req, err := http.ReadRequest(br)
	if err != nil {
		return false
	}
	if _, err := io.Copy(io.Discard, req.Body); err != nil {
		return false
	}
	e.read.Add(1)
	return true
}

// answer writes a successful Invoke answer, keeping the connection open.
func answer(c net.Conn) bool {
	const body = `{"output":"ok","is_error":false}`
	_, err := io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-Amz-Executed-Version: $LATEST\r\nContent-Length: 32\r\n\r\n"+body)
	return err == nil
}

// serveAll answers every invocation of a connection.
func (e *rawEndpoint) serveAll(c net.Conn, br *bufio.Reader) {
	for e.readInvoke(br) && answer(c) {
	}
}

// watchedConn is a client connection whose Close the test sees. Once
// closed, its writes wait for release, or holdWrite at most: the
// transport's writer goroutine has not yet been scheduled when its
// connection is found closed, which the test needs to hold to order the
// transport. The bound is no assertion on time: net/http's round trip,
// once it sees the connection closed, waits for its writer to return, and
// a write held until the test's end would hang it (the writer can take
// the request in the instant between the connection's Close and the end
// of its close channel).
type watchedConn struct {
	net.Conn
	once    sync.Once
	closed  chan struct{}
	release <-chan struct{}
}

func (c *watchedConn) Close() error {
	c.once.Do(func() { close(c.closed) })
	return c.Conn.Close()
}

func (c *watchedConn) Write(b []byte) (int, error) {
	select {
	case <-c.closed:
		select {
		case <-c.release:
		case <-time.After(holdWrite):
		}
		return 0, net.ErrClosed
	default:
		return c.Conn.Write(b)
	}
}

// holdWrite bounds how long a write on a closed watchedConn is held.
const holdWrite = 100 * time.Millisecond

// watchingDialer dials watchedConns; failFirst makes its first dial fail as
// a real one does (connection refused).
type watchingDialer struct {
	dials     atomic.Int32
	failFirst bool
	release   chan struct{}
}

func (d *watchingDialer) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var nd net.Dialer
	if d.dials.Add(1) == 1 && d.failFirst {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		refused := ln.Addr().String()
		_ = ln.Close()
		return nd.DialContext(ctx, network, refused)
	}
	c, err := nd.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return &watchedConn{Conn: c, closed: make(chan struct{}), release: d.release}, nil
}

// watchedClient returns a Lambda client of url configured as NewClient's,
// dialing through d.
func watchedClient(t *testing.T, url string, d *watchingDialer) *awsjson.Lambda {
	t.Helper()
	d.release = make(chan struct{})
	tr := awshttp.NewBuildableClient().GetTransport()
	tr.DialContext = d.dial
	client, err := awsjson.NewLambda(aws.Config{
		BaseEndpoint: aws.String(url),
		Region:       "us-east-1",
		Credentials:  credentials.NewStaticCredentialsProvider("AKIDLOCAL", "secret", ""),
		Retryer:      func() aws.Retryer { return aws.NopRetryer{} },
		HTTPClient:   lambdaexec.NewHTTPClientOver(tr),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		close(d.release)
		client.CloseIdleConnections()
	})
	return client
}

func staleExecutor(t *testing.T, client *awsjson.Lambda) *lambdaexec.Executor {
	t.Helper()
	ex, err := lambdaexec.New(client, lambdaexec.Config{Logger: slog.New(slog.NewTextHandler(t.Output(), nil))}, manifestOf(map[string]string{"t": "fn"}).Tools, map[string]api.ToolDefinition{})
	if err != nil {
		t.Fatal(err)
	}
	return ex
}

// whenReused returns ctx with a trace that, the first time the transport
// hands a pooled connection to a request, runs f with it before the
// request is written.
func whenReused(ctx context.Context, f func(c *watchedConn)) context.Context {
	var once sync.Once
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) {
		if info.Reused {
			once.Do(func() { f(info.Conn.(*watchedConn)) })
		}
	}})
}

func executeCtx(t *testing.T, ctx context.Context, ex *lambdaexec.Executor) *tools.ToolResult {
	t.Helper()
	res, err := ex.Execute(ctx, tools.ToolCall{ID: "call_1", Name: "t", Arguments: `{}`, ResponseID: "resp_1"})
	if err != nil || res == nil {
		t.Fatalf("Execute = %+v, %v", res, err)
	}
	return res
}

// TestStaleIdleConnectionRetried: the endpoint closes a kept-alive
// connection as idle just as the next invocation takes it from the pool,
// before anything of it was written. net/http fails that POST with "http:
// server closed idle connection" (it replays only idempotent requests);
// the function never ran, so the executor invokes it again, once.
func TestStaleIdleConnectionRetried(t *testing.T) {
	closeFirst := make(chan struct{})
	ep := newRawEndpoint(t, func(e *rawEndpoint, i int, c net.Conn, br *bufio.Reader) {
		if i == 0 {
			if e.readInvoke(br) && answer(c) {
				<-closeFirst // the client is reusing it: close it as idle
			}
			return
		}
		e.serveAll(c, br)
	})
	d := &watchingDialer{}
	ex := staleExecutor(t, watchedClient(t, ep.url(), d))
	if res := executeCtx(t, context.Background(), ex); res.IsError {
		t.Fatalf("first call: %+v", res)
	}
	ctx := whenReused(context.Background(), func(c *watchedConn) {
		close(closeFirst)
		<-c.closed // the transport saw the idle connection closed
	})
	res := executeCtx(t, ctx, ex)
	if res.IsError || res.Output != "ok" {
		t.Fatalf("second call on the stale connection: %+v", res)
	}
	if n := ep.read.Load(); n != 2 {
		t.Errorf("the endpoint read %d invocations, want 2 (each call once)", n)
	}
	if n := d.dials.Load(); n != 2 {
		t.Errorf("%d dials, want 2 (the retry on a new connection)", n)
	}
}

// TestDeliveredInvocationNotRetried: once an invocation was written on a
// connection that then drops (read and left unanswered, or closed unread),
// the function may have run: Invoke is not idempotent, so it is not sent
// again and the call fails.
func TestDeliveredInvocationNotRetried(t *testing.T) {
	for name, drop := range map[string]func(e *rawEndpoint, br *bufio.Reader){
		"read and unanswered": func(e *rawEndpoint, br *bufio.Reader) { e.readInvoke(br) },
		"closed unread":       func(_ *rawEndpoint, br *bufio.Reader) { _, _ = br.Peek(1) },
	} {
		t.Run(name, func(t *testing.T) {
			ep := newRawEndpoint(t, func(e *rawEndpoint, i int, c net.Conn, br *bufio.Reader) {
				if i > 0 {
					e.serveAll(c, br)
					return
				}
				if e.readInvoke(br) && answer(c) {
					drop(e, br) // then close
				}
			})
			d := &watchingDialer{}
			ex := staleExecutor(t, watchedClient(t, ep.url(), d))
			if res := executeCtx(t, context.Background(), ex); res.IsError {
				t.Fatalf("first call: %+v", res)
			}
			res := executeCtx(t, context.Background(), ex)
			if !res.IsError || !strings.Contains(res.Output, "could not be reached") {
				t.Fatalf("second call = %+v, want the transport failure", res)
			}
			if n := d.dials.Load(); n != 1 {
				t.Errorf("%d dials, want 1: an invocation that may have run was sent again", n)
			}
		})
	}
}

// TestResetIdleConnectionRetriedByTransport: an idle connection the
// endpoint resets (rather than closes) as the next invocation takes it is
// replayed by net/http itself: nothing was written and the body can be
// rewound (HTTPClient sets GetBody).
func TestResetIdleConnectionRetriedByTransport(t *testing.T) {
	resetFirst := make(chan struct{})
	ep := newRawEndpoint(t, func(e *rawEndpoint, i int, c net.Conn, br *bufio.Reader) {
		if i == 0 {
			if e.readInvoke(br) && answer(c) {
				<-resetFirst
				_ = c.(*net.TCPConn).SetLinger(0) // close with RST
			}
			return
		}
		e.serveAll(c, br)
	})
	d := &watchingDialer{}
	client := watchedClient(t, ep.url(), d)
	in := awsjson.InvokeInput{FunctionName: "fn", Payload: []byte(`{}`)}
	if _, err := client.Invoke(context.Background(), in); err != nil {
		t.Fatal(err)
	}
	ctx := whenReused(context.Background(), func(c *watchedConn) {
		close(resetFirst)
		<-c.closed
	})
	// The client alone, no executor: the transport retries.
	if _, err := client.Invoke(ctx, in); err != nil {
		t.Fatalf("Invoke on a reset idle connection: %v", err)
	}
	if n := ep.read.Load(); n != 2 {
		t.Errorf("the endpoint read %d invocations, want 2", n)
	}
}

// TestDialFailureRetried: an invocation whose connection could not be
// dialed was never sent; the executor tries once more.
func TestDialFailureRetried(t *testing.T) {
	ep := newRawEndpoint(t, func(e *rawEndpoint, _ int, c net.Conn, br *bufio.Reader) { e.serveAll(c, br) })
	d := &watchingDialer{failFirst: true}
	ex := staleExecutor(t, watchedClient(t, ep.url(), d))
	if res := executeCtx(t, context.Background(), ex); res.IsError || res.Output != "ok" {
		t.Fatalf("result = %+v, want the retry's", res)
	}
	if n := d.dials.Load(); n != 2 {
		t.Errorf("%d dials, want 2", n)
	}
}

// TestUndeliveredRetriedOnce: an endpoint that cannot be dialed at all is
// tried twice, not more, and the call fails.
func TestUndeliveredRetriedOnce(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gone := "http://" + ln.Addr().String()
	_ = ln.Close()
	d := &watchingDialer{}
	ex := staleExecutor(t, watchedClient(t, gone, d))
	if res := executeCtx(t, context.Background(), ex); !res.IsError || !strings.Contains(res.Output, "could not be reached") {
		t.Fatalf("result = %+v, want the transport failure", res)
	}
	if n := d.dials.Load(); n != 2 {
		t.Errorf("%d dials, want 2", n)
	}
}
