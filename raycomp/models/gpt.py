"""A small GPT defined in raycomp: byte-level language modelling that trains in minutes on 2 CPU cores.

Its structure is an interface: model surgery (ALiBi, GatedLinearUnits, FusedLayerNorm) finds and replaces
these attributes by name, so they are kept stable. The GPT registers its classes with the surgeries that need
them (``register_alibi_model``, ``register_mlp``), as a user's model can: the surgeries import no model::

    GPT
      config: GPTConfig            vocab_size, seq_len, d_model, n_layers, n_heads, dropout, tie_weights
      max_seq_len: int             the longest T forward accepts while wpe is set (config.seq_len at build)
      wte: nn.Embedding            token embedding [vocab_size, d_model]
      wpe: nn.Embedding | None     learned positions [max_seq_len, d_model]; None: no learned positions,
                                   and forward accepts any T (ALiBi sets it to None to extrapolate)
      drop: nn.Dropout
      blocks: nn.ModuleList[Block]
      ln_f: nn.LayerNorm
      lm_head: nn.Linear           d_model -> vocab_size, no bias; its weight *is* wte.weight when tied

    Block                          x = x + attn(ln_1(x)); x = x + mlp(ln_2(x))   (pre-LayerNorm)
      ln_1: nn.LayerNorm, attn: CausalSelfAttention, ln_2: nn.LayerNorm, mlp: MLP

    CausalSelfAttention
      n_heads: int
      qkv: nn.Linear(d, 3d)        q, k, v in that order along the output dimension
      proj: nn.Linear(d, d)
      attn_dropout: float
      position_bias: nn.Module | None = None
          When set, called as ``position_bias(n_heads, T_query, T_key, device, dtype)``; it returns an
          additive bias broadcastable to [B, n_heads, T_query, T_key], added to the causal attention scores
          (before the softmax, after the 1/sqrt(head_dim) scaling), as ALiBi needs.

    MLP                            proj(act(fc(x)))
      fc: nn.Linear(d, 4d), act: nn.GELU, proj: nn.Linear(4d, d), drop: nn.Dropout

``GPT.forward(idx [B, T] int64) -> logits [B, T, vocab_size]``. Initialisation follows GPT-2: normal(0, 0.02)
weights, zero biases, and the residual projections (``attn.proj``, ``mlp.proj``) scaled by 1/sqrt(2 n_layers).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn
from torch.nn import functional as F

from raycomp.algorithms.alibi import register_alibi_model
from raycomp.algorithms.glu import register_mlp


@dataclass(frozen=True)
class GPTConfig:
    """The default has 0.84 M parameters; a training step on 16 x 128 bytes took 0.9-1.7 s on 2 shared CPU cores
    (torch 2.13), so a few hundred steps take minutes. ``tie_weights`` shares ``wte.weight`` with ``lm_head``."""

    vocab_size: int = 256
    seq_len: int = 128
    d_model: int = 128
    n_layers: int = 4
    n_heads: int = 4
    dropout: float = 0.0
    tie_weights: bool = True

    def __post_init__(self) -> None:
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model ({self.d_model}) must be a multiple of n_heads ({self.n_heads})")
        for name in ("vocab_size", "seq_len", "d_model", "n_layers", "n_heads"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")
        if not 0 <= self.dropout < 1:
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout}")


class CausalSelfAttention(nn.Module):
    """Multi-head causal self-attention through ``F.scaled_dot_product_attention``, with an optional bias hook."""

    def __init__(self, d_model: int, n_heads: int, dropout: float = 0.0) -> None:
        super().__init__()
        if d_model % n_heads:
            raise ValueError(f"d_model ({d_model}) must be a multiple of n_heads ({n_heads})")
        self.n_heads = n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)
        self.attn_dropout = dropout
        self.resid_drop = nn.Dropout(dropout)
        self.position_bias: nn.Module | None = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, length, width = x.shape
        q, k, v = self.qkv(x).split(width, dim=2)
        q, k, v = (t.view(batch, length, self.n_heads, width // self.n_heads).transpose(1, 2) for t in (q, k, v))
        dropout = self.attn_dropout if self.training else 0.0
        if self.position_bias is None:
            y = F.scaled_dot_product_attention(q, k, v, dropout_p=dropout, is_causal=True)
        else:
            bias = self.position_bias(self.n_heads, length, length, x.device, q.dtype)
            mask = causal_mask(length, length, x.device, q.dtype) + bias
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout)
        y = y.transpose(1, 2).contiguous().view(batch, length, width)
        return self.resid_drop(self.proj(y))


def causal_mask(t_query: int, t_key: int, device: torch.device, dtype: torch.dtype) -> torch.Tensor:
    """[T_query, T_key] additive mask: 0 where a query may attend (key position <= its own), -inf elsewhere.

    Queries are the last ``t_query`` positions of the ``t_key`` keys, as in ``is_causal`` attention.
    """
    allowed = torch.ones(t_query, t_key, dtype=torch.bool, device=device).tril(diagonal=t_key - t_query)
    return torch.zeros(t_query, t_key, dtype=dtype, device=device).masked_fill(~allowed, float("-inf"))


class MLP(nn.Module):
    """``proj(act(fc(x)))`` with a 4x hidden width and GELU, as in GPT-2."""

    def __init__(self, d_model: int, dropout: float = 0.0) -> None:
        super().__init__()
        self.fc = nn.Linear(d_model, 4 * d_model)
        self.act = nn.GELU()
        self.proj = nn.Linear(4 * d_model, d_model)
        self.drop = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.drop(self.proj(self.act(self.fc(x))))


class Block(nn.Module):
    """A pre-LayerNorm transformer block: ``x + attn(ln_1(x))``, then ``x + mlp(ln_2(x))``."""

    def __init__(self, d_model: int, n_heads: int, dropout: float = 0.0) -> None:
        super().__init__()
        self.ln_1 = nn.LayerNorm(d_model)
        self.attn = CausalSelfAttention(d_model, n_heads, dropout)
        self.ln_2 = nn.LayerNorm(d_model)
        self.mlp = MLP(d_model, dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    """Token ids ``[B, T]`` to next-token logits ``[B, T, vocab_size]``; see the module docstring for its layout."""

    def __init__(self, config: GPTConfig | None = None) -> None:
        super().__init__()
        config = config or GPTConfig()
        self.config = config
        self.max_seq_len = config.seq_len
        self.wte = nn.Embedding(config.vocab_size, config.d_model)
        self.wpe: nn.Embedding | None = nn.Embedding(config.seq_len, config.d_model)
        self.drop = nn.Dropout(config.dropout)
        self.blocks = nn.ModuleList(
            Block(config.d_model, config.n_heads, config.dropout) for _ in range(config.n_layers)
        )
        self.ln_f = nn.LayerNorm(config.d_model)
        self.lm_head = nn.Linear(config.d_model, config.vocab_size, bias=False)
        self.apply(self._init_weights)
        for block in self.blocks:
            for projection in (block.attn.proj, block.mlp.proj):
                nn.init.normal_(projection.weight, std=0.02 / math.sqrt(2 * config.n_layers))
        if config.tie_weights:
            self.lm_head.weight = self.wte.weight

    @staticmethod
    def _init_weights(module: nn.Module) -> None:
        if isinstance(module, nn.Linear | nn.Embedding):
            nn.init.normal_(module.weight, std=0.02)
        if isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        length = idx.shape[1]
        x = self.wte(idx)
        if self.wpe is not None:
            if length > self.max_seq_len:
                raise ValueError(
                    f"sequence length {length} exceeds max_seq_len {self.max_seq_len} of the learned "
                    "position embedding (wpe); without wpe (e.g. after ALiBi) any length is accepted"
                )
            x = x + self.wpe(torch.arange(length, device=idx.device))
        x = self.drop(x)
        for block in self.blocks:
            x = block(x)
        return self.lm_head(self.ln_f(x))


register_alibi_model(GPT, CausalSelfAttention)
register_mlp(MLP, fc="fc", act="act", proj="proj")
