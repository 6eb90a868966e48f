"""One declaration of an algorithm's arguments: its constructor's signature, checked by pydantic.

Each argument's type and range is written once, as its annotation::

    def __init__(self, keep: Annotated[float, Field(gt=0, le=1)] = 0.5) -> None:

``@checked_arguments`` on ``__init__`` validates every call against that signature, so
``SelectiveBackprop(keep=2)`` raises pydantic's ``ValidationError`` (a ``ValueError``) naming ``keep``.
``arguments_model`` is the same declaration as a pydantic model: the config validates YAML arguments with
it and reports each problem at its key, without building the algorithm. Validation is strict, like the
config's: ``true`` is not taken for 1, nor ``"0.5"`` for 0.5 (an integer is a number, though).

Rules that tie arguments together (``start < end``) stay in ``__init__``, as one ``ValueError``.
"""

from __future__ import annotations

import functools
import inspect
import typing
from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, create_model

Init = TypeVar("Init", bound=Callable[..., None])

_NAMED = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
_STRICT = ConfigDict(strict=True, extra="forbid", arbitrary_types_allowed=True, allow_inf_nan=False)


def checked_arguments(init: Init) -> Init:
    """Validates each call of the constructor ``init`` against its own signature before it runs.

    ``functools.wraps`` keeps the signature visible (``inspect.signature`` follows ``__wrapped__``), so
    ``Algorithm.__new__`` still records the arguments a checkpoint re-creates the algorithm with.
    """
    signature = inspect.signature(init)

    @functools.wraps(init)
    def checked(self: Any, *args: Any, **kwargs: Any) -> None:
        given = dict(list(signature.bind(self, *args, **kwargs).arguments.items())[1:])
        valid = _model(init).model_validate(given)
        init(self, **{name: getattr(valid, name) for name in given})

    return typing.cast(Init, checked)


def arguments_model(cls: type) -> type[BaseModel]:
    """``cls``'s constructor arguments as a pydantic model: fields in signature order, with their defaults."""
    return _model(inspect.unwrap(cls.__init__))


@functools.cache
def _model(init: Callable[..., None]) -> type[BaseModel]:
    hints = typing.get_type_hints(init, include_extras=True)  # resolves `from __future__` annotations
    fields: dict[str, Any] = {}
    for name, parameter in list(inspect.signature(init).parameters.items())[1:]:
        if parameter.kind not in _NAMED:
            raise TypeError(f"{init.__qualname__} must name every argument (no *args, **kwargs) to be checked")
        default = ... if parameter.default is parameter.empty else parameter.default
        fields[name] = (hints.get(name, Any), default)
    owner = init.__qualname__.rpartition(".")[0] or init.__name__  # errors read "... for SelectiveBackprop"
    return create_model(owner, __config__=_STRICT, **fields)
