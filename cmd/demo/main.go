// Command demo runs the gateway with a scripted fake model
// (internal/testing/fakellm) on LAMBENT_ADDR (default 127.0.0.1:8080) and prints
// curl commands that show a hosted tool loop, a client tool pause and its
// continuation, and a stream (`make demo`). It needs no model and no AWS:
// the memory store, the built-in tools in-process.
package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/lambent/lambent/internal/testing/fakellm"
	"github.com/lambent/lambent/pkg/app"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	model := fakellm.NewHandler(script)
	defer model.Close()
	cfg, err := demoConfig(os.Getenv, model.URL)
	if err != nil {
		return err
	}
	a, err := app.Build(ctx, cfg, app.Logger(cfg, os.Stderr), nil)
	if err != nil {
		return err
	}
	defer a.Close()
	return app.Serve(ctx, cfg.Server.Addr, a.Handler, func(addr net.Addr) {
		printCommands(os.Stdout, "http://"+addr.String())
	})
}

// demoConfig is the gateway's configuration for the demo: the fake model
// at modelURL as provider (default model "demo"), the memory store, the
// built-in tools in-process, no API keys. Only LAMBENT_ADDR and
// LAMBENT_LOG_LEVEL come from getenv.
func demoConfig(getenv func(string) string, modelURL string) (app.Config, error) {
	fixed := map[string]string{
		"LAMBENT_PROVIDER_URL":  modelURL,
		"LAMBENT_DEFAULT_MODEL": "demo",
		"LAMBENT_STORE":         "memory",
	}
	return app.FromEnv(func(k string) string {
		switch k {
		case "LAMBENT_ADDR", "LAMBENT_LOG_LEVEL":
			return getenv(k)
		}
		return fixed[k]
	})
}
