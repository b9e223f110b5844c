# A local try-out of the Bedrock provider (included by the Makefile via
# `-include mk/*.mk`).
#
# `make fakebedrock` runs the scripted fake Bedrock runtime
# (internal/testing/fakebedrock: Converse and ConverseStream over real HTTP and AWS
# event-stream frames) on FAKEBEDROCK_ADDR (default 127.0.0.1:8091) and
# prints the environment that points `make run` at it with
# LAMBENT_PROVIDER=bedrock.

.PHONY: fakebedrock

fakebedrock:
	$(GO) run ./cmd/fakebedrock
