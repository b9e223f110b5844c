// Command lambdas serves every built-in hosted tool on a local AWS Lambda
// Invoke endpoint (package localinvoke), the way `sam local start-lambda`
// serves template.yaml's functions, without Docker:
//
//	make lambdas                                            # terminal 1
//	AWS_ENDPOINT_URL_LAMBDA=http://127.0.0.1:3001 make run  # terminal 2
//
// makes the gateway call its tools through the real Lambda client path.
// Each tool is served under its tool name ("calculator") and its
// template.yaml logical ID ("CalculatorToolFunction"), so the manifest of
// lambdaexec.LocalManifest works against this command and against `sam
// local start-lambda` alike.
//
// Environment: LAMBENT_LAMBDAS_ADDR (default 127.0.0.1:3001),
// LAMBENT_FETCH_ALLOW_HOSTS (as for the gateway), LAMBENT_LAMBDAS_TIMEOUT
// (each invocation's deadline, like a function's Timeout; default 30s).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"sort"
	"syscall"
	"time"

	"github.com/lambent/lambent/internal/testing/localinvoke"
	"github.com/lambent/lambent/pkg/egress"
	"github.com/lambent/lambent/pkg/tools"
	"github.com/lambent/lambent/pkg/tools/builtin"
	"github.com/lambent/lambent/pkg/tools/fetchurl"
	"github.com/lambent/lambent/pkg/tools/lambdaexec"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "lambdas:", err)
		os.Exit(1)
	}
}

func run() error {
	addr := os.Getenv("LAMBENT_LAMBDAS_ADDR")
	if addr == "" {
		addr = "127.0.0.1:3001"
	}
	timeout := 30 * time.Second
	if v := os.Getenv("LAMBENT_LAMBDAS_TIMEOUT"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			return fmt.Errorf("LAMBENT_LAMBDAS_TIMEOUT: %w", err)
		}
		timeout = d
	}
	fetch := fetchurl.Config{AllowHosts: egress.AllowHostsFromEnv(os.Getenv)}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))

	builtins := builtin.Tools(builtin.Config{Fetch: fetch})
	hosted := make(map[string]tools.Hosted, 2*len(builtins))
	names := make([]string, 0, len(builtins))
	for name, h := range builtins {
		hosted[name] = h
		hosted[lambdaexec.FunctionLogicalID(name)] = h
		names = append(names, name)
	}
	sort.Strings(names)
	srv := &http.Server{
		Addr:              addr,
		Handler:           localinvoke.New(hosted, localinvoke.WithFunctionTimeout(timeout), localinvoke.WithLogger(log)),
		ReadHeaderTimeout: 10 * time.Second,
	}
	manifest, err := json.Marshal(lambdaexec.LocalManifest(names...))
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()
	log.Info("local Lambda Invoke endpoint listening", "endpoint", "http://"+addr, "tools", names,
		"gateway", "AWS_ENDPOINT_URL_LAMBDA=http://"+addr+" make run", "manifest", string(manifest))
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
