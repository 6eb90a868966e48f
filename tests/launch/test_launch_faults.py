"""Issue 14's launch defects on a real local Ray: M1 (sweep.max_concurrent_trials honoured) and L9 (the
private local Ray listens on loopback only)."""

from __future__ import annotations

import contextlib
import ipaddress
import itertools
import json
import os
import time

import psutil
import yaml

from raycomp.launch.cluster import LOCAL_RAY_ENV, RAY_ENV

SB = "algorithms.selective_backprop"


def test_l9_the_private_local_ray_listens_on_loopback_only(local_ray):
    assert {node["NodeManagerAddress"] for node in local_ray.nodes()} == {"127.0.0.1"}
    # A Train worker of an earlier test on this Ray may still be exiting: its DDP group's store (torch's TCPStore,
    # not Ray's) listens on every interface while the group lives (CI once saw one here). Wait for it to go.
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and any("RayTrainWorker" in name for name in _descendant_command_lines()):
        time.sleep(0.2)
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
    """A trial trains in a thread of its worker. With glibc's defaults that thread got an arena of its own, and
    most CPU steps of sb.yaml's network gave their tensors back to the kernel and faulted them in again
    (4,000-14,000 page faults such a step, 2-26 of 30 steps; bench/bench_malloc.py measures the cost), a cost
    in the very CPU time verdicts compare that varied from trial to trial.

    Counting those faults is a measurement that a busy machine disturbs (it failed at load 8, issue 29), so this
    checks what makes them go away, which no load changes: in a thread of a worker, glibc serves a small block
    from the main heap (``arena_max=1``: no arena of the thread's own), a 16 MB block too (``mmap_threshold``
    32 MB: not a fresh mapping each time), and freeing it leaves the heap as it is (``trim_threshold`` 1 GB).
    Each setting alone changes its own answer (checked in a plain process with each one left out)."""

    @local_ray.remote(num_cpus=0)
    def heap_facts_in_a_thread() -> dict[str, bool]:
        import ctypes
        import threading

        libc = ctypes.CDLL("libc.so.6")
        libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
        libc.free.argtypes = [ctypes.c_void_p]
        libc.sbrk.restype, libc.sbrk.argtypes = ctypes.c_void_p, [ctypes.c_ssize_t]
        libc.memset.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t]
        facts: dict[str, bool] = {}

        def probe() -> None:
            small = libc.malloc(4096)
            facts["a small block comes from the main heap"] = small < libc.sbrk(0)
            libc.free(small)
            big = libc.malloc(16 << 20)
            libc.memset(big, 1, 16 << 20)  # touched, as a tensor is
            top = libc.sbrk(0)
            facts["a 16 MB block comes from the main heap"] = big < top
            libc.free(big)
            facts["freeing it keeps the heap"] = libc.sbrk(0) == top

        thread = threading.Thread(target=probe)
        thread.start()
        thread.join()
        return facts

    facts = local_ray.get(heap_facts_in_a_thread.remote())
    assert all(facts.values()), facts


def _loopback(ip: str) -> bool:
    address = ipaddress.ip_address(ip)
    return address.is_loopback or bool(getattr(address, "ipv4_mapped", None) and address.ipv4_mapped.is_loopback)


def test_m1_max_concurrent_trials_one_runs_trials_one_after_another(tmp_path, local_ray):
    from raycomp.cli.tune import main

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


def _descendant_command_lines() -> list[str]:
    """The command lines of this process's descendants (a Ray worker's is its title, "ray::RayTrainWorker...")."""
    names = []
    for child in psutil.Process().children(recursive=True):
        with contextlib.suppress(psutil.NoSuchProcess):
            names.append(" ".join(child.cmdline()))  # name() is cut to 15 characters: "ray::RayTrainWo"
    return names
