"""One declaration of an algorithm's arguments: its constructor's signature, checked by pydantic.

Each argument's type and range is written once, as its annotation::

    def __init__(self, keep: Annotated[float, Field(gt=0, le=1)] = 0.5) -> None:

``@checked_arguments`` on ``__init__`` validates every call against that signature, so
``SelectiveBackprop(keep=2)`` raises pydantic's ``ValidationError`` (a ``ValueError``) naming ``keep``.
``arguments_model`` is the same declaration as a pydantic model (an ``Arguments``): the config validates YAML
arguments with it, reports each problem at its key and keeps the validated model, without building the
algorithm. Validation is strict, like the config's: ``true`` is not taken for 1, nor ``"0.5"`` for 0.5 (an
integer is a number, though).

Rules that tie arguments together (``start < end``) are declared with the signature too,
``@checked_arguments(rules=(start_before_end,))``: functions of the validated arguments that raise one
``ValueError``. They run in the model, so the config checks them without an instance, and a constructor
call that breaks one raises that ``ValueError`` itself.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import types
import typing
from collections.abc import Callable, Sequence
from typing import Any, TypeVar, overload

from pydantic import BaseModel, ConfigDict, ValidationError, create_model, model_validator

Init = TypeVar("Init", bound=Callable[..., None])
Rule = Callable[[Any], None]  # raises a ValueError when the validated arguments (attributes) break it

_NAMED = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
_RULES = "__argument_rules__"  # where ``checked_arguments`` keeps a constructor's rules


class Arguments(BaseModel):
    """An algorithm's validated constructor arguments (the base of every ``arguments_model``); frozen.

    It remembers which arguments were given (``given``), so a config written back shows what its author wrote,
    and pickles by its constructor's import path (the model class itself is made at run time)."""

    model_config = ConfigDict(
        strict=True, extra="forbid", frozen=True, arbitrary_types_allowed=True, allow_inf_nan=False
    )

    def given(self) -> dict[str, Any]:
        """The arguments given, validated; the others take their defaults."""
        return {name: getattr(self, name) for name in self.model_fields_set}

    def __reduce__(self) -> tuple[Any, ...]:
        init = _INITS[type(self)]
        return _rebuilt, (init.__module__, init.__qualname__, self.given())


@overload
def checked_arguments(init: Init, *, rules: Sequence[Rule] = ()) -> Init: ...
@overload
def checked_arguments(init: None = None, *, rules: Sequence[Rule] = ()) -> Callable[[Init], Init]: ...
def checked_arguments(init: Init | None = None, *, rules: Sequence[Rule] = ()) -> Init | Callable[[Init], Init]:
    """Validates each call of the constructor ``init`` against its own signature and ``rules`` before it runs.

    ``functools.wraps`` keeps the signature visible (``inspect.signature`` follows ``__wrapped__``), so
    ``Algorithm.__new__`` still records the arguments a checkpoint re-creates the algorithm with.
    """
    if init is None:
        return functools.partial(checked_arguments, rules=rules)  # type: ignore[return-value]
    setattr(init, _RULES, tuple(rules))
    signature = inspect.signature(init)

    @functools.wraps(init)
    def checked(self: Any, *args: Any, **kwargs: Any) -> None:
        given = dict(list(signature.bind(self, *args, **kwargs).arguments.items())[1:])
        try:
            valid = _model(init).model_validate(given)
        except ValidationError as error:
            broken = broken_rule(error)
            if broken is not None:
                raise broken from None
            raise
        init(self, **{name: getattr(valid, name) for name in given})

    return typing.cast(Init, checked)


def broken_rule(error: ValidationError) -> ValueError | None:
    """The rule's own ``ValueError`` when a rule across arguments is what failed (rules run only once every
    argument is valid, so it is then the one error), else None."""
    entries = error.errors(include_url=False)
    if len(entries) == 1 and entries[0]["loc"] == () and entries[0]["type"] == "value_error":
        cause = entries[0].get("ctx", {}).get("error")
        return cause if isinstance(cause, ValueError) else None
    return None


def arguments_model(cls: type) -> type[Arguments]:
    """``cls``'s constructor arguments as a pydantic model: fields in signature order, with their defaults. A class
    with no constructor of its own anywhere (a plugin's ``class Noop(Algorithm)``) takes no arguments."""
    init = inspect.unwrap(cls.__init__)
    return _no_arguments(cls) if init is object.__init__ else _model(init)


@functools.cache
def _no_arguments(cls: type) -> type[Arguments]:
    model = create_model(cls.__name__, __base__=Arguments)
    _INITS[model] = types.SimpleNamespace(__module__=cls.__module__, __qualname__=f"{cls.__qualname__}.__init__")
    return model


_INITS: dict[type[Arguments], Any] = {}  # each model's constructor, to pickle its instances by


@functools.cache
def _model(init: Callable[..., None]) -> type[Arguments]:
    hints = typing.get_type_hints(init, include_extras=True)  # resolves `from __future__` annotations
    fields: dict[str, Any] = {}
    for name, parameter in list(inspect.signature(init).parameters.items())[1:]:
        if parameter.kind not in _NAMED:
            raise TypeError(f"{init.__qualname__} must name every argument (no *args, **kwargs) to be checked")
        default = ... if parameter.default is parameter.empty else parameter.default
        fields[name] = (hints.get(name, Any), default)
    owner = init.__qualname__.rpartition(".")[0] or init.__name__  # errors read "... for SelectiveBackprop"
    validators = {f"rule_{index}": _validator(rule) for index, rule in enumerate(getattr(init, _RULES, ()))}
    model = create_model(owner, __base__=Arguments, __validators__=validators, **fields)
    _INITS[model] = init
    return model


def _validator(rule: Rule) -> Any:
    def check(arguments: Arguments) -> Arguments:
        rule(arguments)
        return arguments

    return model_validator(mode="after")(check)


def _rebuilt(module: str, qualname: str, given: dict[str, Any]) -> Arguments:
    """Arguments unpickled: the model of the constructor at ``module``.``qualname``, validated again."""
    owner: Any = importlib.import_module(module)
    for part in qualname.split(".")[:-1]:
        owner = getattr(owner, part)
    return arguments_model(owner).model_validate(given)
