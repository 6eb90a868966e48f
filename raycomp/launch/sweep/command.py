"""The sweep as a command, below every entry point: ``python -m raycomp.tune``, ``raycomp.api.sweep`` (and the
options and the guard the find's command, ``launch/find/command.py``, takes).

Each entry point turns what the user gave into ``SweepOptions`` and calls ``run_sweep_command``: it holds the run
folder, opens the sweep's MLflow run, runs (or resumes, or extends) the sweep on Ray, prints the tables and
verdicts, writes the results and the report, and returns the exit code. The command line only parses its
arguments and maps errors to exit codes; the Python API lets the errors rise.
"""

from __future__ import annotations

import pickle
import shlex
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from raycomp.base.errors import EXIT_INTERRUPTED, StorageUnwritable, one_line
from raycomp.base.layout import is_uri
from raycomp.base.redaction import redacted
from raycomp.base.remedies import COMMAND_LINE, Remedies, speaking
from raycomp.config import ExperimentConfig
from raycomp.launch.run_folder import run_guarded
from raycomp.tracking.ref import RunRef, redacted_uri


@dataclass(frozen=True)
class SweepOptions:
    """How a sweep command was asked for, apart from its config.

    ``experiment`` is where the config came from (a YAML path, or ``<python>``), ``overrides`` its ``--set``
    items. ``resume`` continues a sweep stopped any way; ``extend`` adds arms (more repeats or grid values) to a
    finished one. ``remedies`` are the words messages use to say how to go on (the command line's flags, or
    the API's arguments); ``program`` is what the resume hint calls.
    """

    experiment: str
    overrides: tuple[str, ...] = ()
    resume: bool = False
    extend: bool = False
    report: bool = True
    address: str | None = None
    remedies: Remedies = COMMAND_LINE
    program: str = field(default="python -m raycomp.tune")

    def resume_hint(self) -> str:
        """What continues this sweep (every option given, then resume), with no password in it."""
        if self.remedies.on_the_command_line:
            flags = [f"--set {shlex.quote(item)}" for item in self.overrides]
            if not self.report:
                flags.append("--no-report")
            if self.address:
                flags.append(f"--address {shlex.quote(self.address)}")
            command = " ".join([self.program, shlex.quote(self.experiment), *flags, "--resume"])
        else:
            arguments = [repr(self.experiment)]
            if self.overrides:
                arguments.append(f"overrides={list(self.overrides)!r}")
            if not self.report:
                arguments.append("report=False")
            if self.address:
                arguments.append(f"address={self.address!r}")
            command = f"{self.program}({', '.join([*arguments, 'resume=True'])})"
        return redacted(f"continue it with:\n  {command}")


def run_sweep_command(config: ExperimentConfig, options: SweepOptions) -> int:
    """The sweep, holding its run folder (``guarded_command``)."""
    return guarded_command(config, lambda: _tracked_sweep(config, options), options, options.remedies)


def guarded_command(claim: ExperimentConfig, body: Callable[[], int], options: SweepOptions, words: Remedies) -> int:
    """``body`` (a sweep's or a find's), holding the run folder of ``claim`` (its training config), its messages
    in ``words``. Interrupted at any moment after the folder was claimed (Ctrl-C, or SIGTERM while MLflow or Ray
    starts, or a second one while Tune stops), it prints how to resume: the runs are ended KILLED, and what was
    saved continues from there (nothing yet: it starts)."""
    with speaking(words):
        try:
            again = options.resume or options.extend
            return run_guarded(claim, body, resume=again, extend=options.extend)
        except KeyboardInterrupt:
            print(options.resume_hint(), file=sys.stderr)
            raise


def _tracked_sweep(config: ExperimentConfig, options: SweepOptions) -> int:
    from raycomp.config.run_length import duration_warnings
    from raycomp.launch.sweep.space import check_arms
    from raycomp.results.seed_power import few_seeds_warning
    from raycomp.tracking import sweep_run
    from raycomp.tracking.experiment_page import how_to_open, training_runs_url

    if config.sweep is None or config.sweep.search_alg != "optuna":
        check_arms(config)  # values drawn from random domains, checked before any run or Ray starts
    few_seeds = few_seeds_warning(config.sweep)  # before any trial: seeds that cannot resolve a speed-up
    for warning in ([few_seeds] if few_seeds else []) + duration_warnings(config):  # a half-life past the run's end
        print(f"warning: {warning}", flush=True)
    again = options.resume or options.extend
    with sweep_run(config, options.experiment, resume=again, extend=options.extend) as run:
        page = training_runs_url(run.ref, *config.objective) if run else None
        if page:  # MLflow's UI opens an experiment on GenAI; this page lists the sweep's runs as they go
            print(f"MLflow: the sweep's runs at {page}", flush=True)
        code = _sweep(config, options, run.ref if run else None)
        if run is not None and code == EXIT_INTERRUPTED:  # a resume reopens the run
            run.status = "KILLED"
    if run is not None:
        print(f"MLflow: parent run {run.ref.run_id} at {redacted_uri(run.ref.tracking_uri)}")
        print("\n".join(how_to_open(run.ref, *config.objective)))
    return code


def _sweep(config: ExperimentConfig, options: SweepOptions, parent: RunRef | None) -> int:
    """Runs (or resumes) the sweep, then writes its results and report; returns the exit code."""
    from raycomp.launch.cluster import init_ray
    from raycomp.launch.signals import interrupts_deferred
    from raycomp.launch.sweep.finish import report_sweep_results, track_sweep_results, write_sweep_results
    from raycomp.launch.sweep.runner import run_sweep
    from raycomp.results.ranking import MAX_SHOWN
    from raycomp.results.spread import sweep_spread
    from raycomp.results.trial_text import format_trials
    from raycomp.results.verdict_text import best_line, format_verdicts

    init_ray(options.address, dashboard=config.scaling.num_workers > 0)  # only worker groups need its state API
    try:
        outcome = run_sweep(config, parent, resume=options.resume, extend=options.extend)
    except RUN_FILE_ERRORS as error:  # Tune's files, cut short or not written: a full disk
        raise unreadable_run_files(config, error, options) from error
    if outcome.interrupted:  # Ctrl-C or SIGTERM: Tune saved the sweep's state and returned
        print(f"sweep interrupted with {outcome.unfinished} trials unfinished")
        print(options.resume_hint())
        return EXIT_INTERRUPTED

    metric, _ = config.objective
    with interrupts_deferred() as interrupted:  # the results are written whole, or the sweep was not done
        try:
            results = write_sweep_results(config, outcome.grids)
        except RUN_FILE_ERRORS as error:
            raise unreadable_run_files(config, error, options) from error
        print(format_trials(results.summaries, results.verdicts, metric))  # results.csv has every trial
        print()
        print(format_verdicts(results.verdicts, metric, limit=MAX_SHOWN))
        if spread := sweep_spread(results.summaries, results.verdicts.judging):
            print(spread)  # what its seeds can show: read beside the Δ intervals above
        print(best_line(results.verdicts))
        if results.verdicts.warning():
            print(f"warning: {results.verdicts.warning()}")
        print("results: " + ", ".join(shown(path) for path in results.paths))
        if parent is not None:
            track_sweep_results(parent, results, config)
    if interrupted:
        print(f"interrupted: the results were written; the report was not (python -m raycomp.report {results.folder})")
        return EXIT_INTERRUPTED
    report = None
    if options.report:
        try:  # the results are written already: a report that fails to render must not cost them
            report = report_sweep_results(results, config, parent)
            print(f"report: {shown(report)}")
        except Exception as error:
            print(f"report: not written ({one_line(error)}); results are in {results.paths[-1]}")
    if is_uri(config.layout.storage):  # the working directory may be a job's temporary copy
        from raycomp.launch.sweep.upload import copy_to_storage

        kept = [*results.paths, *([report.parent] if report is not None else [])]
        try:  # the sweep is done and its results written here: a bucket that refuses them must not cost them
            copied = copy_to_storage(kept, config.layout.run_dir)
            print("copied beside the trials: " + ", ".join(redacted(uri) for uri in copied))
        except OSError as error:
            print(
                f"results not copied to {redacted(config.layout.run_dir)} ({one_line(error)}); "
                f"they are in {shown(results.folder)}"
            )
    return 1 if results.failed else 0


# What Tune's files cut short or not written by a full disk raise where they are read: a pickle of Ray's
# (``ResultGrid``, a trial's state) cut short raises ``UnpicklingError`` (L3 of the 2026-12-01 probe), not OSError.
RUN_FILE_ERRORS = (EOFError, OSError, pickle.UnpicklingError)


def unreadable_run_files(config: ExperimentConfig, error: BaseException, options: SweepOptions) -> StorageUnwritable:
    """A sweep's or find's Tune files that cannot be read or written, as one line with how to go on (Ray's
    traceback before)."""
    return StorageUnwritable(
        f"the files in {config.layout.run_dir} cannot be read or written ({one_line(error)}): if its disk "
        f"is full, free space in storage_path (or TMPDIR); then run it again with {options.remedies.resume}"
    )


def shown(path: Path) -> str:
    """A path as the user reads it: relative to the working directory when it is under it."""
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)
