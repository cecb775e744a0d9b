#!/usr/bin/env python3
"""train.py: trains the default model (a small qwen35moe with one MTP layer) on one GPU and
writes its GGUF; run on the device machine by the commands in tools/train/README.md.

It owns the run: tokenizing the carried text (HF `tokenizers` with the Qwen3 tokenizer.json,
its NFC normalizer removed so the ids are llama.cpp's and q36's), the compact vocabulary (ids
the training split uses at least --min-count times, at most --k-max of them), batching
(seeded: windows of --seq tokens, half starting at a document start), the optimizer and
schedule, the held-out evaluation, the MTP acceptance measurement, the GGUF export
(export_gguf.py) and the transformers-side parity dump (logits of Qwen3_5MoeForCausalLM built
from the written file, f32 on the CPU). The model itself is model_mtp.py's.

Everything derives from --seed: the same command on the same software gives the same model
(up to the GPU's non-deterministic reductions in backward, which PyTorch does not promise to
avoid; the log prints a checksum of the final weights).

Outputs (under --out, which is $OUT on the device machine):
  log.txt                  (the caller tees stdout there)
  summary.json             config, vocabulary, losses, acceptance, timings
  model.gguf.xz.NN         the Q8_0 GGUF, xz -6, split in 15 MiB pieces (cat them back)
  hf_logits.f32, .json     transformers' logits: prompts, positions, columns (the used ids)
  (summary.json also holds a held-out sample and its ids, for the q36 tokenizer check)
"""
import argparse
import hashlib
import json
import lzma
import math
import os
import subprocess
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def log(*a):
    print(f"[{time.strftime('%H:%M:%S')}]", *a, flush=True)


# ---- data -------------------------------------------------------------------------------
def load_docs(path):
    with open(path, "rb") as f:
        return lzma.decompress(f.read()).decode("utf-8").split("\0")


def make_tokenizer(tok_json):
    from tokenizers import Tokenizer, normalizers
    tok = Tokenizer.from_file(tok_json)
    tok.normalizer = normalizers.Sequence([])     # llama.cpp applies no normalization
    return tok


def tokenize_docs(tok, docs, eot):
    enc = tok.encode_batch(docs, add_special_tokens=False)
    lens = np.array([len(e.ids) for e in enc], dtype=np.int64)
    ids = np.empty(int(lens.sum()) + len(docs), dtype=np.int32)
    starts = np.empty(len(docs), dtype=np.int64)
    p = 0
    for i, e in enumerate(enc):
        starts[i] = p
        n = len(e.ids)
        ids[p:p + n] = e.ids
        ids[p + n] = eot
        p += n + 1
    return ids, starts


# ---- evaluation -------------------------------------------------------------------------
@torch.no_grad()
def evaluate(model, ids_c, seq, k_used, bs=32):
    """Exact full-vocabulary NLL per token of the trunk (next token) and of the MTP layer
    (token after next), over non-overlapping windows of the held-out stream."""
    from model_mtp import nll_sum
    model.eval()
    n = (len(ids_c) - 1) // seq
    tot = {"main": [0.0, 0], "mtp": [0.0, 0], "top1": [0, 0], "mtp_top1": [0, 0]}
    for b0 in range(0, n, bs):
        xs = torch.stack([ids_c[i * seq:(i + 1) * seq + 1] for i in range(b0, min(n, b0 + bs))]).long()
        x, y = xs[:, :-1], xs[:, 1:]
        with torch.autocast("cuda", dtype=torch.bfloat16):
            main, mlog, _ = model(x)
        s, c = nll_sum(main, y, k_used, model.extra_logit)
        tot["main"][0] += s.item(); tot["main"][1] += c
        s, c = nll_sum(mlog, x[:, 2:], k_used, model.extra_logit)   # MTP at p predicts x[p+1]... see model
        tot["mtp"][0] += s.item(); tot["mtp"][1] += c
        tot["top1"][0] += (main.argmax(-1) == y).sum().item(); tot["top1"][1] += y.numel()
        # mlog[:, j] is position p = j+1 (token x[p], state h[p-1]), target x[p+1] = x[:, j+2]
        tot["mtp_top1"][0] += (mlog.argmax(-1) == x[:, 2:]).sum().item(); tot["mtp_top1"][1] += x[:, 2:].numel()
    model.train()
    r = {k: v[0] / max(v[1], 1) for k, v in tot.items()}
    r["main_ppl"] = math.exp(r["main"])
    r["windows"] = n
    return r


@torch.no_grad()
def mtp_acceptance(model, ids_c, k_used, n_seq=64, prompt=128, gen=128, n_draft=3, seed=7):
    """Greedy speculative decoding as llama.cpp's draft-mtp does it, measured on the model's
    own greedy continuations of held-out prompts (so the target's choice is the next token):
    at position p, draft 1 is the MTP's argmax from (y_p, h_{p-1}) with the MTP attention over
    the catch-up entries of positions 1..p; draft k+1 appends (draft k, the MTP's own hn) at
    the next position. Returns, per draft position k, the fraction of positions where drafts
    1..k all equal the target's tokens, and the conditional rate of draft k given 1..k-1."""
    model.eval()
    g = torch.Generator(device="cpu").manual_seed(seed)
    starts = torch.randint(0, len(ids_c) - prompt - 1, (n_seq,), generator=g)
    y = torch.stack([ids_c[s:s + prompt] for s in starts.tolist()]).long()
    for _ in range(gen):
        with torch.autocast("cuda", dtype=torch.bfloat16):
            main, _, _ = model(y, mtp=False)
        nxt = main[:, -1, :k_used].argmax(-1, keepdim=True)
        y = torch.cat([y, nxt], dim=1)
    with torch.autocast("cuda", dtype=torch.bfloat16):
        emb = model.trunk.embed_tokens(y)
        h = model.trunk(inputs_embeds=emb, use_cache=False).last_hidden_state
    B, N = y.shape
    ok_all = torch.zeros(n_draft)
    ok_cond = torch.zeros(n_draft)
    den_cond = torch.zeros(n_draft)
    n_pos = 0
    for p in range(prompt, N - n_draft - 1, 8):
        # catch-up inputs at positions 1..p: (y_j, h_{j-1})
        e_in = emb[:, 1:p + 1]
        h_in = h[:, 0:p]
        alive = torch.ones(B, dtype=torch.bool, device=y.device)
        for k in range(n_draft):
            pos = torch.arange(1, e_in.shape[1] + 1, device=y.device).view(1, 1, -1).expand(3, B, -1)
            with torch.autocast("cuda", dtype=torch.bfloat16):
                pe = model.trunk.rotary_emb(h_in, pos)
                hn = model.mtp(e_in, h_in, pe)
                lg = model.logits(hn[:, -1:])
            d = lg[:, 0, :k_used].argmax(-1)
            hit = d == y[:, p + 1 + k]
            den_cond[k] += alive.sum().item()
            ok_cond[k] += (alive & hit).sum().item()
            alive = alive & hit
            ok_all[k] += alive.sum().item()
            e_in = torch.cat([e_in, model.trunk.embed_tokens(d)[:, None].to(e_in.dtype)], dim=1)
            h_in = torch.cat([h_in, hn[:, -1:].to(h_in.dtype)], dim=1)
        n_pos += B
    model.train()
    return {"accept_cum": (ok_all / n_pos).tolist(), "accept_cond": (ok_cond / den_cond.clamp(min=1)).tolist(),
            "positions": n_pos, "n_seq": n_seq, "prompt": prompt, "gen": gen}


# ---- parity dump --------------------------------------------------------------------------
@torch.no_grad()
def hf_parity(gguf_path, prompts, out_dir, used_ids):
    """Builds transformers' Qwen3_5MoeForCausalLM from the written GGUF (dequantized, every
    export transform inverted), f32 on the CPU, and writes its logits for the prompts at a
    subset of positions and the file's non-zero rows (the other rows' logits are exactly 0)."""
    from export_gguf import read_back
    from transformers.models.qwen3_5_moe.modeling_qwen3_5_moe import Qwen3_5MoeForCausalLM
    from model_mtp import make_config
    sd, kv, L, attn_layers = read_back(gguf_path)
    V = sd["model.embed_tokens.weight"].shape[0]
    cfg = make_config(V)
    cfg._attn_implementation = "eager"
    assert sorted(attn_layers) == [i for i, t in enumerate(cfg.layer_types) if t == "full_attention"]
    torch.manual_seed(0)
    m = Qwen3_5MoeForCausalLM(cfg).float().eval()
    tsd = {k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in sd.items() if not k.startswith("mtp.")}
    missing, unexpected = m.load_state_dict(tsd, strict=False)
    missing = [k for k in missing if k != "lm_head.weight"]
    assert not missing and not unexpected, (missing, unexpected)
    assert m.lm_head.weight.data_ptr() == m.model.embed_tokens.weight.data_ptr() or \
        torch.equal(m.lm_head.weight, m.model.embed_tokens.weight)
    m.lm_head.weight = m.model.embed_tokens.weight
    cols = torch.from_numpy(np.asarray(used_ids, dtype=np.int64))
    meta = {"prompts": [], "cols": "used_ids", "dtype": "f32"}
    blobs = []
    for name, ids in prompts:
        x = torch.tensor([ids], dtype=torch.long)
        lg = m(input_ids=x, use_cache=False).logits[0].float()
        n = len(ids)
        pos = list(range(n)) if n <= 16 else sorted(set(list(range(0, n, max(1, n // 24))) + [n - 1]))
        zero_cols = torch.ones(lg.shape[1], dtype=torch.bool)
        zero_cols[cols] = False
        zmax = lg[:, zero_cols].abs().max().item()
        blobs.append(lg[pos][:, cols].numpy().astype(np.float32))
        meta["prompts"].append({"name": name, "ids": ids, "positions": pos, "max_abs_unused_logit": zmax,
                                "argmax": lg.argmax(-1).tolist()})
    # greedy continuation of the first prompt, transformers' own cache path
    ids0 = prompts[0][1]
    x = torch.tensor([ids0], dtype=torch.long)
    try:
        gen = m.generate(x, max_new_tokens=64, do_sample=False, pad_token_id=151643)
        meta["greedy_first_prompt"] = gen[0, len(ids0):].tolist()
    except Exception as e:        # the dump matters more than this extra
        log("generate failed:", repr(e))
        meta["greedy_first_prompt"] = []
    np.concatenate([b.reshape(-1) for b in blobs]).tofile(os.path.join(out_dir, "hf_logits.f32"))
    meta["used_ids"] = [int(i) for i in used_ids]
    json.dump(meta, open(os.path.join(out_dir, "hf_logits.json"), "w"))
    return meta


# ---- main -------------------------------------------------------------------------------
def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default="train-carry")
    ap.add_argument("--out", default=os.environ.get("OUT", "out"))
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--steps", type=int, default=0,
                    help="optimizer steps; 0: as many as --train-seconds allows at the speed of the first "
                         "steps (the number chosen is logged: pass it back to reproduce the run exactly)")
    ap.add_argument("--train-seconds", type=float, default=460)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--seq", type=int, default=1024)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--warmup", type=int, default=50)
    ap.add_argument("--wd", type=float, default=0.1)
    ap.add_argument("--mtp-weight", type=float, default=0.3)
    ap.add_argument("--aux-coef", type=float, default=0.01)
    ap.add_argument("--min-count", type=int, default=3)
    ap.add_argument("--k-max", type=int, default=40000)
    ap.add_argument("--max-seconds", type=float, default=1e9, help="stop training early (logged)")
    ap.add_argument("--experts", default="auto", help="transformers experts implementation")
    ap.add_argument("--compile", action="store_true")
    ap.add_argument("--smoke", action="store_true", help="checks + a few steps, f32 export check")
    ap.add_argument("--no-export", action="store_true")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    t_start = time.time()
    import transformers
    log("torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.get_device_name(0),
        "transformers", transformers.__version__)
    torch.manual_seed(a.seed)
    np.random.seed(a.seed)
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    dev = torch.device("cuda")
    summary = {"args": vars(a)}

    # tokenize
    tok_json = os.path.join(a.data, "tokenizer.json")
    tok = make_tokenizer(tok_json)
    eot = tok.token_to_id("<|endoftext|>")
    t0 = time.time()
    tr_docs = load_docs(os.path.join(a.data, "train.txt.xz"))
    he_docs = load_docs(os.path.join(a.data, "heldout.txt.xz"))
    cache = "/tmp/q36-train-tokens.npz"      # a second run on the same machine skips this
    if os.path.exists(cache):
        z = np.load(cache)
        tr_ids, tr_starts, he_ids = z["tr_ids"], z["tr_starts"], z["he_ids"]
    else:
        tr_ids, tr_starts = tokenize_docs(tok, tr_docs, eot)
        he_ids, _ = tokenize_docs(tok, he_docs, eot)
        np.savez(cache, tr_ids=tr_ids, tr_starts=tr_starts, he_ids=he_ids)
    log(f"tokenized {len(tr_docs)} train docs -> {len(tr_ids)} tokens, {len(he_docs)} held-out -> "
        f"{len(he_ids)} tokens in {time.time() - t0:.1f}s")
    summary["tokens"] = {"train": int(len(tr_ids)), "heldout": int(len(he_ids)),
                         "train_docs": len(tr_docs), "heldout_docs": len(he_docs)}
    # tokenizer sample for the q36 check: the first held-out code doc, cut at a line
    sample = next(d for d in he_docs if "def " in d)[:3000]
    sample = sample[: sample.rfind("\n") + 1]
    summary["tok_sample"] = {"text": sample, "ids": tok.encode(sample, add_special_tokens=False).ids}

    # compact vocabulary
    from model_mtp import GGUF_VOCAB, TinyQwen35Moe, ce, load_balancing, make_config
    cnt = np.bincount(tr_ids, minlength=GGUF_VOCAB)
    order = np.argsort(-cnt, kind="stable")
    keep = [int(i) for i in order[: a.k_max] if cnt[i] >= a.min_count]
    for s in ("<|endoftext|>", "<|im_start|>", "<|im_end|>", "<think>", "</think>"):
        i = tok.token_to_id(s)
        if i not in keep:
            keep.append(i)
    used_ids = np.array(sorted(keep), dtype=np.int64)
    K = len(used_ids)
    remap = np.full(GGUF_VOCAB, K, dtype=np.int64)
    remap[used_ids] = np.arange(K)
    cover_tr = cnt[used_ids].sum() / cnt.sum()
    he_cnt = np.bincount(he_ids, minlength=GGUF_VOCAB)
    cover_he = he_cnt[used_ids].sum() / he_cnt.sum()
    log(f"vocabulary: {int((cnt > 0).sum())} distinct ids in train; kept K={K} "
        f"(count>={a.min_count}, at most {a.k_max}); coverage train {cover_tr:.5f} held-out {cover_he:.5f}")
    summary["vocab"] = {"distinct_train": int((cnt > 0).sum()), "K": K, "coverage_train": float(cover_tr),
                        "coverage_heldout": float(cover_he)}
    tr_c = torch.from_numpy(remap[tr_ids]).to(torch.int32).to(dev)
    he_c = torch.from_numpy(remap[he_ids]).to(torch.int32).to(dev)
    doc_starts = torch.from_numpy(tr_starts[tr_starts < len(tr_ids) - a.seq - 2]).to(dev)

    # model
    cfg = make_config(K + 1)
    cfg._attn_implementation = "sdpa"
    if a.experts != "auto":
        cfg._experts_implementation = a.experts
    torch.manual_seed(a.seed)
    model = TinyQwen35Moe(cfg, K).to(dev)
    n_par = sum(p.numel() for p in model.parameters())
    log(f"model: {n_par / 1e6:.2f}M parameters in training ({K}x{cfg.hidden_size} embedding), "
        f"layers {cfg.layer_types}, experts impl {getattr(cfg, '_experts_implementation', None)}")
    summary["config"] = {k: v for k, v in cfg.to_dict().items() if isinstance(v, (int, float, str, list, dict, bool))}
    summary["params_training"] = n_par
    if a.smoke:
        for n_, p in model.named_parameters():
            if ".layers.0." in n_ or ".layers.3." in n_ or n_.startswith("mtp.") or "layers" not in n_:
                log(f"  {n_} {tuple(p.shape)}")

    if a.smoke:
        # causality of trunk and MTP: changing the last token must not move earlier logits
        x = tr_c[:2 * 64].view(2, 64).long()
        model.eval()
        with torch.no_grad():
            m1, t1, _ = model(x)
            x2 = x.clone(); x2[:, -2] = (x2[:, -2] + 1) % K     # token T-2: the last MTP entry's input
            m2, t2, _ = model(x2)
        log("causality: trunk max diff before T-2", (m1[:, :-2] - m2[:, :-2]).abs().max().item(),
            "trunk at T-2 moved", (m1[:, -2] - m2[:, -2]).abs().max().item(),
            "mtp max diff before last", (t1[:, :-1] - t2[:, :-1]).abs().max().item(),
            "mtp last moved", (t1[:, -1] - t2[:, -1]).abs().max().item())
        _, _, rl = model(x)
        log(f"router outputs: {len(rl)} x {tuple(rl[0].shape)}; row sums {rl[0].float().sum(-1)[:3].tolist()}")
        model.train()

    decay, no_decay = [], []
    for n_, p in model.named_parameters():
        (decay if p.ndim >= 2 and "conv1d" not in n_ and "embed_tokens" not in n_ else no_decay).append(p)
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": a.wd}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=a.lr, betas=(0.9, 0.95), eps=1e-8, fused=True)
    fwd = torch.compile(model) if a.compile else model
    g = torch.Generator(device=dev).manual_seed(a.seed)
    B, T = a.batch, a.seq

    def batch():
        half = B // 2
        s1 = doc_starts[torch.randint(0, len(doc_starts), (half,), generator=g, device=dev)]
        s2 = torch.randint(0, len(tr_c) - T - 2, (B - half,), generator=g, device=dev)
        s = torch.cat([s1, s2])
        idx = s[:, None] + torch.arange(T + 1, device=dev)[None]
        return tr_c[idx].long()

    total = a.steps if a.steps > 0 else None
    probe = 12                        # steps timed (after 2 warm-up steps) to size an automatic run

    def lr_at(step):
        if step < a.warmup:
            return a.lr * (step + 1) / a.warmup
        f = (step - a.warmup) / max(1, total - a.warmup)
        return a.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1.0, f))))

    log(f"training {a.steps or 'auto'} steps of {B}x{T} tokens")
    t_train = time.time()
    hist = []
    step = 0
    stopped_early = False
    assert total is not None or a.warmup >= probe
    while total is None or step < total:
        if total is None and step == probe:
            torch.cuda.synchronize()
            per = (time.time() - t_probe) / (probe - 2)
            total = max(probe, int(a.train_seconds / per))
            log(f"auto: {per:.3f}s per step -> --steps {total}")
            summary["steps_auto"] = total
        if step == 2:
            torch.cuda.synchronize()
            t_probe = time.time()
        if time.time() - t_start > a.max_seconds:
            stopped_early = True
            log(f"STOP: --max-seconds reached at step {step}")
            break
        for gr in opt.param_groups:
            gr["lr"] = lr_at(step)
        xs = batch()
        x = xs[:, :-1]
        with torch.autocast("cuda", dtype=torch.bfloat16):
            main, mlog, rl = fwd(x)
            l_main = ce(main, xs[:, 1:], K)
            l_mtp = ce(mlog, x[:, 2:], K)
            l_aux = load_balancing(rl, cfg.num_experts, cfg.num_experts_per_tok)
            loss = l_main + a.mtp_weight * l_mtp + a.aux_coef * l_aux
        opt.zero_grad(set_to_none=True)
        loss.backward()
        # the zero row (every unused id) must not train, and its gradient (RMSNorm of a zero
        # vector: 1/sqrt(eps) per unit) must not dominate the clipping norm
        model.trunk.embed_tokens.weight.grad[K:].zero_()
        gn = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        model.zero_unused()
        if step % 25 == 0 or step == (total or 0) - 1:
            torch.cuda.synchronize()
            el = time.time() - t_train
            rec = {"step": step, "loss": l_main.item(), "mtp": l_mtp.item(), "aux": l_aux.item(),
                   "gnorm": gn.item(), "lr": lr_at(step), "s": round(el, 1),
                   "tok_s": round((step + 1) * B * T / el)}
            hist.append(rec)
            log(json.dumps(rec))
        step += 1
    torch.cuda.synchronize()
    train_s = time.time() - t_train
    steps_done = step
    log(f"trained {steps_done} steps in {train_s:.1f}s")
    summary.update({"steps_done": steps_done, "stopped_early": stopped_early, "train_seconds": train_s,
                    "history": hist})

    ev = evaluate(model, he_c, T, K)
    log("held-out:", json.dumps(ev))
    summary["heldout"] = ev
    ck = hashlib.sha256()
    for n_, p in sorted(model.state_dict().items()):
        ck.update(p.detach().float().cpu().numpy().tobytes())
    summary["weights_sha256"] = ck.hexdigest()
    log("weights sha256", ck.hexdigest())

    def save_summary():
        summary["total_seconds"] = time.time() - t_start
        json.dump(summary, open(os.path.join(a.out, "summary.json"), "w"), indent=1, default=str)
    save_summary()

    if not a.no_export:
        import export_gguf
        sd = {k: v for k, v in model.state_dict().items()}
        tmpl = os.path.join(a.data, "chat_template.jinja")
        gpath = "/tmp/q36-tiny-moe.gguf"
        t0 = time.time()
        n = export_gguf.export(gpath, sd, cfg, used_ids, tok_json, tmpl, GGUF_VOCAB, ctx_len=4096)
        log(f"wrote {gpath}: {n} tensors, {os.path.getsize(gpath)} bytes in {time.time() - t0:.1f}s")
        t0 = time.time()
        try:
            subprocess.run(["xz", "-6", "-T0", "--block-size=16MiB", "-k", "-f", gpath], check=True)
        except FileNotFoundError:
            open(gpath + ".xz", "wb").write(lzma.compress(open(gpath, "rb").read(), preset=6))
        xzp = gpath + ".xz"
        summary["gguf_sha256"] = hashlib.sha256(open(gpath, "rb").read()).hexdigest()
        log(f"xz: {os.path.getsize(xzp)} bytes in {time.time() - t0:.1f}s; sha256 gguf {summary['gguf_sha256']}")
        summary["gguf_bytes"] = os.path.getsize(gpath)
        summary["gguf_xz_bytes"] = os.path.getsize(xzp)
        data = open(xzp, "rb").read()
        piece = 15 * 1024 * 1024
        for i in range(0, len(data), piece):
            open(os.path.join(a.out, f"model.gguf.xz.{i // piece:02d}"), "wb").write(data[i:i + piece])
        save_summary()
        # prompts for the parity dump: a code prompt, and held-out windows of 100 and 1000 tokens
        fib = tok.encode("def fibonacci(n):", add_special_tokens=False).ids
        prompts = [("fib", fib), ("heldout100", he_ids[5000:5100].tolist()),
                   ("heldout1000", he_ids[20000:21000].tolist())]
        try:
            if a.smoke:
                # the export mapping in f32: transformers from the file vs the training model
                fpath = "/tmp/smoke-f32.gguf"
                export_gguf.export(fpath, sd, cfg, used_ids, tok_json, tmpl, GGUF_VOCAB, wtype="f32")
                torch.backends.cuda.matmul.allow_tf32 = False
                torch.backends.cudnn.allow_tf32 = False
                meta = hf_parity(fpath, prompts[:2], a.out, used_ids)
                blob = np.fromfile(os.path.join(a.out, "hf_logits.f32"), dtype=np.float32)
                model.eval().float()
                off = 0
                for pr in meta["prompts"]:
                    xc = torch.from_numpy(remap[np.array(pr["ids"])]).to(dev)[None]
                    with torch.no_grad():
                        main, _, _ = model(xc, mtp=False)
                    ref = main[0, pr["positions"], :K].float().cpu().numpy()
                    n_ = ref.size
                    hf = blob[off:off + n_].reshape(ref.shape)
                    off += n_
                    rel = np.linalg.norm(hf - ref, axis=1) / np.linalg.norm(ref, axis=1)
                    log(f"export check {pr['name']}: worst rel L2 HF-from-f32-GGUF vs training model "
                        f"{rel.max():.2e}; max |unused logit| {pr['max_abs_unused_logit']}")
                    summary.setdefault("export_check", []).append({"prompt": pr["name"], "worst_rel_l2": float(rel.max())})
            else:
                t0 = time.time()
                meta = hf_parity(gpath, prompts, a.out, used_ids)
                log(f"transformers parity dump in {time.time() - t0:.1f}s; greedy after 'def fibonacci(n):':",
                    repr(tok.decode(meta["greedy_first_prompt"])))
                summary["hf_greedy_fib"] = tok.decode(meta["greedy_first_prompt"])
        except Exception as e:
            import traceback
            traceback.print_exc()
            log("parity dump failed:", repr(e))
        save_summary()

    if not a.smoke:
        try:
            t0 = time.time()
            acc = mtp_acceptance(model, he_c, K)
            log(f"MTP acceptance ({time.time() - t0:.1f}s):", json.dumps(acc))
            summary["mtp_acceptance"] = acc
        except Exception as e:
            import traceback
            traceback.print_exc()
            log("MTP acceptance failed:", repr(e))
    save_summary()
    log(f"done in {time.time() - t_start:.1f}s")


if __name__ == "__main__":
    main()
