#!/usr/bin/env python3
"""Wall-clock medians of entry + exit benchmarks, two binaries measured back to back.

This VM's speed changes by up to 2x from one second to the next, so a whole run of one binary
followed by a whole run of another compares two different machines. Here, every round runs each
benchmark on both binaries one right after the other (the order alternates), and the summary
gives each binary's median over the rounds and the median of the per-round new/old ratios.

    bench/paired_runs.py ROUNDS OLD_BIN NEW_BIN NAME...        # NAME: NoRules, SystemRules, ...
    bench/paired_runs.py --threads ROUNDS BIN NAME...          # 1 vs 2 threads, one binary
    bench/paired_runs.py --threads --given NAME=MIN ROUNDS BIN NAME...

A NAME selects BM_EntryExit_NAME (the one-thread variant where there are several); a NAME that
starts with HotKeys_ or Baseline_ selects BM_NAME. With --threads, name Baseline_PrivateWork
first: it shares nothing between threads, so its ratio is what the machine gives at that moment.
Each round runs every NAME (one thread, then two) before the next round starts. --given NAME=MIN
adds the medians over the rounds in which NAME's two-thread ratio was at least MIN: name there a
control of the same kind of work as the others (Baseline_PrivateCompute, or an engine benchmark
whose scaling is itself a budget), so that rounds in which the machine did not give that work a
second core can be told apart from rounds in which the code did not scale.
"""
import json
import statistics
import subprocess
import sys


def median_ns(binary, pattern):
    """Runs the benchmarks matching `pattern`; returns {threads: median real time in ns}."""
    out = subprocess.run(
        [binary, f"--benchmark_filter={pattern}", "--benchmark_min_time=0.05",
         "--benchmark_repetitions=3", "--benchmark_report_aggregates_only=true",
         "--benchmark_format=json"],
        capture_output=True, text=True, check=True).stdout
    return {b["threads"]: b["real_time"] for b in json.loads(out)["benchmarks"]
            if b.get("aggregate_name") == "median"}


def family(name):
    """The benchmark name NAME stands for, without the BM_ prefix."""
    return name if name.startswith(("HotKeys_", "Baseline_")) else f"EntryExit_{name}"


def spread(xs):
    return f"{statistics.median(xs):6.1f} ({min(xs):.0f}-{max(xs):.0f})"


def compare(rounds, old, new, names):
    times = {name: {"old": [], "new": []} for name in names}
    for r in range(rounds):
        for i, name in enumerate(names):
            order = ("old", "new") if (r + i) % 2 == 0 else ("new", "old")
            for which in order:
                binary = old if which == "old" else new
                pattern = f"{family(name)}(/real_time/threads:1)?$"
                times[name][which].append(median_ns(binary, pattern)[1])
        print(f"round {r + 1} of {rounds}", file=sys.stderr)
    print(f"{'benchmark':26} {'old: median (min-max)':>22} {'new: median (min-max)':>22}"
          "  new/old  new per round")
    for name, t in times.items():
        ratio = statistics.median(n / o for o, n in zip(t["old"], t["new"]))
        rounds_text = " ".join(f"{x:.0f}" for x in t["new"])
        print(f"{name:26} {spread(t['old']):>22} {spread(t['new']):>22}  {ratio:7.2f}  "
              f"{rounds_text}")


def scaling(rounds, binary, names, given=None):
    """Each round runs every NAME's one- and two-thread variants back to back (round-major, so
    all the names of a round see the same moment of the machine). With `given` = (NAME, MIN),
    also the medians over the rounds in which NAME ran >= MIN at two threads: the rounds in
    which the machine gave a second core to that kind of work."""
    times = {name: ([], []) for name in names}
    for r in range(rounds):
        for name in names:
            t = median_ns(binary, f"{family(name)}/real_time/threads:(1|2)$")
            times[name][0].append(t[1])
            times[name][1].append(t[2])
        print(f"round {r + 1} of {rounds}: " +
              " ".join(f"{name}={times[name][0][-1] / times[name][1][-1]:.2f}" for name in names),
              file=sys.stderr)
    ratios = {name: [a / b for a, b in zip(*times[name])] for name in names}
    kept = list(range(rounds))
    if given is not None:
        control, least = given
        kept = [r for r in range(rounds) if ratios[control][r] >= least]
    print(f"{'benchmark':32} 1 thread (ns) | 2 threads (ns) | 1t/2t per round | median"
          + (f" | median in the {len(kept)} rounds with {given[0]} >= {given[1]}" if given else ""))
    for name in names:
        one, two = times[name]
        line = (f"{name:32} {' '.join(f'{x:.0f}' for x in one)} | "
                f"{' '.join(f'{x:.0f}' for x in two)} | "
                f"{' '.join(f'{x:.2f}' for x in ratios[name])} | "
                f"{statistics.median(ratios[name]):.2f}")
        if given is not None:
            line += " | " + (f"{statistics.median(ratios[name][r] for r in kept):.2f}"
                             if kept else "-")
        print(line)


def main(argv):
    if len(argv) >= 4 and argv[1] == "--threads":
        args, given = argv[2:], None
        if args[0] == "--given":
            control, least = args[1].split("=")
            given, args = (control, float(least)), args[2:]
        scaling(int(args[0]), args[1], args[2:], given)
    elif len(argv) >= 5:
        compare(int(argv[1]), argv[2], argv[3], argv[4:])
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
