"""ALiBi on Hugging Face GPT-2 (``GPT2Model``, ``GPT2LMHeadModel``), for transformers 4.48 and later.

Composer replaced ``GPT2Attention._attn`` and enlarged its fixed-size causal ``bias`` buffer. Since
transformers 4.48 neither exists: attention goes through ``ALL_ATTENTION_FUNCTIONS`` (eager, sdpa, flash)
with a mask the model builds per forward, at any length. So the bias goes in through that mask: a forward
pre-hook on each ``GPT2Attention`` (``_attn``) adds ``-m_h |i - j|`` to the ``attention_mask`` it is called
with (a causal one is built when the model passes none, as sdpa's ``is_causal`` path does). Eager and sdpa
attention add a float mask to the scaled scores, exactly where ALiBi's bias belongs; flash-attention kernels
take no additive mask, so they are refused. The learned position embedding ``wpe`` becomes a zero, frozen
``max_sequence_length``-row table (as in Composer), so positions past the trained length index it safely.

``_attn`` and ``enlarge_mask`` keep the names the algorithms page imports (``shared/seeds/002``).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from raycomp.algorithms.alibi.bias import ALiBiBias


def attention_classes() -> tuple[type[nn.Module], type[nn.Module]]:
    """``(GPT2Model, GPT2Attention)``, imported here: only called when transformers is installed."""
    from transformers.models.gpt2.modeling_gpt2 import GPT2Attention, GPT2Model

    return GPT2Model, GPT2Attention


def _attn(module: nn.Module, args: tuple, kwargs: dict[str, Any]) -> tuple[tuple, dict[str, Any]]:
    """The forward pre-hook that makes a ``GPT2Attention`` an ALiBi attention: its mask gains the bias."""
    hidden_states = args[0] if args else kwargs["hidden_states"]
    positional = len(args) > 2  # forward(hidden_states, cache, attention_mask, ...)
    mask = args[2] if positional else kwargs.get("attention_mask")
    t_query = hidden_states.shape[-2]
    if mask is not None:
        t_key = mask.shape[-1]
    else:
        cache = args[1] if len(args) > 1 else kwargs.get("cache", kwargs.get("past_key_values"))
        t_key = t_query + (cache.get_seq_length(module.layer_idx) if cache is not None else 0)
    dtype = hidden_states.dtype if hidden_states.is_floating_point() else torch.float32
    if torch.is_autocast_enabled(hidden_states.device.type):
        dtype = torch.get_autocast_dtype(hidden_states.device.type)
    bias = module.position_bias(module.num_heads, t_query, t_key, hidden_states.device, dtype)[None]
    lowest = torch.finfo(dtype).min
    if mask is None:
        allowed = torch.ones(t_query, t_key, dtype=torch.bool, device=bias.device).tril(t_key - t_query)
        new_mask = bias.masked_fill(~allowed, lowest)
    elif mask.dtype == torch.bool:
        new_mask = torch.where(mask, bias, lowest)
    else:
        new_mask = (mask + bias).clamp(min=lowest)
    if positional:
        args = (*args[:2], new_mask, *args[3:])
    else:
        kwargs = {**kwargs, "attention_mask": new_mask}
    return args, kwargs


def enlarge_mask(module: nn.Module, max_sequence_length: int) -> nn.Module:
    """Composer's name: grow a GPT2Attention's causal ``bias`` buffer to ``max_sequence_length``.

    transformers before 4.48 kept that fixed-size buffer; later versions build the mask per forward at any
    length and have none, and then there is nothing to enlarge.
    """
    old = getattr(module, "bias", None)
    if isinstance(old, torch.Tensor) and old.dim() == 4 and old.shape[-1] < max_sequence_length:
        ones = torch.ones(max_sequence_length, max_sequence_length, dtype=old.dtype, device=old.device)
        module.register_buffer("bias", ones.tril().view(1, 1, max_sequence_length, max_sequence_length), False)
    return module


def apply_to_attention(attention: nn.Module, max_sequence_length: int) -> bool:
    """Make one ``GPT2Attention`` an ALiBi attention; False if it already is (or is cross-attention)."""
    if getattr(attention, "is_cross_attention", False) or isinstance(
        getattr(attention, "position_bias", None), ALiBiBias
    ):
        return False
    implementation = attention.config._attn_implementation
    if implementation not in ("eager", "sdpa"):
        raise ValueError(f"ALiBi needs GPT-2's 'eager' or 'sdpa' attention (an additive mask), not {implementation!r}")
    device = attention.c_attn.weight.device
    attention.position_bias = ALiBiBias(attention.num_heads).to(device)
    enlarge_mask(attention, max_sequence_length)
    attention.register_forward_pre_hook(_attn, with_kwargs=True)
    return True


def zero_and_freeze_positions(model: nn.Module, max_sequence_length: int) -> nn.Parameter:
    """Replace the ``GPT2Model``'s ``wpe`` weight by zeros of ``max_sequence_length`` rows, frozen; returns the old.

    ``config.n_positions`` (``max_position_embeddings``) becomes ``max_sequence_length``.
    """
    wpe = model.wpe
    old = wpe.weight
    wpe.weight = nn.Parameter(torch.zeros(max_sequence_length, old.shape[1], dtype=old.dtype, device=old.device), False)
    wpe.num_embeddings = max_sequence_length
    model.config.n_positions = max_sequence_length
    return old
