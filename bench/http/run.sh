#!/usr/bin/env bash
# Demo /hello under wrk (keep-alive): guarded vs --no-guard, side by side in one run (SPEC §7).
#
# Starts floodgate-demo processes from one Release build: "guarded" by bench/http/rules.yaml (a
# QPS flow rule and a slow-ratio breaker on GET:/hello, limits that never block; requests carry
# an origin), "baseline" with --no-guard, and "control", a second --no-guard demo. Two phases,
# each in rounds:
#
# 1. Side by side (throughput): all demos on one CPU at once, each driven by its own wrk at the
#    same time. The kernel shares that CPU equally among them, so each one's throughput is its
#    share over its cost per request, and whatever slows the machine during a round slows all
#    alike. This phase gives the throughput verdict.
# 2. Alternating (latency): each demo alone in turn, in an order that rotates from round to
#    round: the p99 of a server that has its CPU to itself. This phase gives the latency verdict
#    (and a second, noisier throughput figure).
#
# Every round gives guarded / baseline ratios; a verdict is the median of the per-round ratios,
# which one disturbed round cannot move. The control demo is an A/A test: control / baseline
# compares two identical servers, so it shows how far the run can be trusted, and a phase whose
# control is off says that it cannot judge the budget.
#
# Environment: BUILD_DIR (build/release), ROUNDS (10, side by side), ALT_ROUNDS (36,
# alternating; 0 skips a phase), DURATION (3s), ALT_DURATION (1s, alternating rounds: a host
# stall spoils the p99 of one round, and the median of many short rounds moves less),
# CONNECTIONS (32 per demo), WRK_THREADS (1), DEMO_THREADS (1), WARMUP (2s), CONTROL (1; 0 drops
# the control demo), SERVER_CPUS / CLIENT_CPUS (taskset CPU lists for the demos and for wrk; by
# default, with two or more CPUs, the demos share the last CPU and wrk gets the others).
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo"
build=${BUILD_DIR:-build/release}
rounds=${ROUNDS:-10}
alt_rounds=${ALT_ROUNDS:-36}
duration=${DURATION:-3s}
alt_duration=${ALT_DURATION:-1s}
connections=${CONNECTIONS:-32}
wrk_threads=${WRK_THREADS:-1}
demo_threads=${DEMO_THREADS:-1}
warmup=${WARMUP:-2s}
control=${CONTROL:-1}
command -v wrk >/dev/null || { echo "wrk is not installed (apt-get install wrk)" >&2; exit 1; }
command -v python3 >/dev/null || { echo "python3 is not installed (apt-get install python3)" >&2; exit 1; }
# shellcheck source=bench/http/demos.sh
source bench/http/demos.sh
pin_cpus
build_demo "$build"

modes=(guarded baseline)
start_demo guarded
start_demo baseline --no-guard
if [ "$control" != 0 ]; then
  modes+=(control)
  start_demo control --no-guard
fi
declare -A port
for mode in "${modes[@]}"; do port[$mode]=$(port_of "$mode"); done

# Runs wrk; prints "<requests/s> <p99 in µs> <non-2xx>".
drive() {
  local target=$1 length=$2
  "${client_pin[@]}" wrk -t"$wrk_threads" -c"$connections" -d"$length" --latency -H 'X-Origin: bench' \
    "http://127.0.0.1:$target/hello" | awk '
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

# Prints a round's line and keeps it for the summary.
record() {
  local phase=$1 round=$2 mode=$3 rps=$4 p99=$5 errors=$6
  printf '%-6s %-9s %12s %10s %8s\n' "$round" "$mode" "$rps" "$p99" "$errors"
  echo "$phase $round $mode $rps $p99 $errors" >>"$tmp/results"
}

echo "$pin_description; $connections connections per demo"
echo "warming up ($warmup each)"
for mode in "${modes[@]}"; do drive "${port[$mode]}" "$warmup" >/dev/null; done
: >"$tmp/results"
header() { printf '%-6s %-9s %12s %10s %8s\n' round mode 'requests/s' 'p99 (us)' non-2xx; }

echo
echo "side by side: $rounds rounds of $duration, all demos at once"
header
for round in $(seq 1 "$rounds"); do
  drivers=()
  for mode in "${modes[@]}"; do
    drive "${port[$mode]}" "$duration" >"$tmp/$mode.round" &
    drivers+=($!)
  done
  wait "${drivers[@]}"
  for mode in "${modes[@]}"; do
    read -r rps p99 errors <"$tmp/$mode.round"
    record side "$round" "$mode" "$rps" "$p99" "$errors"
  done
done

# The order of alternating round r: every permutation of the modes in turn, so each mode runs
# in each position equally often (ABBA when there are two).
if [ "${#modes[@]}" = 3 ]; then
  orders=("0 1 2" "2 1 0" "1 2 0" "0 2 1" "2 0 1" "1 0 2")
else
  orders=("0 1" "1 0")
fi
echo
echo "alternating: $alt_rounds rounds of $alt_duration, one demo at a time"
header
for round in $(seq 1 "$alt_rounds"); do
  for i in ${orders[$(((round - 1) % ${#orders[@]}))]}; do
    mode=${modes[$i]}
    read -r rps p99 errors < <(drive "${port[$mode]}" "$alt_duration")
    record alt "$round" "$mode" "$rps" "$p99" "$errors"
  done
done

python3 "$repo/bench/http/summarize.py" "$tmp/results"
