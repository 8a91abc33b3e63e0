#!/usr/bin/env bash
# bench/compare.sh — metad next to etcd, on one machine, in one command.
#
# Builds metad, metad-bench, the etcd load driver (bench/etcdload, its own
# module) and the comparison driver (bench/compare); gets an etcd server
# (ETCD_BIN, else a cached build, else built from the Go module proxy in a
# temporary module, else Debian's etcd-server); starts a local 3-node metad
# cluster and a local 3-node etcd cluster with their data on the same disk;
# runs each metad operation and its nearest etcd equivalent side by side,
# interleaved, at each concurrency; prints the ratio table and which
# PERFORMANCE.md targets are met; stops both clusters.
#
#   bench/compare.sh
#
# The measurements PERFORMANCE.md reports (each prints its work directory;
# its results/summary.json is what BASELINE= and compare --diff read):
#
#   # 1. TLS cost (issue 10): plain, then mutual TLS on both systems, set side by side
#   WORKDIR=/tmp/cmp-plain CONCURRENCY=1,64 bench/compare.sh
#   WORKDIR=/tmp/cmp-tls CONCURRENCY=1,64 TLS=1 BASELINE=/tmp/cmp-plain/results/summary.json bench/compare.sh
#   # 2. a broker's read against S3 (weed mini), next to the bare ranged GET (issue 11)
#   WORKDIR=/tmp/cmp-s3 STORE=s3 CONCURRENCY=1,16 bench/compare.sh
#   # 3. one commit against another (the driver is always this checkout's; the servers are built at the commit)
#   WORKDIR=/tmp/cmp-old METAD_REV=<old commit> CONCURRENCY=1,64 bench/compare.sh
#   WORKDIR=/tmp/cmp-new CONCURRENCY=1,64 BASELINE=/tmp/cmp-old/results/summary.json bench/compare.sh
#   # 4. stream-set objects (issue 23): CommitObject of N streams vs an etcd txn of N puts, with commit-append beside
#   WORKDIR=/tmp/cmp-objects PAIRS=append-put,object-txn STREAMS_PER_OBJECT=1,10,100,1000 bench/compare.sh
#   # any two finished runs, afterwards:
#   go run ./bench/compare --diff /tmp/cmp-plain/results/summary.json /tmp/cmp-tls/results/summary.json
#
# Settings (environment):
#   DURATION=10s  WARMUP=2s  ROUNDS=3  CONCURRENCY=1,16,64
#   PAIRS=append-put,append-cas,resolve-get   (with STORE=s3: read-get)
#                      read-get: a broker's read (resolve, then a ranged read
#                      of the target by its identity) vs the bare ranged read
#                      of the same bytes, both by metad-bench; etcd is started
#                      only when a pair needs it
#                      object-txn: a stream-set object of N streams
#                      (metad-bench --workload commit-object) vs an etcd
#                      transaction of N puts (etcdload --workload txn), a
#                      row per N of STREAMS_PER_OBJECT; no etcd side above
#                      128 (etcd's --max-txn-ops)
#   STREAMS_PER_OBJECT=1,10,100,1000   the object-txn pair's sizes
#   TLS=1              mutual TLS everywhere: a CA and certificates made by
#                      `metad tls ca create` / `metad tls cert create`; the
#                      metad servers with --tls-*-file, metad-bench with a
#                      client certificate of role writer; etcd with client
#                      and peer TLS and --client-cert-auth, etcdload with a
#                      client certificate
#   STORE=s3           the metad servers keep objects in a versioned bucket of
#                      SeaweedFS weed mini (scripts/weed.sh builds it once per
#                      machine), started here on WEED_PORT..WEED_PORT+10;
#                      default STORE=file: a directory shared by the nodes
#   METAD_REV=COMMIT   build the metad servers from COMMIT (git archive of it
#                      into the work directory); the load drivers stay this
#                      checkout's. COMMIT's server must take the flags used
#                      here (--peer-secret-file is given only if it has it;
#                      TLS=1 and STORE=s3 need this turn's flags); release
#                      0.1.0 (3fc933d) runs
#   BASELINE=FILE      a summary.json of an earlier run: print this run's
#                      cost against it (compare --diff) at the end
#   ROUTE=default      each side's own client as shipped: metad's sends calls
#                      to the leader once it knows it, etcd's clientv3 spreads
#                      them round robin over the three members (the default);
#                      ROUTE=all spreads both sides' calls over all members
#                      (metad-bench --spread); ROUTE=leader sends both sides'
#                      calls to their cluster's leader only
#   METAD_SERVER_FLAGS="--share-pins=false"   extra flags for every metad server
#   PROFILE=1          also take 20s CPU profiles of every metad node during a
#                      resolve run and a commit-append run at concurrency 64
#                      (and, with object-txn, a commit-object run of 100
#                      streams per object)
#   WORKDIR=DIR        where data, logs, JSON and profiles go (default: a new
#                      temporary directory, kept and printed at the end)
#   METAD_PORT=17400 ETCD_PORT=12300   port bases (node i uses base+10*i+0..3)
#   WEED_PORT=18600                    weed mini's ports (base+0..10; STORE=s3)
#   ETCD_BIN=PATH      use this etcd server
#   METAD_BENCH_CACHE=DIR              where a built etcd is kept (~/.cache/metad-bench)
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
DURATION=${DURATION:-10s}
WARMUP=${WARMUP:-2s}
ROUNDS=${ROUNDS:-3}
CONCURRENCY=${CONCURRENCY:-1,16,64}
STREAMS_PER_OBJECT=${STREAMS_PER_OBJECT:-1,10,100,1000}
TLS=${TLS:-0}
STORE=${STORE:-file}
case "$STORE" in
file) PAIRS=${PAIRS:-append-put,append-cas,resolve-get} ;;
s3) PAIRS=${PAIRS:-read-get} ;;
*) echo "STORE=$STORE: want file or s3" >&2; exit 2 ;;
esac
case "$TLS" in 0 | 1) ;; *) echo "TLS=$TLS: want 0 or 1" >&2; exit 2 ;; esac
METAD_PORT=${METAD_PORT:-17400}
ETCD_PORT=${ETCD_PORT:-12300}
WEED_PORT=${WEED_PORT:-18600}
ETCD_VERSION=v3.7.3
cache=${METAD_BENCH_CACHE:-${HOME:-/root}/.cache/metad-bench}
work=${WORKDIR:-$(mktemp -d /tmp/metad-bench.XXXXXX)}
bin=$work/bin
mkdir -p "$work" "$bin" "$cache"

say() { printf '==> %s\n' "$*" >&2; }

pids=()
weed_pid=""
cleanup() {
	for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
	# weed mini runs its parts as children: stop its whole process group.
	if [ -n "$weed_pid" ]; then kill -- "-$weed_pid" 2>/dev/null || true; fi
	for pid in "${pids[@]}" $weed_pid; do wait "$pid" 2>/dev/null || true; done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# needs_etcd says whether a pair of PAIRS has etcd on its other side.
needs_etcd() { [[ ",$PAIRS," =~ ,(append-put|append-cas|resolve-get|object-txn), ]]; }

build() {
	say "building metad-bench, bench/compare and bench/etcdload"
	(cd "$repo" && go build -o "$bin/metad-bench" ./cmd/metad-bench && go build -o "$bin/compare" ./bench/compare)
	(cd "$repo/bench/etcdload" && go build -o "$bin/etcdload" .)
	if [ -z "${METAD_REV:-}" ]; then
		say "building metad"
		(cd "$repo" && go build -o "$bin/metad" ./cmd/metad)
		metad_rev=$(git -C "$repo" describe --always --dirty 2>/dev/null || echo unknown)
		return
	fi
	# The servers at another commit: a clean copy of its tree, built here.
	metad_rev=$(git -C "$repo" rev-parse --short "$METAD_REV^{commit}") || { echo "METAD_REV=$METAD_REV: not a commit" >&2; exit 2; }
	say "building metad at $metad_rev (METAD_REV=$METAD_REV)"
	rm -rf "$work/metad-src" && mkdir -p "$work/metad-src"
	git -C "$repo" archive "$metad_rev" | tar -x -C "$work/metad-src"
	(cd "$work/metad-src" && go build -o "$bin/metad" ./cmd/metad)
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
	if [ "$STORE" = s3 ]; then
		for p in $(seq "$WEED_PORT" $((WEED_PORT + 10))); do
			port_free "$p" || { echo "port $p is in use: set WEED_PORT" >&2; exit 1; }
		done
	fi
}

# --- TLS (TLS=1) ----------------------------------------------------------

tls=$work/tls
# Client flags: metad's CLI and metad-bench (metad_cli_tls), etcdload
# (etcd_cli_tls), curl against metad's admin address and etcd.
metad_cli_tls=()
metad_bench_tls=""
etcd_load_tls=""
curl_metad=()
curl_etcd=()
scheme=http

make_certs() {
	say "making a CA and certificates in $tls (metad tls ca create / cert create)"
	mkdir -p "$tls"
	local i
	"$bin/metad" tls ca create --out-dir "$tls" >/dev/null
	for i in 1 2 3; do
		"$bin/metad" tls cert create --out-dir "$tls" --role server --name "n$i" >/dev/null
		# etcd's members: serverAuth and clientAuth, for client and peer TLS.
		"$bin/metad" tls cert create --out-dir "$tls" --role server --name "etcd-e$i" >/dev/null
	done
	# metad-bench does what a broker does: role writer. The status calls
	# the script makes use an operator certificate.
	"$bin/metad" tls cert create --out-dir "$tls" --role client --client-role writer --name bench >/dev/null
	"$bin/metad" tls cert create --out-dir "$tls" --role client --client-role operator --name operator >/dev/null
	"$bin/metad" tls cert create --out-dir "$tls" --role client --client-role reader --name etcd-client >/dev/null
	metad_cli_tls=(--tls-ca-file "$tls/metad-ca.pem" --tls-cert-file "$tls/operator.pem" --tls-key-file "$tls/operator-key.pem")
	metad_bench_tls="--tls-ca-file $tls/metad-ca.pem --tls-cert-file $tls/bench.pem --tls-key-file $tls/bench-key.pem"
	etcd_load_tls="--cacert $tls/metad-ca.pem --cert $tls/etcd-client.pem --key $tls/etcd-client-key.pem"
	curl_metad=(--cacert "$tls/metad-ca.pem")
	curl_etcd=(--cacert "$tls/metad-ca.pem" --cert "$tls/etcd-client.pem" --key "$tls/etcd-client-key.pem")
	scheme=https
}

# --- S3 (STORE=s3) --------------------------------------------------------

weed_bucket=metad-bench
weed_endpoint="http://127.0.0.1:$WEED_PORT"
store_args=""
metad_store_args=()

# start_weed runs weed mini with one identity, waits for its S3 API, makes
# a versioned bucket and points the AWS SDK's default chain (the servers'
# and metad-bench's) at it.
start_weed() {
	local weed; weed=$(bash "$repo/scripts/weed.sh")
	local dir=$work/weed p=$WEED_PORT
	mkdir -p "$dir/data"
	export AWS_ACCESS_KEY_ID=metadbench AWS_SECRET_ACCESS_KEY=metadbench-secret AWS_REGION=us-east-1 \
		AWS_EC2_METADATA_DISABLED=true AWS_CONFIG_FILE=/dev/null AWS_SHARED_CREDENTIALS_FILE=/dev/null
	printf '{"identities":[{"name":"bench","credentials":[{"accessKey":"%s","secretKey":"%s"}],"actions":["Admin","Read","Write","List","Tagging"]}]}' \
		"$AWS_ACCESS_KEY_ID" "$AWS_SECRET_ACCESS_KEY" >"$dir/s3.json"
	say "starting weed mini ($("$weed" version 2>/dev/null | sed -n 1p); S3 at $weed_endpoint)"
	setsid "$weed" mini -dir="$dir/data" -ip=127.0.0.1 -ip.bind=127.0.0.1 -s3.config="$dir/s3.json" \
		-s3.port="$p" -s3.port.grpc=$((p + 1)) -master.port=$((p + 2)) -master.port.grpc=$((p + 3)) \
		-filer.port=$((p + 4)) -filer.port.grpc=$((p + 5)) -volume.port=$((p + 6)) -volume.port.grpc=$((p + 7)) \
		-webdav.port=$((p + 8)) -admin.port=$((p + 9)) -admin.port.grpc=$((p + 10)) -admin.port.legacy=0 \
		-s3.port.iceberg=0 -s3.port.lance=0 -webdav=false -admin.ui=false -master.telemetry=false \
		>"$dir/weed.log" 2>&1 &
	weed_pid=$!
	# The bucket: created (retried while weed's parts start), then versioned.
	local deadline=$((SECONDS + 120)) code
	until code=$(s3_request PUT "/$weed_bucket") && [[ $code = 200 || $code = 409 ]]; do
		kill -0 "$weed_pid" 2>/dev/null || { echo "weed mini exited; see $dir/weed.log" >&2; exit 1; }
		[ $SECONDS -lt $deadline ] || { echo "weed mini: no bucket after 120s (last HTTP $code); see $dir/weed.log" >&2; exit 1; }
		sleep 0.5
	done
	code=$(s3_request PUT "/$weed_bucket?versioning=" \
		'<VersioningConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Status>Enabled</Status></VersioningConfiguration>')
	[ "$code" = 200 ] || { echo "weed mini: enabling versioning on $weed_bucket: HTTP $code" >&2; exit 1; }
	metad_store_args=(--object-store "s3://$weed_bucket/objects" --s3-endpoint "$weed_endpoint" --s3-path-style)
	store_args="${metad_store_args[*]}"
}

# s3_request sends a SigV4-signed request to weed mini (curl signs it; the
# body's hash goes in x-amz-content-sha256, which S3 wants and curl 7.x
# does not add; a subresource is spelled "?name=", as SigV4 canonicalises
# it) and prints the HTTP status (000 when it does not answer).
s3_request() {
	local method=$1 path=$2 body=${3:-} sum
	sum=$(printf '%s' "$body" | sha256sum | cut -d' ' -f1)
	curl -s -o /dev/null -w '%{http_code}' -X "$method" --aws-sigv4 "aws:amz:$AWS_REGION:s3" \
		--user "$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY" -H "x-amz-content-sha256: $sum" \
		${body:+--data "$body"} "$weed_endpoint$path" || true
}

metad_addr() { echo "127.0.0.1:$((METAD_PORT + $1 * 10))"; }
metad_http() { echo "127.0.0.1:$((METAD_PORT + $1 * 10 + 3))"; }
etcd_client() { echo "127.0.0.1:$((ETCD_PORT + $1 * 10))"; }
metad_status() { "$bin/metad" status --addr "$(metad_addr 1)" "${metad_cli_tls[@]}" "$@"; }
etcd_peer() { echo "127.0.0.1:$((ETCD_PORT + $1 * 10 + 1))"; }

start_metad() {
	say "starting a 3-node metad cluster (gRPC $(metad_addr 1), $(metad_addr 2), $(metad_addr 3))"
	local joins=() i p
	for i in 1 2 3; do joins+=(--join "127.0.0.1:$((METAD_PORT + i * 10 + 2))"); done
	local store=(--object-dir "$work/objects") security
	[ "$STORE" = s3 ] && store=("${metad_store_args[@]}")
	local plain=()
	# The nodes' shared secret for their node-to-node service (no TLS), if
	# this metad has one (METAD_REV may be older than it).
	if [ "$TLS" = 0 ] && "$bin/metad" server --help 2>&1 | grep -q -- --peer-secret-file; then
		(umask 077 && head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$work/peer-secret")
		plain=(--peer-secret-file "$work/peer-secret")
	fi
	for i in 1 2 3; do
		p=$((METAD_PORT + i * 10))
		security=("${plain[@]}")
		[ "$TLS" = 1 ] && security=(--tls-cert-file "$tls/n$i.pem" --tls-key-file "$tls/n$i-key.pem" --tls-ca-file "$tls/metad-ca.pem")
		"$bin/metad" server --node-id "n$i" --data-dir "$work/metad-n$i" \
			--grpc-addr "127.0.0.1:$p" --raft-addr "127.0.0.1:$((p + 1))" \
			--gossip-addr "127.0.0.1:$((p + 2))" --http-addr "127.0.0.1:$((p + 3))" \
			"${store[@]}" --bootstrap-expect 3 "${joins[@]}" "${security[@]}" \
			--log-level warn --pprof ${METAD_SERVER_FLAGS:-} >"$work/metad-n$i.log" 2>&1 &
		pids+=($!)
	done
}

start_etcd() {
	local etcd=$1 cluster="" i
	say "starting a 3-node etcd cluster ($("$etcd" --version | sed -n 1p); clients $(etcd_client 1), $(etcd_client 2), $(etcd_client 3))"
	for i in 1 2 3; do cluster+="${cluster:+,}e$i=$scheme://$(etcd_peer "$i")"; done
	for i in 1 2 3; do
		local security=()
		if [ "$TLS" = 1 ]; then
			security=(--cert-file "$tls/etcd-e$i.pem" --key-file "$tls/etcd-e$i-key.pem"
				--trusted-ca-file "$tls/metad-ca.pem" --client-cert-auth
				--peer-cert-file "$tls/etcd-e$i.pem" --peer-key-file "$tls/etcd-e$i-key.pem"
				--peer-trusted-ca-file "$tls/metad-ca.pem" --peer-client-cert-auth)
		fi
		"$etcd" --name "e$i" --data-dir "$work/etcd-e$i" \
			--listen-client-urls "$scheme://$(etcd_client "$i")" --advertise-client-urls "$scheme://$(etcd_client "$i")" \
			--listen-peer-urls "$scheme://$(etcd_peer "$i")" --initial-advertise-peer-urls "$scheme://$(etcd_peer "$i")" \
			--initial-cluster "$cluster" --initial-cluster-state new --initial-cluster-token metad-bench \
			"${security[@]}" --log-level warn >"$work/etcd-e$i.log" 2>&1 &
		pids+=($!)
	done
}

etcd_health() { curl -fs "${curl_etcd[@]}" "$scheme://$(etcd_client "$1")/health" | grep -q '"health":"true"'; }

# wait_ready waits until every node of the clusters says it is ready and
# metad has a leader with three voters.
wait_ready() {
	local deadline=$((SECONDS + 60)) i
	for i in 1 2 3; do
		until curl -fs "${curl_metad[@]}" "$scheme://$(metad_http "$i")/readyz" >/dev/null && { ! needs_etcd || etcd_health "$i"; }; do
			[ $SECONDS -lt $deadline ] || { echo "clusters not ready after 60s; logs in $work" >&2; exit 1; }
			sleep 0.2
		done
	done
	until metad_status -o json 2>/dev/null | grep -Eq '"voters": *3'; do
		[ $SECONDS -lt $deadline ] || { echo "metad has no 3-voter quorum after 60s; logs in $work" >&2; exit 1; }
		sleep 0.2
	done
	metad_status >&2
}

# metad_leader and etcd_leader print the client address of their cluster's
# leader.
metad_leader() {
	local id
	id=$(metad_status -o json | grep -o '"leader_id": *"[^"]*"' | tail -1 | sed 's/.*"\([^"]*\)"$/\1/')
	metad_addr "${id#n}"
}

etcd_leader() {
	local i st
	for i in 1 2 3; do
		st=$(curl -fs "${curl_etcd[@]}" -X POST -d '{}' "$scheme://$(etcd_client "$i")/v3/maintenance/status")
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

# profile takes a CPU profile of every metad node while metad-bench runs
# workload (with any further arguments) at concurrency 64, starting
# PROFILE_LEAD seconds (default 4) into the run: past its setup, which for
# commit-object (thousands of streams created first) takes longer.
profile() {
	local workload=$1 dir=$work/profiles i lead=${PROFILE_LEAD:-4}
	shift
	mkdir -p "$dir"
	say "profiling metad during $workload at concurrency 64"
	local addrs; addrs="$(metad_addr 1),$(metad_addr 2),$(metad_addr 3)"
	"$bin/metad-bench" --addr "$addrs" $metad_bench_tls --workload "$workload" "$@" -c 64 --duration $((lead + 21))s --warmup 2s -o json >"$dir/$workload-bench.json" &
	local bench=$!
	sleep "$lead"
	local curls=()
	for i in 1 2 3; do
		curl -fs "${curl_metad[@]}" "$scheme://$(metad_http "$i")/debug/pprof/profile?seconds=20" -o "$dir/$workload-n$i.pprof" &
		curls+=($!)
	done
	wait "$bench" "${curls[@]}"
	metad_status >"$dir/status.txt"
	for i in 1 2 3; do
		go tool pprof -top -nodecount=25 "$bin/metad" "$dir/$workload-n$i.pprof" >"$dir/$workload-n$i.top" 2>/dev/null || true
		go tool pprof -top -cum -nodecount=60 "$bin/metad" "$dir/$workload-n$i.pprof" >"$dir/$workload-n$i.cum" 2>/dev/null || true
	done
	say "profiles in $dir (status.txt names the leader)"
}

main() {
	if [ -e "$work/metad-n1" ] || [ -e "$work/etcd-e1" ]; then
		echo "WORKDIR=$work holds an earlier run (its servers' data): give a new directory" >&2
		exit 2
	fi
	check_ports
	build
	local etcd="" etcd_version="not run (no pair needs it)"
	if needs_etcd; then
		etcd=$(etcd_server)
		etcd_version=$("$etcd" --version | sed -n 1p)
	fi
	[ "$TLS" = 1 ] && make_certs
	[ "$STORE" = s3 ] && start_weed
	[ "$STORE" = file ] && mkdir -p "$work/objects" && store_args="--object-dir $work/objects"
	start_metad
	if needs_etcd; then start_etcd "$etcd"; fi
	wait_ready
	{ echo; machine; } >&2
	mkdir -p "$work/results"
	local label="metad $metad_rev, TLS=$TLS, STORE=$STORE, ROUTE=${ROUTE:-default}${METAD_SERVER_FLAGS:+, servers: $METAD_SERVER_FLAGS}"
	say "running $label: duration $DURATION, warm-up $WARMUP, $ROUNDS rounds, concurrency $CONCURRENCY"
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
	[ "$TLS" = 1 ] && eps=$(echo "$eps" | sed "s#[^,]*#https://&#g")
	"$bin/compare" --metad-bench "$bin/metad-bench" --etcdload "$bin/etcdload" --metad-addrs "$addrs" --etcd-endpoints "$eps" \
		--duration "$DURATION" --warmup "$WARMUP" --rounds "$ROUNDS" --concurrency "$CONCURRENCY" \
		--pairs "$PAIRS" --streams-per-object "$STREAMS_PER_OBJECT" --metad-args "$margs $metad_bench_tls" --etcd-args "$etcd_load_tls" --store-args "$store_args" \
		--label "$label" --out "$work/results" 2> >(tee "$work/results/runs.txt" >&2) | tee "$work/results/table.txt"
	echo
	machine
	echo "etcd:   $etcd_version"
	echo "run:    $label"
	if [ -n "${BASELINE:-}" ]; then
		echo
		"$bin/compare" --diff "$BASELINE" "$work/results/summary.json" | tee "$work/results/diff.txt"
	fi
	if [ "${PROFILE:-0}" = 1 ]; then
		profile resolve
		profile commit-append
		if [[ ",$PAIRS," =~ ,object-txn, ]]; then PROFILE_LEAD=20 profile commit-object --streams-per-object 100; fi
	fi
	say "runs, logs and data in $work"
}

main "$@"
