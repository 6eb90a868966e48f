"""The training core: events, time, state, algorithms, callbacks, the engine and its passes, lr schedules.

Only torch and the standard library are imported here, and nothing happens at import time
(no signal handlers, atexit hooks, process groups or CUDA initialisation).
"""

from raycomp.core.algorithm import Algorithm, Inapplicable
from raycomp.core.callback import Callback
from raycomp.core.engine import Engine
from raycomp.core.event import Event
from raycomp.core.logger import Logger, LoggerDestination
from raycomp.core.precision import Precision
from raycomp.core.scheduled_lr import ScheduledLR, compile_composer_scheduler
from raycomp.core.schedulers import (
    ComposerScheduler,
    ConstantScheduler,
    ConstantWithWarmupScheduler,
    CosineAnnealingScheduler,
    CosineAnnealingWithWarmupScheduler,
    LinearScheduler,
    LinearWithWarmupScheduler,
    MultiStepScheduler,
    OneCycleScheduler,
    StepScheduler,
)
from raycomp.core.serializable import Serializable
from raycomp.core.state import Evaluator, State
from raycomp.core.time import Time, Timestamp, TimeUnit
from raycomp.core.trace import Trace, TraceStats, TraceSummary

__all__ = [
    "Algorithm",
    "Callback",
    "ComposerScheduler",
    "ConstantScheduler",
    "ConstantWithWarmupScheduler",
    "CosineAnnealingScheduler",
    "CosineAnnealingWithWarmupScheduler",
    "Engine",
    "Evaluator",
    "Event",
    "Inapplicable",
    "LinearScheduler",
    "LinearWithWarmupScheduler",
    "Logger",
    "LoggerDestination",
    "MultiStepScheduler",
    "OneCycleScheduler",
    "Precision",
    "ScheduledLR",
    "Serializable",
    "State",
    "StepScheduler",
    "Time",
    "TimeUnit",
    "Timestamp",
    "Trace",
    "TraceStats",
    "TraceSummary",
    "compile_composer_scheduler",
]
