package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lambent/lambent/internal/testing/fakellm"
	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/provider/openai"
)

// upstreamMeter is a RoundTripper that counts the request bytes sent to
// the model and the time from sending a request to the end of its reply
// body (the model call as the gateway waits for it).
type upstreamMeter struct {
	bytes atomic.Int64
	wait  atomic.Int64 // nanoseconds
}

func (m *upstreamMeter) RoundTrip(req *http.Request) (*http.Response, error) {
	start := time.Now()
	m.bytes.Add(req.ContentLength)
	res, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	res.Body = &meteredBody{ReadCloser: res.Body, done: func() { m.wait.Add(int64(time.Since(start))) }}
	return res, nil
}

type meteredBody struct {
	io.ReadCloser
	done func()
	once atomic.Bool
}

func (b *meteredBody) Close() error {
	if b.once.CompareAndSwap(false, true) {
		b.done()
	}
	return b.ReadCloser.Close()
}

// codexTurnBody is turn n (from 1) of a Codex session replayed with
// store: false: Codex's first request (pkg/api/testdata/codex_body.json,
// 11 tools, 4 input messages) with the n-1 earlier exec_command calls and
// their outputs (about 1.5 KB each) appended to its input.
func codexTurnBody(b testing.TB, first map[string]json.RawMessage, n int) []byte {
	b.Helper()
	var input []json.RawMessage
	if err := json.Unmarshal(first["input"], &input); err != nil {
		b.Fatal(err)
	}
	out := strings.Repeat("drwxr-xr-x 2 user user 4096 Nov 25 15:00 some-directory-name\n", 24)
	for i := 1; i < n; i++ {
		call, _ := json.Marshal(map[string]string{"type": "function_call", "call_id": fmt.Sprintf("call_%d", i), "name": "exec_command", "arguments": `{"cmd":"ls -la"}`})
		res, _ := json.Marshal(map[string]string{"type": "function_call_output", "call_id": fmt.Sprintf("call_%d", i), "output": out})
		input = append(input, call, res)
	}
	body := make(map[string]json.RawMessage, len(first))
	for k, v := range first {
		body[k] = v
	}
	body["input"], _ = json.Marshal(input)
	raw, err := json.Marshal(body)
	if err != nil {
		b.Fatal(err)
	}
	return raw
}

// BenchmarkCodexSession replays a 20-turn Codex session with store: false
// (the whole history sent again each turn, as Codex does) through the
// engine and the OpenAI-compatible provider against the fake model on
// loopback, whose reply is always Codex's exec_command call. Per turn it
// reports the gateway's time outside the model call (decode, prepare, the
// loop, events; no tool runs on the gateway: Codex runs them) beside the
// model call's own time (the reference, measured at the gateway's HTTP
// transport), and the bytes sent upstream; the figures of turns 1 and 20
// as metrics, every turn in the log.
func BenchmarkCodexSession(b *testing.B) {
	const turns = 20
	raw, err := os.ReadFile("../api/testdata/codex_body.json")
	if err != nil {
		b.Fatal(err)
	}
	var first map[string]json.RawMessage
	if err := json.Unmarshal(raw, &first); err != nil {
		b.Fatal(err)
	}
	bodies := make([][]byte, turns)
	for n := range bodies {
		bodies[n] = codexTurnBody(b, first, n+1)
	}
	fake := fakellm.NewHandler(func(fakellm.Request) fakellm.Turn {
		return fakellm.Turn{ToolCalls: []fakellm.ToolCall{{Name: "exec_command", Arguments: `{"cmd":"ls -la"}`}}}
	})
	defer fake.Close()
	meter := &upstreamMeter{}
	p := openai.New(openai.Config{BaseURL: fake.URL, HTTPClient: &http.Client{Transport: meter}})
	e, _ := newEngineB(b, p, nil)
	gateway := make([]time.Duration, turns)
	model := make([]time.Duration, turns)
	upBytes := make([]int64, turns)
	b.ReportAllocs()
	for b.Loop() {
		for n, body := range bodies {
			bytes0, wait0 := meter.bytes.Load(), meter.wait.Load()
			start := time.Now()
			req, err := api.DecodeCreateRequest(body)
			if err != nil {
				b.Fatal(err)
			}
			if err := e.CreateResponse(context.Background(), req, discard{}); err != nil {
				b.Fatal(err)
			}
			total := time.Since(start)
			wait := time.Duration(meter.wait.Load() - wait0)
			gateway[n] += total - wait
			model[n] += wait
			upBytes[n] = meter.bytes.Load() - bytes0
		}
	}
	runs := time.Duration(b.N)
	us := func(d time.Duration) float64 { return float64(d/runs) / float64(time.Microsecond) }
	var table strings.Builder
	fmt.Fprintf(&table, "\nturn  request bytes  upstream bytes  gateway µs  model call µs (reference)\n")
	for n := range turns {
		fmt.Fprintf(&table, "%4d  %13d  %14d  %10.0f  %13.0f\n", n+1, len(bodies[n]), upBytes[n], us(gateway[n]), us(model[n]))
	}
	fmt.Print(table.String()) // the whole table: b.Log would be cut
	b.ReportMetric(us(gateway[0]), "gateway-µs/turn1")
	b.ReportMetric(us(gateway[turns-1]), "gateway-µs/turn20")
	b.ReportMetric(float64(upBytes[0]), "upstream-B/turn1")
	b.ReportMetric(float64(upBytes[turns-1]), "upstream-B/turn20")
}
