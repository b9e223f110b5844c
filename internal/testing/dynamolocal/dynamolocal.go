// Package dynamolocal gives test binaries DynamoDB Local: Main starts it
// (through scripts/dynamodb-local.sh) when AWS_ENDPOINT_URL_DYNAMODB is not
// set. In CI (CI set) the endpoint must be given — `make test` starts
// DynamoDB Local — and a missing one fails the tests; it never skips them.
package dynamolocal

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

// EnvEndpoint is the SDK's endpoint override for DynamoDB.
const EnvEndpoint = "AWS_ENDPOINT_URL_DYNAMODB"

// Main runs a test binary's tests (run, usually m.Run) with DynamoDB Local
// available: `os.Exit(dynamolocal.Main(m.Run))`.
func Main(run func() int) int {
	if os.Getenv(EnvEndpoint) != "" || os.Getenv("CI") != "" {
		return run()
	}
	stop, err := Start()
	if err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: could not start DynamoDB Local: %v\n", err)
		return 1
	}
	defer stop()
	return run()
}

// Start starts DynamoDB Local in a run directory of its own (so it neither
// finds nor stops an instance of `make dynamodb-local`) and sets
// AWS_ENDPOINT_URL_DYNAMODB.
func Start() (stop func(), err error) {
	root, err := repoRoot()
	if err != nil {
		return nil, err
	}
	script := filepath.Join(root, "scripts", "dynamodb-local.sh")
	runDir, err := os.MkdirTemp("", "lambent-dynamodb-test-")
	if err != nil {
		return nil, err
	}
	// The script's watchdog stops the instance if this binary dies without
	// calling stop (a panicking test).
	env := append(os.Environ(), "LAMBENT_DYNAMODB_RUN_DIR="+runDir, "LAMBENT_DYNAMODB_OWNER_PID="+strconv.Itoa(os.Getpid()))
	cmd := exec.Command(script, "start")
	cmd.Env, cmd.Stderr = env, os.Stderr
	out, err := cmd.Output()
	stop = func() {
		c := exec.Command(script, "stop")
		c.Env, c.Stdout, c.Stderr = env, os.Stderr, os.Stderr
		if err := c.Run(); err != nil {
			fmt.Fprintf(os.Stderr, "stopping DynamoDB Local: %v\n", err)
		}
		_ = os.RemoveAll(runDir)
	}
	if err != nil {
		stop()
		return nil, fmt.Errorf("%s start: %w", script, err)
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), EnvEndpoint+"="); ok {
			if err := os.Setenv(EnvEndpoint, v); err != nil {
				stop()
				return nil, err
			}
			return stop, nil
		}
	}
	stop()
	return nil, fmt.Errorf("%s start printed no %s line: %q", script, EnvEndpoint, out)
}

func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("go.mod not found above the working directory")
		}
		dir = parent
	}
}

// Endpoint returns DynamoDB Local's URL, failing tb when there is none.
func Endpoint(tb testing.TB) string {
	tb.Helper()
	ep := os.Getenv(EnvEndpoint)
	if ep == "" {
		tb.Fatalf("%s is not set: DynamoDB Local must be running (make test starts it)", EnvEndpoint)
	}
	return ep
}

// MainLeakChecked is Main for packages that spawn goroutines: after the
// tests pass it fails the binary if goroutines leaked (go.uber.org/goleak),
// ignoring the AWS SDK's pooled keep-alive connections, which are idle,
// not leaked. Use it as `os.Exit(dynamolocal.MainLeakChecked(m))`.
func MainLeakChecked(m *testing.M) int {
	return Main(func() int {
		if code := m.Run(); code != 0 {
			return code
		}
		if err := goleak.Find(
			goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"),
			goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
			goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"),
		); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			return 1
		}
		return 0
	})
}
