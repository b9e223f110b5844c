// Command bench measures what the gateway adds on top of its model backend
// (`make bench`). In one process it starts a fake Chat Completions backend
// (internal/testing/fakellm, instant replies), a bare httputil.ReverseProxy in front
// of it (the floor: what any Go HTTP hop adds) and the gateway (app.Build,
// memory store) in front of it, each on its own loopback http.Server, and
// compares calling the backend directly, through the proxy and through the
// gateway, so that every figure of the gateway stands beside the floor:
//
//	(a) non-streaming latency at concurrency 1 (p50, p99, added, gateway /
//	    proxy);
//	(b) streaming time to the first text delta and to the first byte at
//	    concurrency 1 (p50, p99, added, gateway / proxy);
//	(c) requests/s at concurrency 16, non-streaming and streaming, and the
//	    gateway/proxy and gateway/direct ratios;
//	(d) what one request costs the process (allocations, bytes, CPU time),
//	    each target on its own, and what the proxy and the gateway add.
//
// The gateway/proxy ratios stand beside issue 27's gates and aims (p50 ≤
// 1.10, aim 1.05; requests/s ≥ 0.95, aim 1.00; first text delta added ≤
// 100 µs). On a shared machine ratios of one run hold, absolute times do
// not: run it a few times. -cpuprofile labels the samples of each hop
// (go tool pprof -tagfocus=target=gateway), -memprofile writes the
// allocations.
//
// With -processes (also `make bench`, hops.go) the backend and the proxy
// run as this binary again (-serve) and the gateway as its binary, each a
// process of its own on loopback, as issue 27 measured them: no shared
// heap, garbage collector or scheduler. (d) then gives the CPU time of all
// processes and of the hop's own process per request.
//
// With -load (`make load`, load.go) it loads the gateway binary instead:
// concurrent streamed agentic responses on each store, with nothing lost,
// and the gateway's resident memory while they are open. With -cache
// (cache.go, also `make bench`) it prints the prompt caching figures of a
// 10-turn agentic loop on each provider's fake.
//
// Everything stays on 127.0.0.1, every phase is bounded in requests and
// time, and the command stops by itself.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lambent/lambent/internal/testing/fakellm"
)

func main() {
	var o options
	flag.IntVar(&o.n, "n", 2000, "measured requests per latency series (concurrency 1)")
	flag.IntVar(&o.warmup, "warmup", 200, "warm-up requests per latency series")
	flag.IntVar(&o.allocN, "alloc-requests", 500, "requests per allocation count")
	flag.IntVar(&o.c, "c", 16, "concurrency of the throughput phase")
	flag.IntVar(&o.rounds, "rounds", 5, "slices, taken in turn by direct, proxy and gateway, of each throughput run and cost count (a shared machine's load then weighs on the three alike)")
	flag.IntVar(&o.total, "requests", 20000, "request cap per throughput run")
	flag.DurationVar(&o.dur, "duration", 5*time.Second, "time cap per throughput run")
	flag.StringVar(&o.cpuprofile, "cpuprofile", "", "write a CPU profile of the whole run to this file; samples carry the label target=backend, proxy or gateway (go tool pprof -tagfocus=target=gateway)")
	flag.StringVar(&o.memprofile, "memprofile", "", "write an allocation profile of the whole run to this file (go tool pprof -sample_index=alloc_objects)")
	flag.BoolVar(&o.sequential, "sequential", false, "measure each latency series on its own instead of interleaving direct, proxy and gateway calls")
	flag.BoolVar(&o.processes, "processes", false, "run the backend, the proxy and the gateway as separate processes (the gateway binary of -gateway, built from ./functions/gateway when not given) instead of all in this one")
	serveHop := flag.String("serve", "", "internal (-processes): serve the backend or the proxy (in front of -backend) in this process until stdin closes")
	backendURL := flag.String("backend", "", "internal (-serve proxy): the backend's base URL")
	load := flag.Bool("load", false, "load mode (`make load`): concurrent streamed agentic responses through the gateway binary, on each store")
	caching := flag.Bool("cache", false, "prompt caching figures (cache.go): a 10-turn agentic loop on each provider's fake, Bedrock with and without cache points")
	costing := flag.Bool("cost", false, "the cost of an agentic response (cost.go): DynamoDB requests, capacity units and bytes, Lambda GB-s; streamed, background and a WebSocket turn, on DynamoDB Local")
	memory := flag.Bool("memory", false, "memory figures (memory.go): the gateway binary's peak RSS over a 50-turn loop of 8 hosted calls of 100 KB each, and its RSS with 100 streams open")
	var mo memoryOptions
	flag.StringVar(&mo.env, "gateway-env", "", "memory mode: more environment of the gateway, comma-separated K=V")
	flag.StringVar(&mo.also, "memory-also", "", "memory mode: more tool output sizes (bytes, comma-separated) to run the long loop with")
	var co costOptions
	co.register(flag.CommandLine)
	var lo loadOptions
	lo.register(flag.CommandLine)
	flag.Parse()
	var err error
	o.gateway = lo.gateway
	switch {
	case *serveHop != "":
		err = serveChild(*serveHop, *backendURL)
	case *load:
		err = runLoad(lo)
	case *caching:
		err = runCache()
	case *memory:
		err = runMemory(lo, mo)
	case *costing:
		err = runCost(co)
	default:
		err = run(o)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

type options struct {
	n, warmup, c, total int
	rounds              int
	allocN              int
	dur                 time.Duration
	cpuprofile          string
	memprofile          string
	sequential          bool
	// processes runs the backend, the proxy and the gateway (the binary
	// gateway; built when empty) as processes of their own.
	processes bool
	gateway   string
}

func (o options) order() string {
	if o.sequential {
		return "direct series first, then proxy, then gateway"
	}
	return "direct, proxy and gateway interleaved"
}

// answer is the fake model's reply: a short sentence, streamed word by word.
const answer = "Hello! This is a short answer from the fake backend, sent word by word."

var fakeUsage = fakellm.Usage{PromptTokens: 12, CompletionTokens: 16}

// target is one way of asking for a completion: the backend directly,
// through the proxy or through the gateway.
type target struct {
	name       string
	url        string
	body       []byte // non-streaming request
	streamBody []byte // streaming request
	// firstDelta marks the first text delta in the streamed body.
	firstDelta []byte
}

func run(o options) error {
	if o.n < 1 || o.c < 1 || o.total < 1 || o.rounds < 1 {
		return errors.New("-n, -c, -requests and -rounds must be positive")
	}
	if o.cpuprofile != "" {
		f, err := os.Create(o.cpuprofile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	if o.memprofile != "" {
		runtime.MemProfileRate = 4096
		defer func() {
			if err := writeHeapProfile(o.memprofile); err != nil {
				fmt.Fprintln(os.Stderr, "bench: memprofile:", err)
			}
		}()
	}

	var hs *hops
	var err error
	if o.processes {
		hs, err = startProcesses(o)
	} else {
		hs, err = startInProcess(o)
	}
	if err != nil {
		return err
	}
	defer hs.stop()

	client := &http.Client{Transport: &http.Transport{
		MaxIdleConns:        128,
		MaxIdleConnsPerHost: 64,
		IdleConnTimeout:     time.Minute,
		DisableCompression:  true,
		ForceAttemptHTTP2:   false,
	}}
	defer client.CloseIdleConnections()

	direct := target{
		name:       "direct",
		url:        hs.backend + "/chat/completions",
		body:       []byte(`{"model":"test-model","messages":[{"role":"user","content":"Say hello"}]}`),
		streamBody: []byte(`{"model":"test-model","messages":[{"role":"user","content":"Say hello"}],"stream":true,"stream_options":{"include_usage":true}}`),
		firstDelta: []byte(`"delta":{"content":"`),
	}
	proxy := direct
	proxy.name, proxy.url = "proxy", "http://"+hs.proxy+"/v1/chat/completions"
	gateway := target{
		name:       "gateway",
		url:        "http://" + hs.gateway + "/v1/responses",
		body:       []byte(`{"input":"Say hello"}`),
		streamBody: []byte(`{"input":"Say hello","stream":true}`),
		firstDelta: []byte("event: response.output_text.delta\n"),
	}
	targets := []target{direct, proxy, gateway}
	// Sanity: every target answers with the fake's answer, and the proxy
	// and the gateway really go through the backend.
	for _, tg := range targets {
		if err := tg.answers(client); err != nil {
			return err
		}
		if _, err := tg.stream(client); err != nil {
			return fmt.Errorf("%s stream: %w", tg.name, err)
		}
		if tg.name == direct.name || hs.calls == nil {
			continue
		}
		callsBefore := hs.calls()
		if _, err := tg.complete(client); err != nil {
			return err
		}
		if hs.calls() != callsBefore+1 {
			return fmt.Errorf("the %s did not call the fake backend", tg.name)
		}
	}

	fmt.Printf("Lambent gateway overhead: fake Chat Completions backend (direct), a bare httputil.ReverseProxy\n")
	fmt.Printf("in front of it (proxy, the floor of a Go HTTP hop) and the gateway in front of it\n")
	fmt.Printf("loopback, %s, %s %s/%s, GOMAXPROCS=%d, NumCPU=%d, memory store, logs at error level\n\n",
		hs.layout, runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.GOMAXPROCS(0), runtime.NumCPU())

	// (a) non-streaming latency, concurrency 1, interleaved so every series
	// sees the same conditions.
	lat, err := interleave(o, func(tg target) (time.Duration, error) { return tg.complete(client) }, targets)
	if err != nil {
		return err
	}
	fmt.Printf("(a) non-streaming latency, concurrency 1, %d requests each after %d warm-up, %s\n", o.n, o.warmup, o.order())
	printLatency(lat, true, 0)

	// (b) streaming: time to first byte and to the first text delta.
	st, err := interleave(o, func(tg target) (streamTimes, error) { return tg.stream(client) }, targets)
	if err != nil {
		return err
	}
	ttfb, first := make([][]time.Duration, len(st)), make([][]time.Duration, len(st))
	for i, s := range st {
		for _, x := range s {
			ttfb[i], first[i] = append(ttfb[i], x.ttfb), append(first[i], x.first)
		}
	}
	fmt.Printf("\n(b) streaming, concurrency 1, %d requests each after %d warm-up, %s\n", o.n, o.warmup, o.order())
	fmt.Printf("    time to first text delta (gateway: response.output_text.delta; direct and proxy: first content delta)\n")
	printLatency(first, true, 100*time.Microsecond)
	fmt.Printf("    time to first byte (gateway: its first write; direct and proxy: first chunk)\n")
	printLatency(ttfb, false, 0)

	// (c) throughput at concurrency o.c.
	fmt.Printf("\n(c) throughput, concurrency %d, each run capped at %d requests or %s, in %d slices taken in turn\n", o.c, o.total, o.dur, o.rounds)
	fmt.Printf("    %-14s %12s %12s %12s %10s %10s\n", "req/s", "direct", "proxy", "gateway", "gw/proxy", "gw/direct")
	for _, mode := range []struct {
		name string
		fn   func(target) (time.Duration, error)
	}{
		{"non-streaming", func(tg target) (time.Duration, error) { return tg.complete(client) }},
		{"streaming", func(tg target) (time.Duration, error) { s, err := tg.stream(client); return s.first, err }},
	} {
		// A short warm-up fills every connection pool at this concurrency.
		for _, tg := range targets {
			if _, err := throughput(o.c, o.c*20, o.dur, func() (time.Duration, error) { return mode.fn(tg) }); err != nil {
				return err
			}
		}
		// The run of each target is cut into o.rounds slices taken in
		// turn, so that the three see the same machine (a shared one's
		// load comes and goes).
		rates := make([]rate, len(targets))
		for range o.rounds {
			for i, tg := range targets {
				r, err := throughput(o.c, max(1, o.total/o.rounds), o.dur/time.Duration(o.rounds), func() (time.Duration, error) { return mode.fn(tg) })
				if err != nil {
					return fmt.Errorf("%s %s: %w", tg.name, mode.name, err)
				}
				rates[i].n += r.n
				rates[i].elapsed += r.elapsed
				runtime.GC()
			}
		}
		vsProxy := rates[2].rps() / rates[1].rps()
		fmt.Printf("    %-14s %12.0f %12.0f %12.0f %9.0f%% %9.0f%%   gate ≥ %.0f%%: %s, aim ≥ %.0f%%: %s\n", mode.name,
			rates[0].rps(), rates[1].rps(), rates[2].rps(), 100*vsProxy, 100*rates[2].rps()/rates[0].rps(),
			100*gateRPSRatio, verdict(vsProxy >= gateRPSRatio), 100*aimRPSRatio, verdict(vsProxy >= aimRPSRatio))
	}

	// (d) allocations and CPU time per request, each target on its own.
	if hs.pids == nil {
		fmt.Printf("\n(d) cost per request of the whole process (client, backend and hop), concurrency 1, %d requests each in %d slices taken in turn\n", o.allocN, o.rounds)
	} else {
		fmt.Printf("\n(d) CPU time per request, concurrency 1, %d requests each in %d slices taken in turn: of all processes (client, backend\n", o.allocN, o.rounds)
		fmt.Printf("    and hop), and of the hop's own process (allocations: see the one-process run, where they are counted)\n")
	}
	fmt.Printf("    %-14s %12s %12s %12s %14s %14s\n", "", "direct", "proxy", "gateway", "proxy added", "gateway added")
	for _, mode := range []struct {
		name string
		fn   func(target) error
	}{
		{"non-streaming", func(tg target) error { _, err := tg.complete(client); return err }},
		{"streaming", func(tg target) error { _, err := tg.stream(client); return err }},
	} {
		// In o.rounds slices taken in turn, as in (c).
		var c [3]cost
		for range o.rounds {
			for i, tg := range targets {
				ci, err := hs.costPerRequest(max(1, o.allocN/o.rounds), i, func() error { return mode.fn(tg) })
				if err != nil {
					return fmt.Errorf("%s %s: %w", tg.name, mode.name, err)
				}
				c[i] = c[i].plus(ci, o.rounds)
			}
		}
		label := mode.name
		row := func(unit string, f func(cost) float64) {
			fmt.Printf("    %-14s %12.0f %12.0f %12.0f %14.0f %14.0f   %s\n", label,
				f(c[0]), f(c[1]), f(c[2]), f(c[1])-f(c[0]), f(c[2])-f(c[0]), unit)
			label = ""
		}
		if hs.pids == nil {
			row("allocs/request", func(c cost) float64 { return c.allocs })
			row("bytes/request", func(c cost) float64 { return c.bytes })
			row("CPU µs/request", func(c cost) float64 { return c.cpu.Seconds() * 1e6 })
			continue
		}
		row("CPU µs/request, all processes", func(c cost) float64 { return c.cpu.Seconds() * 1e6 })
		row("CPU µs/request, the hop's process", func(c cost) float64 { return c.hop.Seconds() * 1e6 })
	}
	return nil
}

// cost is what one request costs: the whole process's allocations, and
// the CPU time of every process that serves it.
type cost struct {
	allocs, bytes float64
	// cpu is the CPU time of all processes: this one and, when the hops
	// run as processes of their own, theirs.
	cpu time.Duration
	// hop is the CPU time of the target's own process (proxy or gateway)
	// when the hops run as processes of their own.
	hop time.Duration
}

// plus adds x, one of n equal parts of a measurement, to c.
func (c cost) plus(x cost, n int) cost {
	d := time.Duration(n)
	return cost{
		allocs: c.allocs + x.allocs/float64(n),
		bytes:  c.bytes + x.bytes/float64(n),
		cpu:    c.cpu + x.cpu/d,
		hop:    c.hop + x.hop/d,
	}
}

// costPerRequest runs fn, a request to target i (direct, proxy or
// gateway), n times (after n/10 unmeasured) and returns the heap
// allocations and allocated bytes of this process and the CPU time (user
// and system) of all processes per call.
func (hs *hops) costPerRequest(n, i int, fn func() error) (cost, error) {
	for range n / 10 {
		if err := fn(); err != nil {
			return cost{}, err
		}
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	cpu0, hop0 := hs.cpuTime(i)
	for range n {
		if err := fn(); err != nil {
			return cost{}, err
		}
	}
	cpu1, hop1 := hs.cpuTime(i)
	runtime.ReadMemStats(&after)
	return cost{
		allocs: float64(after.Mallocs-before.Mallocs) / float64(n),
		bytes:  float64(after.TotalAlloc-before.TotalAlloc) / float64(n),
		cpu:    (cpu1 - cpu0) / time.Duration(n),
		hop:    (hop1 - hop0) / time.Duration(n),
	}, nil
}

// label marks the CPU profile samples of h's goroutines (and of those they
// start) with target=name when a CPU profile is written.
func (o options) label(name string, h http.Handler) http.Handler {
	if o.cpuprofile == "" {
		return h
	}
	labels := pprof.Labels("target", name)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		pprof.SetGoroutineLabels(pprof.WithLabels(r.Context(), labels))
		h.ServeHTTP(w, r)
	})
}

// writeHeapProfile writes the allocation profile to path.
func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// serve serves h on a fresh loopback port until stop is called.
func serve(h http.Handler) (addr string, stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	return ln.Addr().String(), func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
		<-serveErr
	}, nil
}

// complete sends a non-streaming request and reads the whole answer,
// returning the round-trip time.
func (tg target) complete(c *http.Client) (time.Duration, error) {
	start := time.Now()
	res, err := c.Post(tg.url, "application/json", bytes.NewReader(tg.body))
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	if _, err := io.Copy(io.Discard, res.Body); err != nil {
		return 0, err
	}
	d := time.Since(start)
	if res.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("%s: status %d", tg.url, res.StatusCode)
	}
	return d, nil
}

// answers checks that a non-streaming request gets the fake's answer.
func (tg target) answers(c *http.Client) error {
	res, err := c.Post(tg.url, "application/json", bytes.NewReader(tg.body))
	if err != nil {
		return fmt.Errorf("%s: %w", tg.name, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return fmt.Errorf("%s: %w", tg.name, err)
	}
	if res.StatusCode != http.StatusOK || !bytes.Contains(b, []byte(answer)) {
		return fmt.Errorf("%s: status %d without the fake's answer: %.300s", tg.name, res.StatusCode, b)
	}
	return nil
}

var bufPool = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// streamTimes are the times of one streamed answer.
type streamTimes struct {
	// ttfb is the time to the first body byte.
	ttfb time.Duration
	// first is the time to the first text delta.
	first time.Duration
}

// stream sends a streaming request and reads the whole stream, returning
// the time to the first body byte and to the first text delta.
func (tg target) stream(c *http.Client) (streamTimes, error) {
	var t streamTimes
	start := time.Now()
	res, err := c.Post(tg.url, "application/json", bytes.NewReader(tg.streamBody))
	if err != nil {
		return t, err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, res.Body)
		return t, fmt.Errorf("%s: status %d", tg.url, res.StatusCode)
	}
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	buf := *bp
	seen := 0
	done := false
	for {
		n, rerr := res.Body.Read(buf[seen:])
		if n > 0 && t.ttfb == 0 {
			t.ttfb = time.Since(start)
		}
		seen += n
		if t.first == 0 && bytes.Contains(buf[:seen], tg.firstDelta) {
			t.first = time.Since(start)
		}
		if bytes.HasSuffix(buf[:seen], []byte("data: [DONE]\n\n")) {
			done = true
		}
		if seen > len(buf)/2 {
			// Keep a tail for the [DONE] check and drop the rest.
			tail := 64
			copy(buf, buf[seen-tail:seen])
			seen = tail
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return t, rerr
		}
	}
	if !done || t.first == 0 {
		return t, fmt.Errorf("%s: stream without text delta or [DONE]", tg.url)
	}
	return t, nil
}

// interleave runs fn on each target in turn at concurrency 1: o.warmup
// rounds unmeasured, then o.n measured rounds, and returns the measured
// series of each target. With o.sequential, all of a target's rounds run
// before the next target's.
func interleave[T any](o options, fn func(target) (T, error), tgs []target) ([][]T, error) {
	out := make([][]T, len(tgs))
	for i := range out {
		out[i] = make([]T, 0, o.n)
	}
	call := func(i, round int) error {
		x, err := fn(tgs[i])
		if err != nil {
			return fmt.Errorf("%s: %w", tgs[i].name, err)
		}
		if round >= o.warmup {
			out[i] = append(out[i], x)
		}
		return nil
	}
	if o.sequential {
		for i := range tgs {
			for round := 0; round < o.warmup+o.n; round++ {
				if err := call(i, round); err != nil {
					return nil, err
				}
			}
		}
		return out, nil
	}
	for round := 0; round < o.warmup+o.n; round++ {
		for i := range tgs {
			if err := call(i, round); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

func percentile(d []time.Duration, p int) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	i := len(s) * p / 100
	if i >= len(s) {
		i = len(s) - 1
	}
	return s[i]
}

// Issue 27's figures of the gateway against the floor (the proxy): gates
// to meet and aims to report.
const (
	gateP50Ratio = 1.10 // gateway p50 / proxy p50 at concurrency 1, at most
	aimP50Ratio  = 1.05
	gateRPSRatio = 0.95 // gateway requests/s / proxy requests/s at concurrency o.c, at least
	aimRPSRatio  = 1.00
)

// printLatency prints the direct, proxy and gateway series (in that
// order) with what the proxy and the gateway add to the direct call, and
// the gateway against the proxy floor. With verdicts, the p50 ratio is set
// beside its gate and aim; a positive aimAdded is the aim for the
// gateway's added p50.
func printLatency(series [][]time.Duration, verdicts bool, aimAdded time.Duration) {
	p50, p99 := make([]time.Duration, len(series)), make([]time.Duration, len(series))
	for i, s := range series {
		p50[i], p99[i] = percentile(s, 50), percentile(s, 99)
	}
	fmt.Printf("    %-16s %10s %10s\n", "", "p50", "p99")
	for i, name := range []string{"direct", "proxy", "gateway"} {
		fmt.Printf("    %-16s %10s %10s\n", name, us(p50[i]), us(p99[i]))
	}
	fmt.Printf("    %-16s %10s %10s\n", "proxy added", us(p50[1]-p50[0]), us(p99[1]-p99[0]))
	ratio := float64(p50[2]) / float64(p50[1])
	fmt.Printf("    %-16s %10s %10s", "gateway added", us(p50[2]-p50[0]), us(p99[2]-p99[0]))
	if aimAdded > 0 {
		fmt.Printf("   aim p50 ≤ %s: %s", us(aimAdded), verdict(p50[2]-p50[0] <= aimAdded))
	}
	fmt.Printf("\n    %-16s %10.2f %10.2f", "gateway / proxy", ratio, float64(p99[2])/float64(p99[1]))
	if verdicts {
		fmt.Printf("   gate p50 ≤ %.2f: %s, aim ≤ %.2f: %s", gateP50Ratio, verdict(ratio <= gateP50Ratio), aimP50Ratio, verdict(ratio <= aimP50Ratio))
	}
	fmt.Println()
}

func us(d time.Duration) string { return fmt.Sprintf("%.1fµs", float64(d)/float64(time.Microsecond)) }

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "MISSED"
}

type rate struct {
	n       int64
	elapsed time.Duration
}

func (r rate) rps() float64 { return float64(r.n) / r.elapsed.Seconds() }

// throughput runs fn from c workers until total calls were started or dur
// has passed, and reports completed calls per second.
func throughput(c, total int, dur time.Duration, fn func() (time.Duration, error)) (rate, error) {
	var started, completed atomic.Int64
	var firstErr error
	var errOnce sync.Once
	deadline := time.Now().Add(dur)
	var wg sync.WaitGroup
	start := time.Now()
	for range c {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for started.Add(1) <= int64(total) && time.Now().Before(deadline) {
				if _, err := fn(); err != nil {
					errOnce.Do(func() { firstErr = err })
					return
				}
				completed.Add(1)
			}
		}()
	}
	wg.Wait()
	return rate{n: completed.Load(), elapsed: time.Since(start)}, firstErr
}
