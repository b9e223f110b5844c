package lambdarun

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Tags returns the build tags of the main package pkg's bootstrap, as
// make build gives them: lambda.norpc,lambent_lambda, and for a tool Lambda
// (under functions/tools/) nethttpomithttp2 as well: tools call out over
// HTTP/1.1 only, and leave net/http's HTTP/2 out of their bootstrap.
func Tags(pkg string) string {
	const tags = "lambda.norpc,lambent_lambda"
	if strings.Contains(pkg, "functions/tools/") {
		return tags + ",nethttpomithttp2"
	}
	return tags
}

// Build compiles the main package pkg (a package path or a ./relative
// directory, resolved from dir) into the file out, as a custom runtime's
// bootstrap: with its Tags (as make build), for the host's OS and architecture
// unless env (extra "KEY=value" entries for the go command, such as GOOS or
// CGO_ENABLED) says otherwise. extra are more go build flags. The go command
// is the one on PATH.
func Build(ctx context.Context, dir, pkg, out string, env []string, extra ...string) error {
	args := append([]string{"build", "-tags", Tags(pkg), "-o", out}, extra...)
	args = append(args, pkg)
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("lambdarun: go %s: %w\n%s", strings.Join(args, " "), err, b)
	}
	return nil
}

// BuildOnce returns a function that runs Build (without a deadline) on its
// first call and gives every call out and that first call's error: the
// tests of one test binary share one build of a function (the caller owns
// out's directory, and removes it, e.g. in TestMain).
func BuildOnce(dir, pkg, out string, env []string, extra ...string) func() (string, error) {
	return sync.OnceValues(func() (string, error) {
		return out, Build(context.Background(), dir, pkg, out, env, extra...)
	})
}

// ProcessConfig configures a function process. The zero value is usable.
type ProcessConfig struct {
	// Env holds more "KEY=value" entries, after (and overriding) the ones
	// Lambda sets. The process does not inherit the caller's environment.
	Env []string
	// MemoryMB is AWS_LAMBDA_FUNCTION_MEMORY_SIZE (default 128).
	MemoryMB int
	// Stdout and Stderr receive the process's output (default: discarded).
	Stdout, Stderr io.Writer
}

// Process is a function's bootstrap running against a [Runtime].
type Process struct {
	// Started is when the process was started.
	Started time.Time
	// Addr is the Runtime API address the process was given
	// (AWS_LAMBDA_RUNTIME_API): its own listener of the Runtime, so that
	// stopping it can wait for its pending requests to end.
	Addr string

	rt     *Runtime
	api    *httptest.Server
	cmd    *exec.Cmd
	exited chan struct{}
	err    error // the Wait error, set before exited is closed
	stop   sync.Once
}

// Start runs the bootstrap binary bin as the function's process, with the
// environment Lambda gives a custom runtime (AWS_LAMBDA_RUNTIME_API pointing
// at rt, AWS_LAMBDA_FUNCTION_NAME, AWS_REGION and the others). Stop it with
// [Process.Stop] (or [Runtime.Close]). Each process gets its own listener of
// the Runtime API, serving the same invocation queue.
func (rt *Runtime) Start(bin string, cfg ProcessConfig) (*Process, error) {
	abs, err := filepath.Abs(bin)
	if err != nil {
		return nil, err
	}
	if cfg.MemoryMB <= 0 {
		cfg.MemoryMB = 128
	}
	var sfx [16]byte
	_, _ = rand.Read(sfx[:])
	p := &Process{rt: rt, exited: make(chan struct{})}
	api := httptest.NewServer(rt.handler(p))
	addr := strings.TrimPrefix(api.URL, "http://")
	env := map[string]string{
		"AWS_LAMBDA_RUNTIME_API":          addr,
		"AWS_LAMBDA_FUNCTION_NAME":        rt.FunctionName,
		"AWS_LAMBDA_FUNCTION_VERSION":     "$LATEST",
		"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": strconv.Itoa(cfg.MemoryMB),
		"AWS_LAMBDA_LOG_GROUP_NAME":       "/aws/lambda/" + rt.FunctionName,
		"AWS_LAMBDA_LOG_STREAM_NAME":      time.Now().UTC().Format("2006/01/02") + "/[$LATEST]" + hex.EncodeToString(sfx[:]),
		"AWS_LAMBDA_INITIALIZATION_TYPE":  "on-demand",
		"AWS_REGION":                      rt.Region,
		"AWS_DEFAULT_REGION":              rt.Region,
		"LAMBDA_TASK_ROOT":                filepath.Dir(abs),
		"LAMBDA_RUNTIME_DIR":              filepath.Dir(abs),
		"_HANDLER":                        filepath.Base(abs),
		"TZ":                              ":UTC",
		"LANG":                            "en_US.UTF-8",
		"PATH":                            os.Getenv("PATH"),
	}
	for _, kv := range cfg.Env {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	cmd := exec.Command(abs)
	cmd.Dir = filepath.Dir(abs)
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Stdout, cmd.Stderr = cfg.Stdout, cfg.Stderr
	p.Addr, p.api, p.cmd = addr, api, cmd
	rt.mu.Lock()
	if rt.closed || isClosed(rt.closing) {
		rt.mu.Unlock()
		api.Close()
		return nil, errors.New("lambdarun: the runtime is closed")
	}
	rt.procs[p] = struct{}{}
	rt.mu.Unlock()
	p.Started = time.Now()
	if err := cmd.Start(); err != nil {
		p.forget()
		return nil, fmt.Errorf("lambdarun: starting %s: %w", bin, err)
	}
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// forget closes the process's listener, waiting for its pending requests
// (they end as the dead process's connections close), and drops it from the
// Runtime.
func (p *Process) forget() {
	p.api.Close()
	p.rt.mu.Lock()
	delete(p.rt.procs, p)
	p.rt.mu.Unlock()
}

// Exited is closed when the process has exited.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// Err returns how the process exited (nil for status 0); call it after
// Exited is closed.
func (p *Process) Err() error {
	<-p.exited
	return p.err
}

// kill sends the process SIGKILL without waiting for it (an invocation's
// deadline passed).
func (p *Process) kill() {
	select {
	case <-p.exited:
	default:
		_ = p.cmd.Process.Kill()
	}
}

// Stop kills the process, as Lambda does when it shuts an execution
// environment down, and waits for it to exit and for the Runtime API
// requests it left pending to end, so an event queued after Stop goes to
// the next process.
func (p *Process) Stop() {
	p.stop.Do(func() {
		p.kill()
		<-p.exited
		p.forget()
	})
}
