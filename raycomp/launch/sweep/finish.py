"""A sweep's end, once Tune has returned: its trials summarised and judged, results.csv/json written, the
verdicts and files sent to the MLflow parent run, and the speed-up report drawn.

The CLI calls these in order and prints between them; each step's work lives in its own layer
(``results``, ``tracking``, ``report``), this module only joins them for a finished set of Tune results.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from raycomp.base import keys
from raycomp.config import ExperimentConfig
from raycomp.launch.sweep.outcome import ExperimentResults, sweep_trials, trial_records
from raycomp.results.configs import SweepVerdicts, judge_sweep
from raycomp.results.results_files import write_results
from raycomp.results.summary import TrialSummary, summarize
from raycomp.tracking.ref import RunRef


@dataclass(frozen=True)
class SweepResults:
    """What a finished sweep found, and where its tables were written (results.csv, results.json)."""

    summaries: list[TrialSummary]
    verdicts: SweepVerdicts
    paths: list[Path]
    folder: Path
    errored: int = 0  # trials Tune ended with an error, counted from its results (not only from the summaries)

    @property
    def failed(self) -> bool:
        return self.errored > 0 or any(summary.status == keys.ERROR for summary in self.summaries)


def write_sweep_results(config: ExperimentConfig, grids: list[ExperimentResults]) -> SweepResults:
    """Summarises and judges every trial of the sweep's Tune experiments and writes the results files on the
    driver (they stay local when the storage is a URI)."""
    metric, mode = config.objective
    summaries = summarize(trial_records(grids), metric, mode)
    verdicts = judge_sweep(summaries, mode, config.sweep_or_default)
    folder = config.layout.local_dir
    paths = write_results(folder, summaries, metric, mode, verdicts)
    errored = sum(1 for result, _ in sweep_trials(grids) if result.error is not None)
    return SweepResults(summaries, verdicts, paths, folder, errored)


def track_sweep_results(parent: RunRef, results: SweepResults, config: ExperimentConfig) -> None:
    """Sends what an MLflow outage left unsent, ends the runs of finished trials, and attaches the results
    files and the verdicts to the parent run (its tags) and each trial's run. Never raises."""
    from raycomp.tracking import finish_open_trial_runs, log_files, log_verdicts

    finished = [s.trial_id for s in results.summaries if s.status == keys.TERMINATED]
    finish_open_trial_runs(parent, finished, config)
    log_files(parent, results.paths)
    log_verdicts(parent, results.verdicts, results.summaries)


def report_sweep_results(results: SweepResults, config: ExperimentConfig, parent: RunRef | None) -> Path:
    """Draws the speed-up report into the sweep's ``report/`` folder (and the parent run); the page's path."""
    from raycomp.report.write import write_sweep_report

    metric, mode = config.objective
    paths = write_sweep_report(results.summaries, results.verdicts, config.name, metric, mode, results.folder, parent)
    return paths[-1]
