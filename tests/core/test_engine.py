import pytest
from helpers import tiny_model

from raycomp.algorithms import SelectiveBackprop
from raycomp.core import Algorithm, Callback, Engine, Event, State, Trace


class Doubler(Algorithm):
    """Matches BEFORE_LOSS only; exit code 7."""

    def match(self, event, state):
        return event is Event.BEFORE_LOSS

    def apply(self, event, state, logger):
        state.log.append("algorithm")
        return 7


class Shy(Algorithm):
    def match(self, event, state):
        return False

    def apply(self, event, state, logger):
        raise AssertionError("never runs")


class Broken(Algorithm):
    def match(self, event, state):
        return True

    def apply(self, event, state, logger):
        raise KeyError("boom")


class Watcher(Callback):
    def before_loss(self, state, logger):
        state.log.append("callback")


def make_engine(algorithms, callbacks=()):
    state = State(tiny_model(), "1ep", algorithms=algorithms, callbacks=callbacks)
    state.log = []
    return Engine(state), state


def test_traces_record_run_and_skipped_algorithms():
    engine, state = make_engine([Shy(), Doubler()], [Watcher()])
    traces = engine.run_event(Event.BEFORE_LOSS)
    assert state.log == ["algorithm", "callback"]  # algorithms before callbacks
    by_name = {t.name: t for t in traces}
    ran = by_name["Doubler"]
    assert (ran.event, ran.exit_code, ran.order, ran.run) == (Event.BEFORE_LOSS, 7, 0, True)
    assert ran.duration_s > 0
    assert by_name["Shy"] == Trace("Shy", Event.BEFORE_LOSS)  # considered, not run
    assert engine.last_traces[Event.BEFORE_LOSS] == traces


def test_trace_summary_per_event_and_in_total():
    engine, _ = make_engine([Doubler()])
    for _ in range(3):
        engine.run_event(Event.BEFORE_LOSS)
    engine.run_event(Event.AFTER_LOSS)
    stats = engine.trace_summary.get("Doubler", Event.BEFORE_LOSS)
    assert stats.count == 3 and stats.exit_codes == {7: 3}
    assert stats.mean_s == pytest.approx(stats.total_s / 3)
    assert engine.trace_summary.get("Doubler", Event.AFTER_LOSS) is None
    assert engine.trace_summary.total_s() == pytest.approx(stats.total_s)
    [row] = engine.trace_summary.rows()
    assert row["algorithm"] == "Doubler" and row["event"] == "before_loss" and row["count"] == 3


def test_two_instances_of_one_algorithm_are_an_error():
    with pytest.raises(ValueError, match="several SelectiveBackprop"):
        make_engine([SelectiveBackprop(), SelectiveBackprop(keep=0.3)])


def namesake():
    """A class named Doubler, distinct from the module's Doubler."""

    class Doubler(Shy):
        pass

    return Doubler


def test_two_classes_sharing_a_name_are_two_algorithms():
    other = namesake()
    _, state = make_engine([Doubler(), other()])
    assert len(state.algorithms) == 2 and type(state.algorithms[1]).__name__ == "Doubler"
    with pytest.raises(ValueError, match=r"several test_engine\.namesake\.<locals>\.Doubler:"):
        make_engine([Doubler(), other(), other()])


def test_errors_name_the_algorithm_and_event():
    engine, _ = make_engine([Broken()])
    with pytest.raises(KeyError) as info:
        engine.run_event(Event.EPOCH_START)
    assert "raised by algorithm Broken at event epoch_start" in info.value.__notes__


def test_errors_name_the_callback():
    class Failing(Callback):
        def fit_end(self, state, logger):
            raise RuntimeError("nope")

    engine, _ = make_engine([], [Failing()])
    with pytest.raises(RuntimeError) as info:
        engine.run_event(Event.FIT_END)
    assert "raised by callback Failing at event fit_end" in info.value.__notes__


def test_algorithm_records_its_constructor_arguments():
    sb = SelectiveBackprop(keep=0.25, interrupt=0)
    assert sb.init_args == {
        "start": 0.5,
        "end": 0.9,
        "keep": 0.25,
        "scale_factor": 0.5,
        "interrupt": 0,
    }
    assert not sb.find_unused_parameters and not sb.backwards_create_graph
    assert SelectiveBackprop.required_on_load() is False
    assert sb.state_dict() == {}
