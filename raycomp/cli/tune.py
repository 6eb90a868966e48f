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
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from raycomp.base.errors import EXIT_INTERRUPTED, StorageUnwritable, one_line
from raycomp.base.redaction import redacted
from raycomp.cli.common import add_experiment_arguments, exit_code_of, load_experiment_or_exit
from raycomp.config import ExperimentConfig
from raycomp.launch.run_folder import nothing_to_resume, run_guarded
from raycomp.launch.signals import interrupts_deferred
from raycomp.tracking.ref import RunRef, redacted_uri

if TYPE_CHECKING:
    pass


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
    config = load_experiment_or_exit(args.experiment, args.overrides)
    os.environ.setdefault("RAY_AIR_NEW_OUTPUT", "0")  # the classic table shows our metric columns
    if args.resume and not args.extend and nothing_to_resume(config.layout):
        args.resume = False  # its driver was killed before it saved anything
    return exit_code_of(lambda: guarded_sweep(config, args))


def guarded_sweep(config: ExperimentConfig, args: argparse.Namespace) -> int:
    """The sweep, holding its run folder; interrupted at any moment after the folder was claimed (Ctrl-C, or
    SIGTERM while MLflow or Ray starts, or a second one while Tune stops), it prints the ``--resume`` command:
    the runs are ended KILLED, and what was saved continues from there (nothing yet: it starts)."""
    again = args.resume or args.extend
    try:
        return run_guarded(config, lambda: _tune(config, args), resume=again, extend=args.extend)
    except KeyboardInterrupt:
        print(resume_hint(args), file=sys.stderr)
        raise


def _tune(config: ExperimentConfig, args: argparse.Namespace) -> int:
    from raycomp.launch.sweep.space import check_arms
    from raycomp.results.seed_power import few_seeds_warning
    from raycomp.tracking import sweep_run
    from raycomp.tracking.experiment_page import training_runs_url

    if config.sweep is None or config.sweep.search_alg != "optuna":
        check_arms(config)  # values drawn from random domains, checked before any run or Ray starts
    few_seeds = few_seeds_warning(config.sweep)  # before any trial: seeds that cannot resolve a speed-up
    if few_seeds:
        print(f"warning: {few_seeds}", flush=True)
    again = args.resume or args.extend
    with sweep_run(config, args.experiment, resume=again, extend=args.extend) as run:
        page = training_runs_url(run.ref, *config.objective) if run else None
        if page:  # MLflow's UI opens an experiment on GenAI; this page lists the sweep's runs as they go
            print(f"MLflow: the sweep's runs at {page}", flush=True)
        code = sweep(config, args, run.ref if run else None)
        if run is not None and code == EXIT_INTERRUPTED:  # --resume reopens the run
            run.status = "KILLED"
    if run is not None:
        from raycomp.tracking.experiment_page import how_to_open

        print(f"MLflow: parent run {run.ref.run_id} at {redacted_uri(run.ref.tracking_uri)}")
        print("\n".join(how_to_open(run.ref, *config.objective)))
    return code


def sweep(config: ExperimentConfig, args: argparse.Namespace, parent: RunRef | None) -> int:
    """Runs (or resumes) the sweep, then writes its results and report; returns the CLI's exit code."""
    from raycomp.launch.cluster import init_ray
    from raycomp.launch.sweep.finish import report_sweep_results, track_sweep_results, write_sweep_results
    from raycomp.launch.sweep.runner import run_sweep
    from raycomp.results.summary import format_table
    from raycomp.results.verdict_text import best_line, format_verdicts

    init_ray(args.address, dashboard=config.scaling.num_workers > 0)  # only worker groups need its state API
    try:
        outcome = run_sweep(config, parent, resume=args.resume, extend=args.extend)
    except (EOFError, OSError) as error:  # Tune's files, cut short or not written: a full disk
        raise _unreadable_sweep(config, error) from error
    if outcome.interrupted:  # Ctrl-C or SIGTERM: Tune saved the sweep's state and returned
        print(f"sweep interrupted with {outcome.unfinished} trials unfinished")
        print(resume_hint(args))
        return EXIT_INTERRUPTED

    metric, _ = config.objective
    with interrupts_deferred() as interrupted:  # the results are written whole, or the sweep was not done
        try:
            results = write_sweep_results(config, outcome.grids)
        except (EOFError, OSError) as error:
            raise _unreadable_sweep(config, error) from error
        print(format_table(results.summaries, metric))
        print()
        print(format_verdicts(results.verdicts, metric))
        print(best_line(results.verdicts))
        if results.verdicts.warning():
            print(f"warning: {results.verdicts.warning()}")
        print("results: " + ", ".join(_shown(path) for path in results.paths))
        if parent is not None:
            track_sweep_results(parent, results, config)
    if interrupted:
        print(f"interrupted: the results were written; the report was not (python -m raycomp.report {results.folder})")
        return EXIT_INTERRUPTED
    if not args.no_report:
        try:  # the results are written already: a report that fails to render must not cost them
            print(f"report: {_shown(report_sweep_results(results, config, parent))}")
        except Exception as error:
            print(f"report: not written ({one_line(error)}); results are in {results.paths[-1]}")
    return 1 if results.failed else 0


def _unreadable_sweep(config: ExperimentConfig, error: BaseException) -> StorageUnwritable:
    """Tune's results or saved state that cannot be read or written, as one line (Ray's traceback before)."""
    return StorageUnwritable(
        f"the sweep's files in {config.layout.run_dir} cannot be read or written ({one_line(error)}): if its disk "
        "is full, free space in storage_path (or TMPDIR); then run the same command with --resume"
    )


def resume_hint(args: argparse.Namespace) -> str:
    """The command that continues this sweep: every flag the user gave, then ``--resume`` (no password)."""
    flags = [*_quoted(args.overrides)]
    if args.no_report:
        flags.append("--no-report")
    if args.address:
        flags.append(f"--address {shlex.quote(args.address)}")
    command = " ".join(["python -m raycomp.tune", shlex.quote(args.experiment), *flags, "--resume"])
    return redacted(f"continue it with:\n  {command}")


def _shown(path: Path) -> str:
    """A path as the user reads it: relative to the working directory when it is under it."""
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _quoted(overrides: list[str]) -> list[str]:
    return [f"--set {shlex.quote(item)}" for item in overrides]


if __name__ == "__main__":
    sys.exit(main())
