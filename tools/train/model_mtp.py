"""model_mtp.py: the trained model's PyTorch side: the configuration, the trunk, the MTP layer.

It owns three things, and nothing about data or files:
  * `make_config`: the small qwen35moe geometry (a transformers Qwen3_5MoeTextConfig);
  * `TinyQwen35Moe`: transformers' own Qwen3_5MoeTextModel as the trunk (so the DeltaNet,
    gated attention, partial RoPE, MoE and zero-centred norms are the reference's math), run
    on a *compact* vocabulary (only the token ids the training text uses get an embedding
    row; the others are exactly zero in the exported file), with the head tied to the
    embedding as llama.cpp does when output.weight is absent;
  * `MTP`: the one multi-token-prediction layer, written here because transformers does not
    train it, computing exactly what llama.cpp's MTP graph computes (shared/docs/MODEL.md §5):
        c = concat(RMSNorm(embed(t_{p}); enorm), RMSNorm(h_{p-1}; hnorm))   # embedding first
        x = fc(c); x = DecoderLayer_full_attention_MoE(x); logits = head(RMSNorm(x; norm))
    where h_{p-1} is the trunk's post-output_norm hidden state of the previous position, and
    the target is t_{p+1}: the token two after the one the trunk state saw.

Exactness of the compact vocabulary. The exported file has V = 151680 embedding rows; the
rows of unused ids are zero, so their logits are exactly 0 at inference. Training computes the
K used logits plus one extra column with the constant value log(V - K): the softmax mass of
the V - K zero logits. Cross-entropy against that column for a token outside the K (its own
probability is 1/(V - K) of the column) differs from the full-vocabulary cross-entropy by the
constant log(V - K) only, so the gradients are those of the full model; `nll` adds it back.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from transformers.models.qwen3_5_moe import modeling_qwen3_5_moe as hfm
from transformers.models.qwen3_5_moe.configuration_qwen3_5_moe import Qwen3_5MoeTextConfig

GGUF_VOCAB = 151680      # the Qwen3 tokenizer's 151669 ids padded to a multiple of 128


def make_config(k_vocab, **over):
    """The geometry. k_vocab: compact vocabulary rows (the used ids plus one zero row)."""
    g = dict(
        vocab_size=k_vocab,
        hidden_size=256,
        num_hidden_layers=8,             # layers 3 and 7 full attention, the rest DeltaNet
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=64,
        linear_num_key_heads=4,
        linear_num_value_heads=8,        # Hv = 2 Hk: the grouped->tiled head reorder is exercised
        linear_key_head_dim=64,
        linear_value_head_dim=64,
        linear_conv_kernel_dim=4,
        num_experts=32,
        num_experts_per_tok=4,
        moe_intermediate_size=64,
        shared_expert_intermediate_size=256,
        max_position_embeddings=4096,
        rms_norm_eps=1e-6,
        tie_word_embeddings=True,
        initializer_range=0.02,
        router_aux_loss_coef=0.001,
        rope_parameters={"rope_type": "default", "rope_theta": 1e7, "partial_rotary_factor": 0.25,
                         "mrope_section": [3, 3, 2], "mrope_interleaved": True},
    )
    g.update(over)
    return Qwen3_5MoeTextConfig(**g)


class MTP(nn.Module):
    """HF names (mtp.*) so the export maps them the way the converter does (MODEL.md §6.4)."""

    def __init__(self, cfg):
        super().__init__()
        D = cfg.hidden_size
        self.pre_fc_norm_embedding = hfm.Qwen3_5MoeRMSNorm(D, eps=cfg.rms_norm_eps)
        self.pre_fc_norm_hidden = hfm.Qwen3_5MoeRMSNorm(D, eps=cfg.rms_norm_eps)
        self.fc = nn.Linear(2 * D, D, bias=False)
        # One full-attention decoder layer: transformers' own, built with the index of a trunk
        # layer the config marks full_attention (the index only names a K/V cache slot).
        idx = cfg.layer_types.index("full_attention")
        self.layers = nn.ModuleList([hfm.Qwen3_5MoeDecoderLayer(cfg, idx)])
        self.norm = hfm.Qwen3_5MoeRMSNorm(D, eps=cfg.rms_norm_eps)

    def forward(self, emb_next, h_prev, position_embeddings):
        """emb_next [B,T,D] = embed(t_p); h_prev [B,T,D] = trunk state of p-1. Returns hn."""
        c = torch.cat([self.pre_fc_norm_embedding(emb_next), self.pre_fc_norm_hidden(h_prev)], dim=-1)
        x = self.fc(c)
        x = self.layers[0](x, position_embeddings=position_embeddings, attention_mask=None)
        if isinstance(x, tuple):
            x = x[0]
        return self.norm(x)


class TinyQwen35Moe(nn.Module):
    def __init__(self, cfg, k_used):
        """k_used: used ids (compact rows 0..k_used-1); row k_used is the zero row that every
        other id maps to (its embedding stays zero; its logit is the log(V-K) column)."""
        super().__init__()
        self.cfg = cfg
        self.k_used = k_used
        self.trunk = hfm.Qwen3_5MoeTextModel(cfg)
        self.mtp = MTP(cfg)
        self.routers = [m for m in self.modules() if type(m).__name__.endswith("TopKRouter")]
        self._router_logits = []
        for r in self.routers:
            r.register_forward_hook(lambda mod, inp, out: self._router_logits.append(out[0]))
        self.extra_logit = math.log(GGUF_VOCAB - k_used)
        self.init_weights()

    @torch.no_grad()
    def init_weights(self):
        std = self.cfg.initializer_range
        for m in self.modules():
            kind = type(m).__name__
            if isinstance(m, nn.Linear):
                nn.init.normal_(m.weight, std=std)
            elif kind.endswith("Experts"):
                nn.init.normal_(m.gate_up_proj, std=std)
                nn.init.normal_(m.down_proj, std=std)
            elif kind.endswith("TopKRouter"):
                nn.init.normal_(m.weight, std=std)
            elif kind.endswith("RMSNormGated"):
                m.weight.fill_(1.0)
            elif kind.endswith("RMSNorm"):          # zero-centred: y = x_hat * (1 + w)
                m.weight.zero_()
            elif kind.endswith("GatedDeltaNet"):
                m.dt_bias.fill_(1.0)
                m.A_log.copy_(torch.empty_like(m.A_log).uniform_(1, 16).log())
                nn.init.kaiming_uniform_(m.conv1d.weight, a=math.sqrt(5))
        # output projections scaled down by depth (GPT-2 style), embedding unit-ish
        L = self.cfg.num_hidden_layers + 1
        for name, p in self.named_parameters():
            if name.endswith(("out_proj.weight", "o_proj.weight", "down_proj.weight", "experts.down_proj")):
                p.mul_(1.0 / math.sqrt(2 * L))
        self.trunk.embed_tokens.weight.normal_(std=std)
        self.zero_unused()

    @torch.no_grad()
    def zero_unused(self):
        self.trunk.embed_tokens.weight[self.k_used:].zero_()

    def logits(self, hn):
        W = self.trunk.embed_tokens.weight[: self.k_used]
        lg = F.linear(hn, W).float()
        extra = torch.full((*lg.shape[:-1], 1), self.extra_logit, dtype=lg.dtype, device=lg.device)
        return torch.cat([lg, extra], dim=-1)

    def forward(self, ids, mtp=True):
        """ids [B,T] compact ids (k_used = any unused id). Returns (main logits [B,T,K+1],
        mtp logits [B,T-2,K+1] for targets ids[:,2:], router logits list)."""
        self._router_logits.clear()
        B, T = ids.shape
        emb = self.trunk.embed_tokens(ids)
        out = self.trunk(inputs_embeds=emb, use_cache=False)
        h = out.last_hidden_state                      # post output_norm, feeds the head
        main = self.logits(h)
        mlog = None
        if mtp:
            # MTP position p = 1..T-2: token ids[p], state h[p-1], target ids[p+1] (= t+2 of h's t)
            pos = torch.arange(1, T - 1, device=ids.device).view(1, 1, -1).expand(3, B, -1)
            pe = self.trunk.rotary_emb(h, pos)
            hn = self.mtp(emb[:, 1:T - 1], h[:, 0:T - 2], pe)
            mlog = self.logits(hn)
        return main, mlog, list(self._router_logits)


def ce(logits, targets, k_used):
    """Mean cross-entropy on the compact vocabulary (targets >= k_used go to the extra column)."""
    t = targets.clamp(max=k_used)
    return F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), t.reshape(-1))


def nll_sum(logits, targets, k_used, extra_logit):
    """Exact full-vocabulary negative log-likelihood, summed (nats), and the count."""
    t = targets.clamp(max=k_used)
    l = F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), t.reshape(-1), reduction="none")
    l = l + (t.reshape(-1) == k_used).float() * extra_logit
    return l.sum(), l.numel()


def load_balancing(router_logits, n_experts, top_k):
    """Switch-style auxiliary loss over all MoE layers (trunk and MTP), as transformers'."""
    cnt = torch.zeros(n_experts, device=router_logits[0].device)
    prob = torch.zeros(n_experts, device=router_logits[0].device)
    rows = 0
    for lg in router_logits:
        p = torch.softmax(lg.float(), dim=-1)
        _, sel = torch.topk(p, top_k, dim=-1)
        cnt = cnt + torch.bincount(sel.reshape(-1), minlength=n_experts).float()
        prob = prob + p.sum(0)
        rows += p.shape[0]
    return (cnt / rows * prob / rows).sum() * n_experts
