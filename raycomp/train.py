"""``python -m raycomp.train EXPERIMENT.yaml``: one training run of an experiment on Ray Train.

With ``scaling.num_workers >= 1`` the run is a ``TorchTrainer`` (one raycomp Trainer per worker, DDP
across them); Ray stores its checkpoints under ``storage_path/name`` and running the same name again
resumes from the latest one. ``num_workers: 0`` trains in this process, with the same reports and
checkpoints kept under the same folder. The run is one MLflow run (``tracking`` section);
``--resume-from runs:/<run_id>`` starts from that MLflow run's latest checkpoint. Exit codes: 2 for a
bad config or a checkpoint that cannot be loaded, 3 if the MLflow store does not answer; nothing
starts in either case.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from raycomp.config import ConfigError, ExperimentConfig, load_experiment


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m raycomp.train", description=__doc__.splitlines()[0])
    parser.add_argument("experiment", help="experiment YAML (see experiments/)")
    parser.add_argument(
        "--set", dest="overrides", action="append", default=[], metavar="KEY.PATH=VALUE", help="override a config key"
    )
    parser.add_argument("--address", help="Ray cluster address (default: RAY_ADDRESS, else a private local Ray)")
    parser.add_argument(
        "--resume-from",
        metavar="RUN",
        help="start from an MLflow run's checkpoint: runs:/<run_id> (its latest), runs:/<run_id>/best, or a run id",
    )
    parser.add_argument(
        "--recreate-required",
        action="store_true",
        help="re-create required_on_load algorithms (model surgery) the checkpoint has and the config lacks",
    )
    return parser.parse_args(argv)


def load_or_exit(path: str, overrides: list[str]) -> ExperimentConfig:
    """The validated config, or the problems on stderr and exit code 2 (nothing started)."""
    try:
        return load_experiment(path, overrides)
    except ConfigError as error:
        print(f"error: invalid experiment {path}:", file=sys.stderr)
        for problem in error.problems:
            print(f"  {problem}", file=sys.stderr)
        raise SystemExit(2) from None


def start_tracking(config: ExperimentConfig, experiment_file: str, kind: str, reopen: bool) -> Any:
    """The MLflow run (a ``RunRef``), or None with tracking off; exit 3 in one line if the store is down."""
    if not config.tracking.enabled:
        return None
    from raycomp.tracking import TrackingUnavailable, start_run

    try:
        return start_run(config, kind=kind, experiment_file=experiment_file, reopen=reopen)
    except TrackingUnavailable as error:
        print(
            f"error: {error} (start the server, set tracking.tracking_uri, or tracking.enabled: false)", file=sys.stderr
        )
        raise SystemExit(3) from None


class RunOutcome:
    """How a tracked CLI run ends; the block may set ``status`` (the sweep sets KILLED when interrupted)."""

    status = "FINISHED"


@contextlib.contextmanager
def ending(tracking: Any) -> Iterator[RunOutcome]:
    """Ends the MLflow run ``tracking`` (if any) when the block exits: FAILED on an error, KILLED on Ctrl-C."""
    outcome = RunOutcome()
    try:
        yield outcome
    except KeyboardInterrupt:
        outcome.status = "KILLED"
        raise
    except BaseException:
        outcome.status = "FAILED"
        raise
    finally:
        if tracking is not None:
            from raycomp.tracking import end_run

            end_run(tracking, outcome.status)


def fetch_resume_checkpoint(config: ExperimentConfig, reference: str, recreate: bool) -> tuple[dict[str, str], Path]:
    """Downloads ``--resume-from``'s checkpoint and checks it loads into ``config``, before training starts.

    Returns where workers fetch it again (a cluster's workers may not see this folder) and the local copy.
    A checkpoint trained with a ``required_on_load`` algorithm the config lacks is refused, naming it,
    unless ``recreate`` (the Trainer then re-creates it from the checkpoint, as the core documents).
    """
    from raycomp.checkpoint import load_checkpoint
    from raycomp.config import algorithm_class
    from raycomp.core.algorithm import class_path
    from raycomp.tracking import download_checkpoint, tracking_uri

    source = {"tracking_uri": tracking_uri(config), "reference": reference}
    local = download_checkpoint(
        source["tracking_uri"], reference, Path(config.resolved_storage_path()) / config.name / "resume_from"
    )
    present = {class_path(algorithm_class(name)) for name in config.algorithms}
    stored = load_checkpoint(local)["state"]["algorithms"]
    missing = [
        entry["class_path"] for entry in stored if entry["required_on_load"] and entry["class_path"] not in present
    ]
    if missing and not recreate:
        raise ValueError(
            f"the checkpoint was trained with {', '.join(missing)}, which must be present to load it "
            "(required_on_load): add it under algorithms, or pass --recreate-required to re-create it"
        )
    return source, local


def run(
    config: ExperimentConfig,
    address: str | None = None,
    *,
    tracking: Any = None,
    resume_from: tuple[dict[str, str], Path] | None = None,
    recreate_required: bool = False,
) -> dict[str, Any]:
    """Trains ``config`` once, logging to the MLflow run ``tracking``; returns the last reported metrics.

    ``resume_from`` (from ``fetch_resume_checkpoint``) is used only while the run has no checkpoint of its own.
    """
    storage = config.resolved_storage_path()
    tracked = tracking.to_dict() if tracking is not None else None
    if config.scaling.num_workers == 0:
        from raycomp.launch.reporting import FolderReporter
        from raycomp.launch.worker import run_experiment

        reporter = FolderReporter(Path(storage) / config.name, config.checkpoint.num_to_keep)
        load_path = reporter.latest_checkpoint()
        if load_path is not None:
            print(f"resuming from {load_path}", flush=True)
        elif resume_from is not None:
            load_path = resume_from[1]
            print(f"starting from {resume_from[0]['reference']} ({load_path})", flush=True)
        run_experiment(config, reporter, load_path=load_path, tracking=tracked, recreate_required=recreate_required)
        return reporter.history[-1]

    from raycomp.launch.runner import init_ray, torch_trainer

    init_ray(address)
    source = resume_from[0] if resume_from is not None else None
    options = {"tracking": tracked, "resume_from": source, "recreate_required": recreate_required}
    result = torch_trainer(config, config.name, storage, loop_options=options).fit()
    return dict(result.metrics or {})


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    config = load_or_exit(args.experiment, args.overrides)
    resume_from = None
    if args.resume_from:
        from raycomp.checkpoint import CheckpointError

        try:
            resume_from = fetch_resume_checkpoint(config, args.resume_from, args.recreate_required)
        except (LookupError, ValueError, CheckpointError) as error:
            print(f"error: --resume-from {args.resume_from}: {error}", file=sys.stderr)
            return 2
    tracking = start_tracking(config, args.experiment, "train", reopen=True)
    if tracking is not None and args.resume_from:
        from raycomp.tracking import MlflowLogger

        MlflowLogger(tracking).set_tags({"raycomp.resumed_from": args.resume_from})
    with ending(tracking):
        metrics = run(
            config, args.address, tracking=tracking, resume_from=resume_from, recreate_required=args.recreate_required
        )
    shown = {k: v for k, v in metrics.items() if isinstance(v, int | float | str) and not k.startswith("time/first")}
    print(json.dumps(shown, indent=2, sort_keys=True))
    print(f"checkpoints: {os.path.join(config.resolved_storage_path(), config.name)}")
    if tracking is not None:
        print(f"MLflow run {tracking.run_id} at {tracking.tracking_uri}")
        if metrics.get("tracking/failures"):
            print(f"warning: {metrics['tracking/failures']:.0f} MLflow sends failed; see the messages above")
    return 0


if __name__ == "__main__":
    sys.exit(main())
