#!/usr/bin/env python3
"""Instructions per engine::enter + entry::exit under callgrind: (enter + exit, inclusive) over
the calls of engine::enter, for one BM_EntryExit_<NAME> benchmark of a floodgate_bench binary.

    bench/entry_instructions.py BUILD/bench/floodgate_bench QpsRuleAndBreaker

Deterministic for a binary and input, so two builds compare whatever the machine does. Under
valgrind the statistics take the shared shard's paths (no rseq), so the figure is larger than a
native entry's; compare builds, not this figure with wall-clock ones. The benchmark's own
iteration count varies a little from run to run, and with it the share of set-up: about +-10.
"""
import os
import random
import re
import subprocess
import sys

b, n = sys.argv[1], sys.argv[2]
out = f"/tmp/entry_instructions.{random.randint(0, 10**9)}.out"
subprocess.run(["valgrind","--tool=callgrind",f"--callgrind-out-file={out}",b,f"--benchmark_filter=BM_EntryExit_{n}(/|$)","--benchmark_min_time=0.05"],capture_output=True)
a = subprocess.run(["callgrind_annotate","--inclusive=yes","--tree=caller",out],capture_output=True,text=True).stdout
os.remove(out)
incl = {}
for line in a.splitlines():
    m = re.match(r"\s*([\d,]+) \([\d.]+%\)\s+\*\s+\S*:(floodgate::engine::enter\(|floodgate::entry::exit\(\))", line)
    if m: incl[m.group(2)] = int(m.group(1).replace(",",""))
# calls of engine::enter: the caller lines under its entry
cur=None; c=0
for line in a.splitlines():
    if "*" in line and "floodgate::engine::enter(" in line: cur="enter"; continue
    if "*" in line: cur=None
    if cur=="enter":
        m = re.search(r"\(([\d,]+)x\)", line)
        if m and "<" in line: c += int(m.group(1).replace(",",""))
print(n, "calls", c, "per entry+exit", round(sum(incl.values())/c,1) if c else None)
