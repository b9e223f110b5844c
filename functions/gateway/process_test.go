package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/lambent/lambent/internal/testing/lambdareply"
	"github.com/lambent/lambent/internal/testing/logbuf"

	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/internal/testing/fakellm"
	"github.com/lambent/lambent/internal/testing/lambdarun"
)

// gatewayBinary returns this package built as the Lambda bootstrap, once
// for the tests that run it as a process (TestMain sets it, and removes
// the binary at the end).
var gatewayBinary func() (string, error)

// TestBootstrapStreamsUnderRuntimeAPI builds the real gateway bootstrap and
// runs it as a process against the fake Lambda Runtime API, as Lambda runs
// it. The streamed function URL reply must be the JSON prelude, 8 zero
// bytes, then SSE events, every chunk only whole events, arriving while the
// invocation is still running: the first events (response.created, then
// response.in_progress) are read while the fake model still holds its
// answer back, so the reply cannot have been complete.
func TestBootstrapStreamsUnderRuntimeAPI(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	bin, err := gatewayBinary()
	require.NoError(t, err)

	release := make(chan struct{})
	var releaseOnce sync.Once
	unblock := func() { releaseOnce.Do(func() { close(release) }) }
	defer unblock()
	fake := fakellm.New(
		fakellm.Turn{Text: answer, Block: release},
		fakellm.Turn{Text: answer},
		fakellm.Turn{Status: http.StatusTooManyRequests, Header: http.Header{"Retry-After": {"7"}}},
	)
	defer fake.Close()

	rt := lambdarun.New(lambdarun.Options{FunctionName: "lambent-gateway"})
	defer rt.Close()
	stderr := new(logbuf.Buffer)
	p, err := rt.Start(bin, lambdarun.ProcessConfig{
		Env: []string{
			"LAMBENT_PROVIDER_URL=" + fake.URL,
			"LAMBENT_STORE=memory",
			"LAMBENT_LOG_LEVEL=warn",
		},
		Stderr: stderr,
	})
	require.NoError(t, err)
	defer p.Stop()

	inv := rt.Invoke(readEvent(t, "gateway-url-create-stream.json"), lambdarun.InvokeOptions{Stream: true})
	first, err := inv.NextChunk(ctx)
	require.NoError(t, err, "stderr: %s", stderr)
	prelude, rest, err := lambdarun.SplitPrelude(first)
	require.NoError(t, err)
	require.Empty(t, rest, "the prelude is a chunk of its own")
	var head struct {
		StatusCode int               `json:"statusCode"`
		Headers    map[string]string `json:"headers"`
	}
	require.NoError(t, json.Unmarshal(prelude, &head))
	require.Equal(t, 200, head.StatusCode)
	require.Equal(t, "text/event-stream; charset=utf-8", head.Headers["Content-Type"])

	created, err := inv.NextChunk(ctx)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(string(created), "event: response.created\ndata: "), "%q", created)
	require.True(t, strings.HasSuffix(string(created), "\n\n"))
	select {
	case <-inv.Done():
		t.Fatal("the invocation ended while the model was still holding its answer")
	default:
	}
	unblock()

	chunks := [][]byte{created}
	for {
		c, err := inv.NextChunk(ctx)
		if err != nil {
			require.ErrorIs(t, err, io.EOF)
			break
		}
		chunks = append(chunks, c)
	}
	res, err := inv.Wait(ctx)
	require.NoError(t, err)
	require.Equal(t, "response", res.Kind)
	require.Nil(t, res.Error)
	require.Equal(t, lambdarun.ContentTypeHTTPIntegration, res.ContentType)
	require.True(t, res.Chunked)
	require.Equal(t, append([]byte(nil), first...), res.Chunks[0])
	requireSSE(t, &lambdareply.Streamed{Chunks: chunks})

	// The same process serves the next invocation: the HTTP API, buffered.
	inv = rt.Invoke(readEvent(t, "gateway-httpapi-create.json"), lambdarun.InvokeOptions{})
	res, err = inv.Wait(ctx)
	require.NoError(t, err, "stderr: %s", stderr)
	require.Equal(t, "response", res.Kind, "stderr: %s", stderr)
	require.Equal(t, "application/json", res.ContentType)
	var v2 struct {
		StatusCode int               `json:"statusCode"`
		Headers    map[string]string `json:"headers"`
		Body       string            `json:"body"`
	}
	require.NoError(t, json.Unmarshal(res.Body(), &v2), "%s", res.Body())
	require.Equal(t, 200, v2.StatusCode)
	require.Equal(t, "application/json", v2.Headers["Content-Type"])
	requireCompleted(t, []byte(v2.Body))
	require.Equal(t, 2, fake.Calls())

	// A streamed create the model provider refuses: the function URL's
	// reply is the HTTP error (status, Retry-After, JSON error body), not a
	// stream.
	inv = rt.Invoke(readEvent(t, "gateway-url-create-stream.json"), lambdarun.InvokeOptions{Stream: true})
	res, err = inv.Wait(ctx)
	require.NoError(t, err, "stderr: %s", stderr)
	require.Equal(t, "response", res.Kind, "stderr: %s", stderr)
	prelude, body, err := lambdarun.SplitPrelude(res.Body())
	require.NoError(t, err)
	var refused struct {
		StatusCode int               `json:"statusCode"`
		Headers    map[string]string `json:"headers"`
	}
	require.NoError(t, json.Unmarshal(prelude, &refused), "%s", prelude)
	require.Equal(t, http.StatusTooManyRequests, refused.StatusCode)
	require.Equal(t, "application/json", refused.Headers["Content-Type"])
	require.Equal(t, "7", refused.Headers["Retry-After"])
	require.Contains(t, string(body), `"code":"rate_limit_exceeded"`)
	require.Equal(t, 3, fake.Calls())
}

// TestLocalStartChecksProvider runs the gateway as `make run` does, with
// no model at LAMBENT_PROVIDER_URL: it starts anyway, logs what to do, and
// shuts down cleanly on an interrupt.
func TestLocalStartChecksProvider(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	bin, err := gatewayBinary()
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closed := "http://" + ln.Addr().String() + "/v1"
	require.NoError(t, ln.Close())

	cmd := exec.CommandContext(ctx, bin)
	cmd.Env = []string{"LAMBENT_ADDR=127.0.0.1:0", "LAMBENT_PROVIDER_URL=" + closed, "PATH=" + os.Getenv("PATH")}
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	lines := bufio.NewScanner(stderr)
	var seen []string
	for lines.Scan() {
		seen = append(seen, lines.Text())
		if strings.Contains(lines.Text(), "no model provider reachable at "+closed) {
			break
		}
	}
	require.NotEmpty(t, seen)
	last := seen[len(seen)-1]
	require.Contains(t, last, `"level":"WARN"`, "log: %s", strings.Join(seen, "\n"))
	require.Contains(t, last, "LAMBENT_PROVIDER_URL")
	require.Contains(t, strings.Join(seen, "\n"), "lambent gateway listening")

	require.NoError(t, cmd.Process.Signal(os.Interrupt))
	rest, err := io.ReadAll(stderr)
	require.NoError(t, err)
	require.NoError(t, cmd.Wait(), "%s", rest)
	require.Contains(t, string(rest), `"msg":"shut down"`)
}
