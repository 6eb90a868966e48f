"""A sweep as the report sees it: its trials' summaries, its configurations' verdicts, where they came from.

The numbers are ``raycomp.results.summary``'s (``summarize``) and ``raycomp.results.configs``'
(``summarize_configs``): in memory at the end of a sweep, the very objects the CLI printed; read back,
the verdicts are computed again by that one function from the trials in ``results.json``, never read
from a second copy. A trial's traces travel with its reports; those a trial lacks (a sweep rebuilt
from its runs, a trial whose results never reached Tune) may be added from its MLflow run.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from raycomp.report.text import shown_path
from raycomp.results.configs import SweepVerdicts, summarize_configs
from raycomp.results.results_files import Results, read_results, results_file
from raycomp.results.summary import TraceRow, TrialSummary

if TYPE_CHECKING:
    from raycomp.tracking.ref import RunRef


@dataclasses.dataclass(frozen=True)
class Sweep:
    name: str
    metric: str
    mode: str
    trials: tuple[TrialSummary, ...]
    verdicts: SweepVerdicts  # one row per configuration, the control's verdict, the noise floor, the best
    source: str  # where the data came from, in words (paths relative to the working directory)
    folder: Path | None = None  # the sweep's output folder, when known on this machine
    parent: RunRef | None = None  # the sweep's MLflow parent run, when found
    traces_note: str | None = None  # why there is no trace summary

    @classmethod
    def from_results(
        cls,
        results: Results,
        name: str,
        source: str,
        folder: Path | None = None,
    ) -> Sweep:
        """The sweep read back; its verdicts judged again from its trials as the sweep's end judged them,
        with its tolerance, confidence, equivalence margin, looks and clock (``results.judging``)."""
        verdicts = summarize_configs(results.trials, results.mode, results.judging)
        return cls(name, results.metric, results.mode, results.trials, verdicts, source, folder)

    @property
    def machines(self) -> list[str]:
        return sorted({t.machine for t in self.trials if t.machine})

    @property
    def lacks_traces(self) -> bool:
        """Some trial's traces are not known (not that it ran no algorithm: that is an empty tuple)."""
        return any(t.traces is None for t in self.trials)

    def replace(self, **changes: Any) -> Sweep:
        return dataclasses.replace(self, **changes)

    def with_trial_runs(
        self, parent: RunRef, run_ids: Mapping[str, str], traces: Mapping[str, tuple[TraceRow, ...]]
    ) -> Sweep:
        """The sweep with its MLflow parent run, each trial's run id, and traces for trials that had none."""
        trials = tuple(
            dataclasses.replace(
                trial,
                run_id=run_ids.get(trial.trial_id, trial.run_id),
                traces=trial.traces if trial.traces is not None else traces.get(trial.trial_id),
            )
            for trial in self.trials
        )
        note = None if run_ids else f"the MLflow parent run {parent.run_id} has no trial runs"
        return self.replace(trials=trials, parent=parent, traces_note=note)


def read_sweep(path: str | Path) -> Sweep:
    """The sweep in a ``results.json`` (a file, or the sweep folder holding one)."""
    results = read_results(path)
    file = results_file(path)
    return Sweep.from_results(results, file.parent.name, shown_path(file), file.parent)
