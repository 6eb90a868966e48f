"""Issue 14's launch defects on a real local Ray: M1 (sweep.max_concurrent_trials honoured) and L9 (the
private local Ray listens on loopback only)."""

from __future__ import annotations

import ipaddress
import itertools
import json
import os

import psutil
import yaml

from raycomp.launch.cluster import LOCAL_RAY_ENV, RAY_ENV

SB = "algorithms.selective_backprop"


def test_l9_the_private_local_ray_listens_on_loopback_only(local_ray):
    assert {node["NodeManagerAddress"] for node in local_ray.nodes()} == {"127.0.0.1"}
    ours = {os.getpid(), *(child.pid for child in psutil.Process().children(recursive=True))}
    listening = [
        (conn.pid, conn.laddr.ip)
        for conn in psutil.net_connections(kind="inet")
        if conn.status == psutil.CONN_LISTEN and conn.pid in ours
    ]
    assert listening, "Ray's processes listen somewhere"
    exposed = [(pid, ip, psutil.Process(pid).name()) for pid, ip in listening if not _loopback(ip)]
    assert not exposed  # GCS, raylet, dashboard agent, workers and the driver (0.0.0.0 or the host's IP before)


def test_the_private_local_rays_workers_are_told_its_address_and_the_driver_is_not(local_ray):
    """Train's placement-group cleaner, in a worker, finds its cluster by ``RAY_ADDRESS`` when another Ray runs on
    the host (a `ray start` head); the workers inherit it from the raylet. The driver's own environment keeps
    none, so a later ``init_ray`` in the same process starts a new Ray instead of joining a stopped one."""

    @local_ray.remote(num_cpus=0)
    def environment() -> dict[str, str | None]:
        return {name: os.environ.get(name) for name in ("RAY_ADDRESS", *RAY_ENV, *LOCAL_RAY_ENV)}

    seen = local_ray.get(environment.remote())
    assert seen.pop("RAY_ADDRESS") == local_ray.get_runtime_context().gcs_address
    assert seen == RAY_ENV | LOCAL_RAY_ENV  # raycomp's Ray Train and Tune settings reach them too
    assert "RAY_ADDRESS" not in os.environ


def test_the_private_local_rays_workers_run_at_the_drivers_priority(local_ray):
    """Not Ray's default nice 15: a trial beside other work at nice 0 would get a few percent of a core."""

    @local_ray.remote(num_cpus=0)
    def niceness() -> int:
        return os.nice(0)

    assert local_ray.get(niceness.remote()) == os.nice(0)


def test_a_training_thread_in_the_private_local_rays_workers_reuses_the_memory_its_steps_free(local_ray):
    """A trial trains in a thread of its worker. With glibc's defaults most CPU steps of sb.yaml's network gave
    their tensors back to the kernel and faulted them in again (4,000-14,000 page faults such a step), a cost
    in the very CPU time verdicts compare that varied from trial to trial. With raycomp's malloc settings a
    step faults only now and then. Here: 2-26 of 30 steps faulted without them, 0-1 with."""

    @local_ray.remote(num_cpus=0)
    def faulting_steps(warm_up: int = 5, counted: int = 30) -> int:
        import resource
        import threading

        import torch

        from raycomp.models.cnn import SmallCNN

        torch.set_num_threads(1)
        model = SmallCNN()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
        inputs, targets = torch.randn(128, 3, 32, 32), torch.randint(0, 10, (128,))
        faults: list[int] = []

        def train() -> None:
            for _ in range(warm_up + counted):
                before = resource.getrusage(resource.RUSAGE_THREAD).ru_minflt
                optimizer.zero_grad()
                torch.nn.functional.cross_entropy(model(inputs), targets).backward()
                optimizer.step()
                faults.append(resource.getrusage(resource.RUSAGE_THREAD).ru_minflt - before)

        thread = threading.Thread(target=train)
        thread.start()
        thread.join()
        return sum(count >= 1000 for count in faults[warm_up:])

    # three trainings: with glibc's defaults one in ten came out as low, not three in a row
    assert all(local_ray.get(faulting_steps.remote()) <= 3 for _ in range(3))


def _loopback(ip: str) -> bool:
    address = ipaddress.ip_address(ip)
    return address.is_loopback or bool(getattr(address, "ipv4_mapped", None) and address.ipv4_mapped.is_loopback)


def test_m1_max_concurrent_trials_one_runs_trials_one_after_another(tmp_path, local_ray):
    from raycomp.tune import main

    experiment = {
        "name": "serial",
        "data": {"num_train": 512, "num_test": 128, "batch_size": 64},
        "max_duration": "3ep",
        "algorithms": {"selective_backprop": {"start": 0.0, "end": 1.0, "keep": 0.5, "interrupt": 0}},
        "scaling": {"num_workers": 0},
        "storage_path": str(tmp_path),
        "tracking": {"enabled": False},
        "sweep": {"space": {f"{SB}.keep": {"grid": [0.25, 0.75]}}, "max_concurrent_trials": 1},
    }
    path = tmp_path / "serial.yaml"
    path.write_text(yaml.safe_dump(experiment))
    assert main([str(path), "--no-report"]) == 0
    spans = []  # each trial's [start, end] on the wall clock, from Ray's own result rows
    for result in (tmp_path / "serial").glob("*/result.json"):
        rows = [json.loads(line) for line in result.read_text().splitlines() if line.strip()]
        end = rows[-1]["timestamp"]  # whole seconds
        spans.append((end - rows[-1]["time_total_s"], end))
    assert len(spans) == 3
    spans.sort()
    for (_, first_end), (second_start, _) in itertools.pairwise(spans):
        assert second_start >= first_end - 1.5  # two at once (the defect) overlap by a whole trial
