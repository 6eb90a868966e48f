"""Each algorithm declares its arguments once, in its signature: checked in Python, read by the config."""

import inspect
import pickle

import pytest
from pydantic import ValidationError

from raycomp.algorithms import EMA, SelectiveBackprop
from raycomp.algorithms.registry import ALGORITHMS, algorithm_class, arguments_schema
from raycomp.core import Algorithm


def test_a_bad_value_raises_a_value_error_naming_the_argument():
    with pytest.raises(ValidationError) as info:
        SelectiveBackprop(keep=1.5, interrupt=True)
    assert isinstance(info.value, ValueError)
    assert [(error["loc"], error["type"]) for error in info.value.errors()] == [
        (("keep",), "less_than_equal"),
        (("interrupt",), "int_type"),  # strict, as the config: true is not 1
    ]
    assert str(info.value).startswith("2 validation errors for SelectiveBackprop\nkeep\n")


def test_a_rule_across_arguments_is_one_value_error_and_a_misspelt_name_a_type_error():
    with pytest.raises(ValueError, match=r"^SelectiveBackprop needs 0 <= start < end <= 1, got start=0.9, end=0.5$"):
        SelectiveBackprop(start=0.9, end=0.5)
    with pytest.raises(TypeError, match="kep"):
        SelectiveBackprop(kep=0.5)


def test_the_recorded_arguments_re_create_the_algorithm():
    """``Algorithm.__new__`` sees the signature through the check, so checkpoints can rebuild from init_args."""
    algorithm = SelectiveBackprop(0.2, keep=0.3)
    assert algorithm.init_args == {
        "start": 0.2,
        "end": 0.9,
        "keep": 0.3,
        "scale_factor": 0.5,
        "interrupt": 2,
    }
    again = SelectiveBackprop(**algorithm.init_args)
    assert (again.start, again.keep) == (0.2, 0.3)
    ema = EMA(half_life=None, smoothing=0.9)
    assert EMA(**ema.init_args).smoothing == 0.9


@pytest.mark.parametrize("name", ALGORITHMS)
def test_the_schema_is_the_signature(name):
    cls = algorithm_class(name)
    parameters = list(inspect.signature(cls.__init__).parameters.values())[1:]
    fields = arguments_schema(name).model_fields
    assert list(fields) == [p.name for p in parameters]
    assert all(fields[p.name].default == p.default for p in parameters)
    cls(**{p.name: p.default for p in parameters})  # the defaults pass their own declaration


def test_rules_across_arguments_are_in_the_model_so_no_instance_checks_them():
    """The config validates ``start < end`` with the model alone, keeps it, and pickles it as Ray does."""
    model = arguments_schema("selective_backprop")
    with pytest.raises(ValidationError, match="SelectiveBackprop needs 0 <= start < end <= 1"):
        model.model_validate({"start": 0.9, "end": 0.5})
    arguments = model.model_validate({"keep": 0.3})
    assert arguments.given() == {"keep": 0.3} and (arguments.keep, arguments.end) == (0.3, 0.9)
    assert pickle.loads(pickle.dumps(arguments)) == arguments
    assert pickle.loads(pickle.dumps(arguments)).given() == {"keep": 0.3}
    with pytest.raises(ValidationError, match="frozen"):
        arguments.keep = 0.5


class Noop(Algorithm):
    """A plugin's algorithm without a constructor of its own (L12 of the 2026-12-01 probe: a TypeError traceback
    at config load)."""

    def match(self, event, state):
        return False

    def apply(self, event, state, logger):
        pass


def test_an_algorithm_without_a_constructor_takes_no_arguments_and_loads_in_a_config(monkeypatch):
    from raycomp.algorithms import registry
    from raycomp.algorithms.arguments import arguments_model
    from raycomp.config import ConfigError, ExperimentConfig

    model = arguments_model(Noop)
    assert model.model_fields == {} and pickle.loads(pickle.dumps(model())) == model()
    monkeypatch.setitem(registry.ALGORITHMS, "noop", Noop)
    config = ExperimentConfig.from_dict({"name": "x", "algorithms": {"noop": {}}})
    assert isinstance(registry.build_algorithm("noop", config.algorithms["noop"]), Noop)
    with pytest.raises(ConfigError, match=r"algorithms\.noop"):
        ExperimentConfig.from_dict({"name": "x", "algorithms": {"noop": {"speed": 2}}})
