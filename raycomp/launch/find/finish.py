"""The end of a find: its answer printed, written to the run folder (find.json, recipe.yaml) and sent to its
MLflow parent run, whole even when Ctrl-C comes meanwhile; then its report (``report_at_find_end``)."""

from __future__ import annotations

from pathlib import Path

from raycomp.base import keys
from raycomp.base.errors import one_line
from raycomp.config import ExperimentConfig
from raycomp.find.files import write_find_files
from raycomp.find.text import answer_lines
from raycomp.launch.find.driver import FindOutcome
from raycomp.launch.signals import interrupts_deferred
from raycomp.launch.sweep.command import shown
from raycomp.report.find_write import report_find_folder
from raycomp.report.text import shown_path
from raycomp.results.verdict_text import better
from raycomp.tracking.ref import RunRef


def report_answer(
    config: ExperimentConfig, outcome: FindOutcome, parent: RunRef | None, left_out: dict[str, str]
) -> None:
    answer, observations = outcome.answer, outcome.progress.observations
    recipe = answer.recommended
    block = {**config.to_dict()["algorithms"], **recipe.algorithms()} if recipe is not None else None
    with interrupts_deferred():
        folder = config.layout.local_dir
        paths = write_find_files(folder, config, answer, observations, left_out)
        print()
        metric, mode = config.find.metric, config.find.mode  # type: ignore[union-attr]
        rule = f"speed-ups at equal {metric}; Δ is the recipe's {metric} minus the baseline's, {better(mode)}"
        print("\n".join(answer_lines(answer, block, left_out, rule)))
        print(f"\nresults: {shown(paths[0])}")
        if recipe is not None:
            print(f"train it: python -m raycomp.train {shown(paths[-1])}")
        if parent is not None:
            from raycomp.tracking import finish_open_trial_runs
            from raycomp.tracking.experiment_page import how_to_open
            from raycomp.tracking.find_runs import RECIPE_TAG, VERDICT_TAG, log_answer, tag_stages

            finished = [trial.trial_id for trial in observations if trial.trial_id and trial.error is None]
            finish_open_trial_runs(parent, finished, config)
            tag_stages(parent, {t.trial_id: t.stage for t in observations if t.trial_id and t.stage})  # after an outage
            verdict = answer.verdict.verdict if answer.verdict else "none"
            log_answer(parent, {RECIPE_TAG: recipe.key if recipe else "none", VERDICT_TAG: verdict}, paths)
            print(f"MLflow: find run {parent.run_id} (its trials tagged {keys.CONFIG_ID_TAG} and by stage)")
            print("\n".join(how_to_open(parent, metric, mode)))


def report_at_find_end(folder: Path, parent: RunRef | None) -> None:
    """The report at the end of a find; a failure is one line, never the find's."""
    try:
        paths = report_find_folder(folder, parent)
    except Exception as error:
        print(f"report: not written ({one_line(error)}); python -m raycomp.report {shown_path(folder)} tries again")
        return
    print(f"report: {shown_path(paths[-1])}")
