//go:build lambent_lambda

package app

import "errors"

// newPrometheus refuses in Lambda builds (tag lambent_lambda), which leave
// the Prometheus client out: metrics in Lambda are EMF (FromEnv refuses
// LAMBENT_METRICS=prometheus there already).
func newPrometheus() (prometheusMetrics, error) {
	return nil, errors.New("LAMBENT_METRICS: prometheus is not in this build (a Lambda build, tag lambent_lambda); use emf")
}
