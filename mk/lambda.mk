# Lambda without SAM or Docker (included by the Makefile via `-include mk/*.mk`).
#
# `make invoke FN=gateway EVENT=events/<file>.json` builds ./functions/$(FN)
# for this machine and runs it once against a fake Lambda Runtime API
# (internal/testing/lambdarun) with that event, printing the reply, a streamed one
# chunk by chunk as it arrives. LAMBENT_* and AWS_* variables pass through;
# with no LAMBENT_PROVIDER_URL a fake model answers, with no LAMBENT_STORE the
# memory store is used.
#
# `make lambda-metrics` prints the zipped size of every function's bootstrap
# as `make build` writes it (linux/arm64, static, stripped; zipped as Lambda
# ships it, Deflate at the best compression) and every function's cold
# start: from process start to its first invocation served under the fake
# Runtime API (an event of LAMBDA_METRICS_EVENTS each), reading the provider
# key and API keys from a fake SSM (awsconf.FromEnvironment, as in Lambda)
# (a native build, median of LAMBDA_METRICS_RUNS fresh processes).

FN    ?= gateway
EVENT ?=
LAMBDA_METRICS_RUNS   ?= 21
LAMBDA_STARTUP_TARGET ?= 15
# Zipped size limits (issue 27): the engine functions 6 MB, tool Lambdas 2.5 MB.
LAMBDA_SIZE_LIMITS    ?= gateway=6 worker=6 websocket=6 'tools/*=2.5'
# The event each function's cold start serves: one that needs no AWS
# service and no network (the WebSocket route queues on a fake SQS).
LAMBDA_METRICS_EVENTS ?= gateway:events/gateway-url-healthz.json worker:events/worker-eventbridge-create.json \
	websocket:events/websocket-default.json tools/calculator:events/tool-calculator.json \
	tools/fetch_url:events/tool-fetch_url-refused.json

.PHONY: invoke lambda-metrics worker-redelivery

## invoke: run functions/$(FN) once against the fake Lambda Runtime API with EVENT=events/<file>.json, printing the reply as it streams
invoke:
	@if [ -z "$(EVENT)" ]; then echo "usage: make invoke FN=gateway EVENT=events/<file>.json"; ls events/*.json 2>/dev/null; exit 2; fi
	$(GO) run ./cmd/invoke -fn $(FN) -event $(EVENT)

## lambda-metrics: zipped size of every function's bootstrap (`make build`) and each function's cold start under the fake Runtime API (gates: engine functions <= 6 MB, tools <= 2.5 MB; median <= 15 ms)
lambda-metrics: build
	@$(GO) run ./cmd/lambdazip -dir $(ARTIFACTS_DIR) $(addprefix -limit ,$(LAMBDA_SIZE_LIMITS)) $(FUNCTIONS)
	@set -e; $(GO) build -o $(ARTIFACTS_DIR)/.invoke ./cmd/invoke; \
	for fe in $(LAMBDA_METRICS_EVENTS); do \
		$(ARTIFACTS_DIR)/.invoke -fn $${fe%%:*} -event $${fe#*:} -runs $(LAMBDA_METRICS_RUNS) -target-ms $(LAMBDA_STARTUP_TARGET); \
	done

## worker-redelivery: one create message without "id" delivered 5 times to the worker (DynamoDB Local, fake model): responses and model calls per turn, beside their reference (1 and 1)
worker-redelivery:
	@$(GO) test -count=1 -v -run '^TestRedeliveredMessageRunsOnce$$' ./pkg/worker/ | grep -E 'worker redelivery:|^(ok|FAIL|---)'
