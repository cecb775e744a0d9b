"""export_gguf.py: writes the trained model as a qwen35moe GGUF, and reads one back for transformers.

It owns the mapping between the PyTorch parameters (transformers' Qwen3.5-MoE names plus the
MTP module of model_mtp.py) and llama.cpp's file: tensor names, the transforms the llama.cpp
converter applies (shared/docs/MODEL.md §6.4: +1 on the zero-centred norms, A = -exp(A_log),
the grouped->tiled DeltaNet value-head reorder, the conv1d squeeze, the expert gate/up split,
the MTP block as blk.L.nextn.*), every hyper-parameter key llama.cpp reads for qwen35moe, and
the tokenizer keys (from the Qwen3 tokenizer.json the project ships, the way q36 synth and the
converter write them) with the project's chat template.

It writes with gguf-py (llama.cpp's own Python package, carried to the GPU machine from
build/llama.cpp/gguf-py). `read_back` inverts every transform from the file's (dequantized)
tensors into a state dict for transformers' Qwen3_5MoeForCausalLM, so the parity run checks
this mapping end to end.

Weight types: Q8_0 for every matrix whose rows are a multiple of 32 values, F32 for the rest
and for what llama.cpp requires in F32 (norms, ssm_a, ssm_dt, ssm_conv1d, the routers).
The head is tied (no output.weight): llama.cpp and q36 then use token_embd.weight.
"""
import json

import numpy as np

import gguf

ARCH = "qwen35moe"


def value_head_perm(hk, hv):
    """GGUF value head h holds HF value head (h mod Hk)*r + h div Hk (MODEL.md §2.1)."""
    r = hv // hk
    return np.array([(h % hk) * r + h // hk for h in range(hv)])


def tokenizer_keys(w, tok_json, n_vocab, chat_template):
    t = json.load(open(tok_json, encoding="utf-8"))
    toks = [None] * n_vocab
    types = [gguf.TokenType.UNUSED] * n_vocab
    for s, i in t["model"]["vocab"].items():
        toks[i], types[i] = s, gguf.TokenType.NORMAL
    for a in t["added_tokens"]:
        c = a["content"]
        special = a.get("special", False) or (c.startswith("<|") and c.endswith("|>"))
        toks[a["id"]] = c
        types[a["id"]] = gguf.TokenType.CONTROL if special else gguf.TokenType.USER_DEFINED
    for i in range(n_vocab):
        if toks[i] is None:
            toks[i] = f"[PAD{i}]"
    merges = [m if isinstance(m, str) else f"{m[0]} {m[1]}" for m in t["model"]["merges"]]
    ids = {s: i for i, s in enumerate(toks)}
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("qwen2")     # the Qwen3 tokenizer.json's own split regex (MODEL.md §8.3)
    w.add_token_list(toks)
    w.add_token_types([int(x) for x in types])
    w.add_token_merges(merges)
    w.add_eos_token_id(ids["<|im_end|>"])
    w.add_pad_token_id(ids["<|endoftext|>"])
    w.add_bos_token_id(ids["<|endoftext|>"])
    w.add_add_bos_token(False)
    w.add_chat_template(chat_template)


def hparams(w, cfg, n_layer_trunk, ctx_len):
    a = ARCH
    u32 = w.add_uint32
    u32(f"{a}.block_count", n_layer_trunk + 1)
    u32(f"{a}.nextn_predict_layers", 1)
    u32(f"{a}.context_length", ctx_len)
    u32(f"{a}.embedding_length", cfg.hidden_size)
    u32(f"{a}.attention.head_count", cfg.num_attention_heads)
    u32(f"{a}.attention.head_count_kv", cfg.num_key_value_heads)
    u32(f"{a}.attention.key_length", cfg.head_dim)
    u32(f"{a}.attention.value_length", cfg.head_dim)
    w.add_float32(f"{a}.attention.layer_norm_rms_epsilon", cfg.rms_norm_eps)
    rp = cfg.rope_parameters
    w.add_float32(f"{a}.rope.freq_base", float(rp["rope_theta"]))
    u32(f"{a}.rope.dimension_count", int(cfg.head_dim * rp["partial_rotary_factor"]))
    w.add_array(f"{a}.rope.dimension_sections", list(rp["mrope_section"]) + [0])
    u32(f"{a}.ssm.conv_kernel", cfg.linear_conv_kernel_dim)
    u32(f"{a}.ssm.state_size", cfg.linear_key_head_dim)
    u32(f"{a}.ssm.group_count", cfg.linear_num_key_heads)
    u32(f"{a}.ssm.time_step_rank", cfg.linear_num_value_heads)
    u32(f"{a}.ssm.inner_size", cfg.linear_num_value_heads * cfg.linear_value_head_dim)
    u32(f"{a}.full_attention_interval", 4)
    u32(f"{a}.expert_count", cfg.num_experts)
    u32(f"{a}.expert_used_count", cfg.num_experts_per_tok)
    u32(f"{a}.expert_feed_forward_length", cfg.moe_intermediate_size)
    u32(f"{a}.expert_shared_feed_forward_length", cfg.shared_expert_intermediate_size)


def f32(t):
    return t.detach().float().cpu().numpy().astype(np.float32)


def gguf_tensors(sd, cfg, used_ids, n_vocab):
    """sd: the training model's state dict (trunk.*, mtp.*). Yields (name, f32 array in PyTorch
    order, force_f32)."""
    D = cfg.hidden_size
    hk, hv = cfg.linear_num_key_heads, cfg.linear_num_value_heads
    dk, dv = cfg.linear_key_head_dim, cfg.linear_value_head_dim
    perm = value_head_perm(hk, hv)
    L = cfg.num_hidden_layers
    Fe = cfg.moe_intermediate_size

    emb = np.zeros((n_vocab, D), np.float32)
    emb[used_ids] = f32(sd["trunk.embed_tokens.weight"])[: len(used_ids)]
    yield "token_embd.weight", emb, False
    yield "output_norm.weight", f32(sd["trunk.norm.weight"]) + 1, True

    def moe(p, b):
        yield f"{b}.ffn_gate_inp.weight", f32(sd[p + "mlp.gate.weight"]), True
        gu = f32(sd[p + "mlp.experts.gate_up_proj"])          # [E, 2Fe, D]
        yield f"{b}.ffn_gate_exps.weight", np.ascontiguousarray(gu[:, :Fe]), False
        yield f"{b}.ffn_up_exps.weight", np.ascontiguousarray(gu[:, Fe:]), False
        yield f"{b}.ffn_down_exps.weight", f32(sd[p + "mlp.experts.down_proj"]), False
        yield f"{b}.ffn_gate_inp_shexp.weight", f32(sd[p + "mlp.shared_expert_gate.weight"]).reshape(D), True
        for x in ("gate", "up", "down"):
            yield f"{b}.ffn_{x}_shexp.weight", f32(sd[p + f"mlp.shared_expert.{x}_proj.weight"]), False

    def attn(p, b):
        yield f"{b}.attn_q.weight", f32(sd[p + "self_attn.q_proj.weight"]), False
        yield f"{b}.attn_k.weight", f32(sd[p + "self_attn.k_proj.weight"]), False
        yield f"{b}.attn_v.weight", f32(sd[p + "self_attn.v_proj.weight"]), False
        yield f"{b}.attn_output.weight", f32(sd[p + "self_attn.o_proj.weight"]), False
        yield f"{b}.attn_q_norm.weight", f32(sd[p + "self_attn.q_norm.weight"]) + 1, True
        yield f"{b}.attn_k_norm.weight", f32(sd[p + "self_attn.k_norm.weight"]) + 1, True

    def norms(p, b):
        yield f"{b}.attn_norm.weight", f32(sd[p + "input_layernorm.weight"]) + 1, True
        yield f"{b}.post_attention_norm.weight", f32(sd[p + "post_attention_layernorm.weight"]) + 1, True

    for il in range(L):
        p, b = f"trunk.layers.{il}.", f"blk.{il}"
        yield from norms(p, b)
        if cfg.layer_types[il] == "full_attention":
            yield from attn(p, b)
        else:
            q = p + "linear_attn."
            qkv = f32(sd[q + "in_proj_qkv.weight"])                # [2 Hk dk + Hv dv, D]
            kk = 2 * hk * dk
            v = qkv[kk:].reshape(hv, dv, D)[perm].reshape(hv * dv, D)
            yield f"{b}.attn_qkv.weight", np.concatenate([qkv[:kk], v]), False
            yield f"{b}.attn_gate.weight", f32(sd[q + "in_proj_z.weight"]).reshape(hv, dv, D)[perm].reshape(hv * dv, D), False
            yield f"{b}.ssm_beta.weight", f32(sd[q + "in_proj_b.weight"])[perm], True
            yield f"{b}.ssm_alpha.weight", f32(sd[q + "in_proj_a.weight"])[perm], True
            yield f"{b}.ssm_a", -np.exp(f32(sd[q + "A_log"]))[perm], True
            yield f"{b}.ssm_dt.bias", f32(sd[q + "dt_bias"])[perm], True
            conv = f32(sd[q + "conv1d.weight"])[:, 0, :]           # [Cc, Kc]
            cv = conv[kk:].reshape(hv, dv, -1)[perm].reshape(hv * dv, -1)
            yield f"{b}.ssm_conv1d.weight", np.ascontiguousarray(np.concatenate([conv[:kk], cv])), True
            yield f"{b}.ssm_norm.weight", f32(sd[q + "norm.weight"]), True
            out = f32(sd[q + "out_proj.weight"])                    # [D, Hv dv]
            yield f"{b}.ssm_out.weight", np.ascontiguousarray(out.reshape(D, hv, dv)[:, perm].reshape(D, hv * dv)), False
        yield from moe(p, b)

    p, b = "mtp.layers.0.", f"blk.{L}"
    yield from norms(p, b)
    yield from attn(p, b)
    yield from moe(p, b)
    yield f"{b}.nextn.eh_proj.weight", f32(sd["mtp.fc.weight"]), False
    yield f"{b}.nextn.enorm.weight", f32(sd["mtp.pre_fc_norm_embedding.weight"]) + 1, True
    yield f"{b}.nextn.hnorm.weight", f32(sd["mtp.pre_fc_norm_hidden.weight"]) + 1, True
    yield f"{b}.nextn.shared_head_norm.weight", f32(sd["mtp.norm.weight"]) + 1, True


def export(path, sd, cfg, used_ids, tok_json, chat_template_path, n_vocab, ctx_len=4096,
           wtype="q8_0", name="q36-tiny-moe"):
    qt = {"q8_0": gguf.GGMLQuantizationType.Q8_0, "f16": gguf.GGMLQuantizationType.F16,
          "f32": gguf.GGMLQuantizationType.F32}[wtype]
    w = gguf.GGUFWriter(path, ARCH)
    w.add_name(name)
    w.add_file_type({"q8_0": 7, "f16": 1, "f32": 0}[wtype])
    w.add_quantization_version(2)
    hparams(w, cfg, cfg.num_hidden_layers, ctx_len)
    tokenizer_keys(w, tok_json, n_vocab, open(chat_template_path, encoding="utf-8").read())
    n = 0
    for tname, arr, force in gguf_tensors(sd, cfg, used_ids, n_vocab):
        arr = np.ascontiguousarray(arr, dtype=np.float32)
        t = qt
        if force or arr.ndim == 1 or arr.shape[-1] % 32:
            t = gguf.GGMLQuantizationType.F32
        if t == gguf.GGMLQuantizationType.F32:
            w.add_tensor(tname, arr)
        else:
            w.add_tensor(tname, gguf.quants.quantize(arr, t), raw_dtype=t)   # shape from the bytes
        n += 1
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return n


def read_back(path):
    """The file's tensors, dequantized, as a transformers Qwen3_5MoeForCausalLM state dict
    (lm_head tied) plus the mtp.* tensors; and its key/value fields."""
    r = gguf.GGUFReader(path)
    kv = {}
    for f in r.fields.values():
        if f.types and f.types[0] != gguf.GGUFValueType.ARRAY:
            kv[f.name] = f.contents()
    T = {}
    for t in r.tensors:
        a = gguf.quants.dequantize(t.data, t.tensor_type).astype(np.float32)
        T[t.name] = a.reshape([int(x) for x in reversed(t.shape.tolist())]) if a.size == int(np.prod(t.shape)) else a
    a = ARCH
    hk, hv = kv[f"{a}.ssm.group_count"], kv[f"{a}.ssm.time_step_rank"]
    dk = kv[f"{a}.ssm.state_size"]
    dv = kv[f"{a}.ssm.inner_size"] // hv
    D = kv[f"{a}.embedding_length"]
    nblk = kv[f"{a}.block_count"]
    L = nblk - kv.get(f"{a}.nextn_predict_layers", 0)
    inv = np.argsort(value_head_perm(hk, hv))
    sd = {"model.embed_tokens.weight": T["token_embd.weight"], "model.norm.weight": T["output_norm.weight"] - 1}

    def blk(b, p, mixer_attn):
        sd[p + "input_layernorm.weight"] = T[f"{b}.attn_norm.weight"] - 1
        sd[p + "post_attention_layernorm.weight"] = T[f"{b}.post_attention_norm.weight"] - 1
        if mixer_attn:
            for x, y in (("q", "q_proj"), ("k", "k_proj"), ("v", "v_proj"), ("output", "o_proj")):
                sd[p + f"self_attn.{y}.weight"] = T[f"{b}.attn_{x}.weight"]
            sd[p + "self_attn.q_norm.weight"] = T[f"{b}.attn_q_norm.weight"] - 1
            sd[p + "self_attn.k_norm.weight"] = T[f"{b}.attn_k_norm.weight"] - 1
        else:
            q = p + "linear_attn."
            kk = 2 * hk * dk
            qkv = T[f"{b}.attn_qkv.weight"]
            sd[q + "in_proj_qkv.weight"] = np.concatenate([qkv[:kk], qkv[kk:].reshape(hv, dv, D)[inv].reshape(hv * dv, D)])
            sd[q + "in_proj_z.weight"] = T[f"{b}.attn_gate.weight"].reshape(hv, dv, D)[inv].reshape(hv * dv, D)
            sd[q + "in_proj_b.weight"] = T[f"{b}.ssm_beta.weight"][inv]
            sd[q + "in_proj_a.weight"] = T[f"{b}.ssm_alpha.weight"][inv]
            sd[q + "A_log"] = np.log(-T[f"{b}.ssm_a"])[inv]
            sd[q + "dt_bias"] = T[f"{b}.ssm_dt.bias"][inv]
            conv = T[f"{b}.ssm_conv1d.weight"]
            conv = np.concatenate([conv[:kk], conv[kk:].reshape(hv, dv, -1)[inv].reshape(hv * dv, -1)])
            sd[q + "conv1d.weight"] = conv[:, None, :]
            sd[q + "norm.weight"] = T[f"{b}.ssm_norm.weight"]
            sd[q + "out_proj.weight"] = T[f"{b}.ssm_out.weight"].reshape(D, hv, dv)[:, inv].reshape(D, hv * dv)
        sd[p + "mlp.gate.weight"] = T[f"{b}.ffn_gate_inp.weight"]
        sd[p + "mlp.experts.gate_up_proj"] = np.concatenate([T[f"{b}.ffn_gate_exps.weight"], T[f"{b}.ffn_up_exps.weight"]], axis=1)
        sd[p + "mlp.experts.down_proj"] = T[f"{b}.ffn_down_exps.weight"]
        sd[p + "mlp.shared_expert_gate.weight"] = T[f"{b}.ffn_gate_inp_shexp.weight"].reshape(1, D)
        for x in ("gate", "up", "down"):
            sd[p + f"mlp.shared_expert.{x}_proj.weight"] = T[f"{b}.ffn_{x}_shexp.weight"]

    attn_layers = set()
    for il in range(L):
        is_attn = f"blk.{il}.attn_q.weight" in T
        if is_attn:
            attn_layers.add(il)
        blk(f"blk.{il}", f"model.layers.{il}.", is_attn)
    blk(f"blk.{L}", "mtp.layers.0.", True)
    sd["mtp.fc.weight"] = T[f"blk.{L}.nextn.eh_proj.weight"]
    sd["mtp.pre_fc_norm_embedding.weight"] = T[f"blk.{L}.nextn.enorm.weight"] - 1
    sd["mtp.pre_fc_norm_hidden.weight"] = T[f"blk.{L}.nextn.hnorm.weight"] - 1
    sd["mtp.norm.weight"] = T[f"blk.{L}.nextn.shared_head_norm.weight"] - 1
    return sd, kv, L, attn_layers
