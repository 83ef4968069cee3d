"""A small GPT, readable top to bottom (after nanoGPT). Shapes: B batch, T sequence, C hidden.

Attention and MLP are written with separate nn.Linear layers named the way tensor parallelism
shards them (Megatron): q/k/v and fc are split by columns, proj and fc_out by rows.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass(kw_only=True)
class GPTConfig:
    n_layer: int = 2
    """transformer blocks"""
    n_head: int = 4
    """attention heads (divisible by the tensor-parallel degree)"""
    n_embd: int = 64
    """hidden size C"""
    vocab_size: int = 256
    """tokens in the vocabulary"""
    block_size: int = 32
    """longest sequence T the position embedding covers"""

    def __post_init__(self):
        if self.n_embd % self.n_head:
            raise ValueError(f"n_embd={self.n_embd} must be divisible by n_head={self.n_head}")


class Attention(nn.Module):
    def __init__(self, cfg: GPTConfig):
        super().__init__()
        self.n_head, self.head_dim = cfg.n_head, cfg.n_embd // cfg.n_head
        self.q = nn.Linear(cfg.n_embd, cfg.n_embd)
        self.k = nn.Linear(cfg.n_embd, cfg.n_embd)
        self.v = nn.Linear(cfg.n_embd, cfg.n_embd)
        self.proj = nn.Linear(cfg.n_embd, cfg.n_embd)

    def forward(self, x):  # x: (B, T, C) — C may be sharded: heads follow the local width
        B, T, _ = x.shape
        q, k, v = self.q(x), self.k(x), self.v(x)  # (B, T, C_local)
        heads = q.shape[-1] // self.head_dim  # local heads under tensor parallelism
        q, k, v = (t.view(B, T, heads, self.head_dim).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # (B, h, T, d)
        return self.proj(y.transpose(1, 2).reshape(B, T, heads * self.head_dim))


class MLP(nn.Module):
    def __init__(self, cfg: GPTConfig):
        super().__init__()
        self.fc = nn.Linear(cfg.n_embd, 4 * cfg.n_embd)
        self.fc_out = nn.Linear(4 * cfg.n_embd, cfg.n_embd)

    def forward(self, x):
        return self.fc_out(F.gelu(self.fc(x)))


class Block(nn.Module):
    def __init__(self, cfg: GPTConfig):
        super().__init__()
        self.ln1, self.attn = nn.LayerNorm(cfg.n_embd), Attention(cfg)
        self.ln2, self.mlp = nn.LayerNorm(cfg.n_embd), MLP(cfg)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    """Embeddings, blocks, final norm and an untied LM head (untied so pipeline stages own them apart)."""

    def __init__(self, cfg: GPTConfig):
        super().__init__()
        self.cfg = cfg
        self.wte = nn.Embedding(cfg.vocab_size, cfg.n_embd)
        self.wpe = nn.Embedding(cfg.block_size, cfg.n_embd)
        self.blocks = nn.ModuleDict({str(i): Block(cfg) for i in range(cfg.n_layer)})
        self.ln_f = nn.LayerNorm(cfg.n_embd)
        self.head = nn.Linear(cfg.n_embd, cfg.vocab_size, bias=False)
        for p in self.parameters():
            if p.dim() > 1:
                nn.init.normal_(p, std=0.02 / math.sqrt(2 * cfg.n_layer))

    def forward(self, idx):  # idx: (B, T) token ids, or (B, T, C) activations on a later pipeline stage
        x = idx
        if self.wte is not None:
            T = idx.shape[1]
            x = self.wte(idx) + self.wpe(torch.arange(T, device=idx.device).unsqueeze(0))  # (B,T,C) + (1,T,C)
        for block in self.blocks.values():
            x = block(x)
        if self.ln_f is not None:
            x = self.ln_f(x)
        return self.head(x) if self.head is not None else x  # logits (B, T, V)
