#!/usr/bin/env python3
"""The thread-scaling table: floodgate_thread_scaling at 1, 2, 4, 8 and 32 threads, one process
per row, the rows of two binaries (a baseline build and this one) alternating, ROUNDS times.

    bench/thread_scaling.py ROUNDS SECONDS OLD_BIN NEW_BIN [THREADS...]

For each binary and thread count: the median M entry+exit/s over the rounds (min-max), the
median ratio to the same binary's one-thread figure of the same round, the median entries per
CPU-second the process used (a figure other load on the cores moves less), and the median
p50 / p99 of one entry + exit in ns. Run it when `uptime` shows the machine idle: the VM's speed moves.
"""
import re
import statistics
import subprocess
import sys

LINE = re.compile(r"threads (\d+)\s+Mops/s ([\d.]+)\s+Mops/cpu-s ([\d.]+)\s+p50_ns (\d+)\s+"
                  r"p99_ns (\d+)\s+allocations (\d+) in (\d+) entries")


def run(binary, threads, seconds):
    out = subprocess.run([binary, str(threads), str(seconds)], capture_output=True, text=True,
                         check=True).stdout
    m = LINE.search(out)
    if not m:
        raise SystemExit(f"unexpected output from {binary}: {out!r}")
    return {"mops": float(m[2]), "cpu": float(m[3]), "p50": int(m[4]), "p99": int(m[5]),
            "allocs": int(m[6])}


def main():
    if len(sys.argv) < 5:
        raise SystemExit(__doc__)
    rounds, seconds = int(sys.argv[1]), float(sys.argv[2])
    binaries = {"old": sys.argv[3], "new": sys.argv[4]}
    counts = [int(t) for t in sys.argv[5:]] or [1, 2, 4, 8, 32]
    results = {(b, t): [] for b in binaries for t in counts}
    for r in range(rounds):
        for i, t in enumerate(counts):
            order = ("old", "new") if (r + i) % 2 == 0 else ("new", "old")
            for b in order:
                results[(b, t)].append(run(binaries[b], t, seconds))
    print(f"| binary | threads | M entry+exit/s, median (min-max) | vs 1 thread, median (min-max) "
          f"| M entry+exit per CPU-s | p50 ns | p99 ns | allocations |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for b in binaries:
        for t in counts:
            rs = results[(b, t)]
            mops = [x["mops"] for x in rs]
            ratios = [x["mops"] / one["mops"] for x, one in zip(rs, results[(b, counts[0])])]
            print(f"| {b} | {t} | {statistics.median(mops):.1f} ({min(mops):.1f}-{max(mops):.1f}) "
                  f"| {statistics.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f}) "
                  f"| {statistics.median(x['cpu'] for x in rs):.1f} "
                  f"| {statistics.median(x['p50'] for x in rs):.0f} "
                  f"| {statistics.median(x['p99'] for x in rs):.0f} "
                  f"| {max(x['allocs'] for x in rs)} |")


if __name__ == "__main__":
    main()
