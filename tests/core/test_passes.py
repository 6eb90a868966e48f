import warnings

import pytest
from helpers import tiny_model

from raycomp.algorithms import SelectiveBackprop
from raycomp.core import Algorithm, Engine, Event, State
from raycomp.core.passes import (
    default_passes,
    set_filo_order,
    sort_fused_layernorm_last,
    sort_selective_backprop_first,
    sort_to_back,
    sort_to_front,
    warn_if_multiple_loss_interpolation,
)


def make_algorithm(name: str, interpolate_loss: bool = False) -> Algorithm:
    """A distinct Algorithm class per name (the Engine allows one instance per class)."""

    def match(self, event, state):
        return True

    def apply(self, event, state, logger):
        state.ran.append((event, name))

    return type(name, (Algorithm,), {"match": match, "apply": apply, "interpolate_loss": interpolate_loss})()


def run_order(algorithms, event):
    state = State(tiny_model(), "1ep", algorithms=algorithms)
    state.ran = []
    state.batch = None
    Engine(state).run_event(event)
    return [name for _, name in state.ran]


def test_sort_helpers_match_composer_examples():
    assert sort_to_back([1, "b", 3], str) == [1, 3, "b"]
    assert sort_to_front([1, "b", 3], str) == ["b", 1, 3]


@pytest.mark.parametrize("event", list(Event))
def test_filo_on_every_event(event):
    algorithms = [make_algorithm(n) for n in "ABCD"]
    expected = list("DCBA") if event.is_after_event else list("ABCD")
    assert run_order(algorithms, event) == expected
    assert [type(a).__name__ for a in set_filo_order(algorithms, event)] == expected


class PinnedSB(SelectiveBackprop):
    """SelectiveBackprop that matches every event, so the SB-first pass can be checked everywhere."""

    def match(self, event, state):
        return True

    def apply(self, event, state, logger):
        state.ran.append((event, "SB"))


@pytest.mark.parametrize("event", list(Event))
def test_selective_backprop_first_on_every_event(event):
    a, b, c = (make_algorithm(n) for n in "ABC")
    algorithms = [a, b, PinnedSB(), c]
    order = run_order(algorithms, event)
    assert order[0] == "SB"
    assert order[1:] == (["C", "B", "A"] if event.is_after_event else ["A", "B", "C"])


def test_selective_backprop_runs_first_on_after_dataloader():
    """The passes page: SB before any augmentation on AFTER_DATALOADER, although it is an after_ event.

    Composer sorts SB first and then reverses after_ events, so there SB runs last; we must not.
    """
    mixup, cutmix = make_algorithm("MixUp"), make_algorithm("CutMix")
    assert run_order([PinnedSB(), mixup, cutmix], Event.AFTER_DATALOADER) == ["SB", "CutMix", "MixUp"]
    assert run_order([mixup, cutmix, PinnedSB()], Event.AFTER_DATALOADER) == ["SB", "CutMix", "MixUp"]


def test_pass_functions_alone():
    a, b, sb = make_algorithm("A"), make_algorithm("B"), SelectiveBackprop()
    assert sort_selective_backprop_first([a, b, sb], Event.INIT) == [sb, a, b]
    fused = make_algorithm("FusedLayerNorm")
    assert sort_fused_layernorm_last([fused, a, b], Event.INIT) == [a, b, fused]
    assert default_passes()[0] is set_filo_order


def test_warns_once_two_algorithms_interpolate_the_loss():
    mixup, cutmix = make_algorithm("MixUp", True), make_algorithm("CutMix", True)
    with pytest.warns(UserWarning, match="interpolate the loss.*MixUp, CutMix"):
        warn_if_multiple_loss_interpolation([mixup, cutmix], Event.AFTER_LOSS)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warn_if_multiple_loss_interpolation([mixup, make_algorithm("A")], Event.AFTER_LOSS)


def test_user_pass_registered_at_an_index():
    a, b = make_algorithm("A"), make_algorithm("B")
    state = State(tiny_model(), "1ep", algorithms=[a, b])
    state.ran = []
    engine = Engine(state)

    def b_first(algorithms, event):
        return sort_to_front(algorithms, type(b))

    engine.register_pass(b_first)  # after FILO: wins on every event
    engine.run_event(Event.BEFORE_LOSS)
    engine.run_event(Event.AFTER_LOSS)
    assert [name for _, name in state.ran] == ["B", "A", "B", "A"]

    state.ran.clear()
    engine.algorithm_passes.remove(b_first)
    engine.register_pass(b_first, index=0)  # before FILO: reversed on after_ events
    engine.run_event(Event.BEFORE_LOSS)
    engine.run_event(Event.AFTER_LOSS)
    assert [name for _, name in state.ran] == ["B", "A", "A", "B"]
