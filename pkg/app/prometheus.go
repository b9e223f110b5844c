//go:build !lambent_lambda

package app

import "github.com/lambent/lambent/pkg/telemetry/prom"

// newPrometheus returns the metrics /metrics serves (LAMBENT_METRICS
// prometheus, local runs). Lambda builds (tag lambent_lambda) leave the
// Prometheus client out: prometheus_lambda.go.
func newPrometheus() (prometheusMetrics, error) { return prom.New(), nil }
