#!/usr/bin/env bash
# Builds SeaweedFS's `weed` binary (the S3 server the object-store tests and
# the Jepsen harness run as `weed mini`) once per machine and prints its path.
#
# `go install` refuses seaweedfs because its go.mod has replace directives, so
# it is built as the main module: the module proxy gives its source, which is
# copied somewhere writable and built there. The binary is cached under
# ~/.cache/metad/ keyed by version, so only the first run pays (several
# minutes on two cores).
set -euo pipefail

version="${WEED_VERSION:-v0.0.0-20261109003541-7506e5f91cd6}"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/metad/weed-$version"
bin="$cache/weed"

mkdir -p "$cache"
# One build at a time per machine: test binaries that start together wait
# for the first one's build instead of each building.
exec 9>"$cache/build.lock"
flock 9
if [ -x "$bin" ]; then
	echo "$bin"
	exit 0
fi
src=$(GOFLAGS=-mod=mod go mod download -json "github.com/seaweedfs/seaweedfs@$version" |
	sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
if [ -z "$src" ]; then
	echo "weed.sh: go mod download of seaweedfs@$version named no source dir" >&2
	exit 1
fi
work=$(mktemp -d)
trap 'chmod -R u+w "$work"; rm -rf "$work"' EXIT
cp -r "$src/." "$work/"
chmod -R u+w "$work"
(cd "$work" && CGO_ENABLED=0 go build -trimpath -o "$bin.tmp" ./weed) >&2
mv "$bin.tmp" "$bin"
echo "$bin"
