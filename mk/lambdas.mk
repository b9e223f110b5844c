# Hosted tools as Lambda functions (issue 6): a local Lambda Invoke endpoint
# and the tool executor's benchmark. Included by the Makefile (-include mk/*.mk).

LAMBENT_LAMBDAS_ADDR ?= 127.0.0.1:3001

.PHONY: lambdas bench-lambdas

## lambdas: serve every built-in tool function on a local Lambda Invoke endpoint at LAMBENT_LAMBDAS_ADDR
##          (default 127.0.0.1:3001); then `AWS_ENDPOINT_URL_LAMBDA=http://127.0.0.1:3001 make run`
lambdas:
	LAMBENT_LAMBDAS_ADDR=$(LAMBENT_LAMBDAS_ADDR) $(GO) run ./cmd/lambdas

## bench-lambdas: a turn's tool phase (16 concurrent calls) against one call, through the local endpoint and the SDK
bench-lambdas:
	$(GO) test -run='^$$' -bench=BenchmarkToolPhase -benchtime=2s ./pkg/tools/lambdaexec/
