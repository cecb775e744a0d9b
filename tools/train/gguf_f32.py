#!/usr/bin/env python3
"""gguf_f32.py: rewrites a GGUF with every tensor as F32 (the same values, dequantized).

It owns one job of the transformers-vs-q36 parity check: transformers runs the trained
model's Q8_0 weights dequantized to f32, so q36 must run those same values in F32, where no
activation is quantized (a Q8_0 matmul quantizes its input row, MODEL.md §7.4, which alone
moves logits by ~1e-2). The values come from `q36 info --dump` (q36's own dequantizer); the
key/value section is copied byte for byte. Standard library only.

usage: python3 tools/train/gguf_f32.py IN.gguf OUT.gguf [--q36 ./q36]
"""
import argparse
import os
import struct
import subprocess
import tempfile

SIZES = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}


def skip_value(f, t):
    if t in SIZES:
        f.seek(SIZES[t], 1)
    elif t == 8:
        (n,) = struct.unpack("<Q", f.read(8))
        f.seek(n, 1)
    elif t == 9:
        st, n = struct.unpack("<IQ", f.read(12))
        if st in SIZES:
            f.seek(SIZES[st] * n, 1)
        else:
            for _ in range(n):
                skip_value(f, st)
    else:
        raise ValueError(f"unknown GGUF value type {t}")


def read_str(f):
    (n,) = struct.unpack("<Q", f.read(8))
    return f.read(n).decode()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("src")
    ap.add_argument("dst")
    ap.add_argument("--q36", default="./q36")
    a = ap.parse_args()
    with open(a.src, "rb") as f:
        magic, version, n_t, n_kv = struct.unpack("<IIQQ", f.read(24))
        assert magic == 0x46554747, "not a GGUF file"
        kv_start = f.tell()
        align = 32
        for _ in range(n_kv):
            key = read_str(f)
            (t,) = struct.unpack("<I", f.read(4))
            if key == "general.alignment":
                (align,) = struct.unpack("<I", f.read(4))
            else:
                skip_value(f, t)
        kv = open(a.src, "rb").read()[kv_start:f.tell()]
        tensors = []
        for _ in range(n_t):
            name = read_str(f)
            (nd,) = struct.unpack("<I", f.read(4))
            ne = struct.unpack(f"<{nd}Q", f.read(8 * nd))
            f.read(4 + 8)                                   # type, offset: rewritten
            tensors.append((name, ne))
    infos, off = b"", 0
    for name, ne in tensors:
        nb = name.encode()
        infos += struct.pack("<Q", len(nb)) + nb + struct.pack(f"<I{len(ne)}Q", len(ne), *ne)
        infos += struct.pack("<IQ", 0, off)
        n = 1
        for x in ne:
            n *= x
        off += (4 * n + align - 1) // align * align
    with open(a.dst, "wb") as out, tempfile.TemporaryDirectory() as tmp:
        out.write(struct.pack("<IIQQ", magic, version, n_t, n_kv) + kv + infos)
        out.write(b"\0" * (-out.tell() % align))
        for name, ne in tensors:
            p = os.path.join(tmp, "t.f32")
            subprocess.run([a.q36, "info", "-m", a.src, "--dump", name, "-o", p], check=True,
                           stdout=subprocess.DEVNULL)
            data = open(p, "rb").read()
            n = 1
            for x in ne:
                n *= x
            assert len(data) == 4 * n, (name, len(data), n)
            out.write(data)
            out.write(b"\0" * (-len(data) % align))
    print(f"{a.dst}: {n_t} tensors as F32")


if __name__ == "__main__":
    main()
