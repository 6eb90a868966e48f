"""Surgery that finds nothing to change warns with a type, ``NoEffectWarning``, which the preflight refuses by, with
its ``reason`` (never by the message's wording)."""

from __future__ import annotations

import pytest
from torch import nn

from raycomp.algorithms import Alibi, BlurPool, FusedLayerNorm, GatedLinearUnits
from raycomp.algorithms.warnings import NoEffectWarning
from raycomp.core import Engine, Event, Logger, State


@pytest.mark.parametrize(
    ("algorithm", "reason"),
    [
        (BlurPool(), "the model has no strided Conv2d with >= min_channels input channels and no MaxPool2d"),
        (Alibi(max_sequence_length=64), "no raycomp GPT or Hugging Face GPT-2 attention found"),
        (GatedLinearUnits(), "no GPT MLP or GPT2MLP in the model"),
        (FusedLayerNorm(), "the model has no nn.LayerNorm"),
    ],
    ids=["blurpool", "alibi", "glu", "fused_layernorm"],
)
def test_surgery_without_targets_warns_no_effect_with_its_reason(algorithm, reason):
    state = State(nn.Sequential(nn.Linear(2, 2)), "1ep", algorithms=[algorithm])
    with pytest.warns(NoEffectWarning) as caught:
        Engine(state, Logger()).run_event(Event.INIT)
    assert [warning.message.reason for warning in caught if isinstance(warning.message, NoEffectWarning)] == [reason]
    assert issubclass(NoEffectWarning, UserWarning)  # filters on UserWarning still see it
