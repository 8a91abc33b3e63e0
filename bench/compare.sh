#!/usr/bin/env bash
# bench/compare.sh — metad next to etcd, on one machine, in one command.
#
# Builds metad, the etcd load driver (bench/etcdload, its own module) and the
# comparison driver (bench/compare); gets an etcd server (ETCD_BIN, else a
# cached build, else built from the Go module proxy in a temporary module,
# else Debian's etcd-server); starts a local 3-node metad cluster and a local
# 3-node etcd cluster with their data on the same disk; runs each metad
# operation and its nearest etcd equivalent side by side, interleaved, at
# each concurrency; prints the ratio table and which PERFORMANCE.md targets
# are met; stops both clusters.
#
#   bench/compare.sh
#
# Settings (environment):
#   DURATION=10s  WARMUP=2s  ROUNDS=3  CONCURRENCY=1,16,64
#   PAIRS=append-put,append-cas,resolve-get
#   ROUTE=default      each side's own client as shipped: metad's sends calls
#                      to the leader once it knows it, etcd's clientv3 spreads
#                      them round robin over the three members (the default);
#                      ROUTE=all spreads both sides' calls over all members
#                      (metad bench --spread); ROUTE=leader sends both sides'
#                      calls to their cluster's leader only
#   METAD_SERVER_FLAGS="--share-pins=false"   extra flags for every metad server
#   PROFILE=1          also take 20s CPU profiles of every metad node during a
#                      resolve run and a commit-append run at concurrency 64
#   WORKDIR=DIR        where data, logs, JSON and profiles go (default: a new
#                      temporary directory, kept and printed at the end)
#   METAD_PORT=17400 ETCD_PORT=12300   port bases (node i uses base+10*i+0..3)
#   ETCD_BIN=PATH      use this etcd server
#   METAD_BENCH_CACHE=DIR              where a built etcd is kept (~/.cache/metad-bench)
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
DURATION=${DURATION:-10s}
WARMUP=${WARMUP:-2s}
ROUNDS=${ROUNDS:-3}
CONCURRENCY=${CONCURRENCY:-1,16,64}
PAIRS=${PAIRS:-append-put,append-cas,resolve-get}
METAD_PORT=${METAD_PORT:-17400}
ETCD_PORT=${ETCD_PORT:-12300}
ETCD_VERSION=v3.7.3
cache=${METAD_BENCH_CACHE:-${HOME:-/root}/.cache/metad-bench}
work=${WORKDIR:-$(mktemp -d /tmp/metad-bench.XXXXXX)}
bin=$work/bin
mkdir -p "$work" "$bin" "$cache"

say() { printf '==> %s\n' "$*" >&2; }

pids=()
cleanup() {
	for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
	for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

build() {
	say "building metad, bench/compare and bench/etcdload"
	(cd "$repo" && go build -o "$bin/metad" ./cmd/metad && go build -o "$bin/compare" ./bench/compare)
	(cd "$repo/bench/etcdload" && go build -o "$bin/etcdload" .)
}

# etcd_server prints the path of an etcd server binary, getting one first.
etcd_server() {
	if [ -n "${ETCD_BIN:-}" ]; then echo "$ETCD_BIN"; return; fi
	local cached=$cache/etcd-$ETCD_VERSION
	if [ -x "$cached" ]; then echo "$cached"; return; fi
	say "building etcd $ETCD_VERSION from the Go module proxy (about a minute, once)"
	local tmp; tmp=$(mktemp -d)
	if (cd "$tmp" && go mod init etcdbuild &&
		printf '//go:build tools\n\npackage tools\n\nimport _ "go.etcd.io/etcd/server/v3"\n' >tools.go &&
		go get "go.etcd.io/etcd/server/v3@$ETCD_VERSION" && go mod tidy &&
		go build -o "$cached" go.etcd.io/etcd/server/v3) >"$work/etcd-build.log" 2>&1; then
		rm -rf "$tmp"; echo "$cached"; return
	fi
	rm -rf "$tmp"
	say "building etcd failed (see $work/etcd-build.log); installing Debian's etcd-server"
	if ! command -v etcd >/dev/null; then
		apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq etcd-server >&2
	fi
	command -v etcd
}

port_free() { ! ss -Hltun "sport = :$1" 2>/dev/null | grep -q .; }

check_ports() {
	local p
	for i in 1 2 3; do
		for off in 0 1 2 3; do
			for p in $((METAD_PORT + i * 10 + off)) $((ETCD_PORT + i * 10 + off)); do
				port_free "$p" || { echo "port $p is in use: set METAD_PORT / ETCD_PORT" >&2; exit 1; }
			done
		done
	done
}

metad_addr() { echo "127.0.0.1:$((METAD_PORT + $1 * 10))"; }
metad_http() { echo "127.0.0.1:$((METAD_PORT + $1 * 10 + 3))"; }
etcd_client() { echo "127.0.0.1:$((ETCD_PORT + $1 * 10))"; }
etcd_peer() { echo "127.0.0.1:$((ETCD_PORT + $1 * 10 + 1))"; }

start_metad() {
	say "starting a 3-node metad cluster (gRPC $(metad_addr 1), $(metad_addr 2), $(metad_addr 3))"
	local joins=() i p
	for i in 1 2 3; do joins+=(--join "127.0.0.1:$((METAD_PORT + i * 10 + 2))"); done
	# The nodes' shared secret for their node-to-node service (no TLS here).
	(umask 077 && head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$work/peer-secret")
	for i in 1 2 3; do
		p=$((METAD_PORT + i * 10))
		"$bin/metad" server --node-id "n$i" --data-dir "$work/metad-n$i" \
			--grpc-addr "127.0.0.1:$p" --raft-addr "127.0.0.1:$((p + 1))" \
			--gossip-addr "127.0.0.1:$((p + 2))" --http-addr "127.0.0.1:$((p + 3))" \
			--object-dir "$work/objects" --bootstrap-expect 3 "${joins[@]}" \
			--peer-secret-file "$work/peer-secret" \
			--log-level warn --pprof ${METAD_SERVER_FLAGS:-} >"$work/metad-n$i.log" 2>&1 &
		pids+=($!)
	done
}

start_etcd() {
	local etcd=$1 cluster="" i
	say "starting a 3-node etcd cluster ($("$etcd" --version | head -1); clients $(etcd_client 1), $(etcd_client 2), $(etcd_client 3))"
	for i in 1 2 3; do cluster+="${cluster:+,}e$i=http://$(etcd_peer "$i")"; done
	for i in 1 2 3; do
		"$etcd" --name "e$i" --data-dir "$work/etcd-e$i" \
			--listen-client-urls "http://$(etcd_client "$i")" --advertise-client-urls "http://$(etcd_client "$i")" \
			--listen-peer-urls "http://$(etcd_peer "$i")" --initial-advertise-peer-urls "http://$(etcd_peer "$i")" \
			--initial-cluster "$cluster" --initial-cluster-state new --initial-cluster-token metad-bench \
			--log-level warn >"$work/etcd-e$i.log" 2>&1 &
		pids+=($!)
	done
}

# wait_ready waits until every node of both clusters says it is ready and
# metad has a leader with three voters.
wait_ready() {
	local deadline=$((SECONDS + 60)) i
	for i in 1 2 3; do
		until curl -fs "http://$(metad_http "$i")/readyz" >/dev/null && curl -fs "http://$(etcd_client "$i")/health" | grep -q '"health":"true"'; do
			[ $SECONDS -lt $deadline ] || { echo "clusters not ready after 60s; logs in $work" >&2; exit 1; }
			sleep 0.2
		done
	done
	until "$bin/metad" status --addr "$(metad_addr 1)" -o json 2>/dev/null | grep -Eq '"voters": *3'; do
		[ $SECONDS -lt $deadline ] || { echo "metad has no 3-voter quorum after 60s; logs in $work" >&2; exit 1; }
		sleep 0.2
	done
	"$bin/metad" status --addr "$(metad_addr 1)" >&2
}

# metad_leader and etcd_leader print the client address of their cluster's
# leader.
metad_leader() {
	local id
	id=$("$bin/metad" status --addr "$(metad_addr 1)" -o json | grep -o '"leaderId": *"[^"]*"' | tail -1 | sed 's/.*"\([^"]*\)"$/\1/')
	metad_addr "${id#n}"
}

etcd_leader() {
	local i st
	for i in 1 2 3; do
		st=$(curl -fs -X POST -d '{}' "http://$(etcd_client "$i")/v3/maintenance/status")
		if [ "$(echo "$st" | grep -o '"member_id":"[0-9]*"' | cut -d'"' -f4)" = "$(echo "$st" | grep -o '"leader":"[0-9]*"' | cut -d'"' -f4)" ]; then
			etcd_client "$i"
			return
		fi
	done
	echo "no etcd leader found" >&2
	exit 1
}

machine() {
	echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(free -g | awk '/^Mem:/ {print $2}') GiB memory"
	echo "load:   $(uptime | sed 's/.*load average/load average/')"
}

# profile takes a CPU profile of every metad node while metad bench runs
# workload at concurrency 64.
profile() {
	local workload=$1 dir=$work/profiles i
	mkdir -p "$dir"
	say "profiling metad during $workload at concurrency 64"
	local addrs; addrs="$(metad_addr 1),$(metad_addr 2),$(metad_addr 3)"
	"$bin/metad" bench --addr "$addrs" --workload "$workload" -c 64 --duration 25s --warmup 2s -o json >"$dir/$workload-bench.json" &
	local bench=$!
	sleep 4
	local curls=()
	for i in 1 2 3; do
		curl -fs "http://$(metad_http "$i")/debug/pprof/profile?seconds=20" -o "$dir/$workload-n$i.pprof" &
		curls+=($!)
	done
	wait "$bench" "${curls[@]}"
	"$bin/metad" status --addr "$(metad_addr 1)" >"$dir/status.txt"
	for i in 1 2 3; do
		go tool pprof -top -nodecount=25 "$bin/metad" "$dir/$workload-n$i.pprof" >"$dir/$workload-n$i.top" 2>/dev/null || true
		go tool pprof -top -cum -nodecount=60 "$bin/metad" "$dir/$workload-n$i.pprof" >"$dir/$workload-n$i.cum" 2>/dev/null || true
	done
	say "profiles in $dir (status.txt names the leader)"
}

main() {
	check_ports
	build
	local etcd; etcd=$(etcd_server)
	start_metad
	start_etcd "$etcd"
	wait_ready
	{ echo; machine; } >&2
	mkdir -p "$work/results"
	say "running: duration $DURATION, warm-up $WARMUP, $ROUNDS rounds, concurrency $CONCURRENCY"
	local addrs eps margs=""
	addrs="$(metad_addr 1),$(metad_addr 2),$(metad_addr 3)"
	eps="$(etcd_client 1),$(etcd_client 2),$(etcd_client 3)"
	case "${ROUTE:-default}" in
	default) ;;
	all) margs=--spread ;;
	leader)
		addrs=$(metad_leader)
		eps=$(etcd_leader)
		say "routing every call to the leaders: metad $addrs, etcd $eps"
		;;
	*) echo "ROUTE=${ROUTE}: want default, all or leader" >&2; exit 2 ;;
	esac
	"$bin/compare" --metad "$bin/metad" --etcdload "$bin/etcdload" --metad-addrs "$addrs" --etcd-endpoints "$eps" \
		--duration "$DURATION" --warmup "$WARMUP" --rounds "$ROUNDS" --concurrency "$CONCURRENCY" \
		--pairs "$PAIRS" --metad-args "$margs" --out "$work/results" 2> >(tee "$work/results/runs.txt" >&2) | tee "$work/results/table.txt"
	echo
	machine
	echo "etcd:   $("$etcd" --version | head -1)"
	echo "route:  ${ROUTE:-default}${METAD_SERVER_FLAGS:+; metad servers: $METAD_SERVER_FLAGS}"
	if [ "${PROFILE:-0}" = 1 ]; then
		profile resolve
		profile commit-append
	fi
	say "runs, logs and data in $work"
}

main "$@"
