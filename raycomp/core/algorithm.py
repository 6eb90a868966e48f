"""The Algorithm base class: code that runs at Events and changes the State in place."""

from __future__ import annotations

import dataclasses
import inspect
from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from raycomp.core.serializable import Serializable

if TYPE_CHECKING:
    from torch import nn

    from raycomp.core.event import Event
    from raycomp.core.logger import Logger
    from raycomp.core.state import State

# Every Algorithm subclass defined so far, by import path. Checkpoints name their algorithms by path;
# looking the path up here (instead of importing it) means a checkpoint can never make us import code.
_REGISTRY: dict[str, type[Algorithm]] = {}


@dataclasses.dataclass(frozen=True)
class Inapplicable:
    """Why an algorithm cannot run on a workload, with the fix in ``reason``; ``argument`` names the constructor
    argument whose value is at fault (SelectiveBackprop's ``scale_factor``), None when the algorithm as a whole is."""

    reason: str
    argument: str | None = None


class Algorithm(Serializable, ABC):
    """Base class for algorithms, as in Composer: ``match`` decides, ``apply`` changes the State.

    The constructor's arguments are recorded (``init_args``) so that a checkpoint can re-create an
    algorithm whose ``required_on_load()`` is True without evaluating any string.

    ``first_on`` and ``last_on`` pin a class to the front or the back of the run order at those events
    (after the FILO reversal; see ``raycomp.core.passes``). The algorithm declares its own place, so the
    core never has to import an algorithm to order it.
    """

    first_on: ClassVar[frozenset[Event]] = frozenset()
    last_on: ClassVar[frozenset[Event]] = frozenset()
    # The constructor arguments ``check_workload`` reads (None: any may): a sweep checks each value it can draw of
    # these, not every combination of every swept argument, each a forward of the model.
    workload_arguments: ClassVar[frozenset[str] | None] = None
    # What a recipe search (``raycomp find``, docs/find.md) may change: a few values of each argument that matters,
    # tried beside the defaults; and the registered names of methods never trained together with this one
    # (two that do the same job: MixUp and CutMix each mix the batch). Either side declaring it is enough.
    tuned_arguments: ClassVar[Mapping[str, tuple[Any, ...]]] = {}
    # The arguments a recipe search starts from in place of defaults that assume a run's length (EMA's half-life
    # of 1000 batches is longer than a find's whole run): fractions of the run ('0.1dur') fit every run.
    find_defaults: ClassVar[Mapping[str, Any]] = {}
    incompatible_with: ClassVar[frozenset[str]] = frozenset()

    def __new__(cls, *args: Any, **kwargs: Any) -> Algorithm:
        instance = super().__new__(cls)
        try:
            bound = inspect.signature(cls.__init__).bind(instance, *args, **kwargs)
        except TypeError:  # unpickling and copy call __new__ bare; __init__ reports real misuse itself
            instance._init_args = {}
            return instance
        bound.apply_defaults()
        instance._init_args = dict(list(bound.arguments.items())[1:])
        return instance

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        _REGISTRY[class_path(cls)] = cls

    @property
    def find_unused_parameters(self) -> bool:
        """True if this algorithm may leave parameters without gradients (DDP must then look for them)."""
        return False

    @classmethod
    def compiles_with(cls, arguments: Mapping[str, Any]) -> bool:
        """False if, built with ``arguments`` (every constructor argument, defaults filled in), it changes the
        training batch's shape from step to step (ProgressiveResizing): a step compiled with static shapes would
        recompile for each, so the config refuses it with ``compile``. A class method: the config asks it
        before anything is built."""
        return True

    @property
    def compiles(self) -> bool:
        """``compiles_with`` this instance's own arguments."""
        return type(self).compiles_with(self._init_args)

    @property
    def backwards_create_graph(self) -> bool:
        """True if the backward pass must build a graph of the gradients (second-order methods)."""
        return False

    @staticmethod
    def required_on_load() -> bool:
        """True if a checkpoint trained with this algorithm cannot be loaded without it (model surgery)."""
        return False

    def check_workload(self, model: nn.Module, batch: Any) -> Inapplicable | None:
        """Why this algorithm cannot train ``model`` on batches like ``batch``; None when it can (or cannot tell).

        Asked before any run starts (the config's preflight; an automatic choice of methods), so that a method
        that would fail, or change nothing, in every trial is refused once. ``model`` is the run's model built
        on the CPU, in train mode, called under ``torch.no_grad``; ``batch`` is a real batch of two from the
        training data. Both are shared by every algorithm's check: copy the model before changing it.
        """
        del model, batch
        return None

    @abstractmethod
    def match(self, event: Event, state: State) -> bool:
        """Whether to run at this event, given the state."""

    @abstractmethod
    def apply(self, event: Event, state: State, logger: Logger) -> int | None:
        """Change the state in place; an optional exit code is kept in the Trace."""

    @property
    def init_args(self) -> dict[str, Any]:
        """The constructor arguments this instance was built with, defaults filled in."""
        return dict(self._init_args)

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self._init_args.items())
        return f"{type(self).__name__}({args})"


def class_path(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def registered_algorithm(path: str) -> type[Algorithm] | None:
    """The Algorithm class defined at ``path``, if its module has been imported; never imports."""
    return _REGISTRY.get(path)
