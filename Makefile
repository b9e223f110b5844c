# Lambent — see README.md. `make run` starts the gateway locally; `make test`
# runs every test (it installs and starts DynamoDB Local itself).

GO        ?= go
GOFLAGS   ?=
ARTIFACTS_DIR ?= bin
CACHE_DIR ?= $(CURDIR)/.cache
export LAMBENT_CACHE ?= $(CACHE_DIR)

LAMBDA_BUILD = GOOS=linux GOARCH=arm64 CGO_ENABLED=0 $(GO) build -tags lambda.norpc,lambent_lambda -trimpath -ldflags "-s -w"
# Tool Lambdas (functions/tools/*) call out over HTTP/1.1 only: net/http without
# its bundled HTTP/2 (tag nethttpomithttp2), 0.15 MB less zipped (docs/aws.md).
TOOL_LAMBDA_BUILD = GOOS=linux GOARCH=arm64 CGO_ENABLED=0 $(GO) build -tags lambda.norpc,lambent_lambda,nethttpomithttp2 -trimpath -ldflags "-s -w"

.PHONY: help run demo test test-go lint bench bench-conversations load build fuzz clean

## help: list the targets with what each does
help:
	@grep -h '^## ' $(MAKEFILE_LIST) | sed 's/^## //' | awk -F': ' '/^[a-z-]+:/ {printf "  %-16s %s\n", $$1, substr($$0, length($$1) + 3); next} {printf "  %-16s %s\n", "", $$0}'

## run: start the gateway on LAMBENT_ADDR (default 127.0.0.1:8080), memory store, hosted tools in-process
run:
	$(GO) run ./functions/gateway

## demo: the gateway with a scripted fake model (no model, no AWS) on LAMBENT_ADDR, and curl commands to try
demo:
	$(GO) run ./cmd/demo

## test: lint, then every test with -race against DynamoDB Local (started and stopped here)
test: lint
	@set -e; \
	export LAMBENT_DYNAMODB_RUN_DIR=$$(mktemp -d); \
	eval "$$(scripts/dynamodb-local.sh start)"; \
	trap 'scripts/dynamodb-local.sh stop; rm -rf "$$LAMBENT_DYNAMODB_RUN_DIR"' EXIT; \
	export AWS_ENDPOINT_URL_DYNAMODB; \
	$(GO) test -race -count=1 $(GOFLAGS) ./...

## test-go: the Go tests only (DynamoDB Local must already run, or the DynamoDB tests start it)
test-go:
	$(GO) test -race -count=1 $(GOFLAGS) ./...

## lint: gofmt check, go vet and staticcheck (a tool of go.mod: go tool staticcheck)
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) tool staticcheck ./...

## bench: gateway overhead against a fake backend on loopback, beside a bare reverse proxy (the floor): latency, first text delta, requests/s (ratios beside their gates) and allocations/CPU per request, all in one process and then with the backend, the proxy and the gateway binary each in a process of its own (as issue 27 measured); prompt caching of a 10-turn agentic loop on each provider's fake (Bedrock with cache points beside without), the engine's per-turn cost and its per-request limit checks, MCP calls, listing and a 16-call turn, each provider's per-turn cost (Bedrock beside OpenAI-compatible), a 20-turn Codex session replayed with store:false (gateway µs and upstream bytes per turn, beside the model call), a 64 KB answer streamed in 4-byte fragments as a function call's arguments (beside the same bytes as text), decoding a create request (a one-line body and Codex CLI's first request, beside encoding/json's generic pass) and encoding a response (beside encoding/json), one model call of the OpenAI-compatible provider; then what an agentic response costs on AWS (DynamoDB requests, capacity units and bytes, Lambda GB-s; streamed, background, a WebSocket turn; on DynamoDB Local) and the gateway binary's peak memory over a 50-turn loop of 8 hosted calls of 100 KB and with 100 streams open
bench:
	$(GO) run ./cmd/bench
	@set -e; dir=$$(mktemp -d); trap 'rm -rf "$$dir"' EXIT; \
	$(GO) build -o "$$dir/gateway" ./functions/gateway; \
	$(GO) run ./cmd/bench -processes -gateway "$$dir/gateway"
	$(GO) run ./cmd/bench -cache
	$(GO) test -run='^$$' -bench='BenchmarkLoopTurn|BenchmarkMCPTurn|BenchmarkRequestLimits|BenchmarkCodexSession|BenchmarkFragments' -benchmem ./pkg/engine/
	$(GO) test -run='^$$' -bench=BenchmarkMCP -benchmem ./pkg/tools/mcp/
	$(GO) test -run='^$$' -bench=BenchmarkTurn -benchmem ./pkg/provider/bedrock/
	$(GO) test -run='^$$' -bench='BenchmarkDecodeCreate|BenchmarkMarshal/response/' -benchmem ./pkg/api/
	$(GO) test -run='^$$' -bench=BenchmarkCall -benchmem ./pkg/provider/openai/
	$(GO) run ./cmd/bench -cost
	@set -e; dir=$$(mktemp -d); trap 'rm -rf "$$dir"' EXIT; \
	$(GO) build -o "$$dir/gateway" ./functions/gateway; \
	$(GO) run ./cmd/bench -memory -gateway "$$dir/gateway" -memory-also 25000,10000

## bench-conversations: a conversation at 10 and 100 turns on DynamoDB Local and the memory store: append a turn, list a page of 20, load the model's context (µs, and the WCU/RCU DynamoDB reports), then the 100-turn table beside the previous_response_id chain's cost (the reference)
bench-conversations:
	$(GO) test -run='^$$' -bench=Conversation -benchtime=20x ./pkg/store/dynamodb/ ./pkg/store/
	$(GO) test -count=1 -run=TestConversationBudget -v ./pkg/store/dynamodb/ | grep -v '^=== '

## load: 200 concurrent streamed agentic responses through the gateway binary on the memory store and DynamoDB (Local unless AWS_ENDPOINT_URL_DYNAMODB is set), nothing lost, and its RSS at 100 streams; loopback only, stops by itself
LOAD_FLAGS ?=
load:
	@set -e; dir=$$(mktemp -d); trap 'rm -rf "$$dir"' EXIT; \
	$(GO) build -o "$$dir/gateway" ./functions/gateway; \
	$(GO) run ./cmd/bench -load -gateway "$$dir/gateway" $(LOAD_FLAGS)

## fuzz: run each fuzz target for FUZZTIME (default 20s)
FUZZTIME ?= 20s
FUZZ_TARGETS = FuzzDecodeCreateRequest:./pkg/api/ FuzzHandleMessage:./pkg/wsapi/ FuzzDecodeInputTokensRequest:./pkg/api/ FuzzDecodeChunk:./pkg/provider/openai/ FuzzChunkDecoders:./pkg/provider/openai/ \
	FuzzEvaluate:./pkg/tools/calculator/ FuzzDecodeCompactRequest:./pkg/api/ FuzzDecodeConversation:./pkg/api/ \
	FuzzUnmarshalMatchesEncodingJSON:./pkg/api/ FuzzOpen:./pkg/compaction/ FuzzHandle:./pkg/lambdaio/ \
	FuzzCreate:./pkg/httpapi/ FuzzCreateParam:./pkg/httpapi/ FuzzGetQuery:./pkg/httpapi/ FuzzInputTokens:./pkg/httpapi/ FuzzConversations:./pkg/httpapi/

fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
		echo "fuzz $${t%%:*} in $${t#*:}"; \
		$(GO) test -run='^$$' -fuzz="^$${t%%:*}$$" -fuzztime=$(FUZZTIME) "$${t#*:}"; \
	done

## build: linux/arm64 bootstraps of every function under $(ARTIFACTS_DIR)/<function>/bootstrap
FUNCTIONS = gateway worker websocket tools/calculator tools/fetch_url

build:
	@set -e; for fn in $(FUNCTIONS); do \
		echo "build $$fn -> $(ARTIFACTS_DIR)/$$fn/bootstrap"; \
		case $$fn in tools/*) $(TOOL_LAMBDA_BUILD) -o $(ARTIFACTS_DIR)/$$fn/bootstrap ./functions/$$fn;; \
		*) $(LAMBDA_BUILD) -o $(ARTIFACTS_DIR)/$$fn/bootstrap ./functions/$$fn;; esac; \
	done

clean:
	rm -rf bin .aws-sam

-include mk/*.mk
