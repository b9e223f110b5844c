// Command gateway serves the Lambent HTTP API: inside AWS Lambda when
// AWS_LAMBDA_RUNTIME_API is set, else as a local HTTP server on LAMBENT_ADDR.
package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"github.com/lambent/lambent/pkg/app"
	"github.com/lambent/lambent/pkg/egress"
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
	// Local runs check the provider once, in the background: a missing
	// model is reported with what to do, and never delays or fails start-up.
	var checks sync.WaitGroup
	defer checks.Wait()
	err = app.Serve(ctx, cfg.Server.Addr, a.Handler, func(addr net.Addr) {
		log.Info("lambent gateway listening", "addr", "http://"+addr.String(), "provider", cfg.Provider.Name, "provider_url", egress.ShownURL(cfg.Provider.URL), "store", cfg.Store.Kind, "tools", toolNames(a))
		checks.Add(1)
		go func() {
			defer checks.Done()
			c := app.CheckProvider(ctx, cfg, nil)
			log.Log(ctx, c.Level, c.Message, c.LogAttrs(cfg)...)
			a.ReportModels(app.ProviderOpenAI, c.Models)
		}()
	})
	if err == nil {
		log.Info("shut down")
	}
	return err
}

func toolNames(a *app.App) []string {
	names := make([]string, len(a.Tools))
	for i, d := range a.Tools {
		names[i] = d.Name
	}
	return names
}
