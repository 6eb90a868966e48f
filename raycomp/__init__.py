"""raycomp: a Composer-style training core (Engine, Events, State, Algorithms) for Ray Train, Tune and MLflow."""

from raycomp.core import Algorithm, Callback, Engine, Event, State, Time, Timestamp, TimeUnit
from raycomp.trainer import Trainer

__version__ = "0.1.0"

__all__ = ["Algorithm", "Callback", "Engine", "Event", "State", "Time", "TimeUnit", "Timestamp", "Trainer"]
