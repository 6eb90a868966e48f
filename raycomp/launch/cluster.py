"""Ray itself: start or join a cluster, and run a ``TrialSpec`` as a Ray Train ``TorchTrainer``.

Ray does the process management, placement, restarts and checkpoint storage; this module only maps
the experiment config onto Ray's ``ScalingConfig``/``RunConfig`` and sets the few knobs measured to
matter here (docs/ray-notes.md).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import ray
import ray.train
from ray.train.torch import TorchTrainer

from raycomp.base.errors import MachineFailure, one_line
from raycomp.base.layout import opened_uri
from raycomp.base.process_env import environment
from raycomp.launch.private_ray import (
    free_port,
    loopback_node,
    private_temp_dir,
    processes_of_their_own,
    shut_down_and_remove,
)
from raycomp.launch.signals import sigterm_kept
from raycomp.launch.spec import TrialSpec
from raycomp.launch.worker import SPEC, train_loop_per_worker

# Reports block until the controller polls (default every 2 s) and failures are noticed only then;
# Ray Train's print patch doubles every line a worker prints; a reused Tune actor waits only 2 s for the trial
# the scheduler stopped to end (its MLflow run, its DataLoader workers) and errors the next trial if it has not.
RAY_ENV = {
    "RAY_TRAIN_HEALTH_CHECK_INTERVAL_S": "0.2",
    "RAY_TRAIN_ENABLE_PRINT_PATCH": "0",
    "TUNE_FUNCTION_THREAD_TIMEOUT_S": "30",
    "TUNE_DISABLE_AUTO_CALLBACK_LOGGERS": "1",  # sweep.tuner adds the loggers it reads, not TensorBoard's
    # checkpoint.num_to_keep (Tune's CheckpointConfig) makes Tune save the sweep's state each time a trial has
    # checkpointed that often: a few small files, which it otherwise warned of in three lines each time
    "TUNE_WARN_EXCESSIVE_EXPERIMENT_CHECKPOINT_SYNC_THRESHOLD_S": "0",
}
# Only for a private local Ray: Train's PreemptionWatcher actor (one per run, seconds of CPU) polls for
# a cloud node's preemption notice, which a single machine never gets. And workers at the driver's priority:
# Ray starts them at nice 15, so on a machine shared with other work at nice 0 (tests, a build) a trial gets
# a few percent of a core whenever anything else wants it, and is preempted over and over: its wall time
# balloons and every return to the core starts from cold caches, which inflates even the CPU time verdicts
# compare (docs/benchmarks.md, issue 23). Ray's own job manager starts its drivers at 0 the same way.
LOCAL_RAY_ENV = {"RAY_TRAIN_ENABLE_PREEMPTION_WATCHER": "0", "RAY_worker_niceness": "0"}
# glibc's malloc in every Ray process: keep what a training step frees for the next step. By default a CPU
# step's tensors (megabytes each) go back to the kernel when freed and are faulted in again, page by page, at
# the next step: thousands of page faults a step, a large and varying share of its CPU time in the kernel
# (issue 23, docs/benchmarks.md). The thresholds alone do not do
# it: a Tune trial or Train worker trains in a thread, whose own arena still hands memory back, so all threads
# share the main arena. (A caching allocator, jemalloc or TCMalloc, preloaded, is the usual cure; this one needs
# no library.) A process keeps its peak memory in return.
GLIBC_TUNABLES = ":".join(
    [
        "glibc.malloc.arena_max=1",
        f"glibc.malloc.mmap_threshold={32 << 20}",  # the most glibc allows: larger blocks are always mapped
        f"glibc.malloc.trim_threshold={1 << 30}",
        f"glibc.malloc.top_pad={256 << 20}",
    ]
)
TRIAL_SLOT = "trial_slot"  # custom resource a Tune trial's driver holds instead of a CPU its workers need
LOOPBACK = "127.0.0.1"


def init_ray(address: str | None = None, *, num_cpus: int | None = None, dashboard: bool = True) -> None:
    """Joins the cluster at ``address`` (or ``RAY_ADDRESS``), else starts a private local Ray.

    A local Ray gets one ``trial_slot`` per CPU and its own GCS port, so a second Ray on the same host
    (a ``ray start`` head) cannot capture its placement-group cleaner. ``dashboard=False`` saves ~1.5 s
    and a process, but only runs without Ray Train worker groups: Train needs the dashboard's state API
    to free a stopped trial's placement groups.
    """
    # Only what we add: a job's own runtime_env may set these already, and a second value would conflict.
    env_vars = {key: value for key, value in RAY_ENV.items() if key not in os.environ}
    os.environ.update(env_vars)
    # read by each process at its start; a value already set (the user's, a job's runtime_env) is left as it is
    malloc = {} if "GLIBC_TUNABLES" in os.environ else {"GLIBC_TUNABLES": GLIBC_TUNABLES}
    if ray.is_initialized():
        return
    address = address or os.environ.get("RAY_ADDRESS")
    if address:
        from raycomp.shipped import ENV as SHIPPED

        if SHIPPED in os.environ:  # callables given to raycomp.api.sweep, for the cluster's workers
            env_vars[SHIPPED] = os.environ[SHIPPED]
        if "://" not in address and address != "auto":
            env_vars["RAY_ADDRESS"] = address  # Train's placement-group cleaner must find this cluster
            _answers(address)
        with sigterm_kept(), _said_in_one_line(f"could not join the Ray cluster at {address}", JOIN_REMEDY):
            ray.init(address=address, runtime_env={"env_vars": env_vars | malloc}, log_to_driver=True)
        return
    cpus = num_cpus or os.cpu_count() or 1
    port = free_port()
    os.environ["RAY_GCS_SERVER_PORT"] = str(port)
    temp_dir = private_temp_dir()
    removed_at_exit = [temp_dir] if temp_dir is not None else []
    atexit.register(shut_down_and_remove, removed_at_exit)  # also when ray.init fails or is interrupted
    # The raylet this starts passes its environment on to every worker, so the workers get these without a
    # runtime_env, which would start each of them through Ray's setup_worker.py: a fraction of a second more
    # per trial or Train worker (docs/ray-notes.md). Not left set in this process: it may start
    # another Ray later (tests do), and a stale RAY_ADDRESS would send that init_ray to join the stopped one.
    with (
        loopback_node(),
        environment({"RAY_ADDRESS": f"{LOOPBACK}:{port}", **LOCAL_RAY_ENV, **malloc}),
        processes_of_their_own(),
        sigterm_kept(),
        _said_in_one_line("Ray did not start on this machine", START_REMEDY),
    ):
        ray.init(
            address="local",
            num_cpus=cpus,
            resources={TRIAL_SLOT: cpus},
            include_dashboard=dashboard,
            dashboard_host="127.0.0.1",
            _node_ip_address=LOOPBACK,
            **({"_temp_dir": str(temp_dir)} if temp_dir is not None else {}),
        )
        if temp_dir is None:  # Ray's default folder, which other Rays share: only this Ray's session goes
            session = Path(ray._private.worker._global_node.get_session_dir_path())
            removed_at_exit += [session, session.with_name("session_latest")]
        else:
            temp_dir.chmod(0o700)  # Ray opens it to everyone; its logs and copies of the sweep are this user's


START_REMEDY = (
    "rerun when the machine is less busy; check that TMPDIR (or RAY_TMPDIR) has room and a short path; or start "
    "Ray yourself (ray start --head) and pass --address 127.0.0.1:6379"
)
JOIN_REMEDY = "check the address and that the cluster's head is up (ray status --address ...)"


ADDRESS_DEADLINE_S = 10.0


def _answers(address: str) -> None:
    """``host:port`` accepts a connection within ``ADDRESS_DEADLINE_S``, else a ``MachineFailure`` at once: Ray
    itself waited silently, without end, on an address where nothing listened (L11 of the 2026-12-01 probe)."""
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        return  # Ray's own words for an address it cannot read
    try:
        socket.create_connection((host, int(port)), timeout=ADDRESS_DEADLINE_S).close()
    except OSError as error:
        reason = f"nothing answered at {address} within {ADDRESS_DEADLINE_S:g} s ({one_line(error)})"
        raise MachineFailure(f"could not join the Ray cluster at {address}: {reason}: {JOIN_REMEDY}") from error


@contextlib.contextmanager
def _said_in_one_line(what: str, remedy: str) -> Iterator[None]:
    """``ray.init`` failing (its node timed out on an overloaded machine, a socket path too long, no head at the
    address) as a ``MachineFailure``: one line with what to do, its traceback in a file (``cli.common``)."""
    try:
        yield
    except Exception as error:
        raise MachineFailure(f"{what} ({one_line(error)}): {remedy}") from error


def torch_trainer(
    spec: TrialSpec, name: str, storage_path: str, *, run_callbacks: list[Any] | None = None
) -> TorchTrainer:
    """A TorchTrainer running ``spec`` on ``scaling.num_workers`` workers (gloo on CPU, NCCL on GPU).

    ``name``/``storage_path`` identify the run: running it again resumes from its latest checkpoint.
    ``run_callbacks`` are Ray Train callbacks (a Tune trial's ``TuneReportCallback``).
    """
    config = spec.config
    scaling = config.scaling
    return TorchTrainer(
        train_loop_per_worker,
        train_loop_config={SPEC: spec},  # Ray wants a dict here; the spec inside travels whole
        scaling_config=ray.train.ScalingConfig(
            num_workers=scaling.num_workers,
            use_gpu=scaling.use_gpu,
            resources_per_worker=scaling.resources_per_worker,
        ),
        run_config=ray.train.RunConfig(
            name=name,
            storage_path=opened_uri(storage_path),
            failure_config=ray.train.FailureConfig(max_failures=config.failure.max_failures),
            checkpoint_config=ray.train.CheckpointConfig(num_to_keep=config.checkpoint.num_to_keep),
            callbacks=list(run_callbacks or []),
        ),
    )
