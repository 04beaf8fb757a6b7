#!/usr/bin/env bash
# Instructions per /hello request on the demo's I/O thread, guarded and --no-guard (callgrind).
#
# Deterministic where wall-clock runs on a shared 2-core machine are not: each mode runs under
# valgrind with one server thread, wrk warms it up with one connection, the counters are zeroed,
# wrk drives it again for SECONDS, and the busiest thread's instructions are divided by the
# requests wrk completed. The difference of the two modes is what the middleware costs.
#
# Under valgrind, which has no rseq, the engine's per-CPU counter writes take the shared shard's
# atomic paths: the engine's part of the difference is larger than natively (README.md).
#
# Environment: BUILD_DIR (build/release; a build with -g names functions in the profiles),
# SECONDS_PER_MODE (5), OUT (a fresh temporary directory, kept for callgrind_annotate),
# EXTRA_FLAGS (e.g. "--rate-limit-headers ietf": also profiles the guarded demo with these flags
# and prints what they add).
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo"
build=${BUILD_DIR:-build/release}
seconds=${SECONDS_PER_MODE:-5}
out=${OUT:-$(mktemp -d)}
demo="$build/examples/floodgate-demo"
command -v valgrind >/dev/null || { echo "valgrind is not installed" >&2; exit 1; }
command -v wrk >/dev/null || { echo "wrk is not installed (apt-get install wrk)" >&2; exit 1; }
cmake --build "$build" --target floodgate-demo >/dev/null

# Profiles one mode; prints "<requests> <instructions per request>".
profile() {
  local dir=$1
  shift
  mkdir -p "$dir"
  valgrind --tool=callgrind --separate-threads=yes --callgrind-out-file="$dir/callgrind.out" \
    "$demo" --port 0 --admin-port 0 --threads 1 --rules bench/http/rules.yaml "$@" \
    >"$dir/demo.out" 2>"$dir/demo.err" &
  local pid=$!
  for _ in $(seq 1 600); do grep -qs '^listening' "$dir/demo.out" && break; sleep 0.1; done
  local port
  port=$(sed -n 's/^listening on http:\/\/[^:]*:\([0-9]*\)$/\1/p' "$dir/demo.out")
  [ -n "$port" ] || { cat "$dir/demo.err" >&2; exit 1; }
  local url="http://127.0.0.1:$port/hello"
  wrk -t1 -c1 -d3s -H 'X-Origin: bench' "$url" >/dev/null
  callgrind_control -z "$pid" >/dev/null
  wrk -t1 -c1 -d"${seconds}s" -H 'X-Origin: bench' "$url" >"$dir/wrk.txt"
  callgrind_control -d "$pid" >/dev/null
  kill -INT "$pid"
  wait "$pid" || true
  local requests busiest=0 ir
  requests=$(awk '/requests in/ {print $1}' "$dir/wrk.txt")
  for f in "$dir"/callgrind.out.1-*; do
    ir=$(awk '/^summary:/ {print $2; exit}' "$f")
    if [ "${ir:-0}" -gt "$busiest" ]; then busiest=$ir; fi
  done
  echo "$requests $((busiest / requests))"
}

read -r guarded_requests guarded < <(profile "$out/guarded")
read -r baseline_requests baseline < <(profile "$out/baseline" --no-guard)
echo "guarded:    $guarded instructions per request ($guarded_requests requests)"
echo "--no-guard: $baseline instructions per request ($baseline_requests requests)"
echo "middleware: $((guarded - baseline)) instructions per request (profiles in $out)"
if [ -n "${EXTRA_FLAGS:-}" ]; then
  # shellcheck disable=SC2086  # the flags are words
  read -r extra_requests extra < <(profile "$out/extra" $EXTRA_FLAGS)
  echo "guarded $EXTRA_FLAGS: $extra instructions per request ($extra_requests requests)"
  echo "$EXTRA_FLAGS adds: $((extra - guarded)) instructions per request"
fi
