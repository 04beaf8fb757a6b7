#!/usr/bin/env bash
# Demo /hello under wrk (keep-alive): guarded vs --no-guard, side by side in one run (SPEC §7).
#
# Starts two floodgate-demo processes from the same Release build — one guarded by
# bench/http/rules.yaml (a QPS flow rule and a slow-ratio breaker on GET:/hello, requests carry an
# origin), one with --no-guard — and alternates wrk rounds between them (ABBA order, so drift in
# machine load hits both alike). Prints each round, the throughput ratio and the p99 latencies.
#
# Environment: BUILD_DIR (build/release), ROUNDS (4), DURATION (5s), CONNECTIONS (32),
# WRK_THREADS (1), DEMO_THREADS (1), WARMUP (2s), SERVER_CPUS / CLIENT_CPUS (taskset CPU lists
# for the demos and for wrk; unset: not pinned).
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo"
build=${BUILD_DIR:-build/release}
rounds=${ROUNDS:-4}
duration=${DURATION:-5s}
connections=${CONNECTIONS:-32}
wrk_threads=${WRK_THREADS:-1}
demo_threads=${DEMO_THREADS:-1}
warmup=${WARMUP:-2s}
server_pin=()
client_pin=()
[ -n "${SERVER_CPUS:-}" ] && server_pin=(taskset -c "$SERVER_CPUS")
[ -n "${CLIENT_CPUS:-}" ] && client_pin=(taskset -c "$CLIENT_CPUS")

command -v wrk >/dev/null || { echo "wrk is not installed (apt-get install wrk)" >&2; exit 1; }
if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake --preset release -DCMAKE_COMPILE_WARNING_AS_ERROR=OFF >/dev/null
fi
cmake --build "$build" --target floodgate-demo >/dev/null
demo="$build/examples/floodgate-demo"

tmp=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

# Starts the demo with the given flags in the background (this shell keeps its pid).
start_demo() {
  local name=$1
  shift
  "${server_pin[@]}" "$demo" --port 0 --admin-port 0 --threads "$demo_threads" --rules bench/http/rules.yaml "$@" \
    >"$tmp/$name.out" 2>"$tmp/$name.err" &
  pids+=($!)
}

# Prints the port a started demo listens on, once it does.
port_of() {
  local name=$1
  for _ in $(seq 1 500); do
    if grep -qs '^listening on' "$tmp/$name.out"; then
      sed -n 's/^listening on http:\/\/[^:]*:\([0-9]*\)$/\1/p' "$tmp/$name.out"
      return
    fi
    sleep 0.01
  done
  echo "$name did not start:" >&2
  cat "$tmp/$name.err" >&2
  exit 1
}

start_demo guarded
start_demo baseline --no-guard
guarded_port=$(port_of guarded)
baseline_port=$(port_of baseline)

# Runs wrk; prints "<requests/s> <p99 in µs> <non-2xx>".
drive() {
  local port=$1 length=$2
  "${client_pin[@]}" wrk -t"$wrk_threads" -c"$connections" -d"$length" --latency -H 'X-Origin: bench' \
    "http://127.0.0.1:$port/hello" | awk '
      function us(v) {
        if (v ~ /us$/) return v + 0;
        if (v ~ /ms$/) return v * 1000;
        if (v ~ /s$/) return v * 1000000;
        return v;
      }
      /Requests\/sec/ { rps = $2 }
      $1 == "99%" { p99 = us($2) }
      /Non-2xx/ { errors = $NF }
      END { printf "%.0f %.0f %d\n", rps, p99, errors + 0 }'
}

echo "warming up ($warmup each)"
drive "$guarded_port" "$warmup" >/dev/null
drive "$baseline_port" "$warmup" >/dev/null

printf '%-6s %-9s %12s %10s %8s\n' round mode 'requests/s' 'p99 (us)' non-2xx
results=()
for round in $(seq 1 "$rounds"); do
  if ((round % 2)); then order=(guarded baseline); else order=(baseline guarded); fi
  for mode in "${order[@]}"; do
    port=$guarded_port
    [ "$mode" = baseline ] && port=$baseline_port
    read -r rps p99 errors < <(drive "$port" "$duration")
    printf '%-6s %-9s %12s %10s %8s\n' "$round" "$mode" "$rps" "$p99" "$errors"
    results+=("$mode $rps $p99")
  done
done

printf '%s\n' "${results[@]}" | awk '
  function median(a, n,   i, j, t) {
    for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
  }
  { rps[$1] += $2; n[$1]++; p99[$1, n[$1]] = $3; last[$1] = $2
    if (n["guarded"] == n["baseline"]) { k++; r[k] = last["guarded"] / last["baseline"] } }
  END {
    for (i = 1; i <= n["guarded"]; i++) g[i] = p99["guarded", i]
    for (i = 1; i <= n["baseline"]; i++) b[i] = p99["baseline", i]
    gp = median(g, n["guarded"]); bp = median(b, n["baseline"])
    ratio = rps["guarded"] / rps["baseline"]
    printf "\nthroughput: guarded %.0f req/s, --no-guard %.0f req/s (mean of %d rounds)\n",
           rps["guarded"] / n["guarded"], rps["baseline"] / n["baseline"], n["guarded"]
    printf "throughput ratio guarded / --no-guard: %.3f (budget >= 0.97); median per-round ratio %.3f\n", ratio, median(r, k)
    printf "p99 latency (median of rounds): guarded %d us, --no-guard %d us, %+.1f%% (budget <= +5%%)\n",
           gp, bp, (gp / bp - 1) * 100
  }'
