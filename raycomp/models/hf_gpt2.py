"""Hugging Face ``GPT2LMHeadModel``, randomly initialised from a small ``GPT2Config``: nothing is downloaded.

It needs the optional extra ``raycomp[nlp]`` (``transformers``), imported only when the model is built, so
raycomp imports and its other models work without it. The built model is wrapped as a ``LanguageModel``
whose ``module`` is the ``GPT2LMHeadModel`` itself (``module.transformer.h[i].attn``, ``module.transformer.wpe``
...), which is what Hugging Face model surgery such as ALiBi's expects to find.
"""

from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING

from raycomp.models.gpt import GPTConfig
from raycomp.models.language import LanguageModel

if TYPE_CHECKING:
    from transformers import GPT2LMHeadModel

INSTALL_HINT = 'pip install "raycomp[nlp]" (or pip install -e ".[nlp]" in a checkout)'


def import_transformers() -> ModuleType:
    """``transformers``, or an ImportError naming the extra that installs it."""
    try:
        import transformers
    except ImportError as error:
        raise ImportError(f"model 'gpt2_hf' needs Hugging Face transformers: {INSTALL_HINT}") from error
    return transformers


def gpt2_lm_head(config: GPTConfig | None = None) -> GPT2LMHeadModel:
    """A ``GPT2LMHeadModel`` with ``config``'s sizes (``n_positions = seq_len``), tied embeddings, no KV cache."""
    config = config or GPTConfig()
    transformers = import_transformers()
    hf_config = transformers.GPT2Config(
        vocab_size=config.vocab_size,
        n_positions=config.seq_len,
        n_embd=config.d_model,
        n_layer=config.n_layers,
        n_head=config.n_heads,
        resid_pdrop=config.dropout,
        embd_pdrop=config.dropout,
        attn_pdrop=config.dropout,
        tie_word_embeddings=config.tie_weights,
        use_cache=False,  # training only: no past key values kept or returned
    )
    return transformers.GPT2LMHeadModel(hf_config)


def hf_gpt2(config: GPTConfig | None = None) -> LanguageModel:
    """``gpt2_lm_head(config)`` as a ``RaycompModel`` with per-sequence losses (see ``LanguageModel``)."""
    return LanguageModel(gpt2_lm_head(config))
