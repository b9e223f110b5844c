// Command bench measures what the gateway adds on top of its model backend
// (`make bench`). In one process it starts a fake Chat Completions backend
// (internal/fakellm, instant replies) and the gateway (app.Build, memory
// store) on a loopback http.Server, then compares calling the backend
// directly with calling it through the gateway:
//
//	(a) non-streaming latency at concurrency 1 (p50, p99, added);
//	(b) streaming time to first byte and to the first text delta at
//	    concurrency 1 (p50, p99, added);
//	(c) requests/s at concurrency 16, non-streaming and streaming, and the
//	    gateway/direct ratio.
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

	"github.com/lambent/lambent/internal/fakellm"
	"github.com/lambent/lambent/pkg/app"
)

func main() {
	var o options
	flag.IntVar(&o.n, "n", 2000, "measured requests per latency series (concurrency 1)")
	flag.IntVar(&o.warmup, "warmup", 200, "warm-up requests per latency series")
	flag.IntVar(&o.c, "c", 16, "concurrency of the throughput phase")
	flag.IntVar(&o.total, "requests", 20000, "request cap per throughput run")
	flag.DurationVar(&o.dur, "duration", 5*time.Second, "time cap per throughput run")
	flag.StringVar(&o.cpuprofile, "cpuprofile", "", "write a CPU profile of the whole run to this file")
	flag.BoolVar(&o.sequential, "sequential", false, "measure each latency series on its own instead of interleaving direct and gateway calls")
	flag.Parse()
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

type options struct {
	n, warmup, c, total int
	dur                 time.Duration
	cpuprofile          string
	sequential          bool
}

func (o options) order() string {
	if o.sequential {
		return "direct series first, then gateway"
	}
	return "direct and gateway interleaved"
}

// answer is the fake model's reply: a short sentence, streamed word by word.
const answer = "Hello! This is a short answer from the fake backend, sent word by word."

var fakeUsage = fakellm.Usage{PromptTokens: 12, CompletionTokens: 16}

// target is one way of asking for a completion: the backend directly or
// the gateway.
type target struct {
	name       string
	url        string
	body       []byte // non-streaming request
	streamBody []byte // streaming request
	// firstDelta marks the first text delta in the streamed body.
	firstDelta []byte
}

func run(o options) error {
	if o.n < 1 || o.c < 1 || o.total < 1 {
		return errors.New("-n, -c and -requests must be positive")
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

	fake := fakellm.NewHandler(func(fakellm.Request) fakellm.Turn {
		return fakellm.Turn{Text: answer, Usage: fakeUsage}
	})
	defer fake.Close()
	fake.SetRecording(false)

	env := map[string]string{
		"LAMBENT_PROVIDER_URL":  fake.URL,
		"LAMBENT_DEFAULT_MODEL": "test-model",
		"LAMBENT_STORE":         "memory",
		"LAMBENT_LOG_LEVEL":     "error",
		"LAMBENT_RETENTION":     "1h",
	}
	cfg, err := app.FromEnv(func(k string) string { return env[k] })
	if err != nil {
		return err
	}
	ctx := context.Background()
	gw, err := app.Build(ctx, cfg, app.Logger(cfg, io.Discard), nil)
	if err != nil {
		return err
	}
	defer gw.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: gw.Handler, ReadHeaderTimeout: 10 * time.Second}
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
		<-serveErr
	}()

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
		url:        fake.URL + "/chat/completions",
		body:       []byte(`{"model":"test-model","messages":[{"role":"user","content":"Say hello"}]}`),
		streamBody: []byte(`{"model":"test-model","messages":[{"role":"user","content":"Say hello"}],"stream":true,"stream_options":{"include_usage":true}}`),
		firstDelta: []byte(`"delta":{"content":"`),
	}
	gateway := target{
		name:       "gateway",
		url:        "http://" + ln.Addr().String() + "/v1/responses",
		body:       []byte(`{"input":"Say hello"}`),
		streamBody: []byte(`{"input":"Say hello","stream":true}`),
		firstDelta: []byte("event: response.output_text.delta\n"),
	}
	// Sanity: both answer, and the gateway really goes through the backend.
	for _, tg := range []target{direct, gateway} {
		if _, err := tg.complete(client); err != nil {
			return fmt.Errorf("%s: %w", tg.name, err)
		}
		if _, _, err := tg.stream(client); err != nil {
			return fmt.Errorf("%s stream: %w", tg.name, err)
		}
	}
	callsBefore := fake.Calls()
	if _, err := gateway.complete(client); err != nil {
		return err
	}
	if fake.Calls() != callsBefore+1 {
		return errors.New("the gateway did not call the fake backend")
	}

	fmt.Printf("Lambent gateway overhead: fake Chat Completions backend vs the gateway in front of it\n")
	fmt.Printf("loopback, one process, %s %s/%s, GOMAXPROCS=%d, NumCPU=%d, memory store, logs at error level\n\n",
		runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.GOMAXPROCS(0), runtime.NumCPU())

	// (a) non-streaming latency, concurrency 1, interleaved so both series
	// see the same conditions.
	dLat, gLat, err := interleave(o, func(tg target) (time.Duration, error) { return tg.complete(client) }, direct, gateway)
	if err != nil {
		return err
	}
	fmt.Printf("(a) non-streaming latency, concurrency 1, %d requests each after %d warm-up, %s\n", o.n, o.warmup, o.order())
	printLatency(dLat, gLat, 100*time.Microsecond)

	// (b) streaming: time to first byte and to the first text delta.
	var dFirst, gFirst []time.Duration
	dTTFB, gTTFB, err := interleave(o, func(tg target) (time.Duration, error) {
		ttfb, first, err := tg.stream(client)
		if err == nil {
			if tg.name == direct.name {
				dFirst = append(dFirst, first)
			} else {
				gFirst = append(gFirst, first)
			}
		}
		return ttfb, err
	}, direct, gateway)
	if err != nil {
		return err
	}
	dFirst, gFirst = dFirst[len(dFirst)-o.n:], gFirst[len(gFirst)-o.n:]
	fmt.Printf("\n(b) streaming, concurrency 1, %d requests each after %d warm-up, %s\n", o.n, o.warmup, o.order())
	fmt.Printf("    time to first byte (gateway: response.created; direct: first chunk)\n")
	printLatency(dTTFB, gTTFB, 150*time.Microsecond)
	fmt.Printf("    time to first text delta (gateway: response.output_text.delta; direct: first content delta)\n")
	printLatency(dFirst, gFirst, 150*time.Microsecond)

	// (c) throughput at concurrency o.c.
	fmt.Printf("\n(c) throughput, concurrency %d, each run capped at %d requests or %s\n", o.c, o.total, o.dur)
	fmt.Printf("    %-14s %14s %14s %10s   %s\n", "", "direct req/s", "gateway req/s", "ratio", "(target ≥ 50%)")
	for _, mode := range []struct {
		name string
		fn   func(target) (time.Duration, error)
	}{
		{"non-streaming", func(tg target) (time.Duration, error) { return tg.complete(client) }},
		{"streaming", func(tg target) (time.Duration, error) { d, _, err := tg.stream(client); return d, err }},
	} {
		// A short warm-up fills both connection pools at this concurrency.
		for _, tg := range []target{direct, gateway} {
			if _, err := throughput(o.c, o.c*20, o.dur, func() (time.Duration, error) { return mode.fn(tg) }); err != nil {
				return err
			}
		}
		dr, err := throughput(o.c, o.total, o.dur, func() (time.Duration, error) { return mode.fn(direct) })
		if err != nil {
			return fmt.Errorf("direct %s: %w", mode.name, err)
		}
		runtime.GC()
		gr, err := throughput(o.c, o.total, o.dur, func() (time.Duration, error) { return mode.fn(gateway) })
		if err != nil {
			return fmt.Errorf("gateway %s: %w", mode.name, err)
		}
		runtime.GC()
		ratio := gr.rps() / dr.rps()
		fmt.Printf("    %-14s %14.0f %14.0f %9.0f%%   %s  (%d / %d requests)\n", mode.name, dr.rps(), gr.rps(), ratio*100, verdict(ratio >= 0.5), dr.n, gr.n)
	}
	return nil
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

var bufPool = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// stream sends a streaming request and reads the whole stream, returning
// the time to the first body byte and to the first text delta.
func (tg target) stream(c *http.Client) (ttfb, first time.Duration, err error) {
	start := time.Now()
	res, err := c.Post(tg.url, "application/json", bytes.NewReader(tg.streamBody))
	if err != nil {
		return 0, 0, err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, res.Body)
		return 0, 0, fmt.Errorf("%s: status %d", tg.url, res.StatusCode)
	}
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	buf := *bp
	seen := 0
	done := false
	for {
		n, rerr := res.Body.Read(buf[seen:])
		if n > 0 && ttfb == 0 {
			ttfb = time.Since(start)
		}
		seen += n
		if first == 0 && bytes.Contains(buf[:seen], tg.firstDelta) {
			first = time.Since(start)
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
			return 0, 0, rerr
		}
	}
	if !done || first == 0 {
		return 0, 0, fmt.Errorf("%s: stream without text delta or [DONE]", tg.url)
	}
	return ttfb, first, nil
}

// interleave runs fn on a and b alternately at concurrency 1: o.warmup
// rounds unmeasured, then o.n measured rounds. With o.sequential, all of
// a's rounds run first, then b's.
func interleave(o options, fn func(target) (time.Duration, error), a, b target) (da, db []time.Duration, err error) {
	da = make([]time.Duration, 0, o.n)
	db = make([]time.Duration, 0, o.n)
	if o.sequential {
		for _, s := range []struct {
			tg  target
			out *[]time.Duration
		}{{a, &da}, {b, &db}} {
			for i := 0; i < o.warmup+o.n; i++ {
				x, err := fn(s.tg)
				if err != nil {
					return nil, nil, fmt.Errorf("%s: %w", s.tg.name, err)
				}
				if i >= o.warmup {
					*s.out = append(*s.out, x)
				}
			}
		}
		return da, db, nil
	}
	for i := 0; i < o.warmup+o.n; i++ {
		x, err := fn(a)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", a.name, err)
		}
		y, err := fn(b)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", b.name, err)
		}
		if i >= o.warmup {
			da, db = append(da, x), append(db, y)
		}
	}
	return da, db, nil
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

func printLatency(direct, gateway []time.Duration, target time.Duration) {
	dp50, dp99 := percentile(direct, 50), percentile(direct, 99)
	gp50, gp99 := percentile(gateway, 50), percentile(gateway, 99)
	fmt.Printf("    %-10s %10s %10s\n", "", "p50", "p99")
	fmt.Printf("    %-10s %10s %10s\n", "direct", us(dp50), us(dp99))
	fmt.Printf("    %-10s %10s %10s\n", "gateway", us(gp50), us(gp99))
	fmt.Printf("    %-10s %10s %10s   target p50 ≤ %s: %s\n", "added", us(gp50-dp50), us(gp99-dp99), us(target), verdict(gp50-dp50 <= target))
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
