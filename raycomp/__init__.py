"""raycomp: a Composer-style training core (Engine, Events, State, Algorithms) for Ray Train, Tune and MLflow."""

from raycomp._torchvision import prepare_torchvision
from raycomp.core import Algorithm, Callback, Engine, Event, State, Time, Timestamp, TimeUnit
from raycomp.trainer import Trainer

prepare_torchvision()  # before anything imports torchvision (torchmetrics does): see raycomp/_torchvision.py

__version__ = "0.1.0"

__all__ = ["Algorithm", "Callback", "Engine", "Event", "State", "Time", "TimeUnit", "Timestamp", "Trainer"]
