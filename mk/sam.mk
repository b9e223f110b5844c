# AWS SAM targets (included by the Makefile via `-include mk/*.mk`).
#
# `sam build` runs `make build-<LogicalId>` for every function of template.yaml
# with `Metadata: BuildMethod: makefile`, in a copy of its CodeUri (the repository
# root) with ARTIFACTS_DIR set to that function's artifact directory; each target
# writes the function's linux/arm64 `bootstrap` there. (Run by hand they all write
# $(ARTIFACTS_DIR)/bootstrap, bin/bootstrap by default; `make build` builds every
# bootstrap side by side without SAM.) deploy/template_test.go checks that every
# such function has its target here.

SAM ?= sam
SAM_GO_BUILD = GOOS=linux GOARCH=arm64 CGO_ENABLED=0 $(GO) build -tags lambda.norpc,lambent_lambda -trimpath -ldflags "-s -w"
# Tool Lambdas speak HTTP/1.1 only (see TOOL_LAMBDA_BUILD in the Makefile).
SAM_TOOL_GO_BUILD = GOOS=linux GOARCH=arm64 CGO_ENABLED=0 $(GO) build -tags lambda.norpc,lambent_lambda,nethttpomithttp2 -trimpath -ldflags "-s -w"

.PHONY: build-GatewayFunction build-WorkerFunction build-WebSocketFunction build-CalculatorToolFunction build-FetchUrlToolFunction deploy sam-validate

build-GatewayFunction:
	$(SAM_GO_BUILD) -o $(ARTIFACTS_DIR)/bootstrap ./functions/gateway

build-WorkerFunction:
	$(SAM_GO_BUILD) -o $(ARTIFACTS_DIR)/bootstrap ./functions/worker

build-WebSocketFunction:
	$(SAM_GO_BUILD) -o $(ARTIFACTS_DIR)/bootstrap ./functions/websocket

build-CalculatorToolFunction:
	$(SAM_TOOL_GO_BUILD) -o $(ARTIFACTS_DIR)/bootstrap ./functions/tools/calculator

build-FetchUrlToolFunction:
	$(SAM_TOOL_GO_BUILD) -o $(ARTIFACTS_DIR)/bootstrap ./functions/tools/fetch_url

## deploy: sam build && sam deploy with samconfig.toml's default environment (SAM_GUIDED=1: sam deploy --guided)
deploy:
	$(SAM) build
	@if [ "$(SAM_GUIDED)" = "1" ]; then set -x; $(SAM) deploy --guided; else set -x; $(SAM) deploy; fi

## sam-validate: sam validate --lint when the SAM CLI is installed (else cfn-lint when installed, else a note)
sam-validate:
	@if command -v $(SAM) >/dev/null 2>&1; then \
		echo "$(SAM) validate --lint"; $(SAM) validate --lint; \
	elif command -v cfn-lint >/dev/null 2>&1; then \
		echo "sam-validate: the SAM CLI is not installed; running cfn-lint template.yaml instead"; cfn-lint template.yaml; \
	else \
		echo "sam-validate: the SAM CLI is not installed (https://docs.aws.amazon.com/serverless-application-model/latest/developerguide/install-sam-cli.html); nothing validated"; \
	fi
