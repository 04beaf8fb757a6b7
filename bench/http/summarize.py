#!/usr/bin/env python3
"""Verdicts of a bench/http/run.sh run from its per-round lines.

Input lines: "<phase> <round> <mode> <requests/s> <p99 us> <non-2xx>", phase "side" (all demos
at once) or "alt" (one demo at a time), mode "guarded", "baseline" or "control". Every round
gives guarded / baseline ratios; a verdict is the median of the per-round ratios. The control
(a second --no-guard demo) must come out within a tolerance of 1 for its phase to judge.
"""
import statistics
import sys

THROUGHPUT_BUDGET = 0.97  # guarded >= 97 % of --no-guard
P99_BUDGET = 0.05  # guarded p99 within +5 %
CONTROL_THROUGHPUT = 0.02  # how far an A/A throughput ratio may stray for a phase to judge
CONTROL_P99 = 0.05


def read(path):
    phases = {}
    for line in open(path):
        phase, r, mode, rps, p99, errors = line.split()
        rounds = phases.setdefault(phase, {})
        rounds.setdefault(int(r), {})[mode] = (float(rps), float(p99), int(errors))
    return {phase: list(rounds.values()) for phase, rounds in phases.items()}


def ratios(rows, mode, k):
    """(median, lowest, highest) of the per-round ratios mode / baseline of field k."""
    rs = [row[mode][k] / row["baseline"][k] for row in rows]
    return statistics.median(rs), min(rs), max(rs)


def mean(rows, mode, k):
    return statistics.mean(row[mode][k] for row in rows)


def control_holds(rows, k, what, limit, judged=True):
    """Prints the A/A line; False when the control strays past `limit` (True without one). A
    figure that is shown but not judged only says that the control strayed."""
    if "control" not in rows[0]:
        return True
    c, lo, hi = ratios(rows, "control", k)
    shown = f"{c:.3f}" if k == 0 else f"{(c - 1) * 100:+.1f}%"
    print(f"  control (--no-guard / --no-guard, A/A) {what}: {shown}"
          f" (median; single rounds {lo:.3f}..{hi:.3f})")
    if abs(c - 1) > limit:
        if judged:
            print(f"  the control is off by more than {limit:.0%}: this phase cannot judge; run again")
        else:
            print(f"  (the control is off by more than {limit:.0%}: this figure is noise here)")
        return False
    return True


def main():
    phases = read(sys.argv[1])
    verdicts = []

    side = phases.get("side")
    if side is None:
        print("\nside by side: not run (ROUNDS=0)")
    else:
        judge_side(side, verdicts)
    alt = phases.get("alt")
    if alt is None:
        print("\nalternating: not run (ALT_ROUNDS=0)")
    else:
        judge_alternating(alt, verdicts)

    errors = sum(v[2] for rows in phases.values() for row in rows for v in row.values())
    if errors:
        print(f"\nnon-2xx responses: {errors} (the rules must not block: the run measures nothing)")
    elif len(verdicts) == 2:
        met = all(ok for _, ok in verdicts)
        detail = "; ".join(f"{name}: {'yes' if ok else 'no'}" for name, ok in verdicts)
        print(f"\nbudget: {'met' if met else 'NOT met'} ({detail})")
    else:
        print("\nbudget: not judged (a phase was not run, or its control strayed; see above)")


def judge_side(side, verdicts):
    g, lo, hi = ratios(side, "guarded", 0)
    print(f"\nside by side ({len(side)} rounds): guarded {mean(side, 'guarded', 0):.0f} req/s,"
          f" --no-guard {mean(side, 'baseline', 0):.0f} req/s (means)")
    print(f"  throughput ratio guarded / --no-guard: {g:.3f} (median of per-round ratios;"
          f" single rounds {lo:.3f}..{hi:.3f}; budget >= {THROUGHPUT_BUDGET})")
    if control_holds(side, 0, "throughput", CONTROL_THROUGHPUT):
        verdicts.append(("throughput", g >= THROUGHPUT_BUDGET))


def judge_alternating(alt, verdicts):
    g_rps = ratios(alt, "guarded", 0)[0]
    g_p99, lo, hi = ratios(alt, "guarded", 1)
    print(f"\nalternating ({len(alt)} rounds): guarded {mean(alt, 'guarded', 0):.0f} req/s,"
          f" --no-guard {mean(alt, 'baseline', 0):.0f} req/s (means);"
          f" throughput ratio {g_rps:.3f} (median of per-round ratios)")
    print(f"  p99 latency guarded vs --no-guard: {(g_p99 - 1) * 100:+.1f}% (median of per-round"
          f" ratios; single rounds {lo:.3f}..{hi:.3f}; budget <= +{P99_BUDGET:.0%});"
          f" medians {statistics.median(r['guarded'][1] for r in alt):.0f} /"
          f" {statistics.median(r['baseline'][1] for r in alt):.0f} us")
    control_holds(alt, 0, "throughput", CONTROL_THROUGHPUT, judged=False)
    if control_holds(alt, 1, "p99", CONTROL_P99):
        verdicts.append(("p99", g_p99 - 1 <= P99_BUDGET))


if __name__ == "__main__":
    main()
