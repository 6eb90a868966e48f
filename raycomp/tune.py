"""``python -m raycomp.tune EXPERIMENT.yaml``: a Ray Tune sweep of an experiment against its baseline.

Each trial trains one sample of the ``sweep.space`` (plus one baseline trial without the swept
algorithms); Tune's table shows progress. At the end the trials' accuracy, wall time, time to the
baseline's accuracy and speed-up are printed and written to ``storage_path/name/results.{csv,json}``, and
the speed-up report (figures and ``report.html``) to ``storage_path/name/report/`` (``--no-report``: not).
``--resume`` continues an interrupted sweep without rerunning finished trials. The sweep is an
MLflow parent run with a child run per trial (``tracking`` section; docs/tracking.md). A bad config
exits with code 2, an MLflow store that does not answer with 3, both before Ray starts.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from pathlib import Path

from raycomp.config import ExperimentConfig
from raycomp.train import ending, load_or_exit, start_tracking


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m raycomp.tune", description=__doc__.splitlines()[0])
    parser.add_argument("experiment", help="experiment YAML (see experiments/)")
    parser.add_argument(
        "--set", dest="overrides", action="append", default=[], metavar="KEY.PATH=VALUE", help="override a config key"
    )
    parser.add_argument("--resume", action="store_true", help="continue the sweep stored at storage_path/name")
    parser.add_argument("--address", help="Ray cluster address (default: RAY_ADDRESS, else a private local Ray)")
    parser.add_argument(
        "--no-report", action="store_true", help="skip the speed-up report (storage_path/name/report/, docs/report.md)"
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    config = load_or_exit(args.experiment, args.overrides)
    os.environ.setdefault("RAY_AIR_NEW_OUTPUT", "0")  # the classic table shows our metric columns
    if args.resume:
        from ray import tune

        path = os.path.join(config.resolved_storage_path(), config.name)
        if not tune.Tuner.can_restore(path):
            print(f"error: no sweep to resume at {path} (run without --resume to start one)", file=sys.stderr)
            return 2
    tracking = start_tracking(config, args.experiment, "sweep", reopen=args.resume)
    with ending(tracking) as outcome:
        code = run_sweep(config, args, tracking.to_dict() if tracking is not None else None)
        if code == 130:  # interrupted: --resume reopens the run
            outcome.status = "KILLED"
    if tracking is not None:
        print(f"MLflow: parent run {tracking.run_id} at {tracking.tracking_uri}")
    return code


def run_sweep(config: ExperimentConfig, args: argparse.Namespace, tracking: dict[str, str] | None) -> int:
    """Runs (or resumes) the sweep and writes its results; returns the CLI's exit code."""
    from raycomp.launch.runner import init_ray
    from raycomp.launch.sweep import build_tuner, restore_tuner, trial_records, unfinished
    from raycomp.results import best, format_table, summarize, write_results

    storage = config.resolved_storage_path()
    sweep_folder = Path("runs" if "://" in storage else storage) / config.name  # tables stay on the driver for URIs
    dashboard = config.scaling.num_workers > 0  # only worker groups need its state API
    init_ray(args.address, dashboard=dashboard)
    tuner = restore_tuner(config, tracking) if args.resume else build_tuner(config, tracking=tracking)
    results = tuner.fit()
    left = unfinished(results)
    if left:  # Ctrl-C: Tune saved the sweep's state and returned
        print(f"sweep interrupted with {left} of {len(results)} trials unfinished; continue it with:")
        print(f"  python -m raycomp.tune {args.experiment} {' '.join(_quoted(args.overrides))} --resume")
        return 130

    sweep = config.sweep
    metric, mode = (sweep.metric, sweep.mode) if sweep else ("eval/accuracy", "max")
    summaries = summarize(trial_records(results), metric, mode)
    paths = write_results(sweep_folder, summaries, metric, mode)
    print(format_table(summaries, metric))
    winner = best(summaries, mode)
    if winner is not None:
        print(f"best: {winner.trial_id} ({winner.variant}) {metric}={winner.final_metric:.4g} {winner.overrides}")
    print("results: " + ", ".join(str(path) for path in paths))
    if tracking is not None:
        from raycomp.tracking import MlflowLogger, RunRef

        parent = MlflowLogger(RunRef(**tracking))
        for path in paths:
            parent.log_artifact(path)
    if not getattr(args, "no_report", False):
        try:  # the results are written already: a report that fails to render must not cost them
            from raycomp.report import report_sweep_folder

            print(f"report: {report_sweep_folder(sweep_folder, tracking)[-1]}")
        except Exception as error:
            reason = " ".join(f"{type(error).__name__}: {error}".split())[:300]
            print(f"report: not written ({reason}); results are in {paths[-1]}")
    return 0 if all(s.status != "ERROR" for s in summaries) else 1


def _quoted(overrides: list[str]) -> list[str]:
    return [f"--set {shlex.quote(item)}" for item in overrides]


if __name__ == "__main__":
    sys.exit(main())
