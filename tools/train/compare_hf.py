#!/usr/bin/env python3
"""compare_hf.py: q36's logits against transformers' on the same trained weights.

It owns the comparison half of the transformers parity check. train.py (on the GPU machine)
built transformers' Qwen3_5MoeForCausalLM from the written GGUF and stored its f32 logits for
a few prompts at some positions, over the file's non-zero embedding rows (hf_logits.f32 and
hf_logits.json; every other row's logit is exactly 0 on both sides). This runs
`q36 logits --all` (f32 K/V) on an all-F32 copy of the file (gguf_f32.py) for the same ids
and prints, per prompt, the worst relative L2 error ||q36 - hf|| / ||hf|| over the stored
positions, the largest |difference|, the argmax agreement, and the largest |logit| q36 gives
an unused id. Standard library only.

usage: python3 tools/train/compare_hf.py MODEL-F32.gguf DIR_WITH_HF_LOGITS [--q36 ./q36]
"""
import argparse
import array
import json
import math
import os
import subprocess
import tempfile


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("model")
    ap.add_argument("hfdir")
    ap.add_argument("--q36", default="./q36")
    ap.add_argument("-t", default="2")
    a = ap.parse_args()
    meta = json.load(open(os.path.join(a.hfdir, "hf_logits.json")))
    hf = array.array("f")
    with open(os.path.join(a.hfdir, "hf_logits.f32"), "rb") as f:
        hf.frombytes(f.read())
    cols = meta["used_ids"]
    used = set(cols)
    K = len(cols)
    off = 0
    worst_all = 0.0
    for pr in meta["prompts"]:
        ids, pos = pr["ids"], pr["positions"]
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "q.f32")
            subprocess.run([a.q36, "logits", "-m", a.model, "--ids", " ".join(map(str, ids)), "-o", out,
                            "--all", "-ctk", "f32", "-ctv", "f32", "-t", a.t], check=True,
                           stdout=subprocess.DEVNULL)
            q = array.array("f")
            with open(out, "rb") as f:
                q.frombytes(f.read())
        V = len(q) // len(ids)
        worst, worst_pos, maxd, agree, unused_max = 0.0, -1, 0.0, 0, 0.0
        for j, p in enumerate(pos):
            row = q[p * V:(p + 1) * V]
            ref = hf[off + j * K: off + (j + 1) * K]
            num = den = 0.0
            for c, r in zip(cols, ref):
                d = row[c] - r
                num += d * d
                den += r * r
                maxd = max(maxd, abs(d))
            rel = math.sqrt(num / den)
            if rel > worst:
                worst, worst_pos = rel, p
            qa = max(range(V), key=row.__getitem__)
            agree += qa == pr["argmax"][p]
            if j == 0:
                unused_max = max(abs(row[c]) for c in range(V) if c not in used)
        off += len(pos) * K
        worst_all = max(worst_all, worst)
        print(f"{pr['name']:12s} tokens {len(ids):4d} positions {len(pos):3d}  worst rel L2 {worst:.3e} "
              f"(position {worst_pos})  max |diff| {maxd:.3e}  argmax {agree}/{len(pos)}  "
              f"max |unused logit| q36 {unused_max:g} hf {pr['max_abs_unused_logit']:g}")
    print(f"worst rel L2 over all prompts {worst_all:.3e}")


if __name__ == "__main__":
    main()
