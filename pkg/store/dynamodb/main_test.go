package dynamodb

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// envEndpoint is the SDK's own endpoint override for DynamoDB.
const envEndpoint = "AWS_ENDPOINT_URL_DYNAMODB"

// TestMain makes DynamoDB Local available: AWS_ENDPOINT_URL_DYNAMODB when
// set; else, outside CI, an instance started with scripts/dynamodb-local.sh
// for this test binary alone (stopped at the end). In CI without the
// variable every test fails (see endpoint): a missing DynamoDB Local is a
// failure, never a skip.
func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	if os.Getenv(envEndpoint) != "" || os.Getenv("CI") != "" {
		return m.Run()
	}
	stop, err := startLocal()
	if err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: could not start DynamoDB Local: %v\n", err)
		return 1
	}
	defer stop()
	return m.Run()
}

// startLocal starts DynamoDB Local in a run directory of its own, so it
// neither finds nor stops an instance started by `make dynamodb-local`.
func startLocal() (stop func(), err error) {
	root, err := repoRoot()
	if err != nil {
		return nil, err
	}
	script := filepath.Join(root, "scripts", "dynamodb-local.sh")
	runDir, err := os.MkdirTemp("", "lambent-dynamodb-test-")
	if err != nil {
		return nil, err
	}
	env := append(os.Environ(), "LAMBENT_DYNAMODB_RUN_DIR="+runDir)
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
		if v, ok := strings.CutPrefix(sc.Text(), envEndpoint+"="); ok {
			if err := os.Setenv(envEndpoint, v); err != nil {
				stop()
				return nil, err
			}
			return stop, nil
		}
	}
	stop()
	return nil, fmt.Errorf("%s start printed no %s line: %q", script, envEndpoint, out)
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

// endpoint returns DynamoDB Local's URL, failing tb when there is none.
func endpoint(tb testing.TB) string {
	tb.Helper()
	ep := os.Getenv(envEndpoint)
	if ep == "" {
		tb.Fatalf("%s is not set: in CI, DynamoDB Local must be running (make dynamodb-local, then export the line it prints)", envEndpoint)
	}
	return ep
}
