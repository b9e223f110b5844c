// Command gateway serves the Lambent HTTP API: inside AWS Lambda when
// AWS_LAMBDA_RUNTIME_API is set, else as a local HTTP server on LAMBENT_ADDR.
package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/lambent/lambent/pkg/app"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "lambent:", err)
		os.Exit(1)
	}
}

func run() error {
	cfg, err := app.FromEnv(os.Getenv)
	if err != nil {
		return err
	}
	log := app.Logger(cfg, os.Stderr)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := app.ResolveSecrets(ctx, &cfg, os.Getenv); err != nil {
		return err
	}
	a, err := app.Build(ctx, cfg, log, nil)
	if err != nil {
		return err
	}
	defer a.Close()
	if cfg.InLambda {
		return serveLambda(a)
	}
	srv := &http.Server{Addr: cfg.Addr, Handler: a.Handler, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 120 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()
	log.Info("lambent gateway listening", "addr", "http://"+cfg.Addr, "provider", cfg.ProviderURL, "store", cfg.Store, "tools", toolNames(a))
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func toolNames(a *app.App) []string {
	names := make([]string, len(a.Tools))
	for i, d := range a.Tools {
		names[i] = d.Name
	}
	return names
}
