"""Small, fast pieces shared by the tests: a tiny CNN with BatchNorm and Dropout, tensor data, recorders."""

from __future__ import annotations

import contextlib
import importlib
import io
import os
import pickle
import signal
import subprocess
import sys
import threading
import time
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any, NoReturn

import numpy as np
import torch
from processes import answers, start_server
from processes import free_port as free_port  # the tests import it from here
from torch import nn
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

from raycomp.core import Callback, Event, Logger, State
from raycomp.models.base import ClassifierModel


def tiny_net(num_classes: int = 4) -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1),
        nn.BatchNorm2d(8),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Dropout(0.2),
        nn.Linear(8, num_classes),
    )


def tiny_model(seed: int = 0, num_classes: int = 4) -> ClassifierModel:
    torch.manual_seed(seed)
    return ClassifierModel(tiny_net(num_classes))


def tiny_dataset(n: int = 64, seed: int = 0, num_classes: int = 4, size: int = 8) -> TensorDataset:
    generator = torch.Generator().manual_seed(seed)
    targets = torch.randint(0, num_classes, (n,), generator=generator)
    inputs = torch.randn(n, 3, size, size, generator=generator) + targets.view(-1, 1, 1, 1).float()
    return TensorDataset(inputs, targets)


def tiny_loader(n: int = 64, batch_size: int = 16, shuffle: bool = True, seed: int = 0) -> DataLoader:
    dataset = tiny_dataset(n, seed)
    sampler = DistributedSampler(dataset, num_replicas=1, rank=0, shuffle=shuffle, seed=seed)
    return DataLoader(dataset, batch_size=batch_size, sampler=sampler)


class InMemoryLogger:
    """Keeps every metric as ``{name: [(step, value), ...]}``."""

    def __init__(self) -> None:
        self.history: dict[str, list[tuple[int, float]]] = {}

    def log_metrics(self, metrics: dict[str, float], step: int) -> None:
        for name, value in metrics.items():
            self.history.setdefault(name, []).append((step, float(value)))

    def latest(self, name: str) -> float:
        return self.history[name][-1][1]


class EventRecorder(Callback):
    """Records every event the Engine fires, in order."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    def run_event(self, event: Event, state: State, logger: Logger) -> None:
        self.events.append(event)


def write_cifar10_batch(path: Path, images: np.ndarray, labels: list[int], protocol: int = 2) -> None:
    """Write ``images`` (uint8, [N, 32, 32, 3] or [N, 3072] channel-major) as a CIFAR-10 batch file."""
    data = np.asarray(images, dtype=np.uint8)
    if data.ndim == 4:
        data = data.transpose(0, 3, 1, 2).reshape(len(data), 3072)
    batch = {
        b"batch_label": b"fake batch",
        b"data": data,
        b"labels": list(labels),
        b"filenames": [f"img_{i}.png".encode() for i in range(len(labels))],
    }
    with open(path, "wb") as f:
        pickle.dump(batch, f, protocol=protocol)


# ---- spawned DDP ranks -------------------------------------------------------------------------------------


def leave_rank() -> NoReturn:
    """Ends a spawned rank once its results are saved and its process group destroyed, skipping teardown:
    freeing DDP's reducer holds the GIL while Gloo's worker thread needs it to free a finished work
    (pytorch/pytorch#56297), which deadlocked a rank now and then on a loaded machine."""
    os._exit(0)


def popen_ctrl_c_reaches(command: list[str], **kwargs: Any) -> subprocess.Popen:
    """Starts ``command`` so that SIGINT reaches it as a user's Ctrl-C reaches a foreground command.

    A child of a shell's background job inherits SIGINT ignored. Resetting it in the child with a
    ``preexec_fn`` makes ``subprocess`` fork this process instead of vfork-ing it, and forking a process that
    holds a Ray driver broke the driver's subscription to its GCS: the next actor it started never came up,
    and the session's later Ray tests hung (CI timed out). So this process stops ignoring SIGINT while it
    starts the child, which then begins with SIGINT at its default, as in a terminal.
    """
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        return subprocess.Popen(command, **kwargs)
    finally:
        signal.signal(signal.SIGINT, previous)


def built_store(storage: Path) -> Any:
    """An MLflow client on the SQLite store raycomp keeps in ``storage``; None until raycomp has linked it in.

    A test polling a running command must not open the store first: MLflow would create it, in many
    statements, while the command builds its own, and the command would find the poller's half-built file
    (raycomp builds a store under another name and links it into place whole, so a file there is complete)."""
    from mlflow import MlflowClient

    database = storage / "mlflow.db"
    return MlflowClient(f"sqlite:///{database}") if database.is_file() else None


# ---- a real MLflow server ---------------------------------------------------------------------------------


def start_mlflow_server(
    backend: str, artifacts: str, log: Path, stops: contextlib.ExitStack, env: dict[str, str], port: int | None = None
) -> tuple[subprocess.Popen, int]:
    """``mlflow server`` on the store ``backend``, in a session of its own (its uvicorn stops with it), on a free
    port (or ``port``), its stop registered on ``stops``; returns it and its port once it answers."""

    def command(port: int) -> list[str]:
        command = [sys.executable, "-m", "mlflow", "server", "--host", "127.0.0.1", "--port", str(port)]
        return [*command, "--workers", "1", "--backend-store-uri", backend, "--artifacts-destination", artifacts]

    # MLflow 3's server-side job runner (huey workers) is for GenAI jobs raycomp never submits; off, the
    # server starts and stops in seconds instead of tens of seconds on a loaded 2-core machine.
    env = {**env, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}
    return start_server(command, _mlflow_answers, log, "mlflow server", stops, env, port)


def _mlflow_answers(port: int) -> bool:
    return answers(f"http://127.0.0.1:{port}/health")


class MlflowServer:
    """``mlflow server`` on a SQLite store in ``folder``."""

    def __init__(self, folder: Path):
        self.folder, self.port = folder, 0
        folder.mkdir(parents=True, exist_ok=True)
        self.stops = contextlib.ExitStack()
        self.start()

    def start(self) -> None:
        """Starts the server (again, after ``stop``: same port, same store) and waits until it answers."""
        folder = self.folder
        store, artifacts = f"sqlite:///{folder / 'mlflow.db'}", str(folder / "artifacts")
        self.process, self.port = start_mlflow_server(
            store, artifacts, folder / "server.log", self.stops, dict(os.environ), self.port or None
        )
        self.uri = f"http://127.0.0.1:{self.port}"

    def healthy(self) -> bool:
        return answers(f"{self.uri}/health")

    def runs(self, experiment: str) -> list:
        """The runs of ``experiment`` read from the server's own backend (which answers while the server is down)."""
        from mlflow import MlflowClient

        store = MlflowClient(f"sqlite:///{self.folder / 'mlflow.db'}")
        found = store.get_experiment_by_name(experiment)
        return store.search_runs([found.experiment_id], max_results=1000) if found is not None else []

    def stop_once_a_trial_run_opens(self, experiment: str, within_s: float = 120) -> threading.Thread:
        """Stops the server, from a thread, as soon as a trial's run of ``experiment`` is open: an outage mid-run."""

        def stop_when_open() -> None:
            deadline = time.monotonic() + within_s
            while time.monotonic() < deadline and not any(
                run.data.tags.get("raycomp.kind") == "trial" for run in self.runs(experiment)
            ):
                time.sleep(0.05)
            self.stop()

        stopper = threading.Thread(target=stop_when_open, daemon=True)
        stopper.start()
        return stopper

    def stop(self) -> None:
        self.stops.close()


def command_here(argv: list[str], command: str = "tune") -> tuple[int, str]:
    """``python -m raycomp.<command> argv`` run in this process (on the suite's Ray, if it is up): its exit code and
    what it printed (stdout and stderr). The working directory, ``sys.path`` and the environment, which the command
    may change, are given back."""
    main = importlib.import_module(f"raycomp.cli.{command}").main
    cwd, path, environment = os.getcwd(), list(sys.path), dict(os.environ)
    printed = io.StringIO()
    try:
        with redirect_stdout(printed), redirect_stderr(printed):
            try:
                code = main(argv)
            except SystemExit as exit_:  # a config refused while loading exits as the command does
                code = exit_.code if isinstance(exit_.code, int) else 1
    finally:
        os.chdir(cwd)
        sys.path[:] = path
        os.environ.clear()
        os.environ.update(environment)
    return code, printed.getvalue()


class NoSyncInSteps(Callback):
    """Turns torch's sync debug mode to "error" for each step after the first two, from BEFORE_DATALOADER (loading,
    the copy to the GPU, SelectiveBackprop's pruning) to BATCH_END: any wait for the device there raises."""

    def __init__(self) -> None:
        self.checked_steps = 0

    def before_dataloader(self, state, logger) -> None:
        if state.timestamp.batch >= 2:  # the first steps set up cuDNN, the allocator and the scaler
            torch.cuda.set_sync_debug_mode("error")

    def batch_end(self, state, logger) -> None:
        if torch.cuda.get_sync_debug_mode() != 0:
            self.checked_steps += 1
        torch.cuda.set_sync_debug_mode("default")

    def fit_end(self, state, logger) -> None:
        torch.cuda.set_sync_debug_mode("default")
