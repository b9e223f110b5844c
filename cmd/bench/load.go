package main

// Load mode (`make load`, bench -load): many concurrent streamed agentic
// responses through the real gateway binary, as its own process, on each
// store. For every phase it starts a fresh gateway (functions/gateway, built
// by the Makefile) on 127.0.0.1 in front of a fake Chat Completions backend
// (internal/testing/fakellm) in this process, and sends N streaming requests at
// once, each a hosted tool loop: the model calls the calculator, the gateway
// runs it and calls the model again, which answers in words. The first
// model call of every request waits at a barrier until all N are in
// flight, so the N streams are open at the gateway together; they are held
// open for -hold, then released. Every stream must then be whole (schema-valid events, strictly
// increasing sequence numbers, response.completed, [DONE]) and every
// response stored (GET answers it completed, with the same text): anything
// else counts as lost. The gateway's resident memory (VmRSS from /proc,
// every 10 ms) is read while the N streams are held open; VmHWM gives the
// peak over the process's life.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/lambent/lambent/internal/testing/dynamolocal"
	"github.com/lambent/lambent/internal/testing/fakellm"
	"github.com/lambent/lambent/internal/testing/schema"
	"github.com/lambent/lambent/internal/testing/ssecheck"
	"github.com/lambent/lambent/pkg/api"
)

// loadOptions configures the load mode.
type loadOptions struct {
	gateway    string
	streams    int
	rssStreams int
	rssLimit   int64 // bytes
	stores     string
	barrier    time.Duration
	hold       time.Duration
}

func (lo *loadOptions) register(fs *flag.FlagSet) {
	fs.StringVar(&lo.gateway, "gateway", "", "load mode: path of the gateway binary (go build ./functions/gateway)")
	fs.IntVar(&lo.streams, "streams", 200, "load mode: concurrent streamed agentic responses per store")
	fs.IntVar(&lo.rssStreams, "rss-streams", 100, "load mode: concurrent streams while the gateway's memory is measured (memory store)")
	fs.Int64Var(&lo.rssLimit, "rss-limit-mb", 64, "load mode: the goal for the gateway's resident memory at -rss-streams streams, in MiB")
	fs.StringVar(&lo.stores, "stores", "memory,dynamodb", "load mode: stores to load, comma-separated (dynamodb: AWS_ENDPOINT_URL_DYNAMODB, else DynamoDB Local is started)")
	fs.DurationVar(&lo.barrier, "barrier", 2*time.Minute, "load mode: how long the first model calls wait for all streams to be in flight")
	fs.DurationVar(&lo.hold, "hold", time.Second, "load mode: how long all streams are held open (the gateway's memory sampled) before they are released")
}

// loadAnswer is the fake model's final answer, after the calculator ran.
const loadAnswer = "The calculator says that six times seven is 42, so the answer is 42."

// loadPrompt marks the measured requests (the warm-up one is not held at
// the barrier).
const loadPrompt = "load: what is 6*7? Use the calculator."

func runLoad(lo loadOptions) error {
	if lo.gateway == "" {
		return errors.New("-load needs -gateway <path of the gateway binary>")
	}
	if lo.streams < 1 || lo.rssStreams < 1 {
		return errors.New("-streams and -rss-streams must be positive")
	}
	v, err := schema.New()
	if err != nil {
		return err
	}
	fmt.Printf("Lambent load: concurrent streamed agentic responses (calculator tool loop, 2 model calls each)\n")
	fmt.Printf("gateway binary %s as its own process, fake Chat Completions backend, loopback only\n", lo.gateway)
	fmt.Printf("%s %s/%s, NumCPU=%d\n\n", runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.NumCPU())

	failed := false
	for _, st := range strings.Split(lo.stores, ",") {
		st = strings.TrimSpace(st)
		if st == "" {
			continue
		}
		if st == "dynamodb" && os.Getenv(dynamolocal.EnvEndpoint) == "" {
			stop, err := dynamolocal.Start()
			if err != nil {
				return fmt.Errorf("DynamoDB Local: %w", err)
			}
			defer stop()
		}
		phases := []struct {
			n   int
			rss bool
		}{{lo.streams, false}}
		if st == "memory" {
			phases = append([]struct {
				n   int
				rss bool
			}{{lo.rssStreams, true}}, phases...)
		}
		for _, ph := range phases {
			res, err := loadPhase(lo, v, st, ph.n)
			if err != nil {
				return fmt.Errorf("%s store, %d streams: %w", st, ph.n, err)
			}
			res.print(lo, ph.rss)
			if res.lost() > 0 || (ph.rss && res.rssOpen > lo.rssLimit<<20) {
				failed = true
			}
		}
	}
	if failed {
		return errors.New("a goal was missed (see above)")
	}
	return nil
}

// phaseResult is what one phase measured.
type phaseResult struct {
	store          string
	n              int
	allInFlight    bool  // the N first model calls were in flight together
	peakOpen       int64 // most streams open at once, as the client saw them
	ok, stored     int   // whole streams, responses GET answered as streamed
	failures       []string
	modelCalls     int
	errorLogs      int
	rssIdle        int64 // after the warm-up request
	rssOpen        int64 // the most with the N streams open
	rssPeak        int64 // VmHWM at the end
	ttfb, duration []time.Duration
	elapsed        time.Duration
}

func (r *phaseResult) lost() int { return r.n - min(r.ok, r.stored) }

func (r *phaseResult) print(lo loadOptions, rss bool) {
	fmt.Printf("%s store, %d concurrent streams\n", r.store, r.n)
	fmt.Printf("    all %d first model calls in flight together: %v; most streams open at once: %d\n", r.n, r.allInFlight, r.peakOpen)
	fmt.Printf("    whole streams %d/%d, stored and read back %d/%d, lost %d   nothing lost: %s\n",
		r.ok, r.n, r.stored, r.n, r.lost(), verdict(r.lost() == 0))
	fmt.Printf("    model calls %d (want %d), ERROR lines in the gateway's log %d, wall time %s\n", r.modelCalls, 2*r.n, r.errorLogs, r.elapsed.Round(time.Millisecond))
	if len(r.ttfb) > 0 {
		fmt.Printf("    time to first byte p50 %s p99 %s; whole stream (including the barrier) p50 %s p99 %s\n",
			ms(percentile(r.ttfb, 50)), ms(percentile(r.ttfb, 99)), ms(percentile(r.duration, 50)), ms(percentile(r.duration, 99)))
	}
	fmt.Printf("    gateway RSS: %s idle after start-up, %s with the %d streams open, peak (VmHWM) %s",
		mib(r.rssIdle), mib(r.rssOpen), r.n, mib(r.rssPeak))
	if rss {
		fmt.Printf("   goal ≤ %d MiB at %d streams: %s", lo.rssLimit, r.n, verdict(r.rssOpen > 0 && r.rssOpen <= lo.rssLimit<<20))
	}
	fmt.Println()
	for i, f := range r.failures {
		if i == 10 {
			fmt.Printf("    ... and %d more\n", len(r.failures)-10)
			break
		}
		fmt.Printf("    lost: %s\n", f)
	}
	fmt.Println()
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond)) }

func mib(b int64) string {
	if b <= 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
}

// barrierModel is the fake model of a phase: a measured request's first
// call waits until n of them are in flight (or the barrier times out).
type barrierModel struct {
	n       int
	arrived atomic.Int64
	all     chan struct{} // closed when n first calls arrived
	gate    chan struct{} // closed to release them
	once    sync.Once
}

func (b *barrierModel) turn(req fakellm.Request) fakellm.Turn {
	usage := fakellm.Usage{PromptTokens: 20, CompletionTokens: 12}
	for _, m := range req.Messages {
		if m.Role == "tool" {
			return fakellm.Turn{Text: loadAnswer, Usage: usage}
		}
	}
	t := fakellm.Turn{ToolCalls: []fakellm.ToolCall{{Name: "calculator", Arguments: `{"expression":"6*7"}`}}, Usage: usage}
	if last := req.Messages[len(req.Messages)-1]; last.Content.Text == loadPrompt {
		if int(b.arrived.Add(1)) == b.n {
			b.once.Do(func() { close(b.all) })
		}
		t.Block = b.gate
	}
	return t
}

// gatewayProc is a running gateway process.
type gatewayProc struct {
	cmd    *exec.Cmd
	addr   string
	errors atomic.Int64
	done   chan struct{} // closed when its log ends
}

func startGateway(path string, env []string) (*gatewayProc, error) {
	g := &gatewayProc{cmd: exec.Command(path), done: make(chan struct{})}
	g.cmd.Env = env
	stderr, err := g.cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := g.cmd.Start(); err != nil {
		return nil, err
	}
	addr := make(chan string, 1)
	go func() {
		defer close(g.done)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			var line struct {
				Level string `json:"level"`
				Msg   string `json:"msg"`
				Addr  string `json:"addr"`
			}
			if json.Unmarshal(sc.Bytes(), &line) != nil {
				continue
			}
			if line.Level == "ERROR" {
				if g.errors.Add(1) <= 3 {
					fmt.Fprintf(os.Stderr, "gateway: %s\n", sc.Bytes())
				}
			}
			if line.Msg == "lambent gateway listening" {
				addr <- strings.TrimPrefix(line.Addr, "http://")
			}
		}
	}()
	select {
	case g.addr = <-addr:
		return g, nil
	case <-g.done:
		_ = g.cmd.Wait()
		return nil, errors.New("the gateway exited before it listened")
	case <-time.After(time.Minute):
		g.stop()
		return nil, errors.New("the gateway did not listen within a minute")
	}
}

// stop ends the gateway with SIGTERM (a graceful shutdown), or kills it
// when it is still running 30 s later.
func (g *gatewayProc) stop() {
	_ = g.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-g.done:
	case <-time.After(30 * time.Second):
		_ = g.cmd.Process.Kill()
	}
	_ = g.cmd.Wait()
}

// procMem returns a /proc/<pid>/status field (VmRSS, VmHWM) in bytes, 0
// when unavailable.
func procMem(pid int, field string) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				return 0
			}
			return kb << 10
		}
	}
	return 0
}

// gatewayEnv is the gateway's environment for a phase: this process's,
// without a Lambda runtime, with the fake model and the store.
func gatewayEnv(modelURL, store, table string) []string {
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "AWS_LAMBDA_RUNTIME_API=") || strings.HasPrefix(kv, "LAMBENT_")
	})
	env = append(env,
		"LAMBENT_ADDR=127.0.0.1:0",
		"LAMBENT_PROVIDER_URL="+modelURL,
		"LAMBENT_DEFAULT_MODEL=load-model",
		"LAMBENT_STORE="+store,
		"LAMBENT_RETENTION=1h",
		"LAMBENT_LOG_LEVEL=info",
		// Hosted calls as function_call items: the streams are checked
		// against the OpenResponses schema, which has no mcp_call.
		"LAMBENT_HOSTED_TOOL_ITEMS=function_call",
	)
	if store == "dynamodb" {
		env = append(env, "LAMBENT_TABLE="+table, "LAMBENT_CREATE_TABLE=true")
		for k, def := range map[string]string{"AWS_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "local", "AWS_SECRET_ACCESS_KEY": "local"} {
			if os.Getenv(k) == "" {
				env = append(env, k+"="+def)
			}
		}
	}
	return env
}

// dropTable deletes the phase's DynamoDB Local table.
func dropTable(table string) {
	c := ddb.New(ddb.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(os.Getenv(dynamolocal.EnvEndpoint)),
		Credentials:  credentials.NewStaticCredentialsProvider("local", "local", ""),
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, _ = c.DeleteTable(ctx, &ddb.DeleteTableInput{TableName: aws.String(table)})
}

func loadPhase(lo loadOptions, v *schema.Validator, store string, n int) (*phaseResult, error) {
	model := &barrierModel{n: n, all: make(chan struct{}), gate: make(chan struct{})}
	fake := fakellm.NewHandler(model.turn)
	defer fake.Close()
	fake.SetRecording(false)
	table := "lambent_load_" + api.NewID("")[24:]
	// The n streams are one tenant's: its in-flight cap (default 64) is
	// raised to let them all run, the warm-up one included.
	env := append(gatewayEnv(fake.URL, store, table), "LAMBENT_LIMIT_TENANT_IN_FLIGHT="+strconv.Itoa(n+1))
	g, err := startGateway(lo.gateway, env)
	if err != nil {
		return nil, err
	}
	defer g.stop()
	if store == "dynamodb" {
		defer dropTable(table)
	}
	pid := g.cmd.Process.Pid
	base := "http://" + g.addr
	client := &http.Client{
		Transport: &http.Transport{MaxIdleConns: 2 * n, MaxIdleConnsPerHost: 2 * n, IdleConnTimeout: time.Minute, DisableCompression: true},
		Timeout:   lo.barrier + 2*time.Minute,
	}
	defer client.CloseIdleConnections()

	// Warm-up: one whole request, not held at the barrier.
	if _, err := streamOne(client, base, `{"input":"warm-up: what is 1+1?","stream":true,"tools":[{"type":"lambent:calculator"}]}`, nil); err != nil {
		return nil, fmt.Errorf("warm-up: %w", err)
	}
	warmCalls := fake.Calls()
	res := &phaseResult{store: store, n: n, rssIdle: procMem(pid, "VmRSS")}

	var open atomic.Int64
	outs := make([]streamOut, n)
	var wg sync.WaitGroup
	body := `{"input":` + strconv.Quote(loadPrompt) + `,"stream":true,"tools":[{"type":"lambent:calculator"}]}`
	start := time.Now()
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o, err := streamOne(client, base, body, func() {
				cur := open.Add(1)
				for {
					peak := atomic.LoadInt64(&res.peakOpen)
					if cur <= peak || atomic.CompareAndSwapInt64(&res.peakOpen, peak, cur) {
						break
					}
				}
			})
			if o.started {
				open.Add(-1)
			}
			o.err = err
			outs[i] = o
		}()
	}
	select {
	case <-model.all:
		res.allInFlight = true
		// Hold every stream open for a while, sampling the gateway's
		// memory.
		for end := time.Now().Add(lo.hold); ; time.Sleep(10 * time.Millisecond) {
			res.rssOpen = max(res.rssOpen, procMem(pid, "VmRSS"))
			if !time.Now().Before(end) {
				break
			}
		}
	case <-time.After(lo.barrier):
	}
	close(model.gate)
	wg.Wait()
	res.elapsed = time.Since(start)
	res.rssPeak = procMem(pid, "VmHWM")
	res.modelCalls = fake.Calls() - warmCalls

	for i, o := range outs {
		if o.err != nil {
			res.failures = append(res.failures, fmt.Sprintf("stream %d: %v", i, o.err))
			continue
		}
		res.ttfb, res.duration = append(res.ttfb, o.ttfb), append(res.duration, o.total)
		id, err := checkLoadStream(v, o.body)
		if err != nil {
			res.failures = append(res.failures, fmt.Sprintf("stream %d: %v", i, err))
			continue
		}
		res.ok++
		if err := checkStored(client, base, id); err != nil {
			res.failures = append(res.failures, fmt.Sprintf("response %s: %v", id, err))
			continue
		}
		res.stored++
	}
	res.errorLogs = int(g.errors.Load())
	return res, nil
}

// streamOut is one streamed request as the client saw it.
type streamOut struct {
	body        []byte
	started     bool
	ttfb, total time.Duration
	err         error
}

// streamOne posts a streaming request and reads the whole stream; opened is
// called when the response head arrives.
func streamOne(c *http.Client, base, body string, opened func()) (streamOut, error) {
	var o streamOut
	t0 := time.Now()
	res, err := c.Post(base+"/v1/responses", "application/json", strings.NewReader(body))
	if err != nil {
		return o, err
	}
	defer res.Body.Close()
	o.started = true
	if opened != nil {
		opened()
	}
	if res.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(res.Body)
		return o, fmt.Errorf("status %d: %s", res.StatusCode, b)
	}
	var buf bytes.Buffer
	first := make([]byte, 1)
	n, err := io.ReadFull(res.Body, first)
	o.ttfb = time.Since(t0)
	buf.Write(first[:n])
	if err != nil {
		return o, fmt.Errorf("reading the stream: %w", err)
	}
	if _, err := io.Copy(&buf, res.Body); err != nil {
		return o, fmt.Errorf("reading the stream: %w", err)
	}
	o.total = time.Since(t0)
	o.body = buf.Bytes()
	return o, nil
}

// checkLoadStream checks one stream and returns its response id.
func checkLoadStream(v *schema.Validator, body []byte) (string, error) {
	evs, done, err := ssecheck.Parse(bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	if !done {
		return "", errors.New("no [DONE]")
	}
	if err := ssecheck.Check(v, evs); err != nil {
		return "", err
	}
	last := evs[len(evs)-1]
	if last.Type != api.EventResponseCompleted {
		return "", fmt.Errorf("ends with %s", last.Type)
	}
	text, err := ssecheck.OutputText(evs)
	if err != nil {
		return "", err
	}
	if text != loadAnswer {
		return "", fmt.Errorf("text %q", text)
	}
	var r struct {
		Response struct {
			ID     string `json:"id"`
			Output []struct {
				Type string `json:"type"`
			} `json:"output"`
		} `json:"response"`
	}
	if err := json.Unmarshal(last.Data, &r); err != nil {
		return "", err
	}
	if len(r.Response.Output) < 3 {
		return "", fmt.Errorf("%d output items, want the tool call, its output and the message", len(r.Response.Output))
	}
	return r.Response.ID, nil
}

// checkStored reads the response back and compares it with the stream.
func checkStored(c *http.Client, base, id string) error {
	res, err := c.Get(base + "/v1/responses/" + id)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return err
	}
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("GET: status %d: %s", res.StatusCode, b)
	}
	var r struct {
		Status string `json:"status"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return err
	}
	if r.Status != string(api.StatusCompleted) {
		return fmt.Errorf("GET: status %s", r.Status)
	}
	if !bytes.Contains(b, []byte(loadAnswer)) {
		return errors.New("GET: the stored response lacks the streamed text")
	}
	return nil
}
