"""Algorithms for tests only, registered through ``RAYCOMP_PLUGINS=raycomp_test_plugins``."""

from __future__ import annotations

import gc
import json
import os
import time
from typing import Annotated

from pydantic import Field

from raycomp.algorithms.registry import register
from raycomp.core import Algorithm, Event, Logger, State


class SlowDown(Algorithm):
    """Sleeps ``seconds`` at the start of every batch: a planted slowdown that leaves training untouched."""

    def __init__(self, seconds: Annotated[float, Field(ge=0)] = 0.1):
        self.seconds = seconds

    def match(self, event: Event, state: State) -> bool:
        return event is Event.BATCH_START

    def apply(self, event: Event, state: State, logger: Logger) -> None:
        time.sleep(self.seconds)


register("slowdown", SlowDown)


class CollectorProbe(Algorithm):
    """Appends, as training starts, this process's collector state to the file ``record`` (a JSON line): a trial
    must train with the collector on and its start-up frozen (raycomp/base/collector.py)."""

    def __init__(self, record: str = ""):
        self.record = record

    def match(self, event: Event, state: State) -> bool:
        return event is Event.FIT_START

    def apply(self, event: Event, state: State, logger: Logger) -> None:
        line = {"pid": os.getpid(), "enabled": gc.isenabled(), "frozen": gc.get_freeze_count()}
        with open(self.record, "a") as record:
            record.write(json.dumps(line) + "\n")


register("collector_probe", CollectorProbe)
