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
import json
import math
import sys
from pathlib import Path
from typing import Any

from raycomp.base.collector import resume_collector
from raycomp.base.errors import RaycompError
from raycomp.base.keys import TRACKING_FAILURES
from raycomp.base.layout import TRIAL_HISTORY, is_uri
from raycomp.cli.common import add_experiment_arguments, exit_code_of, load_experiment_or_exit
from raycomp.config import ExperimentConfig
from raycomp.launch.run_folder import run_guarded
from raycomp.launch.spec import ResumeSource, TrialSpec
from raycomp.tracking.ref import redacted_uri


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m raycomp.train", description=__doc__.splitlines()[0])
    add_experiment_arguments(parser)
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


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    config, _ = load_experiment_or_exit(args.experiment, args.overrides)
    try:
        resume = fetch_resume_checkpoint(config, args.resume_from, args.recreate_required) if args.resume_from else None
    except RaycompError as error:
        print(f"error: --resume-from {args.resume_from}: {error}", file=sys.stderr)
        return error.exit_code
    return exit_code_of(lambda: run_guarded(config, lambda: _train(config, args, resume)))


def _train(config: ExperimentConfig, args: argparse.Namespace, resume: tuple[ResumeSource, Path] | None) -> int:
    from raycomp.results.summary import DIVERGED_FACTOR, diverged
    from raycomp.tracking import train_run

    history = None if is_uri(config.layout.storage) else Path(config.layout.run_dir) / TRIAL_HISTORY
    with train_run(config, args.experiment, resumed_from=args.resume_from) as run:
        spec = TrialSpec.of(
            config,
            run=run.ref if run else None,
            resume_from=resume[0] if resume else None,
            recreate_required=args.recreate_required,
            history=history,  # every result, across resumes: the divergence check's first loss
        )
        metrics = train(spec, args.address, local_copy=resume[1] if resume else None)
    run_diverged = diverged(read_history(history) or [metrics])
    shown = {k: v for k, v in metrics.items() if isinstance(v, int | float | str) and not k.startswith("time/first")}
    shown = {k: None if isinstance(v, float) and not math.isfinite(v) else v for k, v in shown.items()}
    print(json.dumps(shown | {"diverged": run_diverged}, indent=2, sort_keys=True, allow_nan=False))
    if run_diverged:
        print(
            f"warning: training diverged (a loss became NaN or infinite, or {DIVERGED_FACTOR:g}x its first value): "
            "these metrics are no recipe's (a lower optimizer.lr, or gradient_clipping, may help)"
        )
    print(f"checkpoints: {config.layout.run_dir}")
    if run is not None:
        from raycomp.tracking.experiment_page import how_to_open

        print(f"MLflow run {run.ref.run_id} at {redacted_uri(run.ref.tracking_uri)}")
        print("\n".join(how_to_open(run.ref, *config.objective)))
        if metrics.get(TRACKING_FAILURES):
            print(f"warning: {metrics[TRACKING_FAILURES]:.0f} MLflow sends failed; see the messages above")
    return 0


def read_history(path: Path | None) -> list[dict[str, Any]]:
    """The results the run appended to ``path`` (``sinks.HistorySink``), in order; none when it is not there (a
    worker of a cluster without this folder wrote it); a line cut by a kill is skipped."""
    if path is None or not path.is_file():
        return []
    results = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            results.append(json.loads(line))
        except ValueError:
            continue
    return results


def fetch_resume_checkpoint(config: ExperimentConfig, reference: str, recreate: bool) -> tuple[ResumeSource, Path]:
    """Downloads ``--resume-from``'s checkpoint and checks it loads into ``config``, before training starts.

    Returns where workers fetch it again (a cluster's workers may not see this folder) and the local copy.
    A checkpoint trained with a ``required_on_load`` algorithm the config lacks is refused, naming it,
    unless ``recreate`` (the Trainer then re-creates it from the checkpoint, as the core documents).
    """
    from raycomp.launch.checkpoint_fit import check_fits
    from raycomp.tracking import download_checkpoint, tracking_uri

    source = ResumeSource(tracking_uri(config), reference)
    local = download_checkpoint(source.tracking_uri, reference, config.layout.resume_dir)
    check_fits(config, local, recreate)  # loads, has its required_on_load algorithms, fits the model
    return source, local


def train(spec: TrialSpec, address: str | None = None, *, local_copy: Path | None = None) -> dict[str, Any]:
    """Trains ``spec`` once; returns the last result's metrics.

    ``local_copy`` (``--resume-from``'s download) is used only while the run has no checkpoint of its own.
    """
    config = spec.config
    if config.scaling.num_workers == 0:
        from raycomp.launch.worker import run_locally

        return run_locally(spec, local_copy)

    from raycomp.launch.cluster import init_ray, torch_trainer

    init_ray(address)
    trainer = torch_trainer(spec, config.name, config.layout.storage)
    resume_collector()  # the driver has started; its workers train (base/collector.py)
    try:
        result = trainer.fit()
    except SystemExit:
        # Ray Train's own SIGINT handler aborts the run, then exits the process with no word (status 1): a
        # Ctrl-C, as in local mode: "interrupted", 130, the MLflow run KILLED, its checkpoints kept.
        raise KeyboardInterrupt from None
    return dict(result.metrics or {})


if __name__ == "__main__":
    sys.exit(main())
