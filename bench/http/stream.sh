#!/usr/bin/env bash
# The dashboard stream's cost to the request path (issue 20, SPEC §7): demo /hello under wrk with
# and without 16 /floodgate/stream subscribers, side by side in one run.
#
# Starts three guarded demos from one Release build (bench/http/rules.yaml): "streamed", which
# has 16 stream subscribers for the whole run, "quiet" with none, and "control", a second quiet
# one (the A/A test). As in run.sh's first phase, the demos share one CPU and are driven by wrk
# at the same time, so each one's throughput is its share of that CPU over its cost per
# request; every round gives streamed / quiet and control / quiet ratios, and the verdict is
# their median. The subscribers read on the client CPUs. The streamed demo's resident memory is
# sampled before the subscribers connect and after every round (flat memory).
#
# Environment: BUILD_DIR (build/release), ROUNDS (10), DURATION (6s: 10 x 6 s = the 60 s of the
# issue), CONNECTIONS (32), SUBSCRIBERS (16), WARMUP (2s), SERVER_CPUS / CLIENT_CPUS as run.sh.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo"
build=${BUILD_DIR:-build/release}
rounds=${ROUNDS:-10}
duration=${DURATION:-6s}
connections=${CONNECTIONS:-32}
subscribers=${SUBSCRIBERS:-16}
warmup=${WARMUP:-2s}
command -v wrk >/dev/null || { echo "wrk is not installed (apt-get install wrk)" >&2; exit 1; }
# shellcheck source=bench/http/demos.sh
source bench/http/demos.sh
pin_cpus
build_demo "$build"

declare -A port admin
modes=(streamed quiet control)
for mode in "${modes[@]}"; do start_demo "$mode"; done
for mode in "${modes[@]}"; do
  admin[$mode]=$(port_of "$mode" admin)  # printed after the listening line
  port[$mode]=$(port_of "$mode")
done

drive() {
  "${client_pin[@]}" wrk -t1 -c"$connections" -d"$1" -H 'X-Origin: bench' \
    "http://127.0.0.1:$2/hello" | awk '/Requests\/sec/ { print $2 }'
}
rss() { awk '/VmRSS/ { print $2 }' "/proc/${demo_pid[${1:-streamed}]}/status"; }

for mode in "${modes[@]}"; do drive "$warmup" "${port[$mode]}" >/dev/null; done
echo "rss before subscribers: streamed $(rss) kB, quiet $(rss quiet) kB"
total=$(( rounds * ${duration%s} + 5 ))
"${client_pin[@]}" python3 bench/http/stream_clients.py "${admin[streamed]}" "$subscribers" "$total" \
  >"$tmp/clients" &
clients=$!
pids+=($clients)
sleep 2  # the subscribers connect and receive the 5-minute history first
echo "rss with $subscribers subscribers: $(rss) kB"

printf '%-6s %12s %12s %12s %9s %9s %12s %12s\n' round streamed quiet control 's/q' 'c/q' \
  'rss s (kB)' 'rss q (kB)'
: >"$tmp/ratios"
for round in $(seq 1 "$rounds"); do
  drivers=()
  for mode in "${modes[@]}"; do
    drive "$duration" "${port[$mode]}" >"$tmp/$mode.rps" &
    drivers+=($!)
  done
  wait "${drivers[@]}"
  s=$(cat "$tmp/streamed.rps"); q=$(cat "$tmp/quiet.rps"); c=$(cat "$tmp/control.rps")
  sq=$(python3 -c "print(f'{$s/$q:.3f}')"); cq=$(python3 -c "print(f'{$c/$q:.3f}')")
  echo "$sq $cq" >>"$tmp/ratios"
  printf '%-6s %12s %12s %12s %9s %9s %12s %12s\n' "$round" "$s" "$q" "$c" "$sq" "$cq" "$(rss)" \
    "$(rss quiet)"
done
wait "$clients" || true
read -r ok events bytes <"$tmp/clients"
echo "subscribers answered 200: $ok of $subscribers; events received: $events; bytes: $bytes"
python3 - "$tmp/ratios" <<'PY'
import statistics, sys
rows = [tuple(map(float, l.split())) for l in open(sys.argv[1])]
sq = [r[0] for r in rows]; cq = [r[1] for r in rows]
print("streamed / quiet throughput: median %.3f (%.3f-%.3f)" % (statistics.median(sq), min(sq), max(sq)))
print("control / quiet (A/A):       median %.3f (%.3f-%.3f)" % (statistics.median(cq), min(cq), max(cq)))
PY
