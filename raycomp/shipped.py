"""Callables handed to ``raycomp.api.sweep`` from a script or notebook, importable by name in every process.

A function defined in a notebook has no import path a Ray worker could follow. ``ship`` pickles it by value
(cloudpickle) into the environment variable ``RAYCOMP_SHIPPED``, which a local Ray started afterwards passes
to every Tune trial and Ray Train worker (and ``init_ray`` forwards to a cluster's job); there
``raycomp.shipped.<name>`` unpickles it on first use. So the config names it like any other callable, as
``model.class_path: raycomp.shipped.make_net``, and MLflow shows that name with its ``init_args``.
"""

from __future__ import annotations

import base64
import functools
import os
import pickle
from collections.abc import Callable, Mapping
from typing import Any

ENV = "RAYCOMP_SHIPPED"
_LIMIT = 100_000  # bytes of base64: an environment variable holds at most 128 KiB on Linux


def ship(callables: Mapping[str, Callable[..., Any]]) -> dict[str, str]:
    """Makes each callable importable as ``raycomp.shipped.<name>`` here and in processes started after;
    returns ``{name: class_path}``."""
    import cloudpickle

    shipped = {**_shipped(), **{name: cloudpickle.dumps(fn) for name, fn in callables.items()}}
    text = base64.b64encode(pickle.dumps(shipped)).decode()
    if len(text) > _LIMIT:
        raise ValueError(
            f"the callables given to sweep() pickle to {len(text)} bytes, too many to ship in the environment "
            f"(at most {_LIMIT}): put them in a module and name them by class_path"
        )
    os.environ[ENV] = text
    _shipped.cache_clear()
    return {name: f"{__name__}.{name}" for name in callables}


@functools.cache
def _shipped() -> dict[str, bytes]:
    text = os.environ.get(ENV)
    return pickle.loads(base64.b64decode(text)) if text else {}


def __getattr__(name: str) -> Callable[..., Any]:
    payload = _shipped().get(name)
    if payload is None:
        raise AttributeError(f"no callable {name!r} was shipped to this process (raycomp.api.sweep ships them)")
    return pickle.loads(payload)
