// Package dynamotest gives tests DynamoDB Local: Main starts it (through
// scripts/dynamodb-local.sh) for a test binary when AWS_ENDPOINT_URL_DYNAMODB
// is not set, and NewStore makes a store on a fresh table. In CI (CI set)
// the endpoint must be given — `make test` starts DynamoDB Local — and a
// missing one fails the tests; it never skips them.
package dynamotest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/store/dynamodb"
)

// EnvEndpoint is the SDK's endpoint override for DynamoDB.
const EnvEndpoint = "AWS_ENDPOINT_URL_DYNAMODB"

// Main runs a test binary's tests (run, usually m.Run) with DynamoDB Local
// available: `os.Exit(dynamotest.Main(m.Run))`.
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

// Client returns a DynamoDB client for DynamoDB Local with dummy credentials.
func Client(tb testing.TB) *ddb.Client {
	return ddb.New(ddb.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(Endpoint(tb)),
		Credentials:  credentials.NewStaticCredentialsProvider("local", "local", ""),
	})
}

// NewStore returns a DynamoDB store on a fresh table (deleted at cleanup).
// Two stores built with the same table name share it (two instances).
func NewStore(tb testing.TB, table string) *dynamodb.Store {
	tb.Helper()
	c := Client(tb)
	if table == "" {
		table = "lambent_test_" + api.NewID("")[24:]
	}
	st, err := dynamodb.New(c, dynamodb.Config{Table: table})
	if err != nil {
		tb.Fatal(err)
	}
	ctx := context.Background()
	if err := st.EnsureTable(ctx); err != nil {
		tb.Fatalf("create table %s: %v", table, err)
	}
	tb.Cleanup(func() {
		_, _ = c.DeleteTable(context.Background(), &ddb.DeleteTableInput{TableName: aws.String(table)})
	})
	return st
}
