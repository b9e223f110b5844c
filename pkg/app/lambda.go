package app

import (
	"context"
	"errors"
	"log/slog"
	"os"
)

// BuildInLambda is the start of a function that only runs inside AWS
// Lambda (the worker, the WebSocket function): the configuration from the
// environment, its secrets, the logger and the app. elsewhere is the error
// when AWS_LAMBDA_RUNTIME_API is not set (what to run locally instead).
func BuildInLambda(ctx context.Context, elsewhere string) (*App, Config, *slog.Logger, error) {
	cfg, err := FromEnv(os.Getenv)
	if err != nil {
		return nil, cfg, nil, err
	}
	if !cfg.InLambda {
		return nil, cfg, nil, errors.New(elsewhere)
	}
	if err := ResolveSecrets(ctx, &cfg, os.Getenv); err != nil {
		return nil, cfg, nil, err
	}
	log := Logger(cfg, os.Stderr)
	a, err := Build(ctx, cfg, log, nil)
	if err != nil {
		return nil, cfg, nil, err
	}
	return a, cfg, log, nil
}
