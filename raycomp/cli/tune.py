"""``python -m raycomp.tune EXPERIMENT.yaml``: a Ray Tune sweep of an experiment against its baseline.

Each trial trains one sample of the ``sweep.space`` (plus one baseline trial without the swept
algorithms); Tune's table shows progress. At the end the trials' accuracy, wall time, time to the
baseline's accuracy and speed-up are printed and written to ``storage_path/name/results.{csv,json}``, and
the speed-up report (figures and ``report.html``) to ``storage_path/name/report/`` (``--no-report``: not).
``--resume`` continues a sweep stopped in any way (Ctrl-C, its process or its Ray killed) without
rerunning finished trials; ``--extend`` adds arms to a sweep (more ``sweep.repeats``, more grid values)
and trains only those, under the same MLflow run. The sweep is an
MLflow parent run with a child run per trial (``tracking`` section; docs/tracking.md). A bad config
exits with code 2, an MLflow store that does not answer with 3, both before Ray starts.
"""

from __future__ import annotations

import argparse
import os
import sys

from raycomp.cli.common import add_experiment_arguments, exit_code_of, load_experiment_or_exit
from raycomp.launch.run_folder import nothing_to_resume
from raycomp.launch.sweep.command import SweepOptions, run_sweep_command


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m raycomp.tune", description=__doc__.splitlines()[0])
    add_experiment_arguments(parser)
    again = parser.add_mutually_exclusive_group()
    again.add_argument("--resume", action="store_true", help="continue the sweep stored at storage_path/name")
    again.add_argument(
        "--extend",
        action="store_true",
        help="add the arms this config has and the sweep at storage_path/name lacks (more repeats or grid "
        "values), training only those",
    )
    parser.add_argument(
        "--no-report", action="store_true", help="skip the speed-up report (storage_path/name/report/, docs/report.md)"
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    config, _ = load_experiment_or_exit(args.experiment, args.overrides)
    os.environ.setdefault("RAY_AIR_NEW_OUTPUT", "0")  # the classic table shows our metric columns
    resume = args.resume and not (not args.extend and nothing_to_resume(config.layout))  # killed before it saved
    options = SweepOptions(
        experiment=args.experiment,
        overrides=tuple(args.overrides),
        resume=resume,
        extend=args.extend,
        report=not args.no_report,
        address=args.address,
    )
    return exit_code_of(lambda: run_sweep_command(config, options))


if __name__ == "__main__":
    sys.exit(main())
