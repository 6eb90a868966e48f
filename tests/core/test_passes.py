import re
import warnings
from pathlib import Path

import pytest
from helpers import tiny_model

from raycomp.algorithms import SelectiveBackprop
from raycomp.core import Algorithm, Engine, Event, State
from raycomp.core.passes import (
    default_passes,
    set_filo_order,
    sort_first_on,
    sort_last_on,
    sort_to_back,
    sort_to_front,
    warn_if_multiple_loss_interpolation,
)


def make_algorithm(name: str, interpolate_loss: bool = False, **pins: frozenset[Event]) -> Algorithm:
    """A distinct Algorithm class per name (the Engine allows one instance per class); ``pins``: first_on, last_on."""

    def match(self, event, state):
        return True

    def apply(self, event, state, logger):
        state.ran.append((event, name))

    attributes = {"match": match, "apply": apply, "interpolate_loss": interpolate_loss, **pins}
    return type(name, (Algorithm,), attributes)()


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


@pytest.mark.parametrize("event", list(Event))
def test_first_on_pins_to_the_front_after_filo(event):
    a, b, c = (make_algorithm(n) for n in "ABC")
    pinned = make_algorithm("P", first_on=frozenset(Event))
    order = run_order([a, b, pinned, c], event)
    assert order[0] == "P"
    assert order[1:] == (["C", "B", "A"] if event.is_after_event else ["A", "B", "C"])


@pytest.mark.parametrize("event", list(Event))
def test_last_on_pins_to_the_back_after_filo(event):
    a, b, c = (make_algorithm(n) for n in "ABC")
    pinned = make_algorithm("P", last_on=frozenset(Event))
    order = run_order([a, pinned, b, c], event)
    assert order[-1] == "P"
    assert order[:-1] == (["C", "B", "A"] if event.is_after_event else ["A", "B", "C"])


def test_pins_hold_only_at_their_events():
    a, b = make_algorithm("A"), make_algorithm("B", first_on=frozenset({Event.AFTER_DATALOADER}))
    assert run_order([a, b], Event.AFTER_DATALOADER) == ["B", "A"]
    assert run_order([a, b], Event.AFTER_LOSS) == ["B", "A"]  # FILO alone
    assert run_order([a, b], Event.BEFORE_LOSS) == ["A", "B"]


class PinnedSB(SelectiveBackprop):
    """SelectiveBackprop that matches every event; it keeps SelectiveBackprop's ``first_on``."""

    def match(self, event, state):
        return True

    def apply(self, event, state, logger):
        state.ran.append((event, "SB"))


def test_selective_backprop_runs_first_on_after_dataloader():
    """The passes page: SB before any augmentation on AFTER_DATALOADER, although it is an after_ event.

    Composer sorts SB first and then reverses after_ events, so there SB runs last; we must not.
    """
    assert Event.AFTER_DATALOADER in SelectiveBackprop.first_on
    mixup, cutmix = make_algorithm("MixUp"), make_algorithm("CutMix")
    assert run_order([PinnedSB(), mixup, cutmix], Event.AFTER_DATALOADER) == ["SB", "CutMix", "MixUp"]
    assert run_order([mixup, cutmix, PinnedSB()], Event.AFTER_DATALOADER) == ["SB", "CutMix", "MixUp"]


def test_pass_functions_alone():
    a, b = make_algorithm("A"), make_algorithm("B")
    first, last = (
        make_algorithm("F", first_on=frozenset({Event.INIT})),
        make_algorithm("L", last_on=frozenset({Event.INIT})),
    )
    assert sort_first_on([a, b, first], Event.INIT) == [first, a, b]
    assert sort_first_on([a, b, first], Event.FIT_START) == [a, b, first]
    assert sort_last_on([last, a, b], Event.INIT) == [a, b, last]
    assert sort_last_on([last, a, b], Event.FIT_START) == [last, a, b]
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


def noop_pass(algorithms, event):
    return list(algorithms)


def test_passes_given_to_the_engine_are_added_after_the_defaults():
    """Composer merges user passes with its defaults: one custom pass must not drop FILO, SB-first or the warning."""
    state = State(tiny_model(), "1ep")
    assert Engine(state, passes=[noop_pass]).algorithm_passes == [*default_passes(), noop_pass]
    assert Engine(state, passes=[(noop_pass, 0)]).algorithm_passes == [noop_pass, *default_passes()]


def test_register_pass_appends_at_index_minus_one_as_in_composer():
    engine = Engine(State(tiny_model(), "1ep"))
    engine.register_pass(noop_pass, index=-1)  # list.insert(-1, ...) would put it before the last default
    assert engine.algorithm_passes[-1] is noop_pass and engine.algorithm_passes[:-1] == default_passes()


def test_the_seed_pages_passes_are_importable_and_do_what_it_says():
    """The passes seed page names sort_selective_backprop_first and sort_fused_layernorm_last; its example pass
    (`run_last`) runs as written."""
    from collections.abc import Sequence

    from raycomp.algorithms import FusedLayerNorm
    from raycomp.core.passes import sort_fused_layernorm_last, sort_selective_backprop_first

    class MyAlgorithm(Algorithm):
        def match(self, event, state):
            return True

        def apply(self, event, state, logger):
            pass

    def run_last(algorithms: Sequence[Algorithm], event: Event) -> Sequence[Algorithm]:
        algorithms = sorted(algorithms, key=lambda x: isinstance(x, MyAlgorithm))
        return algorithms

    a, sb, fused, mine = make_algorithm("A"), SelectiveBackprop(), FusedLayerNorm(), MyAlgorithm()
    assert run_last([mine, a], Event.INIT) == [a, mine]
    assert sort_selective_backprop_first([a, sb], Event.AFTER_DATALOADER) == [sb, a]
    assert sort_selective_backprop_first([a, sb], Event.BEFORE_LOSS) == [a, sb]
    assert sort_fused_layernorm_last([fused, a], Event.INIT) == [a, fused]
    assert sort_fused_layernorm_last([fused, a], Event.FIT_START) == [fused, a]
    names = [p.__name__ for p in default_passes()]
    assert names[:3] == ["set_filo_order", "sort_selective_backprop_first", "sort_fused_layernorm_last"]


def test_the_evaluation_loops_events_keep_their_order_as_in_composer():
    algorithms = [make_algorithm(n) for n in "ABC"]
    for event in (Event.EVAL_AFTER_FORWARD, Event.EVAL_AFTER_ALL, Event.EVAL_BEFORE_ALL):
        assert run_order(algorithms, event) == list("ABC")
    assert run_order(algorithms, Event.AFTER_FORWARD) == list("CBA")


def test_selective_backprop_applies_without_a_logger_as_composers_example_does():
    import torch

    sb = SelectiveBackprop(start=0.0, end=1.0, keep=0.5, interrupt=0)
    state = State(tiny_model(), "1ep", algorithms=[sb])
    sb.apply(Event.INIT, state)
    state.batch = (torch.randn(8, 3, 32, 32), torch.randint(0, 2, (8,)))
    sb.apply(Event.AFTER_DATALOADER, state, logger=None)
    assert state.batch[0].shape[0] == 4 and sb.last_num_kept == 4


def test_docs_name_the_default_passes_in_their_order():
    """docs/core.md's numbered list of default passes is the code's (it once kept names the code had dropped)."""
    text = (Path(__file__).resolve().parents[2] / "docs" / "core.md").read_text()
    section = text[text.index("The default passes run in this order:") : text.index("The pinning passes come after")]
    listed = re.findall(r"^\d+\. `(\w+)`", section, flags=re.MULTILINE)
    assert listed == [p.__name__ for p in default_passes()]
