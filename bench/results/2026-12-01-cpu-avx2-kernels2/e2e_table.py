#!/usr/bin/env python3
"""e2e_table.py: e2e.jsonl (e2e.sh's raw lines) to a markdown table: per
file and test, old and new tokens/s of each round and their medians, new/old."""
import json
import statistics
import sys
from collections import defaultdict

runs = defaultdict(lambda: defaultdict(list))
for line in open(sys.argv[1] if len(sys.argv) > 1 else "e2e.jsonl"):
    r = json.loads(line)
    test = ("pp%d" % r["n_prompt"]) if r["n_prompt"] else ("tg%d" % r["n_gen"])
    if r["n_depth"]:
        test += " @ d%d" % r["n_depth"]
    runs[(r["file"], test)][r["which"]].append(r["median_ts"])
print("| file | test | old t/s (rounds) | new t/s (rounds) | new/old (medians) |")
print("|---|---|---:|---:|---:|")
for (f, test), w in runs.items():
    o, n = w.get("old", []), w.get("new", [])
    ratio = statistics.median(n) / statistics.median(o) if o and n else float("nan")
    print("| %s | %s | %s | %s | %.3f |" % (f, test, ", ".join("%.1f" % x for x in o),
                                            ", ".join("%.1f" % x for x in n), ratio))
