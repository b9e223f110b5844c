# Lambda without SAM or Docker (included by the Makefile via `-include mk/*.mk`).
#
# `make invoke FN=gateway EVENT=events/<file>.json` builds ./functions/$(FN)
# for this machine and runs it once against a fake Lambda Runtime API
# (internal/lambdarun) with that event, printing the reply, a streamed one
# chunk by chunk as it arrives. LAMBENT_* and AWS_* variables pass through;
# with no LAMBENT_PROVIDER_URL a fake model answers, with no LAMBENT_STORE the
# memory store is used.
#
# `make lambda-metrics` prints the size of every function's bootstrap as
# deployed (linux/arm64, static, stripped) and the gateway's start-up time:
# from process start to its first invocation served under the fake Runtime
# API (a native build, median of LAMBDA_METRICS_RUNS fresh processes).

FN    ?= gateway
EVENT ?=
LAMBDA_FUNCTIONS      ?= $(sort $(patsubst functions/%/main.go,%,$(wildcard functions/*/main.go functions/tools/*/main.go)))
LAMBDA_METRICS_DIR    ?= $(CACHE_DIR)/lambda-metrics
LAMBDA_METRICS_RUNS   ?= 21
LAMBDA_METRICS_EVENT  ?= events/gateway-url-healthz.json
LAMBDA_SIZE_TARGET    ?= 12000000
LAMBDA_STARTUP_TARGET ?= 50

.PHONY: invoke lambda-metrics

## invoke: run functions/$(FN) once against the fake Lambda Runtime API with EVENT=events/<file>.json, printing the reply as it streams
invoke:
	@if [ -z "$(EVENT)" ]; then echo "usage: make invoke FN=gateway EVENT=events/<file>.json"; ls events/*.json 2>/dev/null; exit 2; fi
	$(GO) run ./internal/cmd/invoke -fn $(FN) -event $(EVENT)

## lambda-metrics: size of each linux/arm64 stripped bootstrap (gateway target <= 12 MB) and gateway start-up under the fake Runtime API (target <= 50 ms)
lambda-metrics:
	@set -e; \
	for fn in $(LAMBDA_FUNCTIONS); do \
		out="$(LAMBDA_METRICS_DIR)/$$fn/bootstrap"; \
		$(LAMBDA_BUILD) -o "$$out" ./functions/$$fn; \
		size=$$(wc -c < "$$out" | tr -d ' '); \
		verdict=""; \
		if [ "$$fn" = gateway ]; then \
			if [ "$$size" -le $(LAMBDA_SIZE_TARGET) ]; then verdict=", target <= 12 MB: within"; else verdict=", target <= 12 MB: OVER"; fi; \
		fi; \
		awk -v fn="$$fn" -v b="$$size" -v v="$$verdict" 'BEGIN { printf "%-20s bootstrap linux/arm64 stripped: %.2f MB (%.2f MiB, %d bytes)%s\n", fn, b/1e6, b/1048576, b, v }'; \
	done
	@$(GO) run ./internal/cmd/invoke -fn gateway -event $(LAMBDA_METRICS_EVENT) -runs $(LAMBDA_METRICS_RUNS) -target-ms $(LAMBDA_STARTUP_TARGET)
