"""raycomp: a Composer-style training core (Engine, Events, State, Algorithms) for Ray Train, Tune and MLflow."""

# First, before torch's seconds-long import: Ctrl-C in a raycomp command is one line (raycomp/cli/interrupt.py).
from raycomp.cli.interrupt import quiet_interrupts

quiet_interrupts()

from raycomp._torchvision import prepare_torchvision  # noqa: E402
from raycomp.core import Algorithm, Callback, Engine, Event, State, Time, Timestamp, TimeUnit  # noqa: E402
from raycomp.trainer import Trainer  # noqa: E402

prepare_torchvision()  # before anything imports torchvision (torchmetrics does): see raycomp/_torchvision.py

__version__ = "0.1.0"

__all__ = ["Algorithm", "Callback", "Engine", "Event", "State", "Time", "TimeUnit", "Timestamp", "Trainer"]
