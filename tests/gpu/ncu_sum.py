#!/usr/bin/env python3
"""tests/gpu/ncu_sum.py: the per-kernel table of an Nsight Compute CSV
(ncu --csv --metrics gpu__time_duration.sum,dram__bytes_read.sum ...):
calls, total and per-call device time, DRAM bytes read and the rate, one
row per kernel (matvec kernels by their template arguments), largest total
first. Reads a plain or .xz file. Usage: ncu_sum.py FILE.csv[.xz]"""
import collections
import csv
import io
import lzma
import sys

path = sys.argv[1]
text = (lzma.open(path, "rt") if path.endswith(".xz") else open(path)).read().splitlines()
heads = [i for i, line in enumerate(text) if line.startswith('"ID"')]
if not heads:
    sys.exit(f"ncu_sum.py: {path}: no ncu CSV header (\"ID\",...) found")
rows = list(csv.reader(io.StringIO("\n".join(text[heads[0]:]))))
col = {h: i for i, h in enumerate(rows[0])}
kern = collections.defaultdict(dict)
for r in rows[1:]:
    if len(r) == len(rows[0]):
        kern[(r[col["ID"]], r[col["Kernel Name"]])][r[col["Metric Name"]]] = (r[col["Metric Unit"]],
                                                                              r[col["Metric Value"]])
TIME = {"nsecond": 1, "usecond": 1e3, "msecond": 1e6, "second": 1e9}
BYTES = {"byte": 1, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9}
agg = collections.defaultdict(lambda: [0, 0.0, 0.0])
total = 0.0
for (_, name), m in kern.items():
    key = (name if "matvec" in name else name.split("(")[0])[:64]
    unit, v = m.get("gpu__time_duration.sum", ("nsecond", "0"))
    t = float(v.replace(",", "")) * TIME.get(unit, 1)
    unit, v = m.get("dram__bytes_read.sum", ("byte", "0"))
    b = float(v.replace(",", "")) * BYTES.get(unit, 1)
    a = agg[key]
    a[0] += 1
    a[1] += t
    a[2] += b
    total += t
print(f"# {len(kern)} kernels, {total / 1e6:.3f} ms of device time (each kernel alone)")
print(f"{'kernel':64s} {'calls':>5s} {'us total':>9s} {'us/call':>8s} {'MB read':>8s} {'GB/s':>7s}")
for key, (c, t, b) in sorted(agg.items(), key=lambda kv: -kv[1][1]):
    print(f"{key:64s} {c:5d} {t / 1e3:9.1f} {t / 1e3 / c:8.2f} {b / 1e6:8.1f} {b / t if t else 0:7.1f}")
