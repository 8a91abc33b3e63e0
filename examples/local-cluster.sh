#!/usr/bin/env bash
# A three-node metad cluster on this machine, for trying metad out.
#
#   examples/local-cluster.sh start     build metad, start n1..n3 in the background
#   examples/local-cluster.sh status    metad status through n1
#   examples/local-cluster.sh restart   rolling restart: SIGTERM and restart each node in turn
#   examples/local-cluster.sh stop      SIGTERM every node (graceful shutdown)
#   examples/local-cluster.sh clean     stop, then delete the data and logs
#
# Node i (1..3) listens on BASE_PORT+10*i (gRPC), +1 (raft), +2 (gossip) and
# +3 (HTTP admin: /metrics, /healthz, /readyz); with the default BASE_PORT
# 7400, n1 serves gRPC on 127.0.0.1:7410 and /metrics on 127.0.0.1:7413.
# Data, logs and pid files go to DIR (default ./metad-local). METAD names
# a metad binary to use instead of building one.
set -euo pipefail

BASE_PORT=${BASE_PORT:-7400}
DIR=${DIR:-./metad-local}
NODES=(1 2 3)
mkdir -p "$DIR"

port() { echo $((BASE_PORT + 10 * $1 + $2)); }

binary() {
	if [[ -n "${METAD:-}" ]]; then
		echo "$METAD"
		return
	fi
	local root out
	root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
	out="$(cd "$DIR" && pwd)/metad"
	(cd "$root" && go build -o "$out" ./cmd/metad)
	echo "$out"
}

# peer_secret is the file of the secret the nodes share to call each
# other's node-to-node service (no TLS on loopback); made once per DIR.
peer_secret() {
	local f="$DIR/peer-secret"
	if [[ ! -s $f ]]; then
		(umask 077 && head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$f")
	fi
	echo "$f"
}

start_node() {
	local i=$1 bin=$2 joins=()
	for j in "${NODES[@]}"; do
		[[ $j == "$i" ]] || joins+=(--join "127.0.0.1:$(port "$j" 2)")
	done
	"$bin" server --node-id "n$i" --data-dir "$DIR/n$i" \
		--grpc-addr "127.0.0.1:$(port "$i" 0)" --raft-addr "127.0.0.1:$(port "$i" 1)" \
		--gossip-addr "127.0.0.1:$(port "$i" 2)" --http-addr "127.0.0.1:$(port "$i" 3)" \
		--object-dir "$DIR/objects" --bootstrap-expect "${#NODES[@]}" "${joins[@]}" \
		--peer-secret-file "$(peer_secret)" \
		>>"$DIR/n$i.log" 2>&1 &
	echo $! >"$DIR/n$i.pid"
	echo "n$i: pid $!, gRPC 127.0.0.1:$(port "$i" 0), metrics http://127.0.0.1:$(port "$i" 3)/metrics, log $DIR/n$i.log"
}

running() { [[ -f "$DIR/n$1.pid" ]] && kill -0 "$(cat "$DIR/n$1.pid")" 2>/dev/null; }

stop_node() {
	local i=$1
	running "$i" || return 0
	local pid
	pid=$(cat "$DIR/n$i.pid")
	kill -TERM "$pid"
	while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
	rm -f "$DIR/n$i.pid"
	echo "n$i: stopped"
}

wait_ready() {
	local i=$1
	for _ in $(seq 1 300); do
		if curl -fsS "http://127.0.0.1:$(port "$i" 3)/readyz" >/dev/null 2>&1; then
			return 0
		fi
		sleep 0.1
	done
	echo "n$i: not ready after 30s; see $DIR/n$i.log" >&2
	return 1
}

case "${1:-}" in
start)
	bin=$(binary)
	for i in "${NODES[@]}"; do
		if running "$i"; then echo "n$i: already running"; else start_node "$i" "$bin"; fi
	done
	for i in "${NODES[@]}"; do wait_ready "$i"; done
	"$bin" status --addr "127.0.0.1:$(port 1 0)"
	;;
status)
	"$(binary)" status --addr "127.0.0.1:$(port 1 0)"
	;;
restart)
	bin=$(binary)
	for i in "${NODES[@]}"; do
		stop_node "$i"
		start_node "$i" "$bin"
		wait_ready "$i"
	done
	"$bin" status --addr "127.0.0.1:$(port 1 0)"
	;;
stop)
	for i in "${NODES[@]}"; do stop_node "$i"; done
	;;
clean)
	for i in "${NODES[@]}"; do stop_node "$i"; done
	rm -rf "$DIR"
	;;
*)
	sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'
	exit 2
	;;
esac
