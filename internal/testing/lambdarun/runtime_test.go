package lambdarun

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lambent/lambent/internal/testing/logbuf"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "lambent-lambdarun-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	echoBinary = BuildOnce(".", "./testdata/echo", filepath.Join(dir, "bootstrap"), nil)
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		_ = os.RemoveAll(dir)
		os.Exit(code)
	}))
}

func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// client drives the Runtime API by hand, as a custom runtime would.
type client struct {
	t  *testing.T
	rt *Runtime
	hc *http.Client
}

func newClient(t *testing.T, rt *Runtime) *client {
	hc := &http.Client{Transport: &http.Transport{}}
	t.Cleanup(hc.CloseIdleConnections)
	return &client{t: t, rt: rt, hc: hc}
}

func (c *client) next() (*http.Response, []byte) {
	c.t.Helper()
	resp, err := c.hc.Get("http://" + c.rt.Addr + "/2018-06-01/runtime/invocation/next")
	require.NoError(c.t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(c.t, err)
	return resp, b
}

func (c *client) post(path string, body io.Reader, hdr map[string]string) int {
	c.t.Helper()
	req, err := http.NewRequest(http.MethodPost, "http://"+c.rt.Addr+"/2018-06-01/runtime/"+path, body)
	require.NoError(c.t, err)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := c.hc.Do(req)
	require.NoError(c.t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode
}

func TestNextSendsTheEventWithLambdaHeaders(t *testing.T) {
	rt := New(Options{FunctionName: "gateway", Region: "eu-west-1"})
	defer rt.Close()
	c := newClient(t, rt)
	inv := rt.Invoke([]byte(`{"hello":"world"}`), InvokeOptions{Timeout: 30 * time.Second, ClientContext: `{"custom":{"a":"b"}}`})
	before := time.Now()
	resp, body := c.next()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.JSONEq(t, `{"hello":"world"}`, string(body))
	require.Equal(t, inv.ID, resp.Header.Get(HeaderRequestID))
	require.Regexp(t, regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`), inv.ID)
	require.Equal(t, "arn:aws:lambda:eu-west-1:123456789012:function:gateway", resp.Header.Get(HeaderFunctionARN))
	require.Regexp(t, `^Root=1-[0-9a-f]{8}-[0-9a-f]{24};Parent=[0-9a-f]{16};Sampled=0`, resp.Header.Get(HeaderTraceID))
	require.Equal(t, `{"custom":{"a":"b"}}`, resp.Header.Get(HeaderClientContext))
	ms, err := strconv.ParseInt(resp.Header.Get(HeaderDeadlineMS), 10, 64)
	require.NoError(t, err)
	require.WithinDuration(t, before.Add(30*time.Second), time.UnixMilli(ms), 5*time.Second)
	<-inv.Taken()

	// A buffered reply (Content-Length) is one chunk.
	require.Equal(t, http.StatusAccepted, c.post("invocation/"+inv.ID+"/response", strings.NewReader(`{"ok":true}`), map[string]string{"Content-Type": "application/json"}))
	res, err := inv.Wait(testCtx(t))
	require.NoError(t, err)
	require.Equal(t, "response", res.Kind)
	require.False(t, res.Chunked)
	require.Equal(t, "application/json", res.ContentType)
	require.Equal(t, [][]byte{[]byte(`{"ok":true}`)}, res.Chunks)
	require.False(t, res.Finished.Before(res.Taken))
	chunk, err := inv.NextChunk(testCtx(t))
	require.NoError(t, err)
	require.Equal(t, `{"ok":true}`, string(chunk))
	_, err = inv.NextChunk(testCtx(t))
	require.ErrorIs(t, err, io.EOF)

	// A second answer, an unknown id, an unknown path are refused.
	require.Equal(t, http.StatusBadRequest, c.post("invocation/"+inv.ID+"/response", strings.NewReader(`{}`), nil))
	require.Equal(t, http.StatusBadRequest, c.post("invocation/nope/response", strings.NewReader(`{}`), nil))
	require.Equal(t, http.StatusNotFound, c.post("invocation/"+inv.ID+"/other", strings.NewReader(`{}`), nil))
}

func TestErrorsAndInitErrors(t *testing.T) {
	rt := New(Options{})
	defer rt.Close()
	c := newClient(t, rt)
	inv := rt.Invoke([]byte(`{}`), InvokeOptions{})
	c.next()
	require.Equal(t, http.StatusAccepted, c.post("invocation/"+inv.ID+"/error",
		strings.NewReader(`{"errorMessage":"boom","errorType":"errorString"}`),
		map[string]string{HeaderErrorType: "Function.Boom"}))
	res, err := inv.Wait(testCtx(t))
	require.NoError(t, err)
	require.Equal(t, "error", res.Kind)
	require.Equal(t, &FunctionError{Type: "Function.Boom", Message: "boom", Body: []byte(`{"errorMessage":"boom","errorType":"errorString"}`)}, res.Error)
	_, err = inv.NextChunk(testCtx(t))
	require.ErrorIs(t, err, io.EOF)

	require.Equal(t, http.StatusAccepted, c.post("init/error", strings.NewReader(`{"errorMessage":"no config","errorType":"InitError"}`), nil))
	fe, err := rt.WaitInitError(testCtx(t))
	require.NoError(t, err)
	require.Equal(t, "InitError", fe.Type)
	require.Equal(t, "no config", fe.Message)
	require.Len(t, rt.InitErrors(), 1)
}

// TestChunksAreTheWireChunks streams by hand: each chunk the client flushes
// is one chunk for the test, readable before the reply ends.
func TestChunksAreTheWireChunks(t *testing.T) {
	rt := New(Options{})
	defer rt.Close()
	c := newClient(t, rt)
	inv := rt.Invoke([]byte(`{}`), InvokeOptions{Stream: true})
	c.next()
	pr, pw := io.Pipe()
	posted := make(chan int, 1)
	go func() {
		posted <- c.post("invocation/"+inv.ID+"/response", pr, map[string]string{
			"Content-Type": ContentTypeHTTPIntegration, HeaderResponseMode: "streaming"})
	}()
	ctx := testCtx(t)
	for _, part := range []string{"first", "second", "third"} {
		_, err := pw.Write([]byte(part))
		require.NoError(t, err)
		got, err := inv.NextChunk(ctx)
		require.NoError(t, err)
		require.Equal(t, part, string(got))
		require.False(t, isClosed(inv.Done()), "the invocation must still be running")
	}
	require.NoError(t, pw.Close())
	_, err := inv.NextChunk(ctx)
	require.ErrorIs(t, err, io.EOF)
	require.Equal(t, http.StatusAccepted, <-posted)
	res, err := inv.Wait(ctx)
	require.NoError(t, err)
	require.True(t, res.Chunked)
	require.Equal(t, "streaming", res.ResponseMode)
	require.Equal(t, "firstsecondthird", string(res.Body()))
}

func TestCloseEndsUnansweredInvocations(t *testing.T) {
	rt := New(Options{})
	inv := rt.Invoke([]byte(`{}`), InvokeOptions{})
	rt.Close()
	_, err := inv.NextChunk(testCtx(t))
	require.ErrorIs(t, err, ErrClosed)
}

func TestSplitPrelude(t *testing.T) {
	p, rest, err := SplitPrelude([]byte("{\"statusCode\":200}\x00\x00\x00\x00\x00\x00\x00\x00body"))
	require.NoError(t, err)
	require.Equal(t, `{"statusCode":200}`, string(p))
	require.Equal(t, "body", string(rest))
	_, _, err = SplitPrelude([]byte("no delimiter"))
	require.Error(t, err)
}

// TestEchoProcess runs a function built with the real aws-lambda-go runtime
// client (testdata/echo) as a process against the fake.
func TestEchoProcess(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	bin := buildEcho(t)
	rt := New(Options{FunctionName: "echo"})
	defer rt.Close()
	stderr := new(logbuf.Buffer)
	p, err := rt.Start(bin, ProcessConfig{MemoryMB: 256, Stderr: stderr})
	require.NoError(t, err)
	defer p.Stop()

	t.Run("buffered", func(t *testing.T) {
		inv := rt.Invoke([]byte(`{"mode":"buffered"}`), InvokeOptions{Timeout: 42 * time.Second})
		res, err := inv.Wait(ctx)
		require.NoError(t, err, stderr.String())
		require.Equal(t, "response", res.Kind)
		require.Equal(t, "application/json", res.ContentType)
		var got struct {
			RequestID, FunctionArn, FunctionName, Region, TraceID string
			Memory                                                int
			Deadline                                              int64
		}
		require.NoError(t, json.Unmarshal(res.Body(), &got), string(res.Body()))
		require.Equal(t, inv.ID, got.RequestID)
		require.Equal(t, rt.FunctionARN(), got.FunctionArn)
		require.Equal(t, "echo", got.FunctionName)
		require.Equal(t, 256, got.Memory)
		require.Equal(t, "us-east-1", got.Region)
		require.Equal(t, inv.TraceID, got.TraceID)
		require.Equal(t, res.Deadline.UnixMilli(), got.Deadline)
	})

	t.Run("streamed", func(t *testing.T) {
		g := newGate(t)
		ev, _ := json.Marshal(map[string]any{"mode": "stream", "chunks": []string{"one", "two", "three"}, "gate": g.URL()})
		inv := rt.Invoke(ev, InvokeOptions{Stream: true})
		prelude, err := inv.NextChunk(ctx)
		require.NoError(t, err, stderr.String())
		p, rest, err := SplitPrelude(prelude)
		require.NoError(t, err)
		require.Empty(t, rest)
		require.JSONEq(t, `{"statusCode":201,"headers":{"Content-Type":"text/plain"}}`, string(p))
		first, err := inv.NextChunk(ctx)
		require.NoError(t, err)
		require.Equal(t, "one", string(first))
		require.False(t, isClosed(inv.Done()), "the function is held at the gate; its reply cannot be complete")
		g.open()
		for _, want := range []string{"two", "three"} {
			got, err := inv.NextChunk(ctx)
			require.NoError(t, err)
			require.Equal(t, want, string(got))
		}
		_, err = inv.NextChunk(ctx)
		require.ErrorIs(t, err, io.EOF)
		res, err := inv.Wait(ctx)
		require.NoError(t, err)
		require.True(t, res.Chunked)
		require.Equal(t, ContentTypeHTTPIntegration, res.ContentType)
		require.Nil(t, res.Error)
	})

	t.Run("fails midway", func(t *testing.T) {
		inv := rt.Invoke([]byte(`{"mode":"fail-midway"}`), InvokeOptions{})
		res, err := inv.Wait(ctx)
		require.NoError(t, err)
		require.Equal(t, "response", res.Kind)
		_, rest, err := SplitPrelude(res.Body())
		require.NoError(t, err)
		require.Equal(t, "partial", string(rest))
		require.NotNil(t, res.Error)
		require.Equal(t, "errorString", res.Error.Type)
		require.Equal(t, "failed midway", res.Error.Message)
	})

	t.Run("error", func(t *testing.T) {
		inv := rt.Invoke([]byte(`{"mode":"error"}`), InvokeOptions{})
		res, err := inv.Wait(ctx)
		require.NoError(t, err)
		require.Equal(t, "error", res.Kind)
		require.Equal(t, "requested failure", res.Error.Message)
		require.Equal(t, "errorString", res.Error.Type)
	})

	p.Stop()
	require.Error(t, p.Err(), "killed")
	select {
	case <-p.Exited():
	default:
		t.Fatal(errors.New("Exited not closed after Stop"))
	}

	// The stopped process's pending /next is gone: the next event goes to
	// a new process (started after the event was queued, as in a cold start).
	for range 3 {
		inv := rt.Invoke([]byte(`{"mode":"buffered"}`), InvokeOptions{})
		p2, err := rt.Start(bin, ProcessConfig{})
		require.NoError(t, err)
		require.NotEqual(t, p.Addr, p2.Addr)
		res, err := inv.Wait(ctx)
		require.NoError(t, err)
		require.Equal(t, "response", res.Kind)
		require.Contains(t, string(res.Body()), inv.ID)
		p2.Stop()
	}
}

// echoBinary builds testdata/echo once per test run (TestMain sets it).
var echoBinary func() (string, error)

// buildEcho returns testdata/echo built: the function built with
// aws-lambda-go.
func buildEcho(t *testing.T) string {
	t.Helper()
	bin, err := echoBinary()
	require.NoError(t, err)
	return bin
}

// startEcho starts a process of bin (testdata/echo) under rt, stopped at
// the end of the test.
func startEcho(t *testing.T, rt *Runtime, bin string) (*Process, *logbuf.Buffer) {
	t.Helper()
	stderr := new(logbuf.Buffer)
	p, err := rt.Start(bin, ProcessConfig{Stderr: stderr})
	require.NoError(t, err)
	t.Cleanup(p.Stop)
	return p, stderr
}

// gate is an endpoint the echo function GETs to wait: each request is
// held until open is called or the request ends (its process died).
type gate struct {
	srv     *httptest.Server
	release chan struct{}
	once    sync.Once
}

func newGate(t *testing.T) *gate {
	g := &gate{release: make(chan struct{})}
	g.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-g.release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() {
		g.open()
		g.srv.Close()
	})
	return g
}

func (g *gate) URL() string { return g.srv.URL }
func (g *gate) open()       { g.once.Do(func() { close(g.release) }) }

// waitExit waits for the process to exit.
func waitExit(t *testing.T, p *Process) {
	t.Helper()
	select {
	case <-p.Exited():
	case <-testCtx(t).Done():
		t.Fatal("the process is still running")
	}
}

// TestDeadlineKillsTheFunction: a function that overruns its deadline is
// killed and its invocation reported timed out, as on Lambda; the short
// deadline passes while the function waits at a gate that never opens.
func TestDeadlineKillsTheFunction(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	bin := buildEcho(t)
	rt := New(Options{FunctionName: "echo"})
	defer rt.Close()

	t.Run("buffered", func(t *testing.T) {
		g := newGate(t)
		p, stderr := startEcho(t, rt, bin)
		ev, _ := json.Marshal(map[string]any{"mode": "buffered", "gate": g.URL(), "ignoreDeadline": true})
		inv := rt.Invoke(ev, InvokeOptions{Timeout: 200 * time.Millisecond})
		res, err := inv.Wait(ctx)
		require.NoError(t, err)
		require.True(t, res.TimedOut, stderr.String())
		require.Equal(t, "error", res.Kind)
		require.ErrorIs(t, res.Err, ErrTimedOut)
		require.Equal(t, ErrorTypeTimeout, res.Error.Type)
		require.Contains(t, res.Error.Message, inv.ID+" Task timed out after 0.20 seconds")
		require.JSONEq(t, `{"errorMessage":`+strconv.Quote(res.Error.Message)+`,"errorType":"Sandbox.Timedout"}`, string(res.Error.Body))
		_, err = inv.NextChunk(ctx)
		require.ErrorIs(t, err, ErrTimedOut)
		waitExit(t, p)
		require.Error(t, p.Err(), "killed")
	})

	t.Run("streamed, after the client disconnected", func(t *testing.T) {
		g := newGate(t)
		p, stderr := startEcho(t, rt, bin)
		ev, _ := json.Marshal(map[string]any{"mode": "stream", "chunks": []string{"one", "two"}, "gate": g.URL(), "ignoreDeadline": true})
		inv := rt.Invoke(ev, InvokeOptions{Timeout: 200 * time.Millisecond, Stream: true})
		<-inv.Taken()
		inv.Disconnect()
		res, err := inv.Wait(ctx)
		require.NoError(t, err)
		require.True(t, res.TimedOut, stderr.String())
		require.True(t, res.Disconnected)
		require.Equal(t, ErrorTypeTimeout, res.Error.Type)
		require.NotContains(t, string(res.Body()), "two", "the gate never opened")
		waitExit(t, p)
	})

	t.Run("the next process serves the next event", func(t *testing.T) {
		startEcho(t, rt, bin)
		inv := rt.Invoke([]byte(`{"mode":"buffered"}`), InvokeOptions{})
		res, err := inv.Wait(ctx)
		require.NoError(t, err)
		require.Equal(t, "response", res.Kind)
		require.False(t, res.TimedOut)
	})
}

// TestDisconnectedStreamGoesOn: a streamed invocation whose client went
// away still runs to its end, as on Lambda: the runtime reads the rest of
// the reply, the function's POST succeeds and it takes the next event.
func TestDisconnectedStreamGoesOn(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	bin := buildEcho(t)
	rt := New(Options{FunctionName: "echo"})
	defer rt.Close()
	p, stderr := startEcho(t, rt, bin)
	g := newGate(t)
	ev, _ := json.Marshal(map[string]any{"mode": "stream", "chunks": []string{"one", "two", "three"}, "gate": g.URL()})
	inv := rt.Invoke(ev, InvokeOptions{Stream: true})
	_, err := inv.NextChunk(ctx) // the prelude
	require.NoError(t, err, stderr.String())
	first, err := inv.NextChunk(ctx)
	require.NoError(t, err)
	require.Equal(t, "one", string(first))
	inv.Disconnect()
	_, err = inv.NextChunk(ctx)
	require.ErrorIs(t, err, ErrDisconnected)
	require.False(t, isClosed(inv.Done()), "the function is held at the gate")
	g.open()
	res, err := inv.Wait(ctx)
	require.NoError(t, err)
	require.True(t, res.Disconnected)
	require.NoError(t, res.Err)
	require.Nil(t, res.Error)
	require.False(t, res.TimedOut)
	_, rest, err := SplitPrelude(res.Body())
	require.NoError(t, err)
	require.Equal(t, "onetwothree", string(rest))

	inv = rt.Invoke([]byte(`{"mode":"buffered"}`), InvokeOptions{})
	res, err = inv.Wait(ctx)
	require.NoError(t, err)
	require.Equal(t, "response", res.Kind)
	require.False(t, isClosed(p.Exited()), "the same process took the next event")
}

// TestBufferedReplyLimit: a buffered reply is limited to MaxBufferedReply
// bytes, a streamed one is not. aws-lambda-go treats the Runtime API's 413
// as fatal, as it does on Lambda, so its process exits.
func TestBufferedReplyLimit(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	bin := buildEcho(t)
	rt := New(Options{FunctionName: "echo"})
	defer rt.Close()
	p, stderr := startEcho(t, rt, bin)
	big := func(size int, stream bool) *Result {
		t.Helper()
		ev, _ := json.Marshal(map[string]any{"mode": "big", "size": size})
		res, err := rt.Invoke(ev, InvokeOptions{Stream: stream}).Wait(ctx)
		require.NoError(t, err)
		return res
	}
	// The reply is the JSON string: size + 2 bytes.
	res := big(MaxBufferedReply-2, false)
	require.Equal(t, "response", res.Kind, stderr.String())
	require.Len(t, res.Body(), MaxBufferedReply)
	res = big(MaxBufferedReply, true)
	require.Equal(t, "response", res.Kind)
	require.Len(t, res.Body(), MaxBufferedReply+2)

	res = big(MaxBufferedReply-1, false)
	require.Equal(t, "error", res.Kind)
	require.Equal(t, ErrorTypeResponseTooLarge, res.Error.Type)
	require.Equal(t, "Response payload size exceeded maximum allowed payload size (6291556 bytes).", res.Error.Message)
	require.Empty(t, res.Chunks)
	waitExit(t, p)
	require.Contains(t, stderr.String(), "413")
}

// TestRuntimeAPILimitsByHand drives the Runtime API as a custom runtime
// would: the 413 of a buffered reply over the limit (with a Content-Length
// or chunked), and an answer after the deadline.
func TestRuntimeAPILimitsByHand(t *testing.T) {
	rt := New(Options{})
	defer rt.Close()
	c := newClient(t, rt)
	ctx := testCtx(t)
	answer := func(opts InvokeOptions, body io.Reader) (int, *Result) {
		t.Helper()
		inv := rt.Invoke([]byte(`{}`), opts)
		c.next()
		code := c.post("invocation/"+inv.ID+"/response", body, nil)
		res, err := inv.Wait(ctx)
		require.NoError(t, err)
		return code, res
	}
	chunked := func(n int) io.Reader { return io.MultiReader(strings.NewReader(strings.Repeat("x", n))) }

	code, res := answer(InvokeOptions{}, bytes.NewReader(make([]byte, MaxBufferedReply)))
	require.Equal(t, http.StatusAccepted, code)
	require.Len(t, res.Body(), MaxBufferedReply)
	code, res = answer(InvokeOptions{}, bytes.NewReader(make([]byte, MaxBufferedReply+1)))
	require.Equal(t, http.StatusRequestEntityTooLarge, code)
	require.Equal(t, ErrorTypeResponseTooLarge, res.Error.Type)
	code, res = answer(InvokeOptions{}, chunked(MaxBufferedReply+1))
	require.Equal(t, http.StatusRequestEntityTooLarge, code)
	require.Equal(t, "error", res.Kind)
	require.True(t, res.Chunked)
	code, res = answer(InvokeOptions{Stream: true}, chunked(MaxBufferedReply+1))
	require.Equal(t, http.StatusAccepted, code)
	require.Len(t, res.Body(), MaxBufferedReply+1)

	inv := rt.Invoke([]byte(`{}`), InvokeOptions{Timeout: time.Millisecond})
	c.next()
	res, err := inv.Wait(ctx)
	require.NoError(t, err)
	require.True(t, res.TimedOut)
	require.Equal(t, http.StatusBadRequest, c.post("invocation/"+inv.ID+"/response", strings.NewReader(`{}`), nil))
}
