#!/usr/bin/env bash
# Starts a throwaway redis-server (temp dir, free port) and runs floodgate_cluster_flood against
# it for each COUNT given (default: 100 1000 10000), SECONDS each (default 10).
# With --stall instead: p99 of entry + exit before, during and after a SIGSTOP of Redis.
# Usage: bench/cluster_flood.sh [SECONDS] [COUNT...] | --stall   (build/release holds the binaries)
# OFFERED=1.2 paces the fleet at 1.2x each count instead of flooding (floodgate_cluster_flood).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
binary=${BINARY:-$repo/build/release/bench/floodgate_cluster_flood}
stall=
if [ "${1:-}" = --stall ]; then stall=1; shift; fi
seconds=${1:-10}
shift || true
counts=("${@:-100 1000 10000}")
dir=$(mktemp -d)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
redis-server --port "$port" --bind 127.0.0.1 --dir "$dir" --save '' --appendonly no \
  --logfile "$dir/redis.log" &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$dir"' EXIT
for _ in $(seq 50); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
if [ -n "$stall" ]; then
  "$repo/build/release/bench/floodgate_cluster_stall" "redis://127.0.0.1:$port" "$pid"
  exit 0
fi
for count in ${counts[@]}; do
  "$binary" "redis://127.0.0.1:$port" "$count" "$seconds" ${OFFERED:+"$OFFERED"}
  echo
done
