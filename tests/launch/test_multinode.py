"""A team's cluster on one host: a Ray head that offers trials no CPU (cluster.yaml's), worker nodes joined with
``ray start --address``, token auth on, the sweep's storage in an S3 bucket (named by its ``storage_path``'s
``?endpoint_override=``: no node knows the endpoint otherwise) and its tracking on an MLflow server
backed by PostgreSQL with its artifacts in that bucket, every part a real process on 127.0.0.1
(tests/cluster_services.py, tests/ray_nodes.py). The sweeps run as a user's do: submitted with ``ray job submit``,
or ``python -m raycomp.tune`` with ``RAY_ADDRESS`` set.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections import Counter
from pathlib import Path

import pytest
import yaml
from cluster_services import Cluster, postgres_available
from find_experiments import SHRUNK_METHOD
from ray_nodes import state, submit_and_wait

from raycomp.base import keys
from raycomp.base.layout import join_uri

pytestmark = [
    pytest.mark.ray,
    pytest.mark.subprocess_cli,
    pytest.mark.skipif(not postgres_available(), reason="PostgreSQL 15 is not installed (.ci/run installs it)"),
]
SWEEP_TIMEOUT_S = 420
REPO = Path(__file__).resolve().parents[2]
KEEP = "algorithms.selective_backprop.keep"
EPOCHS = 3  # the lost-node sweep's trials: a checkpoint an epoch


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    started = Cluster(tmp_path_factory.mktemp("cluster"))  # which stops what it started if a part fails to start
    yield started
    assert not started.stop(), "processes of the cluster still alive"


def experiment(cluster: Cluster, folder: Path, name: str, **settings) -> Path:
    config = {
        "name": name,
        "data": {"num_train": 256, "num_test": 128, "batch_size": 64},
        "max_duration": "2ep",
        "algorithms": {"selective_backprop": {"start": 0.0, "end": 1.0, "keep": 0.5, "interrupt": 0}},
        "checkpoint": {"interval": "1ep"},
        "storage_path": cluster.s3.uri_with_endpoint("runs"),
        "tracking": {"tracking_uri": cluster.mlflow.uri},
        "sweep": {"space": {KEEP: {"grid": [0.5]}}, "repeats": 2},
        **settings,
    }
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def start_sweep(cluster: Cluster, path: Path, *flags: str) -> subprocess.Popen:
    """``python -m raycomp.tune`` in the working directory ``path`` lies in, joined to the cluster."""
    env = {**cluster.env, "RAY_ADDRESS": f"127.0.0.1:{cluster.head.gcs}", "PYTHONUNBUFFERED": "1"}
    log = path.with_suffix(f".{time.monotonic_ns()}.log")
    command = [sys.executable, "-m", "raycomp.tune", str(path), *flags]
    with log.open("w") as output:
        process = subprocess.Popen(
            command, cwd=path.parent, env=env, stdout=output, stderr=subprocess.STDOUT, start_new_session=True
        )
    process.log = log  # type: ignore[attr-defined]
    return process


def finish(process: subprocess.Popen) -> tuple[int, str]:
    try:
        code = process.wait(timeout=SWEEP_TIMEOUT_S)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
    return code, process.log.read_text()  # type: ignore[attr-defined]


def wait_for_a_trial_mid_training(
    cluster: Cluster, prefix: str, before: dict[str, int], process: subprocess.Popen
) -> dict[str, int]:
    """Waits until a trial has a checkpoint more than in ``before`` and is still training (fewer than its
    ``EPOCHS`` checkpoints), so that killing now loses work a checkpoint saved; returns the checkpoints a trial.

    Waiting for any new checkpoint instead was a race: on a busy machine the first trial could write all three and
    finish before the test's kill, which then found the other trials before their first checkpoint (retried from
    scratch, correctly), and no trial was left to show a resume from a checkpoint."""
    deadline = time.monotonic() + SWEEP_TIMEOUT_S
    while time.monotonic() < deadline and process.poll() is None:
        found = checkpoints(cluster, prefix)
        if any(before.get(trial, 0) < count < EPOCHS for trial, count in found.items()):
            return found
        time.sleep(0.2)
    log = process.log.read_text()  # type: ignore[attr-defined]
    raise AssertionError(f"no trial in the bucket with a new checkpoint and still training:\n{log[-3000:]}")


def checkpoints(cluster: Cluster, prefix: str) -> dict[str, int]:
    """The checkpoints whole in the bucket, per trial folder: a checkpoint counts once its ``checkpoint.pt`` is there
    (a folder's key appears when its upload starts, before Tune knows the checkpoint: a node killed then retries
    from scratch)."""
    folders = {key.rsplit("/", 1)[0] for key in cluster.s3.object_keys(prefix)
               if "/checkpoint_" in key and key.endswith("/checkpoint.pt")}  # fmt: skip
    return Counter(folder.rsplit("/", 2)[-2] for folder in folders)


def test_a_lost_node_and_a_killed_driver_cost_no_finished_work(cluster, tmp_path):
    """Every worker node SIGKILLed mid-sweep, a fresh node joined: the lost trials are retried there from their
    newest checkpoint in the bucket. Then the driver SIGKILLed: ``--resume`` continues from the bucket to the
    end, and no trial that had finished trains again. No MLflow run is left RUNNING; each trial's curve has each
    evaluation once. ``--extend`` then adds a repeat from the bucket, training none of the old trials again."""
    name = "lost"
    settings = {
        # 16 steps an epoch: long enough that the nodes die while the first trials to checkpoint still train
        "data": {"num_train": 1024, "num_test": 128, "batch_size": 64},
        "max_duration": f"{EPOCHS}ep",
        "scaling": {"num_workers": 0},
        "failure": {"max_failures": 3},
    }
    sweep = {"space": {KEEP: {"grid": [0.5]}}, "max_concurrent_trials": 2}
    path = experiment(cluster, tmp_path, name, **settings, sweep={**sweep, "repeats": 2})
    prefix = f"runs/{name}/"
    process = start_sweep(cluster, path)
    seen = wait_for_a_trial_mid_training(cluster, prefix, {}, process)
    for node in list(cluster.workers):
        node.kill()
        cluster.workers.remove(node)
    cluster.add_workers(1)
    wait_for_a_trial_mid_training(cluster, prefix, seen, process)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=30)
    finished = trained_steps(cluster, name)

    code, log = finish(start_sweep(cluster, path, "--resume"))
    assert code == 0, log[-4000:]
    after = trained_steps(cluster, name)
    assert all(after[run] == steps for run, steps in finished.items()), "a finished trial trained again"
    results = json.loads((tmp_path / "runs" / name / "results.json").read_text())["trials"]
    assert len(results) == 4 and {trial["status"] for trial in results} == {"TERMINATED"}
    for trial in results:
        steps = [point["step"] for point in trial["curve"]]
        assert steps == sorted(set(steps)) and len(steps) == EPOCHS, trial["curve"]  # an evaluation per epoch, once

    runs = cluster.mlflow.runs(name)
    assert {run.info.status for run in runs} == {"FINISHED"}, [(r.info.run_name, r.info.status) for r in runs]
    trials = [run for run in runs if run.data.tags.get(keys.KIND_TAG) == "trial"]
    assert len(trials) == 4
    # Every result each trial reported, as the trial keeps it in its folder in the bucket (MLflow skips the
    # steps an earlier attempt had logged, so its copy of ``resumed_from_step`` may be missing), as result.json,
    # where Tune looks. Tune's own result loggers are off: the driver would upload them all again every few
    # seconds (loggers.result_loggers). Each trial wrote its Tune config there itself (``params.json``: the arm of
    # a trial that fails first).
    keys_in_bucket = cluster.s3.object_keys(prefix)
    assert not [key for key in keys_in_bucket if key.endswith(("/history.jsonl", "/progress.csv"))]
    params = [key for key in keys_in_bucket if key.endswith("/params.json")]
    assert len(params) >= 4 and all(
        "arm" in json.loads(cluster.s3.client().get_object(Bucket=cluster.s3.bucket, Key=key)["Body"].read())
        for key in params
    )
    reported = [
        json.loads(line)
        for key in keys_in_bucket
        if key.endswith("/result.json")
        for line in cluster.s3.client().get_object(Bucket=cluster.s3.bucket, Key=key)["Body"].read().splitlines()
    ]
    resumed = [row["resumed_from_step"] for row in reported if row.get("resumed_from_step")]
    assert resumed and all(step % 16 == 0 for step in resumed), "no trial resumed from an epoch's checkpoint"
    # Each of these small files (the checkpoints included) went up in one request, not pyarrow's three-request
    # multipart upload (layout.opened_uri): the storage path has no option saying so.
    s3_log = cluster.s3.log.read_text().splitlines()
    multipart = [line for line in s3_log if f"/{prefix}" in line and "?uploads" in line]
    assert not multipart, multipart[:3]

    old = {trial["trial_id"]: trial["eval/accuracy"] for trial in results}
    grown = experiment(cluster, tmp_path, name, **settings, sweep={**sweep, "repeats": 3})
    code, log = finish(start_sweep(cluster, grown, "--extend"))
    assert code == 0, log[-4000:]
    # The new trial's process printed no line a trial that the driver says once (trial.quiet_per_trial_lines):
    # Ray prefixes the lines it forwards with the process, "(run_trial pid=...)".
    said = ("View run", "View experiment", "Checkpoint successfully created")
    chatty = [line for line in log.splitlines() if "run_trial pid=" in line and any(text in line for text in said)]
    assert not chatty, chatty[:3]
    results = json.loads((tmp_path / "runs" / name / "results.json").read_text())["trials"]
    assert sorted((trial["config_id"], trial["repeat"]) for trial in results) == [
        (config, repeat) for config in ("baseline", "method-1") for repeat in range(3)
    ]
    assert {trial["trial_id"]: trial["eval/accuracy"] for trial in results if trial["trial_id"] in old} == old
    assert trained_steps(cluster, name).items() >= after.items()  # the old trials' runs as they were
    runs = cluster.mlflow.runs(name)
    assert {run.info.status for run in runs} == {"FINISHED"} and len(runs) == 7  # the same parent, a child a trial


def trained_steps(cluster: Cluster, name: str) -> dict[str, tuple[int, str | None]]:
    """Per FINISHED trial run: the training steps it logged (each once) and the step it trained again from, if any
    (tests/launch/test_crash_resume.py's check, on the PostgreSQL store)."""
    client = cluster.mlflow.client()
    return {
        run.info.run_id: (
            len(client.get_metric_history(run.info.run_id, "train/loss")),
            run.data.tags.get(keys.RETRAINED_FROM_TAG),
        )
        for run in cluster.mlflow.runs(name)
        if run.info.status == "FINISHED" and run.data.tags.get(keys.KIND_TAG) == "trial"
    }


USER_EXPERIMENT = """\
name: own-model-job
model: {{class_path: my_project.nets.TinyResNet, init_args: {{num_classes: 3, widths: [8]}}}}
data:
  class_path: my_project.data.colour_squares
  init_args: {{num_train: 64, num_eval: 32, num_classes: 3, size: 8}}
  batch_size: 32
max_duration: 1ep
algorithms:
  selective_backprop: {{keep: 0.5}}
checkpoint: {{interval: 1ep}}
scaling: {{num_workers: 2, cpus_per_worker: 2}}  # a worker fills a node: one per worker node
tracking: {{tracking_uri: {tracking}}}
storage_path: {storage}
sweep:
  space:
    algorithms.selective_backprop.keep: {{grid: [0.5]}}
"""


def test_ray_job_submit_of_a_users_project_spans_two_nodes_and_leaves_its_answer_in_the_bucket_and_postgres(
    cluster, tmp_path
):
    """examples/own_model as the job's working dir (README, "Run on a Ray cluster"), submitted with the token: its
    package imports in the job's driver on the head, each trial and each Train worker on the worker nodes, a
    two-worker trial's DDP workers one on each (none on the head). The checkpoints and Tune's state are in the
    bucket; the results and the report, which the driver writes in the job's temporary copy, are copied there
    too; every run is FINISHED in PostgreSQL, the report attached to the parent in the bucket."""
    refused = urllib.request.Request(f"{cluster.head.dashboard}/api/jobs/")
    with pytest.raises(urllib.error.HTTPError, match="401"):  # token auth is on: no token, no answer
        urllib.request.urlopen(refused, timeout=10)
    cluster.add_workers(2 - len(cluster.workers))  # two worker nodes, whichever test ran before
    project = tmp_path / "project"
    shutil.copytree(REPO / "examples" / "own_model", project, ignore=shutil.ignore_patterns("__pycache__", "runs"))
    storage = cluster.s3.uri_with_endpoint("jobs")
    (project / "job.yaml").write_text(USER_EXPERIMENT.format(storage=storage, tracking=cluster.mlflow.uri))
    logs = submit_and_wait(cluster.head.dashboard, cluster.env, project, {}, Path("job.yaml"))

    assert "verdicts on eval/accuracy" in logs, logs[-4000:]
    workers = state(cluster.head.dashboard, cluster.env, "actors", [("class_name", "=", "RayTrainWorker")])
    nodes = {actor.node_id for actor in workers}
    head = {node.node_id for node in state(cluster.head.dashboard, cluster.env, "nodes") if node.is_head_node}
    assert len(nodes) == 2 and not nodes & head, nodes

    stored = cluster.s3.object_keys("jobs/own-model-job/")
    assert any(key.endswith("/checkpoint.pt") for key in stored)
    assert any(Path(key).name.startswith("experiment_state-") for key in stored)  # Tune's state: --resume's source
    assert f"copied beside the trials: {join_uri(storage, 'own-model-job', 'results.csv')}" in logs, logs[-4000:]
    assert "jobs/own-model-job/report/report.html" in stored
    body = cluster.s3.client().get_object(Bucket=cluster.s3.bucket, Key="jobs/own-model-job/results.json")["Body"]
    rows = {row["variant"]: row for row in json.loads(body.read())["trials"]}
    assert sorted(rows) == ["baseline", "method"] and {row["status"] for row in rows.values()} == {"TERMINATED"}

    runs = cluster.mlflow.runs("own-model-job")
    assert len(runs) == 3 and {run.info.status for run in runs} == {"FINISHED"}, [r.info.status for r in runs]
    parent = next(run for run in runs if run.data.tags.get(keys.KIND_TAG) == "sweep")
    assert parent.info.artifact_uri.startswith("mlflow-artifacts:")
    assert any(key.startswith("mlflow-artifacts/") and key.endswith("report.html") for key in cluster.s3.object_keys())


USER_FIND = """\
name: own-model-find
model: {{class_path: my_project.nets.TinyResNet, init_args: {{num_classes: 3, widths: [32, 64]}}}}
data:
  class_path: my_project.data.colour_squares
  init_args: {{num_train: 192, num_eval: 64, num_classes: 3, size: 32}}
  batch_size: 32
max_duration: 1ep
scaling: {{num_workers: 0, cpus_per_worker: 1}}
checkpoint: {{interval: 1ep, num_to_keep: 1}}
tracking: {{enabled: false}}
storage_path: {storage}
find:
  methods: {methods}
  budget: 10m
  accuracy_tolerance: 1.0
  timing: cpu
  baseline_budgets: []
  control: false
  max_settings: 1
  max_concurrent_trials: 1  # a round's trials in one trial process
  screen: [2, 4]
  tune: [2, 2]
  compose: [2, 2]
  confirm: [2, 4]
"""


def test_ray_job_submit_runs_a_users_find_whose_stages_train_on_the_cluster(
    cluster, tmp_path, user_project, monkeypatch
):
    """`raycomp find` of a user's project as a cluster job (issue 30 item 5), examples/own_model its working dir:
    its driver joins the head, each stage's round of trials is a Tune run on the worker nodes that imports the
    user's package, and it answers in the shared storage. The recipe it recommends, if any, trains as a user trains
    it: from the folder that holds their package. (One race of one sure method, ProgressiveResizing, two seeds a
    stage, on a network wide enough that its convolutions, not a step's fixed costs, take the time.)"""
    storage = tmp_path / "finds"
    job = user_project / "job_find.yaml"
    job.write_text(USER_FIND.format(storage=storage, methods=json.dumps(SHRUNK_METHOD)))
    logs = submit_and_wait(cluster.head.dashboard, cluster.env, user_project, {}, Path(job.name), command="find")

    assert "find: 1 candidate methods on my_project.nets.TinyResNet: progressive_resizing" in logs, logs[-4000:]
    assert "candidates (the stage each reached, and how it ended there):" in logs, logs[-4000:]
    folder = storage / "own-model-find"
    answer = json.loads((folder / "find.json").read_text())
    arms = {row["arm"]: row for row in answer["tried"]}
    assert {"baseline", *(key for key in arms if key.startswith("progressive_resizing"))} == set(arms), arms
    assert all(not row["failed"] and row["stages"][0] == "screen" for row in arms.values()), arms
    assert answer["recommended"] in (
        None,
        SHRUNK_METHOD,
    )  # which one is the machine's timing (find_experiments.check_answer)
    assert (folder / "report" / "report.html").is_file()
    if answer["recommended"]:
        from raycomp.cli import train as train_cli

        monkeypatch.chdir(user_project)
        assert train_cli.main([str(folder / "recipe.yaml")]) == 0
        assert (storage / "own-model-find-recipe").is_dir()
    else:
        assert not (folder / "recipe.yaml").exists()
