"""``Arm``: one configuration of a sweep at one seed, what a Tune trial trains.

Frozen and typed on the driver and in the trial; a dict only where Ray Tune needs one (its ``param_space``,
each trial's ``config["arm"]`` and ``params.json``), through ``as_tune`` and ``from_tune``.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from raycomp.base import keys


class TuneArm(dict):
    """``Arm.as_tune``'s dict, read-only, which a copy shares instead of copying.

    An arm never changes once made, so a copy may be the arm itself; a change raises. Sweeps once gave Tune their
    arms as a grid, which Tune deep-copies whole for every variant; sharing did not save those copies, since
    ``tune.run`` rebuilds every dict of the grid first, so arms are now suggested one at a time
    (``launch/sweep/space.ArmsInOrder``; docs/benchmarks.md "At scale", twenty-second session). A Tuner that an
    earlier sweep saved (``tuner.pkl``, read by ``--resume``) holds its arms as this class."""

    def __deepcopy__(self, memo: dict[int, Any]) -> TuneArm:
        return self

    def __copy__(self) -> TuneArm:
        return self

    def __reduce__(self) -> tuple[type[TuneArm], tuple[dict[str, Any]]]:
        return TuneArm, (dict(self),)  # not item by item: the unpickler's way of filling a dict sets items

    def _read_only(self, *args: Any, **kwargs: Any) -> None:
        raise TypeError("a sweep arm's Tune config is read-only (Arm.replace makes another)")

    __setitem__ = __delitem__ = __ior__ = _read_only  # type: ignore[assignment]
    update = pop = popitem = clear = setdefault = _read_only  # type: ignore[assignment]


@dataclass(frozen=True)
class Arm:
    """``variant`` (baseline, control, frontier, method), the configuration it belongs to (``config_id``),
    the swept values it sets (``overrides``: every swept path, None where it does not apply), the seed's
    ``repeat`` index and, for a frontier arm, its ``budget`` (a fraction of ``max_duration``)."""

    variant: str
    config_id: str = ""  # empty: the variant's name (a baseline's, a control's)
    overrides: Mapping[str, Any] = field(default_factory=dict)
    repeat: int = 0
    budget: float | None = None

    def __post_init__(self) -> None:
        if self.variant not in keys.VARIANTS:
            raise ValueError(f"a sweep arm's variant is one of {', '.join(keys.VARIANTS)}, got {self.variant!r}")
        if not self.config_id:
            object.__setattr__(self, "config_id", self.variant)

    @property
    def applied(self) -> dict[str, Any]:
        """The swept values this arm sets (those that are not None)."""
        return {path: value for path, value in self.overrides.items() if value is not None}

    def key(self, *, with_repeat: bool = True) -> str:
        """What the arm trains: variant, budget, the values it sets (and its repeat, i.e. its seed). Arms are
        matched by this across a sweep's Tune experiments, never by trial id or position."""
        identity: dict[str, Any] = {"variant": self.variant, "budget": self.budget, "overrides": self.applied}
        if with_repeat:
            identity["repeat"] = self.repeat
        return json.dumps(identity, sort_keys=True, default=str)

    def replace(self, **changes: Any) -> Arm:
        return dataclasses.replace(self, **changes)

    def as_tune(self) -> TuneArm:
        """The arm as Tune's config holds it (flattened into its table as ``arm/variant``, ...)."""
        data = {"variant": self.variant, "config_id": self.config_id, "overrides": dict(self.overrides)}
        data["repeat"] = self.repeat
        if self.budget is not None:
            data["budget"] = self.budget
        return TuneArm(data)

    @classmethod
    def from_tune(cls, data: Mapping[str, Any]) -> Arm:
        """The arm in a trial's Tune config or ``params.json``."""
        budget = data.get("budget")
        return cls(
            variant=data["variant"],
            config_id=str(data.get("config_id") or data["variant"]),
            overrides=dict(data.get("overrides") or {}),
            repeat=int(data.get("repeat") or 0),
            budget=None if budget is None else float(budget),
        )
