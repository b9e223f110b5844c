package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/lambent/lambent/internal/testing/fakellm"
	"github.com/lambent/lambent/pkg/app"
)

// hops are the running backend, proxy and gateway of a run: in this
// process (startInProcess) or each in a process of its own
// (startProcesses), as issue 27 measured them.
type hops struct {
	// backend is the fake's base URL (with /v1); proxy and gateway are
	// host:port.
	backend, proxy, gateway string
	// layout says how they run, for the header.
	layout string
	// calls counts the fake's calls; nil when it runs in another process.
	calls func() int
	// pids are the processes of the backend, the proxy and the gateway;
	// nil when they all run in this one.
	pids  []int
	stops []func()
}

// stop stops everything started, the last started first.
func (hs *hops) stop() {
	for _, f := range slices.Backward(hs.stops) {
		f()
	}
}

// hopEnv is the gateway's configuration in both layouts: the fake model,
// the memory store, logs at error level.
func hopEnv(backend string) map[string]string {
	return map[string]string{
		"LAMBENT_PROVIDER_URL":  backend,
		"LAMBENT_DEFAULT_MODEL": "test-model",
		"LAMBENT_STORE":         "memory",
		"LAMBENT_LOG_LEVEL":     "error",
		"LAMBENT_RETENTION":     "1h",
	}
}

// newFake starts the fake backend of every run: the same short answer to
// every request, nothing recorded.
func newFake() *fakellm.Server {
	fake := fakellm.NewHandler(func(fakellm.Request) fakellm.Turn {
		return fakellm.Turn{Text: answer, Usage: fakeUsage}
	})
	fake.SetRecording(false)
	return fake
}

// newProxy is the floor: a bare reverse proxy in front of the backend
// (base URL), with a transport pooled like the gateway's provider client.
// The returned func closes its idle connections.
func newProxy(backendURL string) (http.Handler, func(), error) {
	backend, err := url.Parse(backendURL)
	if err != nil {
		return nil, nil, err
	}
	backend.Path = ""
	transport := &http.Transport{MaxIdleConns: 256, MaxIdleConnsPerHost: 64, IdleConnTimeout: 90 * time.Second}
	rp := &httputil.ReverseProxy{
		Rewrite:   func(pr *httputil.ProxyRequest) { pr.SetURL(backend); pr.Out.URL.Path = pr.In.URL.Path },
		Transport: transport,
		ErrorLog:  log.New(os.Stderr, "proxy: ", 0),
	}
	// Full duplex: the transport may still read the request body (its
	// check for bytes past Content-Length) after the backend has answered
	// and the proxy has written the response head, which under HTTP/1
	// closes the inbound body and so cuts the stream (golang/go#40747).
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = http.NewResponseController(w).EnableFullDuplex()
		rp.ServeHTTP(w, r)
	}), transport.CloseIdleConnections, nil
}

// startInProcess starts the backend, the proxy and the gateway (app.Build)
// in this process, each on its own loopback server.
func startInProcess(o options) (_ *hops, err error) {
	hs := &hops{layout: "one process"}
	defer func() {
		if err != nil {
			hs.stop()
		}
	}()
	fake := newFake()
	hs.stops = append(hs.stops, fake.Close)
	hs.backend, hs.calls = fake.URL, fake.Calls

	env := hopEnv(fake.URL)
	cfg, err := app.FromEnv(func(k string) string { return env[k] })
	if err != nil {
		return nil, err
	}
	gw, err := app.Build(context.Background(), cfg, app.Logger(cfg, io.Discard), nil)
	if err != nil {
		return nil, err
	}
	hs.stops = append(hs.stops, gw.Close)
	addr, stop, err := serve(o.label("gateway", gw.Handler))
	if err != nil {
		return nil, err
	}
	hs.gateway = addr
	hs.stops = append(hs.stops, stop)

	proxy, closeIdle, err := newProxy(fake.URL)
	if err != nil {
		return nil, err
	}
	hs.stops = append(hs.stops, closeIdle)
	if hs.proxy, stop, err = serve(o.label("proxy", proxy)); err != nil {
		return nil, err
	}
	hs.stops = append(hs.stops, stop)
	return hs, nil
}

// startProcesses starts the backend and the proxy as this binary again
// (-serve) and the gateway binary (o.gateway, built when empty), each a
// process of its own on loopback, as issue 27 measured them.
func startProcesses(o options) (_ *hops, err error) {
	if o.cpuprofile != "" || o.memprofile != "" {
		return nil, errors.New("-cpuprofile and -memprofile profile the one-process run only (without -processes)")
	}
	hs := &hops{layout: "separate processes (backend, proxy, gateway binary)"}
	defer func() {
		if err != nil {
			hs.stop()
		}
	}()
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "lambent-bench-")
	if err != nil {
		return nil, err
	}
	hs.stops = append(hs.stops, func() { _ = os.RemoveAll(dir) })
	// The backend and the proxy each run from a copy of this binary, so no
	// two processes share the pages of their code: a process running the
	// same file as the one before it on the core could find its code
	// (net/http's included) in the CPU's caches, an advantage the gateway,
	// a binary of its own, cannot have (measured: 0–0.03 in the ratio).
	backendBin, err := copyExecutable(self, filepath.Join(dir, "backend"))
	if err != nil {
		return nil, err
	}
	proxyBin, err := copyExecutable(self, filepath.Join(dir, "proxy"))
	if err != nil {
		return nil, err
	}
	gateway := o.gateway
	if gateway == "" {
		gateway = filepath.Join(dir, "gateway")
		build := exec.Command("go", "build", "-o", gateway, "./functions/gateway")
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			return nil, fmt.Errorf("build the gateway (run from the repository's root, or give -gateway): %w", err)
		}
	}

	backend, err := startChild(hs, exec.Command(backendBin, "-serve", "backend"))
	if err != nil {
		return nil, fmt.Errorf("backend: %w", err)
	}
	hs.backend = backend
	if hs.proxy, err = startChild(hs, exec.Command(proxyBin, "-serve", "proxy", "-backend", backend)); err != nil {
		return nil, fmt.Errorf("proxy: %w", err)
	}

	// The gateway listens on a port picked here; it is up once it accepts
	// connections.
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(gateway)
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "AWS_LAMBDA_RUNTIME_API=") || strings.HasPrefix(kv, "LAMBENT_")
	})
	for k, v := range hopEnv(backend) {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Env = append(cmd.Env, "LAMBENT_ADDR="+addr)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	// The gateway ends with this process, however it ends (the children
	// of -serve end when their stdin closes).
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("gateway: %w", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	hs.pids = append(hs.pids, cmd.Process.Pid)
	hs.stops = append(hs.stops, func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	for deadline := time.Now().Add(time.Minute); ; {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			break
		}
		select {
		case <-exited:
			return nil, errors.New("the gateway exited before it listened")
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return nil, errors.New("the gateway did not listen within a minute")
		}
	}
	hs.gateway = addr
	return hs, nil
}

// copyExecutable copies the executable src to dst and returns dst.
func copyExecutable(src, dst string) (string, error) {
	b, err := os.ReadFile(src)
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(dst, b, 0o755); err != nil {
		return "", err
	}
	return dst, nil
}

// freeAddr returns a loopback address with a port free a moment ago.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// startChild starts cmd (this binary with -serve) and returns the address
// it prints once it serves. The child ends when its stdin closes (when hs
// stops, or this process ends).
func startChild(hs *hops, cmd *exec.Cmd) (string, error) {
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return "", err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return "", err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return "", err
	}
	hs.pids = append(hs.pids, cmd.Process.Pid)
	hs.stops = append(hs.stops, func() { _ = stdin.Close(); _ = cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		return "", fmt.Errorf("no address: %w", err)
	}
	return strings.TrimSpace(line), nil
}

// serveChild is the -serve mode of a child process: the backend, or the
// proxy in front of backendURL, until stdin closes. Its first line on
// stdout is where it serves (the backend's base URL, the proxy's
// host:port).
func serveChild(what, backendURL string) error {
	var stop func()
	switch what {
	case "backend":
		fake := newFake()
		stop = fake.Close
		fmt.Println(fake.URL)
	case "proxy":
		proxy, closeIdle, err := newProxy(backendURL)
		if err != nil {
			return err
		}
		addr, stopServer, err := serve(proxy)
		if err != nil {
			return err
		}
		stop = func() { stopServer(); closeIdle() }
		fmt.Println(addr)
	default:
		return fmt.Errorf("-serve %q: backend or proxy", what)
	}
	_, _ = io.Copy(io.Discard, os.Stdin)
	stop()
	return nil
}

// cpuTime returns the CPU time (user and system) used so far by this
// process and the hops' processes together, and by target i's own process
// (the proxy's or the gateway's; 0 for the backend, called directly, and
// when all run in this one).
func (hs *hops) cpuTime(i int) (all, hop time.Duration) {
	all = selfCPU()
	// pids are the backend's, the proxy's and the gateway's: target i's
	// process is pids[i].
	for j, pid := range hs.pids {
		t := procCPU(pid)
		all += t
		if j == i && i > 0 {
			hop = t
		}
	}
	return all, hop
}

// selfCPU is the CPU time (user and system) this process has used.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// procCPU is the CPU time another process's threads have run, in
// nanoseconds from /proc/<pid>/task/*/schedstat (0 when unreadable).
// Threads that ended are not counted; the Go runtime keeps its threads.
func procCPU(pid int) time.Duration {
	tasks, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	if err != nil {
		return 0
	}
	var total time.Duration
	for _, t := range tasks {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + t.Name() + "/schedstat")
		if err != nil {
			continue
		}
		f, _, _ := bytes.Cut(b, []byte(" "))
		ns, err := strconv.ParseInt(string(f), 10, 64)
		if err == nil {
			total += time.Duration(ns)
		}
	}
	return total
}
