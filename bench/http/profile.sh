#!/usr/bin/env bash
# Where the guard's share of a /hello request goes, natively: perf, guarded vs --no-guard.
#
# callgrind.sh counts instructions under valgrind, which has no rseq (the engine then takes its
# shared-shard paths) and no cache misses; run.sh gives one ratio for the whole guard. This
# script samples both demos with perf while they serve side by side on one CPU (as in run.sh's
# throughput phase, each driven by its own wrk) and prints, per function, its share of each
# process's samples and the difference: what the guarded process spends that the bare one does
# not, in the request path's own terms (the clock, the entry, the exit, the coroutine).
#
# Shares are of all the process's samples, kernel included; a share times the CPU time of one
# request (one CPU over the demos' summed requests per second) is that function's time per
# request. perf uses the software clock event (cpu-clock), which works on VMs without PMU.
#
# Environment: BUILD_DIR (build/release; -g is not needed, symbols suffice), DEMO (a demo binary
# to profile instead of BUILD_DIR's, which is then not rebuilt), SECONDS_PER_RUN (6,
# sampled after 3 s of load), TOP (25 rows), SERVER_CPU (the last CPU), CLIENT_CPUS (the others).
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo"
build=${BUILD_DIR:-build/release}
seconds=${SECONDS_PER_RUN:-6}
top=${TOP:-25}
cpus=$(nproc)
server_cpu=${SERVER_CPU:-$((cpus - 1))}
client_cpus=${CLIENT_CPUS:-0-$((cpus > 1 ? cpus - 2 : 0))}
demo=${DEMO:-$build/examples/floodgate-demo}
command -v perf >/dev/null || { echo "perf is not installed (apt-get install linux-perf)" >&2; exit 1; }
command -v wrk >/dev/null || { echo "wrk is not installed (apt-get install wrk)" >&2; exit 1; }
[ -n "${DEMO:-}" ] || cmake --build "$build" --target floodgate-demo >/dev/null

demo_pin=(taskset -c "$server_cpu")
# shellcheck source=bench/http/demos.sh
source bench/http/demos.sh

start_demo guarded
start_demo bare --no-guard
load=$((seconds + 5))
drivers=()
for mode in guarded bare; do
  port=$(port_of "$mode")
  taskset -c "$client_cpus" wrk -t1 -c32 -d"${load}s" -H 'X-Origin: bench' \
    "http://127.0.0.1:$port/hello" >"$tmp/$mode.wrk" &
  drivers+=($!)
done
sleep 3
for mode in guarded bare; do
  perf record -q -e cpu-clock -F 10000 -p "${demo_pid[$mode]}" -o "$tmp/$mode.data" \
    -- sleep "$seconds" >/dev/null 2>&1 &
  drivers+=($!)
done
wait "${drivers[@]}"
for mode in guarded bare; do
  perf report -i "$tmp/$mode.data" --no-children --sort sym -g none 2>/dev/null |
    grep -v '^#' >"$tmp/$mode.syms" || true
  # Samples of the process: with the sampling rate and the time, its share of a CPU.
  perf report -i "$tmp/$mode.data" --stdio -n --sort pid 2>/dev/null |
    awk '!/^#/ && NF >= 3 { n += $2 } END { print n + 0 }' >"$tmp/$mode.samples"
  awk '/Requests\/sec/ { print $2 }' "$tmp/$mode.wrk" >"$tmp/$mode.rps"
done
python3 - "$tmp" "$seconds" "$top" <<'EOF'
import re, sys

def shares(path):
    out = {}
    for line in open(path):
        m = re.match(r'\s*([\d.]+)%\s+\[(.)\]\s+(.*)', line)
        if m:
            name = ('[k] ' if m.group(2) == 'k' else '') + m.group(3).strip()
            out[name] = out.get(name, 0.0) + float(m.group(1))
    return out

tmp, seconds, top = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
guarded, bare = shares(f"{tmp}/guarded.syms"), shares(f"{tmp}/bare.syms")
# CPU time of one request: the process's CPU share (samples at 10 kHz over the run) over its
# requests a second.
per_request = {}
for mode in ("guarded", "bare"):
    samples = float(open(f"{tmp}/{mode}.samples").read())
    rps = float(open(f"{tmp}/{mode}.rps").read() or 0)
    cpu = samples / (10000 * seconds)
    per_request[mode] = cpu / rps * 1e9 if rps else 0.0
    print(f"{mode:8} {rps:8.0f} requests/s, {cpu:.2f} of a CPU: {per_request[mode]:6.0f} ns a request")
ns = per_request["guarded"] / 100  # ns per request of 1 % of the guarded process
rows = sorted(set(guarded) | set(bare), key=lambda k: bare.get(k, 0) - guarded.get(k, 0))
print(f"\n{'guarded - bare':>14} {'guarded':>8} {'bare':>8} {'ns/request':>10}  function "
      "(% of each process's samples; ns of the difference)")
for name in rows[:top]:
    g, b = guarded.get(name, 0.0), bare.get(name, 0.0)
    print(f"{g - b:+14.2f} {g:8.2f} {b:8.2f} {(g - b) * ns:10.0f}  {name[:100]}")
ours = sum(v for k, v in guarded.items() if 'floodgate::' in k and 'floodgate::demo' not in k)
print(f"\nfloodgate's own functions (engine and middleware, not the demo's): {ours:.2f} % of the "
      f"guarded process, {ours * ns:.0f} ns a request")
EOF
