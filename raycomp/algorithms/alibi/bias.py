"""ALiBi's attention bias (Press et al. 2022, "Train Short, Test Long"): a penalty linear in query-key distance.

Head ``h`` adds ``-m_h * (i - j)`` to the score of query ``i`` for key ``j <= i``. The slopes ``m_h`` are a
geometric sequence: for ``n`` heads (a power of two) ``m_h = 2 ** (-8 h / n)``, h = 1..n, so 8 heads get
1/2, 1/4, ..., 1/256. For other head counts the paper takes the slopes of the nearest lower power of two and
fills the rest with every other slope of the next power of two. Nothing here is learned, and the bias is
defined for any length, which is what lets a model trained on short sequences run on longer ones.
"""

from __future__ import annotations

import math

import torch
from torch import nn


def alibi_slopes(n_heads: int) -> list[float]:
    """The per-head slopes ``m_h`` of the paper (and of its reference code), for any ``n_heads >= 1``."""
    if n_heads < 1:
        raise ValueError(f"n_heads must be at least 1, got {n_heads}")

    def power_of_two(n: int) -> list[float]:
        start = 2.0 ** (-8.0 / n)
        return [start ** (h + 1) for h in range(n)]

    if math.log2(n_heads).is_integer():
        return power_of_two(n_heads)
    lower = 2 ** math.floor(math.log2(n_heads))
    return power_of_two(lower) + alibi_slopes(2 * lower)[0::2][: n_heads - lower]


def alibi_bias(slopes: torch.Tensor, t_query: int, t_key: int, device: torch.device | None = None) -> torch.Tensor:
    """``[n_heads, t_query, t_key]``: ``-m_h * |i - j|``, queries being the last ``t_query`` of the ``t_key`` keys.

    Where ``j <= i`` (all a causal mask lets through) this is the paper's ``-m_h (i - j)``.
    """
    queries = torch.arange(t_key - t_query, t_key, device=device)
    keys = torch.arange(t_key, device=device)
    distance = (queries[:, None] - keys[None, :]).abs()
    return -slopes.to(device=device, dtype=torch.float32)[:, None, None] * distance[None].float()


class ALiBiBias(nn.Module):
    """The ``position_bias`` module of an attention: ``(n_heads, T_query, T_key, device, dtype) -> bias``.

    The slopes are a non-persistent buffer (they follow ``.to(device)`` but are not in the state_dict: they are
    a function of the head count). The last bias computed is cached, as every layer asks for the same one.
    """

    def __init__(self, n_heads: int) -> None:
        super().__init__()
        self.n_heads = n_heads
        self.register_buffer("slopes", torch.tensor(alibi_slopes(n_heads)), persistent=False)
        self._cache: tuple[tuple, torch.Tensor] | None = None

    def extra_repr(self) -> str:
        return f"n_heads={self.n_heads}"

    def forward(self, n_heads: int, t_query: int, t_key: int, device: torch.device, dtype: torch.dtype) -> torch.Tensor:
        if n_heads != self.n_heads:
            raise ValueError(f"this ALiBi bias was built for {self.n_heads} heads, asked for {n_heads}")
        key = (t_query, t_key, torch.device(device), dtype)
        if self._cache is None or self._cache[0] != key:
            with torch.no_grad():
                self._cache = (key, alibi_bias(self.slopes, t_query, t_key, device).to(dtype))
        return self._cache[1]

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        state["_cache"] = None  # a tensor of the last length used: not worth pickling or deep-copying
        return state
