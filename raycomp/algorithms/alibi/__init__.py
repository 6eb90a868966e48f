"""ALiBi (Press et al. 2022; Composer's ``Alibi``): position by attention bias, so sequences can outgrow training.

``apply_alibi`` removes the learned position embedding and makes every causal self-attention add ALiBi's
bias (``raycomp.algorithms.alibi.bias``) to its scores: on a model registered with ``register_alibi_model``
(raycomp's GPT, which ``raycomp.models.gpt`` registers, so this surgery imports no model) by setting its
``wpe = None`` and each attention's ``position_bias``; on Hugging Face GPT-2 (when transformers is installed) as
in ``gpt2_alibi``. The model then accepts sequences of any length; ``max_sequence_length`` is recorded as the
model's ``max_seq_len`` (GPT) or the size of its zeroed position table (GPT-2).

The ``Alibi`` algorithm does the surgery on INIT and, as Composer's, trains on shorter sequences: on
AFTER_DATALOADER each batch is cut to ``train_sequence_length_scaling`` of its length ("train short, test
long"). Evaluation runs at full length, which the bias extrapolates to.
"""

from __future__ import annotations

import importlib.util
import warnings
from collections.abc import Mapping
from operator import attrgetter
from typing import Annotated, Any, ClassVar

import torch
from pydantic import Field
from torch import nn

from raycomp.algorithms._surgery import replace_params_in_optimizers
from raycomp.algorithms._workload import surgery_refusal
from raycomp.algorithms.alibi.bias import ALiBiBias, alibi_bias, alibi_slopes
from raycomp.algorithms.arguments import checked_arguments
from raycomp.algorithms.seq_length_warmup import set_batch_sequence_length
from raycomp.algorithms.warnings import NoEffectWarning
from raycomp.core.algorithm import Algorithm, Inapplicable
from raycomp.core.event import Event
from raycomp.core.logger import Logger
from raycomp.core.state import State

__all__ = ["ALiBiBias", "Alibi", "alibi_bias", "alibi_slopes", "apply_alibi", "register_alibi_model"]

# Models (with learned positions) and their attentions (with a position_bias hook), as the models register them
_REGISTERED_MODELS: list[type[nn.Module]] = []
_REGISTERED_ATTENTIONS: list[type[nn.Module]] = []


def register_alibi_model(model_class: type[nn.Module], attention_class: type[nn.Module]) -> None:
    """Lets ALiBi change ``model_class`` and its ``attention_class`` (raycomp's GPT: ``raycomp.models.gpt``).

    The model has ``wpe``, its learned position embedding (an ``nn.Embedding``; ALiBi sets it to None), and
    ``max_seq_len``, the longest input it accepts while ``wpe`` is set. The attention has ``n_heads`` and a
    ``position_bias`` (None until ALiBi sets it) that it calls as ``position_bias(n_heads, T_query, T_key, device,
    dtype)`` and adds to its causal attention scores.
    """
    for registered, cls in ((_REGISTERED_MODELS, model_class), (_REGISTERED_ATTENTIONS, attention_class)):
        if cls not in registered:
            registered.append(cls)


def apply_alibi(
    model: nn.Module,
    max_sequence_length: int,
    optimizers: torch.optim.Optimizer | list[torch.optim.Optimizer] | None = None,
    *,
    heads_per_layer: int | None = None,
    position_embedding_attribute: str | None = None,
    attention_module: type[nn.Module] | None = None,
    attr_to_replace: str | None = None,
    alibi_attention: Any = None,
    mask_replacement_function: Any = None,
) -> int:
    """ALiBi surgery on ``model`` in place; returns how many attentions it changed (0: a warning).

    Applying it twice changes nothing more. ``optimizers`` built before it stop holding the removed position
    embedding. The keyword-only arguments are the older Composer signature the algorithms page shows; raycomp
    finds attentions and position embeddings by itself, so they are only checked against what it finds:
    ``heads_per_layer`` must equal each attention's head count, ``position_embedding_attribute`` (a dotted
    path from ``model``, e.g. ``module.transformer.wpe`` on a ``LanguageModel``) must name a GPT-2
    ``wpe``, ``attention_module`` limits the surgery to that class, and ``attr_to_replace``,
    ``alibi_attention`` and ``mask_replacement_function`` must be ``"_attn"``, ``gpt2_alibi._attn`` and
    ``gpt2_alibi.enlarge_mask`` (see that module: transformers >= 4.48 has no ``_attn`` to replace).
    """
    if max_sequence_length < 1:
        raise ValueError(f"max_sequence_length must be at least 1, got {max_sequence_length}")
    hf = _hf_gpt2_classes(model)
    _check_legacy(hf, attr_to_replace, alibi_attention, mask_replacement_function)
    attentions = (*_REGISTERED_ATTENTIONS, *(hf[1:] if hf else ()))
    if attention_module is not None:
        if not issubclass(attention_module, attentions):
            raise TypeError(f"apply_alibi has no surgery for {attention_module.__qualname__}")
        attentions = (attention_module,)
    named_wpe = _named(model, position_embedding_attribute)
    removed: list[nn.Parameter] = []
    changed = 0
    for module in list(model.modules()):
        if isinstance(module, attentions):
            heads = module.n_heads if isinstance(module, tuple(_REGISTERED_ATTENTIONS)) else module.num_heads
            if heads_per_layer is not None and heads != heads_per_layer:
                raise ValueError(f"heads_per_layer={heads_per_layer}, but the model's attention has {heads} heads")
            changed += _apply_to_attention(module, max_sequence_length)
        elif isinstance(module, tuple(_REGISTERED_MODELS)):
            _check_named(named_wpe, module.wpe, position_embedding_attribute)
            if module.wpe is not None:
                removed.append(module.wpe.weight)
                module.wpe = None
            module.max_seq_len = max_sequence_length
        elif hf and isinstance(module, hf[0]):
            _check_named(named_wpe, module.wpe, position_embedding_attribute)
            if module.wpe.weight.requires_grad:
                from raycomp.algorithms.alibi.gpt2_alibi import zero_and_freeze_positions

                removed.append(zero_and_freeze_positions(module, max_sequence_length))
    replace_params_in_optimizers(removed, [], optimizers)
    if changed == 0 and not any(isinstance(m, ALiBiBias) for m in model.modules()):
        reason = "no raycomp GPT or Hugging Face GPT-2 attention found"
        warnings.warn(NoEffectWarning("ALiBi changed no attention", reason), stacklevel=2)
    return changed


def _apply_to_attention(attention: nn.Module, max_sequence_length: int) -> bool:
    if isinstance(attention, tuple(_REGISTERED_ATTENTIONS)):
        if isinstance(attention.position_bias, ALiBiBias):
            return False
        device = next(attention.parameters()).device
        attention.position_bias = ALiBiBias(attention.n_heads).to(device)
        return True
    from raycomp.algorithms.alibi.gpt2_alibi import apply_to_attention

    return apply_to_attention(attention, max_sequence_length)


def _hf_gpt2_classes(model: nn.Module) -> tuple[type[nn.Module], type[nn.Module]] | None:
    """``(GPT2Model, GPT2Attention)`` when transformers is installed and ``model`` holds a GPT2Model."""
    if importlib.util.find_spec("transformers") is None:
        return None
    if not any(type(m).__name__ == "GPT2Model" for m in model.modules()):
        return None
    from raycomp.algorithms.alibi.gpt2_alibi import attention_classes

    return attention_classes()


def _named(model: nn.Module, path: str | None) -> nn.Embedding | None:
    if path is None:
        return None
    wpe = attrgetter(path)(model)
    if not isinstance(wpe, nn.Embedding):
        raise TypeError(f"position_embedding_attribute {path!r} names a {type(wpe).__name__}, not an nn.Embedding")
    return wpe


def _check_named(named: nn.Embedding | None, wpe: nn.Module | None, path: str | None) -> None:
    if named is not None and wpe is not None and named is not wpe:
        raise ValueError(f"position_embedding_attribute {path!r} is not the model's position embedding (wpe)")


def _check_legacy(hf: Any, attr_to_replace: Any, alibi_attention: Any, mask_replacement_function: Any) -> None:
    if attr_to_replace is None and alibi_attention is None and mask_replacement_function is None:
        return
    from raycomp.algorithms.alibi import gpt2_alibi

    expected = {"attr_to_replace": "_attn", "alibi_attention": gpt2_alibi._attn}
    expected["mask_replacement_function"] = gpt2_alibi.enlarge_mask
    given = {
        "attr_to_replace": attr_to_replace,
        "alibi_attention": alibi_attention,
        "mask_replacement_function": mask_replacement_function,
    }
    for name, value in given.items():
        if value is not None and value is not expected[name] and value != expected[name]:
            raise ValueError(f"apply_alibi: {name}={value!r} is not supported; raycomp's surgery is {expected[name]!r}")


class Alibi(Algorithm):
    """``apply_alibi`` on INIT (``required_on_load``), then batches cut to ``train_sequence_length_scaling``.

    Composer's defaults: ``max_sequence_length=8192``, ``train_sequence_length_scaling=0.25``; 1.0 trains at
    full length. Logs ``alibi/num_replaced`` and ``alibi/train_seq_len``.
    """

    # the values a recipe search (raycomp find) tries beside the defaults
    tuned_arguments: ClassVar[Mapping[str, tuple[Any, ...]]] = {"train_sequence_length_scaling": (0.25, 0.5, 1.0)}

    @checked_arguments
    def __init__(
        self,
        max_sequence_length: Annotated[int, Field(ge=1)] = 8192,
        train_sequence_length_scaling: Annotated[float, Field(gt=0, le=1)] = 0.25,
    ) -> None:
        self.max_sequence_length = max_sequence_length
        self.train_sequence_length_scaling = train_sequence_length_scaling

    @staticmethod
    def required_on_load() -> bool:
        return True

    def check_workload(self, model: nn.Module, batch: Any) -> Inapplicable | None:
        """Its surgery must find attention it knows in ``model`` (a copy of it), and the changed model must run."""
        return surgery_refusal(self, model, batch)

    def match(self, event: Event, state: State) -> bool:
        return event is Event.INIT or (event is Event.AFTER_DATALOADER and self.train_sequence_length_scaling < 1)

    def apply(self, event: Event, state: State, logger: Logger) -> None:
        if event is Event.INIT:
            changed = apply_alibi(state.model, self.max_sequence_length, optimizers=state.optimizers)
            logger.log_metrics({"alibi/num_replaced": changed}, state.step)
            return
        length = next(t.shape[1] for t in _tensors(state.batch) if t.dim() >= 2)
        train_length = max(1, int(length * self.train_sequence_length_scaling))
        state.batch = set_batch_sequence_length(state.batch, train_length, truncate=True)
        logger.log_metrics({"alibi/train_seq_len": train_length}, state.step)


def _tensors(batch: Any) -> list[torch.Tensor]:
    values = batch.values() if isinstance(batch, dict) else batch
    return [v for v in values if isinstance(v, torch.Tensor)]
